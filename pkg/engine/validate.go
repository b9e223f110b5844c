package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
// says otherwise, formats asserted, external references refused).
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return s, nil
}

// schemaErrors checks output (JSON text) against s: nil when it is valid,
// else one line per failed constraint ("at '/score': minimum: got -1, want
// 0").
func schemaErrors(s *jsonschema.Schema, output string) []string {
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
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		u := e.BasicOutput()
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		out = append(out, fmt.Sprintf("at '%s': %s", loc, u.Error))
	}
	walk(ve)
	return out
}

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
		if !r.mcpItems {
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
