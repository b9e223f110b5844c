package engine

import (
	"encoding/json"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

// Server-executed calls on the wire (DESIGN.md): the model sees every tool
// as an ordinary function, but a call the server executes appears in output
// as OpenAI's mcp_call item, which every OpenAI client and agent framework
// treats as already executed. The item opens when the model starts the call
// (output_item.added, response.mcp_call.in_progress, argument deltas) and is
// done once the tool has answered (response.mcp_call.completed or .failed,
// output_item.done with output or error). Config.HostedToolItems
// "function_call" keeps function_call + function_call_output instead.

// serverExecuted reports whether a call to name is shown as an mcp_call
// item: in mcp_call mode, for every call the loop runs or answers itself —
// every tool but the request's client functions.
func (r *run) serverExecuted(name string) bool {
	if !r.mcpItems || r.toolChoiceMode() == api.ToolChoiceNone {
		return false
	}
	t, ok := r.defs[name]
	return !ok || t.exec != nil || t.ends
}

// callID is the call id of a function_call or mcp_call item: the model's
// call_id, or the mcp_call item's own id (which is what the model sees as
// the call's id, see modelItems).
func callID(it *api.Item) string {
	if it.Type == api.ItemMCPCall {
		return it.ID
	}
	return it.CallID
}

// modelItems is the conversation as the model sees it: every tool call an
// ordinary function call followed by its output. An mcp_call becomes a
// function_call (call_id: the item's id) and, once executed, a
// function_call_output holding its output or error. A call that appears
// again later (a call paused with its turn and executed in a continuation)
// adds only its output there. Other items pass through.
func modelItems(lists ...[]api.Item) []api.Item {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]api.Item, 0, n)
	var called map[string]bool
	for _, l := range lists {
		for i := range l {
			it := &l[i]
			if it.Type != api.ItemMCPCall {
				out = append(out, *it)
				continue
			}
			if called == nil {
				called = map[string]bool{}
			}
			if !called[it.ID] {
				called[it.ID] = true
				out = append(out, api.Item{Type: api.ItemFunctionCall, ID: it.ID, Status: api.ItemCompleted, CallID: it.ID, Name: it.Name, Arguments: it.Arguments})
			}
			if it.Executed() {
				res := api.Item{Type: api.ItemFunctionCallOutput, ID: it.ID, Status: api.ItemCompleted, CallID: it.ID, Output: it.Output}
				if it.Error != "" {
					res.Output, res.IsError = it.Error, true
				}
				out = append(out, res)
			}
		}
	}
	return out
}

// outputIndex is the index of the output item with id, or -1.
func (r *run) outputIndex(id string) int {
	for i := range r.resp.Output {
		if r.resp.Output[i].ID == id {
			return i
		}
	}
	return -1
}

// completeServerCall records res as the result of the mcp_call call: the
// item of this response is updated in place; a call of an earlier response
// (paused with its turn, run by this continuation) is added to this
// response's output with its result.
func (r *run) completeServerCall(call *api.Item, res *tools.ToolResult) {
	idx := r.outputIndex(call.ID)
	if idx < 0 {
		idx = len(r.resp.Output)
		it := *call
		it.Status, it.Output, it.Error = api.ItemInProgress, "", ""
		r.resp.Output = append(r.resp.Output, it)
		r.em.itemEvent(api.EventOutputItemAdded, idx, &r.resp.Output[idx])
		r.em.mcpEvent(api.EventMCPCallInProgress, idx, it.ID)
	}
	it := &r.resp.Output[idx]
	if res.IsError {
		it.Status, it.Error, it.Output = api.ItemFailed, res.Output, ""
		r.em.mcpEvent(api.EventMCPCallFailed, idx, it.ID)
	} else {
		it.Status, it.Output = api.ItemCompleted, res.Output
		r.em.mcpEvent(api.EventMCPCallCompleted, idx, it.ID)
	}
	r.em.itemEvent(api.EventOutputItemDone, idx, it)
}

// closeUnexecuted ends the stream's open mcp_call items of calls that did
// not run (their turn paused, or the deadline left no time): they stay
// in_progress in the stored output, and a continuation runs them.
func (r *run) closeUnexecuted(calls []api.Item) {
	for i := range calls {
		if calls[i].Type != api.ItemMCPCall {
			continue
		}
		if idx := r.outputIndex(calls[i].ID); idx >= 0 && !r.resp.Output[idx].Executed() {
			r.em.itemEvent(api.EventOutputItemDone, idx, &r.resp.Output[idx])
		}
	}
}

// echoTools is the response's tools: the request's, with the hosted tools
// in the form of the item mode — in mcp_call mode one MCP tool entry
// (server_label "lambent", allowed_tools naming them, no approval), which
// OpenAI's types understand; in function_call mode each as the function the
// model sees, which the OpenResponses schema understands.
func (r *run) echoTools() []api.Tool {
	out := make([]api.Tool, 0, len(r.req.Tools))
	var hosted []string
	for i := range r.req.Tools {
		t := r.req.Tools[i]
		if !t.IsHosted() {
			out = append(out, t)
			continue
		}
		defs := []api.ToolDefinition{r.defs[t.HostedName()].def}
		if t.IsOutput() {
			defs = r.att.outputDefs(r)
		}
		for _, def := range defs {
			if r.mcpItems {
				hosted = append(hosted, def.Name)
				continue
			}
			desc := def.Description
			out = append(out, api.Tool{Type: api.ToolFunction, Name: def.Name, Description: &desc, Parameters: def.Parameters, Strict: def.Strict})
		}
	}
	if len(hosted) > 0 {
		names, _ := json.Marshal(hosted)
		out = append(out, api.Tool{Type: api.ToolMCP, ServerLabel: api.HostedServerLabel, ServerDescription: "Lambent's hosted tools, executed by the gateway.",
			AllowedTools: names, RequireApproval: json.RawMessage(`"never"`)})
	}
	return out
}
