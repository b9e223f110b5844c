package engine

import (
	"context"
	"strconv"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
)

// The per-request limits (package limits, Config.Limits) and the loop caps
// the engine enforces before any model call or outbound request, each a
// 400 limit_exceeded naming the parameter (limits.Exceeded). In the order
// prepare meets them:
//
//   - checkRequest, before anything is read or compiled: the length of
//     model, the number of tools, the size and nesting depth of every JSON
//     schema the request carries (text.format.schema, tools[i].parameters)
//     and the size of its numbers (a 400 invalid_schema), and the loop
//     policy (lambent.max_attempts and
//     lambent.max_iterations_per_attempt at most the operator's
//     MaxAttempts and MaxIterationsPerAttempt: a request may lower them,
//     never raise them). RunBackground repeats it on the stored request, so
//     a worker never runs what its gateway's limits refuse.
//   - checkReferenced, after previous_response_id is read and before any
//     other store read: previous_response_id plus the distinct stored
//     responses the item references point into (the ones the previous
//     chain does not hold already).
//   - checkImages, once the conversation is resolved and its compaction
//     items opened: the input images a model call carries (the
//     conversation continued and this input, from the compaction item
//     that stands alone on, the images it carries included), each fetched
//     or decoded by the Bedrock provider on every model call. RunBackground
//     repeats it too, as it repeats checkRequest.
//   - checkContent, then: the content parts the model's provider does not
//     take (input_file, input_image by file_id or in a system or developer
//     message), a 400 unsupported_content, before any MCP server is
//     listed. RunBackground repeats it too.
//   - compileOutputSchema (attempts.go), as the schema of a validated output
//     is compiled: its regular expressions (SchemaPatterns, counted by
//     schemacheck.Compile as the validator compiles them).

// checkRequest checks the limits known from the request alone.
func (e *Engine) checkRequest(req *api.CreateResponseRequest) error {
	l := &e.cfg.Limits
	if n := len(req.Model); n > l.ModelName {
		return limits.Exceeded("model", "the model name's length in bytes", n, l.ModelName)
	}
	n := len(req.Tools)
	for i := range req.Tools {
		// A namespace's tools count too, and an output tool's validators
		// (each runs on every output the model hands in).
		n += len(req.Tools[i].Tools) + len(req.Tools[i].Validators)
	}
	if n > l.Tools {
		return limits.Exceeded("tools", "the number of tools (the tools of namespace tools and the validators of output tools included)", n, l.Tools)
	}
	if t := req.Text; t != nil {
		if err := checkSchema(l, t.Format.Schema, func() string { return "text.format.schema" }); err != nil {
			return err
		}
	}
	for i := range req.Tools {
		if err := checkSchema(l, req.Tools[i].Parameters, func() string { return "tools[" + strconv.Itoa(i) + "].parameters" }); err != nil {
			return err
		}
		for j := range req.Tools[i].Tools {
			if err := checkSchema(l, req.Tools[i].Tools[j].Parameters, func() string { return "tools[" + strconv.Itoa(i) + "].tools[" + strconv.Itoa(j) + "].parameters" }); err != nil {
				return err
			}
		}
	}
	if p := req.Lambent; p != nil {
		if p.MaxAttempts != nil && *p.MaxAttempts > e.cfg.Loop.MaxAttempts {
			return limits.Exceeded("lambent.max_attempts", "lambent.max_attempts", *p.MaxAttempts, e.cfg.Loop.MaxAttempts)
		}
		if p.MaxIterationsPerAttempt != nil && *p.MaxIterationsPerAttempt > e.cfg.Loop.MaxIterationsPerAttempt {
			return limits.Exceeded("lambent.max_iterations_per_attempt", "lambent.max_iterations_per_attempt", *p.MaxIterationsPerAttempt, e.cfg.Loop.MaxIterationsPerAttempt)
		}
	}
	return nil
}

// checkSchema checks the size, then the nesting depth and the numbers, of
// one JSON schema (param names it, built only for an error); an absent
// schema passes.
func checkSchema(l *limits.Limits, schema []byte, param func() string) error {
	if n := len(schema); n > l.SchemaBytes {
		return limits.Exceeded(param(), "the schema's size in bytes", n, l.SchemaBytes)
	}
	shape := schemacheck.Scan(schema)
	if shape.Depth > l.SchemaDepth {
		return limits.Exceeded(param(), "the schema's nesting depth (objects and arrays inside each other)", shape.Depth, l.SchemaDepth)
	}
	if shape.Enum > l.SchemaEnumValues {
		return limits.Exceeded(param(), "the schema's enum values (all enum keywords together)", shape.Enum, l.SchemaEnumValues)
	}
	if shape.Number > schemacheck.MaxNumberSize {
		return api.InvalidRequestCode(param(), "invalid_schema", "A number in the schema has more than %d digits or an exponent beyond ±%d, which this gateway does not support.", schemacheck.MaxNumberSize, schemacheck.MaxNumberSize)
	}
	return nil
}

