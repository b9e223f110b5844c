package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/tools"
)

// checker validates an output (docs/validated-output.md): against the
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
// fails the check: no output passes unvalidated. iteration is the model
// call that asked for the check (its output or submit call's), which the
// validator calls report (ToolCall.Iteration).
func (e *Engine) validate(ctx context.Context, r *run, output string, iteration int) ([]string, []serverCall) {
	c := &r.att.check
	if errs := schemacheck.Errors(c.schema, output); errs != nil {
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
	defer func() { r.toolsTook(e.cfg.Now().Sub(start)) }()
	var made []serverCall
	for _, v := range c.validators {
		// The validator calls of a check are one turn of calls, the
		// gateway's own.
		hidden := api.ItemHidden{TurnStart: len(made) == 0}
		it := api.Item{Type: api.ItemMCPCall, ID: r.newItemID(api.PrefixMCPCall), Status: api.ItemInProgress, ServerLabel: api.HostedServerLabel, Name: v.name, Arguments: args, Hidden: hidden}
		if !r.tools.mcpItems {
			it = api.Item{Type: api.ItemFunctionCall, ID: r.newItemID(api.PrefixFunctionCall), Status: api.ItemCompleted, CallID: api.NewCallID(), Name: v.name, Arguments: args, Hidden: hidden}
		}
		res := e.execute(tctx, r, &plannedCall{call: r.toolCall(tctx, callKey(&it), v.name, args), exec: v.exec, kind: ToolKindValidator}, iteration)
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
		return []string{fmt.Sprintf("validator %s failed: %s", name, textcut.Ellipsis(res.Output, 500))}
	}
	var rep validatorReply
	if err := json.Unmarshal([]byte(res.Output), &rep); err != nil || rep.Valid == nil {
		return []string{fmt.Sprintf(`validator %s replied %q, not {"valid": bool, "errors": [string]}`, name, textcut.Ellipsis(res.Output, 200))}
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
	return schemacheck.BoundErrors(out)
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
