package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

// checker validates an output (README "Validated output"): against the
// JSON Schema (2020-12), compiled once per request, then with each
// validator tool in order. The first failing step ends the check, so a
// validator only ever sees output that matches the schema.
type checker struct {
	schema     *jsonschema.Schema
	validators []validatorTool
}

// validatorTool is a hosted tool that validates outputs. It is called with
// {"output": <the output>} and replies {"valid": bool, "errors": [string]}.
type validatorTool struct {
	name string
	exec tools.ToolExecutor
}

// schemaURL is the URL the output schema is compiled under; relative $refs
// resolve against it and, like every other external reference, are refused.
const schemaURL = "https://lambent.invalid/output.schema.json"

// noLoader refuses to load external schemas: a request's schema must not
// make the gateway read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not supported (%s)", url)
}

// compileSchema compiles a request's JSON Schema (draft 2020-12 unless it
// says otherwise, formats asserted, external references refused). Its
// regular expressions may add up to patterns in size (patternBudget); a
// schema over that is a *patternsError. checkSchema has bounded its size,
// depth and numbers.
func compileSchema(raw json.RawMessage, patterns int) (s *jsonschema.Schema, err error) {
	defer recovered("compile the schema", &err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not valid JSON: %w", err)
	}
	budget := &patternBudget{limit: patterns, compiled: map[string]jsonschema.Regexp{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(budget.compile)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err = c.Compile(schemaURL)
	if budget.over > 0 {
		return nil, &patternsError{size: budget.over, limit: patterns}
	}
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return s, nil
}

// recovered turns a panic of the JSON Schema validator (a library) into
// *err, so that no schema or output can take the gateway down.
func recovered(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("could not %s: the validator failed (%v)", what, p)
	}
}

// patternBudget compiles the regular expressions of one schema (pattern,
// patternProperties, format "regex") for the validator, each distinct one
// once, up to limit in summed size (regexpSize): a regular expression's
// compiled program grows with its repetitions, and 128 KiB of
// "[a-z]{1,1000}" patterns cost seconds and gigabytes to compile.
type patternBudget struct {
	mu       sync.Mutex
	limit    int
	used     int
	over     int // the size asked for past the limit, 0 while within it
	compiled map[string]jsonschema.Regexp
}

// errPatternBudget refuses a regular expression past the budget.
var errPatternBudget = errors.New("the schema's regular expressions are too large")

func (b *patternBudget) compile(expr string) (jsonschema.Regexp, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if re, ok := b.compiled[expr]; ok {
		return re, nil
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	size := b.used + regexpSize(parsed, b.limit+1)
	if size > b.limit {
		b.over = max(b.over, size)
		return nil, errPatternBudget
	}
	b.used = size
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	b.compiled[expr] = re
	return re, nil
}

// regexpSize is the size of a parsed regular expression with its
// repetitions expanded ("[a-z]{1,1000}" is 1,000, "^[A-Z]{2}$" 4), which its
// compiled program's grows with; counted up to limit. Go's parser bounds
// the nesting, and so the recursion, at 1,000.
func regexpSize(re *syntax.Regexp, limit int) int {
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpRepeat:
		n = max(re.Max, re.Min, 1) * regexpSize(re.Sub[0], limit)
	default:
		for _, sub := range re.Sub {
			n += regexpSize(sub, limit)
		}
	}
	return min(n, limit)
}

// patternsError is a schema whose regular expressions are over the budget.
type patternsError struct{ size, limit int }

func (e *patternsError) Error() string {
	return fmt.Sprintf("the schema's regular expressions are %d in size, over the limit of %d", e.size, e.limit)
}

// schemaErrors checks output (JSON text) against s: nil when it is valid,
// else one line per failed constraint ("at '/score': minimum: got -1, want
// 0"), at most maxSchemaErrors of them.
func schemaErrors(s *jsonschema.Schema, output string) (errs []string) {
	var failed error
	defer func() {
		if failed != nil {
			errs = []string{failed.Error()}
		}
	}()
	defer recovered("validate the output", &failed)
	if scanJSON(output).number > maxNumberSize {
		return []string{fmt.Sprintf("the output holds a number of more than %d digits or with an exponent beyond ±%d, which cannot be validated", maxNumberSize, maxNumberSize)}
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(output))
	if err != nil {
		return []string{"the output is not valid JSON: " + err.Error()}
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	more := 0
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(out) == maxSchemaErrors {
			more++
			return
		}
		u := e.BasicOutput()
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		out = append(out, truncate(fmt.Sprintf("at '%s': %s", loc, u.Error), maxSchemaErrorLen))
	}
	walk(ve)
	if more > 0 {
		out = append(out, fmt.Sprintf("(and %d more errors)", more))
	}
	return out
}

// maxSchemaErrors bounds the errors a validation reports (to the model, and
// in the response's attempts), and maxSchemaErrorLen the length of each: an
// error may quote its schema (an enum's values), once per value of the
// output that fails it.
const (
	maxSchemaErrors   = 20
	maxSchemaErrorLen = 500
)

// outputArgs is the arguments of a call that hands output to a hosted tool
// (a validator or a reflection handler): {"output": <output>}.
func outputArgs(output string) (string, error) {
	if !json.Valid([]byte(output)) {
		return "", errors.New("the output is not valid JSON")
	}
	return `{"output":` + strings.TrimSpace(output) + `}`, nil
}

// validatorReply is what a validator tool answers.
type validatorReply struct {
	Valid  *bool    `json:"valid"`
	Errors []string `json:"errors"`
}

// serverCall is a call the server made on its own (a validator's), shown in
// output once the turn's calls have their results.
type serverCall struct {
	item api.Item
	res  *tools.ToolResult
}

// validate checks output: the errors (nil when valid) and the validator
// calls made, for the caller to add to output after the calls whose result
// the verdict is. A validator that fails or answers outside its contract
// fails the check: no output passes unvalidated.
func (e *Engine) validate(ctx context.Context, r *run, output string) ([]string, []serverCall) {
	c := &r.att.check
	if errs := schemaErrors(c.schema, output); errs != nil {
		return errs, nil
	}
	if len(c.validators) == 0 {
		return nil, nil
	}
	args, err := outputArgs(output)
	if err != nil {
		return []string{err.Error()}, nil
	}
	tctx, cancel := r.budget.bound(ctx)
	defer cancel()
	start := e.cfg.Now()
	defer func() { measure(&r.budget.maxTools, e.cfg.Now().Sub(start)) }()
	var made []serverCall
	for _, v := range c.validators {
		it := api.Item{Type: api.ItemMCPCall, ID: r.newItemID(api.PrefixMCPCall), Status: api.ItemInProgress, ServerLabel: api.HostedServerLabel, Name: v.name, Arguments: args}
		if !r.tools.mcpItems {
			it = api.Item{Type: api.ItemFunctionCall, ID: r.newItemID(api.PrefixFunctionCall), Status: api.ItemCompleted, CallID: api.NewID("call_"), Name: v.name, Arguments: args}
		}
		res := e.execute(tctx, r, &plannedCall{call: tools.ToolCall{ID: callID(&it), Name: v.name, Arguments: args, ResponseID: r.resp.ID}, exec: v.exec, kind: ToolKindValidator}, r.turns)
		made = append(made, serverCall{item: it, res: res})
		if errs := validatorErrors(v.name, res); errs != nil {
			return errs, made
		}
	}
	return nil, made
}

// validatorErrors reads a validator's result: nil when it found the output
// valid, else its errors, each prefixed with its name.
func validatorErrors(name string, res *tools.ToolResult) []string {
	if res.IsError {
		return []string{fmt.Sprintf("validator %s failed: %s", name, truncate(res.Output, 500))}
	}
	var rep validatorReply
	if err := json.Unmarshal([]byte(res.Output), &rep); err != nil || rep.Valid == nil {
		return []string{fmt.Sprintf(`validator %s replied %q, not {"valid": bool, "errors": [string]}`, name, truncate(res.Output, 200))}
	}
	if *rep.Valid {
		return nil
	}
	if len(rep.Errors) == 0 {
		return []string{name + ": the output is not valid"}
	}
	out := make([]string, len(rep.Errors))
	for i, m := range rep.Errors {
		out[i] = name + ": " + m
	}
	return out
}

// show adds a validator call with its result to output, as the server's
// calls appear there (an mcp_call, or a function_call with its output).
func (r *run) show(c serverCall) {
	if c.item.Type == api.ItemFunctionCall {
		idx := len(r.resp.Output)
		r.resp.Output = append(r.resp.Output, c.item)
		r.em.itemEvent(api.EventOutputItemAdded, idx, &r.resp.Output[idx])
		r.em.itemEvent(api.EventOutputItemDone, idx, &r.resp.Output[idx])
	}
	r.recordResult(&c.item, c.res)
}