// referencedResponse is a stored response an item reference points into:
// its id and the index of the first input item that names it.
type referencedResponse struct {
	id   string
	item int
}

// checkReferenced checks the stored responses a request reads: its
// previous_response_id (read already) and refs, the other responses its
// item references point into, before any of them is read.
func (e *Engine) checkReferenced(req *api.CreateResponseRequest, refs []referencedResponse) error {
	limit := e.cfg.Limits.ReferencedResponses
	n := len(refs)
	if req.PreviousResponseID != "" {
		n++
	}
	if n <= limit {
		return nil
	}
	// Name the first reference over the limit.
	first := limit
	if req.PreviousResponseID != "" {
		first--
	}
	return limits.Exceeded(inputParam(refs[first].item, "id"),
		"the number of stored responses this request reads (previous_response_id and the distinct responses its item references point into)", n, limit)
}

// openView opens the compaction items of what r's model call sees
// (openSummaries) and checks it: its images (checkImages) and its content
// (checkContent), before anything connects. A create and a background
// run alike (RunBackground repeats it).
func (e *Engine) openView(ctx context.Context, r *run) error {
	if err := e.openSummaries(ctx, r); err != nil {
		return err
	}
	if err := e.checkImages(r); err != nil {
		return err
	}
	return e.checkContent(r)
}

// checkImages checks the input images of what r's model call sees of its
// conversation: the history it continues and its input, references
// resolved, which every model call carries; from the compaction item
// that stands alone on (view), the images it carries included, since
// the model sees nothing before it. The compaction items are opened
// (openSummaries).
func (e *Engine) checkImages(r *run) error {
	limit := e.cfg.Limits.Images
	carried, history, param, input, from := r.view()
	before := carriedImages(carried) + countImages(history)
	n := before + countImages(input)
	if n <= limit {
		return nil
	}
	// Name what crosses the limit: what holds the images before the input
	// items (param), or an input item.
	seen := before
	for i := 0; seen <= limit; i++ {
		seen += countImages(input[i : i+1])
		param = inputParam(from+i, "")
	}
	return limits.Exceeded(param, "the number of input images a model call carries (this input and the conversation it continues)", n, limit)
}

// checkContent refuses the content parts the model's provider does not
// take (provider.CheckContentFor: input_file, input_image by file_id or
// in a system or developer message) in what r's model call sees of its
// conversation (view), before anything connects: the provider refuses
// them only as it converts a model call, after the MCP servers were
// listed.
func (e *Engine) checkContent(r *run) error {
	carried, history, _, input, _ := r.view()
	var carriedItems []api.Item
	if len(carried) > 0 {
		carriedItems = carriedMessages("", carried)
	}
	return provider.CheckContentFor(e.cfg.Provider, r.resp.Model, carriedItems, history, input)
}

// view is what a model call of r sees of its conversation (before
// truncation): from the compaction item that stands alone (standsAlone:
// the input's latest standalone one, else the history's latest) on, the
// user messages it carries (carried, carriedBy), then the items of the
// history and of the input after it, the input's from the index from;
// else all of them.
// param is the parameter that holds what comes before the input items: an
// input item holding the compaction, or the history's.
func (r *run) view() (carried [][]api.ContentPart, history []api.Item, param string, input []api.Item, from int) {
	if at := r.standsAlone(r.input, 0); at >= 0 {
		return r.summaries[r.input[at].EncryptedContent].users, nil, inputParam(at, ""), r.input[at:], at
	}
	if at := r.standsAlone(r.history, len(r.history)); at >= 0 {
		return r.carriedBy(r.history, at), r.history[at:], r.historyParam(), r.input, 0
	}
	return nil, r.history, r.historyParam(), r.input, 0
}

// carriedImages counts the images of carried, the user messages a
// standalone compaction item carries.
func carriedImages(carried [][]api.ContentPart) int {
	n := 0
	for _, parts := range carried {
		n += countParts(parts)
	}
	return n
}

// countImages counts the images of items: the input_image parts of
// messages and of tool outputs, and computer call screenshots.
func countImages(items []api.Item) int {
	n := 0
	for i := range items {
		it := &items[i]
		if it.Type == api.ItemComputerCallOutput && len(it.OutputRaw) > 0 {
			n++
		}
		n += countParts(it.Content) + countParts(it.OutputParts)
	}
	return n
}

// countParts counts the input_image parts of parts.
func countParts(parts []api.ContentPart) int {
	n := 0
	for i := range parts {
		if parts[i].Type == api.PartInputImage {
			n++
		}
	}
	return n
}
