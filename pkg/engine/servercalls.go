package engine

import (
	"encoding/json"
	"slices"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// Server-executed calls on the wire (docs/architecture.md): the model sees every tool
// as an ordinary function, but a call the server executes appears in output
// as OpenAI's mcp_call item, which every OpenAI client and agent framework
// treats as already executed. The item opens when the model starts the call
// (output_item.added, response.mcp_call.in_progress, argument deltas) and is
// done once the tool has answered (response.mcp_call.completed or .failed,
// output_item.done with output or error). Config.Loop.HostedToolItems
// "function_call" keeps function_call + function_call_output instead.

// callKey identifies a function_call, mcp_call or mcp_approval_request
// item's call in the conversation (pendingCalls, tools.ToolCall.ID): the
// function call's call_id, the approval request's id (for the mcp_call that
// runs an approved request too), or the mcp_call item's own id.
func callKey(it *api.Item) string {
	switch {
	case it.Type == api.ItemMCPApprovalRequest:
		return it.ID
	case it.Type == api.ItemMCPCall && it.ApprovalRequestID != "":
		return it.ApprovalRequestID
	case it.Type == api.ItemMCPCall:
		return it.ID
	}
	return it.CallID
}

// modelCallID is the call id the model sees for a call item
// (docs/architecture.md, "What the model sees"): its own id, kept hidden
// with an mcp_call or mcp_approval_request item it made, else the function
// call's call_id. A call whose model id is unknown (mcp_call items replayed
// by a client, records older than the hidden fields, the gateway's own
// validator calls) gets one derived from callKey: the same on every model
// call, "call_" and 24 base-62 characters (valid for OpenAI's and Bedrock's
// rules; the provider edge maps it where a provider's rule is stricter).
func modelCallID(it *api.Item) string {
	if api.IsClientCall(it.Type) {
		return it.CallID
	}
	if it.Hidden.ModelCallID != "" {
		return it.Hidden.ModelCallID
	}
	return provider.DerivedCallID(callKey(it))
}

// modelItems is the conversation as the model sees it: every tool call an
// ordinary function call followed by its output. An mcp_call or
// mcp_approval_request becomes a function_call (call_id: modelCallID, name:
// the tool's function name) and, once there is a result, a
// function_call_output holding the call's output or error — or, for an
// approval request, the denial (its mcp_approval_response), or "not
// approved" when the conversation holds no answer to it. A call that
// appears again later (a call paused with its turn and executed in a
// continuation, the mcp_call of an approved request) adds only its output
// there. mcp_list_tools items are left out, and so are the items of
// OpenAI's hosted tools a client replays (web_search_call: the item does
// not hold the results; tool_search_call and tool_search_output: the
// model is offered the request's tools only), wherever they stand; other
// items pass through, but a client call or call output given again (an
// input's reference to the call of the conversation it continues, or the
// item sent again) is added once: every provider refuses a call id twice.
//
// The calls of one model turn reach the model as they came from it: all
// the turn's calls, then their results. A turn's calls are consecutive
// call items; the first of each turn the gateway recorded is marked
// (api.ItemHidden.TurnStart), so that two turns of calls only are told
// apart; consecutive calls without a mark (replayed by a client) are taken
// as one turn. The result of a call whose turn has closed (a server-side
// call paused with its turn and run in a continuation whose input, a new
// message say, came first) goes back to the end of its turn's results:
// every provider wants them right after the turn's calls, before the next
// message (Chat Completions refuses anything else).
func (r *run) modelItems(lists ...[]api.Item) []api.Item {
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	out := make([]api.Item, 0, n)
	var approvals *approvalIndex
	// approvalsOf indexes the approvals of lists when first needed.
	approvalsOf := func() *approvalIndex {
		if approvals == nil {
			approvals = r.indexApprovals(lists)
		}
		return approvals
	}
	// turnOf maps the key of each server-side call added to its turn;
	// turn t's calls are out[starts[t]:ends[t]] (its results follow, up
	// to resultsEnd[t] as far as scanned: 0 not yet).
	var turnOf map[string]int
	var starts, ends, resultsEnd []int
	// late are the results of calls of closed turns, by the index of the
	// item of out they go before (merged once, at the end: inserting each
	// moved every later item and turn).
	var late map[int][]api.Item
	open := false
	// held are the results of the open turn's calls, sent after its last
	// call; lead is the text the model wrote after the open turn's calls
	// (before any of their results), sent before its first, in order.
	var held, lead []api.Item
	closeTurn := func() {
		if len(lead) > 0 {
			// The open turn is the last: only its own calls move.
			t := len(ends) - 1
			out = slices.Insert(out, starts[t], lead...)
			ends[t] += len(lead)
			lead = lead[:0]
		}
		out = append(out, held...)
		held = held[:0]
		open = false
	}
	// startCall opens a turn for a call item, or lets it join the open one.
	startCall := func(it *api.Item) {
		if it.Hidden.TurnStart || !open {
			closeTurn()
			starts, ends, resultsEnd = append(starts, len(out)), append(ends, 0), append(resultsEnd, 0)
			open = true
		}
	}
	// endCall notes that the open turn's calls now end here.
	endCall := func() { ends[len(ends)-1] = len(out) }
	// call adds the function call of it, opening a turn or joining the
	// open one, and reports false when the call was already added.
	call := func(it *api.Item) bool {
		key := callKey(it)
		if _, ok := turnOf[key]; ok {
			return false
		}
		if turnOf == nil {
			turnOf = map[string]int{}
		}
		startCall(it)
		turnOf[key] = len(ends) - 1
		out = append(out, api.Item{Type: api.ItemFunctionCall, ID: it.ID, Status: api.ItemCompleted, CallID: modelCallID(it), Name: r.tools.modelName(it), Arguments: it.Arguments})
		endCall()
		return true
	}
	// result adds the result of the call it: held back while its turn is
	// open; a call of a closed turn gets it after that turn's results (a
	// result of no call added, a denied approval's, at once).
	result := func(it *api.Item, output string, isError bool) {
		res := api.Item{Type: api.ItemFunctionCallOutput, ID: it.ID, Status: api.ItemCompleted, CallID: modelCallID(it), Output: output, IsError: isError}
		t, ok := turnOf[callKey(it)]
		switch {
		case ok && open && t == len(ends)-1:
			held = append(held, res)
		case ok:
			at := max(resultsEnd[t], ends[t])
			for at < len(out) && api.IsClientOutput(out[at].Type) {
				at++
				r.modelSteps++
			}
			resultsEnd[t] = at
			if late == nil {
				late = map[int][]api.Item{}
			}
			late[at] = append(late[at], res)
		default:
			closeTurn()
			out = append(out, res)
		}
	}
	var added map[string]bool // the ids of the client calls and outputs added
	for _, l := range lists {
		for i := range l {
			it := &l[i]
			r.modelSteps++
			if (api.IsClientCall(it.Type) || api.IsClientOutput(it.Type)) && it.ID != "" {
				if added == nil {
					added = map[string]bool{}
				}
				if added[it.ID] {
					continue
				}
				added[it.ID] = true
			}
			switch it.Type {
			case api.ItemMCPListTools, api.ItemWebSearchCall, api.ItemToolSearchCall, api.ItemToolSearchOutput:
			case api.ItemMCPCall:
				call(it)
				if it.Executed() {
					if it.Error != "" {
						result(it, it.Error, true)
					} else {
						result(it, it.Output, false)
					}
				}
			case api.ItemMCPApprovalRequest:
				call(it)
				if !approvalsOf().answered[it.ID] {
					result(it, deniedText(nil), true)
				}
			case api.ItemMCPApprovalResponse:
				if !it.Approve {
					req := api.Item{Type: api.ItemMCPApprovalRequest, ID: it.ApprovalRequestID, Hidden: api.ItemHidden{ModelCallID: approvalsOf().callID[it.ApprovalRequestID]}}
					result(&req, deniedText(it), true)
				}
			case api.ItemFunctionCall, api.ItemCustomToolCall, api.ItemShellCall, api.ItemApplyPatchCall,
				api.ItemLocalShellCall, api.ItemComputerCall:
				startCall(it)
				out = append(out, r.tools.modelItem(it))
				endCall()
			case api.ItemMessage:
				if open && len(held) == 0 && it.Role == api.RoleAssistant {
					// Text the model wrote after its calls, in the same
					// turn (before any of their results): it goes with the
					// turn's assistant message, before the calls (Chat
					// Completions wants a turn's results right after its
					// calls), put there as the turn closes.
					lead = append(lead, r.tools.modelItem(it))
					continue
				}
				closeTurn()
				out = append(out, r.tools.modelItem(it))
			default:
				closeTurn()
				out = append(out, r.tools.modelItem(it))
			}
		}
	}
	closeTurn()
	return withLate(out, late)
}

// withLate is out with the items of late each put before the item of out
// at its index (at the end: len(out)), in their order.
func withLate(out []api.Item, late map[int][]api.Item) []api.Item {
	if len(late) == 0 {
		return out
	}
	n := len(out)
	for _, l := range late {
		n += len(l)
	}
	all := make([]api.Item, 0, n)
	for i := range out {
		all = append(all, late[i]...)
		all = append(all, out[i])
	}
	return append(all, late[len(out)]...)
}

// approvalIndex is what modelItems needs to know of a conversation's
// approval requests, found in one pass (a lookup per item scanned every
// item: quadratic in the denials).
type approvalIndex struct {
	// answered are the ids of the approval requests the conversation
	// holds an answer to: an mcp_approval_response, or an mcp_call naming
	// it.
	answered map[string]bool
	// callID is the model call id kept with each approval request's id
	// (the first request of an id; none when unknown).
	callID map[string]string
}

// indexApprovals returns the approvalIndex of lists.
func (r *run) indexApprovals(lists [][]api.Item) *approvalIndex {
	x := &approvalIndex{answered: map[string]bool{}, callID: map[string]string{}}
	for _, l := range lists {
		for i := range l {
			r.modelSteps++
			switch it := &l[i]; it.Type {
			case api.ItemMCPApprovalRequest:
				if _, ok := x.callID[it.ID]; !ok {
					x.callID[it.ID] = it.Hidden.ModelCallID
				}
			case api.ItemMCPApprovalResponse:
				x.answered[it.ApprovalRequestID] = true
			case api.ItemMCPCall:
				if it.ApprovalRequestID != "" {
					x.answered[it.ApprovalRequestID] = true
				}
			}
		}
	}
	return x
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

// closeOpenCalls ends, when the response ends, the stream's open mcp_call
// items: those of whole calls that did not run (their turn paused, or
// max_output_tokens or a content filter ended it after them, or the
// deadline left no time). They stay in_progress in the stored output,
// and a continuation runs them. A background run that hands off leaves
// them open: its next invocation runs them in the same stream, which
// completes each once. An item the assembler closed already (the
// incomplete last item of a cut turn) is left alone, and so is a call a
// failed or cancelled model call cut (api.ItemHidden.Cut): as a cut
// function_call, it gets no done event (assembler.abandon).
func (r *run) closeOpenCalls() {
	for i := range r.resp.Output {
		if it := &r.resp.Output[i]; it.Type == api.ItemMCPCall && it.Status == api.ItemInProgress && !it.Executed() && !it.Hidden.Cut {
			r.em.itemEvent(api.EventOutputItemDone, i, it)
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
			// An MCP server's headers, token and URL query are secrets:
			// the response never holds them.
			hideSecrets(&t)
			out = append(out, t)
			continue
		}
		if s := r.tools.mcpServer(t.HostedName()); s != nil {
			out = append(out, s.echo())
			continue
		}
		defs := []api.ToolDefinition{r.tools.defs[t.HostedName()].def}
		if t.IsOutput() {
			defs = r.att.outputDefs(r)
		}
		for _, def := range defs {
			if r.tools.mcpItems {
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
