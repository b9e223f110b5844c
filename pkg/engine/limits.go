package engine

import (
	"strconv"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/limits"
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
//   - checkImages, once the conversation is resolved: the input images a
//     model call carries (the conversation continued and this input), each
//     fetched or decoded by the Bedrock provider on every model call.
//   - compileOutputSchema (attempts.go), as the schema of a validated output
//     is compiled: its regular expressions (SchemaPatterns, counted by
//     patternBudget as the validator compiles them).

// checkRequest checks the limits known from the request alone.
func (e *Engine) checkRequest(req *api.CreateResponseRequest) error {
	l := &e.cfg.Limits
	if n := len(req.Model); n > l.ModelName {
		return limits.Exceeded("model", "the model name's length in bytes", n, l.ModelName)
	}
	if n := len(req.Tools); n > l.Tools {
		return limits.Exceeded("tools", "the number of tools", n, l.Tools)
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
	shape := scanJSON(schema)
	if shape.depth > l.SchemaDepth {
		return limits.Exceeded(param(), "the schema's nesting depth (objects and arrays inside each other)", shape.depth, l.SchemaDepth)
	}
	if shape.enum > l.SchemaEnumValues {
		return limits.Exceeded(param(), "the schema's enum values (all enum keywords together)", shape.enum, l.SchemaEnumValues)
	}
	if shape.number > maxNumberSize {
		return api.InvalidRequestCode(param(), "invalid_schema", "A number in the schema has more than %d digits or an exponent beyond ±%d, which this gateway does not support.", maxNumberSize, maxNumberSize)
	}
	return nil
}

// maxNumberSize bounds the digits and the decimal exponent of the numbers
// the JSON Schema validator reads, in schemas and in outputs: it makes each
// an exact rational, whose cost grows with both (1e-999999 takes ~20 ms),
// and it panics past an exponent of a million. float64 spans ±308.
const maxNumberSize = 400

// jsonShape is what one pass over a JSON text finds.
type jsonShape struct {
	// depth is the most objects and arrays open at once (1 for
	// {"type":"string"}, 0 for a scalar).
	depth int
	// number is the size of the largest number: its digits, or the
	// magnitude of its exponent when that is larger (counted up to
	// maxNumberSize+1).
	number int
	// enum is the number of values in the arrays of "enum" keys (the values
	// of enums inside an enum's values are data, not counted).
	enum int
}

// scanJSON measures the JSON text b in one pass, without recursion or
// allocation. b is valid JSON (a request decoder or the validator's
// parser checks it), so only strings need skipping.
func scanJSON[T string | []byte](b T) jsonShape {
	var s jsonShape
	depth := 0
	// enumKey: the last token was the string "enum"; enumColon: then a
	// colon; inEnum: the depth of the enum array being counted (0: none).
	enumKey, enumColon, inEnum := false, false, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		key, colon := false, false
		switch {
		case c == '"':
			start := i + 1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			key = i-start == 4 && string(b[start:min(i, len(b))]) == "enum"
		case c == ':':
			colon = enumKey
		case c == ',':
			if inEnum != 0 && depth == inEnum {
				s.enum++
			}
		case c == '{' || c == '[':
			depth++
			s.depth = max(s.depth, depth)
			if c == '[' && enumColon && inEnum == 0 {
				inEnum = depth
				if j := skipSpace(b, i+1); j < len(b) && b[j] != ']' {
					s.enum++ // the first value
				}
			}
		case c == '}' || c == ']':
			if depth == inEnum {
				inEnum = 0
			}
			depth--
		case c == '-' || c >= '0' && c <= '9':
			digits, exp := 0, 0
			for ; i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '.'); i++ {
				if b[i] >= '0' && b[i] <= '9' {
					digits++
				}
			}
			if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
				for i++; i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '+'); i++ {
					if b[i] >= '0' && b[i] <= '9' && exp <= maxNumberSize {
						exp = exp*10 + int(b[i]-'0')
					}
				}
			}
			s.number = max(s.number, min(max(digits, exp), maxNumberSize+1))
			i-- // the byte after the number
		}
		enumKey, enumColon = key, colon
	}
	return s
}

// skipSpace returns the index of the first byte of b from i that is not
// JSON white space.
func skipSpace[T string | []byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
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
	return limits.Exceeded("input["+strconv.Itoa(refs[first].item)+"].id",
		"the number of stored responses this request reads (previous_response_id and the distinct responses its item references point into)", n, limit)
}

// checkImages checks the input images of r's conversation: the history it
// continues and its input, references resolved, which every model call
// carries.
func (e *Engine) checkImages(r *run) error {
	limit := e.cfg.Limits.Images
	history := countImages(r.history)
	n := history + countImages(r.input)
	if n <= limit {
		return nil
	}
	// Name what crosses the limit: the conversation, or an input item.
	param, seen := "previous_response_id", history
	for i := 0; seen <= limit; i++ {
		seen += countImages(r.input[i : i+1])
		param = "input[" + strconv.Itoa(i) + "]"
	}
	return limits.Exceeded(param, "the number of input images a model call carries (this input and the conversation it continues)", n, limit)
}

// countImages counts the input_image parts of items' messages.
func countImages(items []api.Item) int {
	n := 0
	for i := range items {
		if items[i].Type != api.ItemMessage {
			continue
		}
		for j := range items[i].Content {
			if items[i].Content[j].Type == api.PartInputImage {
				n++
			}
		}
	}
	return n
}
