package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
)

// Item types.
const (
	ItemMessage            = "message"
	ItemFunctionCall       = "function_call"
	ItemFunctionCallOutput = "function_call_output"
	ItemReasoning          = "reasoning"
	ItemReference          = "item_reference"
	// ItemMCPCall is OpenAI's item for a tool call the server executed:
	// Lambent's hosted tools (server_label "lambent") and MCP tools.
	ItemMCPCall = "mcp_call"
	// ItemCompaction carries a summary of earlier turns, sealed by the
	// gateway in EncryptedContent (POST /v1/responses/compact, a
	// compaction_trigger, server-side compaction).
	ItemCompaction = "compaction"
	// ItemCompactionTrigger (input only, the last item of a create's
	// input) asks for a compaction instead of a model turn: Codex's remote
	// compaction (docs/api.md, "Codex CLI"). Decoding takes it out of the
	// input and sets CreateResponseRequest.CompactNow; anywhere else it is
	// a 400.
	ItemCompactionTrigger = "compaction_trigger"
	// ItemMCPListTools is OpenAI's item listing an MCP server's tools.
	ItemMCPListTools = "mcp_list_tools"
	// ItemMCPApprovalRequest asks the client to approve an MCP tool call.
	ItemMCPApprovalRequest = "mcp_approval_request"
	// ItemMCPApprovalResponse (input) approves or denies an approval request.
	ItemMCPApprovalResponse = "mcp_approval_response"
	// ItemCustomToolCall is the model's call of a custom tool: its Input
	// is free text.
	ItemCustomToolCall = "custom_tool_call"
	// ItemCustomToolCallOutput (input) is the client's result of a custom
	// tool call.
	ItemCustomToolCallOutput = "custom_tool_call_output"
	// ItemShellCall is the model's call of the shell tool: Action holds
	// {"commands", "timeout_ms", "max_output_length"}.
	ItemShellCall = "shell_call"
	// ItemShellCallOutput (input) is the client's result of a shell call:
	// OutputRaw holds its output array ({stdout, stderr, outcome} each).
	ItemShellCallOutput = "shell_call_output"
	// ItemApplyPatchCall is the model's call of the apply_patch tool:
	// Action holds its operation ({"type", "path", "diff"}).
	ItemApplyPatchCall = "apply_patch_call"
	// ItemApplyPatchCallOutput (input) is the client's result of an
	// apply_patch call: status completed or failed, and an output text.
	ItemApplyPatchCallOutput = "apply_patch_call_output"
	// ItemLocalShellCall is the model's call of the local_shell tool:
	// Action holds {"type":"exec","command","timeout_ms",
	// "working_directory","env","user"}.
	ItemLocalShellCall = "local_shell_call"
	// ItemLocalShellCallOutput (input) is the client's result of a
	// local_shell call: Output holds its text.
	ItemLocalShellCallOutput = "local_shell_call_output"
	// ItemComputerCall is the model's call of the computer (or
	// computer_use_preview) tool: Action holds the action ({"type":"click",
	// "x","y","button"}, ...), SafetyChecks its pending_safety_checks.
	ItemComputerCall = "computer_call"
	// ItemComputerCallOutput (input) is the client's result of a computer
	// call: OutputRaw holds its screenshot ({"type":"computer_screenshot",
	// "image_url"|"file_id"}), SafetyChecks its acknowledged_safety_checks.
	ItemComputerCallOutput = "computer_call_output"
	// ItemWebSearchCall (input only) is a search OpenAI's hosted web_search
	// tool ran, replayed by a client that keeps its own history (Codex):
	// Action holds its action ({"type":"search","query"}, open_page, find),
	// when given. The search's results are not in it; Lambent runs no such
	// search and leaves the item out of what the model sees.
	ItemWebSearchCall = "web_search_call"
	// ItemToolSearchCall (input only) is a tool search OpenAI's tool_search
	// tool made, replayed as web_search_call is: Arguments holds its
	// arguments as JSON text ({"query","limit"}, {"paths"}: any value),
	// Execution where it ran ("server" or "client"), CallID its call id
	// (a client-executed search's). Lambent leaves it out of what the
	// model sees.
	ItemToolSearchCall = "tool_search_call"
	// ItemToolSearchOutput (input only) is a tool search's result, replayed
	// as ItemToolSearchCall is: OutputRaw holds the tool definitions it
	// loaded (a JSON array), Execution and CallID are its call's.
	ItemToolSearchOutput = "tool_search_output"
)

// IsClientCall reports whether typ is the item type of a call the client
// executes: function_call, custom_tool_call, and the calls of OpenAI's
// client-executed built-in tools (IsActionCall).
func IsClientCall(typ string) bool {
	return typ == ItemFunctionCall || typ == ItemCustomToolCall || IsActionCall(typ)
}

// IsActionCall reports whether typ is the item type of a call of one of
// OpenAI's client-executed built-in tools, whose Action is the model's
// arguments: shell_call, apply_patch_call, local_shell_call, computer_call.
func IsActionCall(typ string) bool {
	switch typ {
	case ItemShellCall, ItemApplyPatchCall, ItemLocalShellCall, ItemComputerCall:
		return true
	}
	return false
}

// IsClientOutput reports whether typ is the item type of a client's result
// of such a call (function_call_output, custom_tool_call_output,
// shell_call_output, apply_patch_call_output, local_shell_call_output,
// computer_call_output).
func IsClientOutput(typ string) bool {
	switch typ {
	case ItemFunctionCallOutput, ItemCustomToolCallOutput, ItemShellCallOutput, ItemApplyPatchCallOutput,
		ItemLocalShellCallOutput, ItemComputerCallOutput:
		return true
	}
	return false
}

// Id prefixes of the custom tool items.
const (
	// PrefixCustomToolCall is the id prefix of custom_tool_call items.
	PrefixCustomToolCall = "ctc_"
	// PrefixCustomToolCallOutput is the id prefix of custom_tool_call_output items.
	PrefixCustomToolCallOutput = "ctco_"
	// PrefixShellCall is the id prefix of shell_call items.
	PrefixShellCall = "sh_"
	// PrefixShellCallOutput is the id prefix of shell_call_output items.
	PrefixShellCallOutput = "sho_"
	// PrefixApplyPatchCall is the id prefix of apply_patch_call items.
	PrefixApplyPatchCall = "apc_"
	// PrefixApplyPatchCallOutput is the id prefix of apply_patch_call_output items.
	PrefixApplyPatchCallOutput = "apco_"
	// PrefixLocalShellCall is the id prefix of local_shell_call items.
	PrefixLocalShellCall = "lsh_"
	// PrefixLocalShellCallOutput is the id prefix of local_shell_call_output items.
	PrefixLocalShellCallOutput = "lsho_"
	// PrefixComputerCall is the id prefix of computer_call items.
	PrefixComputerCall = "cu_"
	// PrefixComputerCallOutput is the id prefix of computer_call_output items.
	PrefixComputerCallOutput = "cuo_"
	// PrefixWebSearchCall is the id prefix of web_search_call items.
	PrefixWebSearchCall = "ws_"
	// PrefixToolSearchCall is the id prefix of tool_search_call items.
	PrefixToolSearchCall = "tsc_"
	// PrefixToolSearchOutput is the id prefix of tool_search_output items.
	PrefixToolSearchOutput = "tso_"
)

// HostedServerLabel is the server_label of the mcp_call items of Lambent's
// hosted tools.
const HostedServerLabel = "lambent"

// Id prefixes of the MCP items.
const (
	// PrefixMCPCall is the id prefix of mcp_call items.
	PrefixMCPCall = "mcp_"
	// PrefixMCPListTools is the id prefix of mcp_list_tools items.
	PrefixMCPListTools = "mcpl_"
	// PrefixMCPApprovalRequest is the id prefix of mcp_approval_request items.
	PrefixMCPApprovalRequest = "mcpr_"
	// PrefixMCPApprovalResponse is the id prefix of mcp_approval_response items.
	PrefixMCPApprovalResponse = "mcpa_"
)

// Content part types.
const (
	PartInputText     = "input_text"
	PartOutputText    = "output_text"
	PartRefusal       = "refusal"
	PartInputImage    = "input_image"
	PartInputFile     = "input_file"
	PartSummaryText   = "summary_text"
	PartReasoningText = "reasoning_text"
	PartText          = "text"
)

// Message roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleDeveloper = "developer"
)

// Item statuses.
const (
	ItemInProgress = "in_progress"
	ItemCompleted  = "completed"
	ItemIncomplete = "incomplete"
	// ItemFailed is the status of an mcp_call whose execution failed.
	ItemFailed = "failed"
)

// Item is one element of a conversation: a message, a function call, a
// function call's output, reasoning, a compaction (a sealed summary of
// earlier turns), or (in input only) a reference to a stored item. It is a flat struct; MarshalJSON writes only the fields of
// its type.
type Item struct {
	Type   string
	ID     string
	Status string

	// message
	Role    string
	Content []ContentPart
	Phase   string

	// function_call and function_call_output (custom_tool_call and its
	// output too, with Input). Namespace is the namespace tool of a
	// function_call's or custom_tool_call's tool, Name its name there.
	CallID    string
	Name      string
	Namespace string
	Arguments string
	// Input is a custom_tool_call's free-text input.
	Input string
	// Execution is where a tool_search_call's search ran, "server" or
	// "client" (its tool_search_output's too; empty when not given).
	Execution string
	// Action is a shell_call's, local_shell_call's, computer_call's or
	// web_search_call's action or an apply_patch_call's operation (a JSON
	// object; a web_search_call may have none); OutputRaw
	// a shell_call_output's output array, a computer_call_output's
	// screenshot object or a tool_search_output's tools array.
	Action    json.RawMessage
	OutputRaw json.RawMessage
	// SafetyChecks is a computer_call's pending_safety_checks or a
	// computer_call_output's acknowledged_safety_checks (a JSON array).
	SafetyChecks json.RawMessage
	// Output is the function_call_output text; OutputParts its array form.
	Output      string
	OutputParts []ContentPart
	// IsError marks a function_call_output produced from a failed tool
	// execution (a Lambent extension field, written only when true).
	IsError bool

	// reasoning
	Summary []ContentPart
	// EncryptedContent is a reasoning item's opaque state, or a compaction
	// item's sealed summary.
	EncryptedContent string

	// mcp_call (Name, Arguments and Output above): ServerLabel names the
	// server that ran the call; Error is the failure message of a failed
	// call (status "failed"), written as OpenAI's error object.
	// ApprovalRequestID names the mcp_approval_request the call answers.
	// mcp_list_tools has ServerLabel, Tools and Error (the listing's
	// failure); mcp_approval_request has ServerLabel, Name and Arguments;
	// mcp_approval_response has ApprovalRequestID, Approve and Reason.
	ServerLabel       string
	Error             string
	ApprovalRequestID string
	Tools             []MCPTool
	Approve           bool
	Reason            string

	// Hidden is what Lambent keeps of the item beyond its wire shape: it is
	// never written by MarshalJSON, and the stores keep it beside the item
	// (ItemHidden, SetItemHidden).
	Hidden ItemHidden
}

// ItemHidden is what the gateway keeps of a call item it made that OpenAI's
// item shape has no place for (docs/architecture.md, "What the model sees").
type ItemHidden struct {
	// ModelCallID is the call id the model issued for an mcp_call or
	// mcp_approval_request item (a function_call keeps it as its call_id):
	// the model sees its own id again in later model calls.
	ModelCallID string `json:"model_call_id,omitempty"`
	// TurnStart marks the first call of a model turn: the calls of one
	// turn are replayed to the model as one assistant message.
	TurnStart bool `json:"turn_start,omitempty"`
	// Listed marks an mcp_list_tools item the gateway made by listing an
	// operator's server (tools.MCPServer.Trusted) itself. Such a server
	// trusts no other listing: its allowed_tools and approval rules may go
	// by the tools' annotations, which a client's copy of a listing could
	// claim, or a client's own server listed under the operator's label.
	Listed bool `json:"listed,omitempty"`
	// Encrypted is a reasoning item's opaque provider state (a Bedrock
	// signature or redacted reasoning) when the client was not shown it
	// as encrypted_content (the request's include did not ask for
	// IncludeReasoningEncrypted): the model gets it back all the same
	// (Item.ReasoningState).
	Encrypted string `json:"encrypted,omitempty"`
	// Aside marks an output item set aside by validated output
	// (docs/validated-output.md): a failed attempt's answer, the feedback
	// on it, the model's text next to its calls. The model sees it in the
	// run's later calls; a response's output on the wire, a continuation
	// and a conversation do not (Shown).
	Aside bool `json:"aside,omitempty"`
	// Cut marks a call a model call left unfinished: its stream broke off
	// or was cancelled inside it (a failed or cancelled response, where it
	// stays in_progress) or max_output_tokens or the deadline cut it (an
	// incomplete response, where it is incomplete). The response's output shows it with the
	// arguments the model had sent, but a continuation and a conversation
	// leave it out (Continued), so the model never gets it back, nor a
	// result for it, and it never runs.
	Cut bool `json:"cut,omitempty"`
}

// Shown returns the items of items that are not set aside
// (ItemHidden.Aside): a response's output as clients, continuations and
// conversations get it. It is items itself when none is set aside.
func Shown(items []Item) []Item {
	return without(items, func(it Item) bool { return it.Hidden.Aside })
}

// Continued returns the items of items a continuation and a conversation
// carry on with: those shown (Shown), without the calls a model call cut
// (ItemHidden.Cut). It is items itself when it leaves none out.
func Continued(items []Item) []Item {
	return without(items, func(it Item) bool { return it.Hidden.Aside || it.Hidden.Cut })
}

// without returns items without those drop reports, in a copy; items
// itself when it drops none.
func without(items []Item, drop func(Item) bool) []Item {
	if !slices.ContainsFunc(items, drop) {
		return items
	}
	return slices.DeleteFunc(slices.Clone(items), drop)
}

// IncludeReasoningEncrypted is the include value that shows reasoning
// items' encrypted_content.
const IncludeReasoningEncrypted = "reasoning.encrypted_content"

// ReasoningState is a reasoning item's opaque provider state: its
// encrypted_content, or the state kept hidden from the client.
func (it *Item) ReasoningState() string {
	return cmp.Or(it.EncryptedContent, it.Hidden.Encrypted)
}

// ShowReasoningState sets the encrypted_content of the reasoning items of
// items that have their state hidden (a read whose include asks for
// IncludeReasoningEncrypted), in place.
func ShowReasoningState(items []Item) {
	for i := range items {
		if it := &items[i]; it.Type == ItemReasoning && it.EncryptedContent == "" {
			it.EncryptedContent = it.Hidden.Encrypted
		}
	}
}

// HiddenByID returns the hidden fields of the items of lists that have any,
// by item id (nil when none has): the stored companion of the items' wire
// shape.
func HiddenByID(lists ...[]Item) map[string]ItemHidden {
	var m map[string]ItemHidden
	for _, l := range lists {
		for i := range l {
			if h := l[i].Hidden; h != (ItemHidden{}) && l[i].ID != "" {
				if m == nil {
					m = map[string]ItemHidden{}
				}
				m[l[i].ID] = h
			}
		}
	}
	return m
}

// SetHidden restores the hidden fields m (from HiddenByID) on the items of
// lists, in place.
func SetHidden(m map[string]ItemHidden, lists ...[]Item) {
	if len(m) == 0 {
		return
	}
	for _, l := range lists {
		for i := range l {
			if h, ok := m[l[i].ID]; ok {
				l[i].Hidden = h
			}
		}
	}
}

// Executed reports whether an mcp_call has its result: an output
// (completed) or an error (failed).
func (it *Item) Executed() bool {
	return it.Status == ItemCompleted || it.Status == ItemFailed || it.Error != ""
}

// ContentPart is one part of a message's content.
type ContentPart struct {
	Type        string
	Text        string
	Refusal     string
	Annotations []json.RawMessage
	Logprobs    []json.RawMessage
	// input_image
	ImageURL string
	Detail   string
	// input_file
	FileID   string
	FileData string
	FileURL  string
	Filename string
}

// Text returns the concatenated text of an item's text-bearing content.
func (it *Item) Text() string {
	var b []byte
	for _, p := range it.Content {
		switch p.Type {
		case PartInputText, PartOutputText, PartText, PartSummaryText, PartReasoningText:
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// OutputText returns the function_call_output's text, joining array parts.
func (it *Item) OutputText() string {
	if it.OutputParts == nil {
		return it.Output
	}
	var b []byte
	for _, p := range it.OutputParts {
		b = append(b, p.Text...)
	}
	return string(b)
}

// Screenshot returns the input_image a computer_call_output's screenshot
// is to the model (its image_url and file_id), and false when the item is
// not one or its output names no image.
func (it *Item) Screenshot() (ContentPart, bool) {
	if it.Type != ItemComputerCallOutput {
		return ContentPart{}, false
	}
	var shot struct {
		ImageURL string `json:"image_url"`
		FileID   string `json:"file_id"`
	}
	if json.Unmarshal(it.OutputRaw, &shot) != nil || (shot.ImageURL == "" && shot.FileID == "") {
		return ContentPart{}, false
	}
	return ContentPart{Type: PartInputImage, ImageURL: shot.ImageURL, FileID: shot.FileID}, true
}

// MarshalJSON writes the item in the shape of its type:
//
//	message:              type, id, status, role, content ([] when nil), phase (omitted when empty)
//	function_call:        type, id, call_id, name, arguments, status
//	function_call_output: type, id, call_id, output (OutputParts when non-nil, else Output), status, is_error (only when true)
//	custom_tool_call:     type, id, call_id, namespace (omitted when empty), name, input, status
//	custom_tool_call_output: type, id, call_id, output (as function_call_output's), status
//	shell_call:           type, id, call_id, action, status
//	shell_call_output:    type, id, call_id, output (OutputRaw), status
//	apply_patch_call:     type, id, call_id, operation (Action), status
//	apply_patch_call_output: type, id, call_id, status, output (null when empty)
//	local_shell_call:     type, id, call_id, action, status
//	local_shell_call_output: type, id, call_id, output, status
//	computer_call:        type, id, call_id, action, pending_safety_checks ([] when empty), status
//	computer_call_output: type, id, call_id, output (OutputRaw), acknowledged_safety_checks ([] when empty), status
//	web_search_call:      type, id, status, action (omitted when empty)
//	tool_search_call:     type, id, call_id (null when empty), execution (omitted when empty), arguments, status
//	tool_search_output:   type, id, call_id (null when empty), execution (omitted when empty), tools (OutputRaw), status
//	reasoning:            type, id, summary ([] when nil), then content, encrypted_content and status when non-empty
//	item_reference:       type, id
//	compaction:           type, id, encrypted_content
//	mcp_call:             type, id, server_label, name, arguments, output, error, approval_request_id, status
//	mcp_list_tools:       type, id, server_label, tools ([] when nil), error (omitted when empty, as
//	                      OpenAI omits it: the Vercel AI SDK refuses a null one)
//	mcp_approval_request: type, id, server_label, name, arguments
//	mcp_approval_response: type, id, approval_request_id, approve, reason (null when empty)
//
// Any other type is an error.
func (it Item) MarshalJSON() ([]byte, error) {
	v, err := it.wire()
	if err != nil {
		return nil, err
	}
	return wirejson.Marshal(v)
}

// wire is the value MarshalJSON encodes: a struct of the fields of the
// item's type, in their order.
func (it *Item) wire() (any, error) {
	switch it.Type {
	case ItemMessage:
		return struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Status  string `json:"status"`
			Role    string `json:"role"`
			Content []any  `json:"content"`
			Phase   string `json:"phase,omitempty"`
		}{it.Type, it.ID, it.Status, it.Role, partWires(it.Content), it.Phase}, nil
	case ItemFunctionCall:
		return struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Namespace string `json:"namespace,omitempty"`
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Namespace, it.Name, it.Arguments, it.Status}, nil
	case ItemCustomToolCall:
		return struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			CallID    string `json:"call_id"`
			Namespace string `json:"namespace,omitempty"`
			Name      string `json:"name"`
			Input     string `json:"input"`
			Status    string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Namespace, it.Name, it.Input, it.Status}, nil
	case ItemShellCall, ItemLocalShellCall:
		return struct {
			Type   string          `json:"type"`
			ID     string          `json:"id"`
			CallID string          `json:"call_id"`
			Action json.RawMessage `json:"action"`
			Status string          `json:"status"`
		}{it.Type, it.ID, it.CallID, orEmptyObject(it.Action), it.Status}, nil
	case ItemApplyPatchCall:
		return struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			CallID    string          `json:"call_id"`
			Operation json.RawMessage `json:"operation"`
			Status    string          `json:"status"`
		}{it.Type, it.ID, it.CallID, orEmptyObject(it.Action), it.Status}, nil
	case ItemComputerCall:
		return struct {
			Type                string          `json:"type"`
			ID                  string          `json:"id"`
			CallID              string          `json:"call_id"`
			Action              json.RawMessage `json:"action"`
			PendingSafetyChecks json.RawMessage `json:"pending_safety_checks"`
			Status              string          `json:"status"`
		}{it.Type, it.ID, it.CallID, orEmptyObject(it.Action), orEmptyArray(it.SafetyChecks), it.Status}, nil
	case ItemWebSearchCall:
		return struct {
			Type   string          `json:"type"`
			ID     string          `json:"id"`
			Status string          `json:"status"`
			Action json.RawMessage `json:"action,omitempty"`
		}{it.Type, it.ID, it.Status, it.Action}, nil
	case ItemToolSearchCall:
		return struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			CallID    *string         `json:"call_id"`
			Execution string          `json:"execution,omitempty"`
			Arguments json.RawMessage `json:"arguments"`
			Status    string          `json:"status"`
		}{it.Type, it.ID, nilIfEmpty(it.CallID), it.Execution, json.RawMessage(it.Arguments), it.Status}, nil
	case ItemToolSearchOutput:
		return struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			CallID    *string         `json:"call_id"`
			Execution string          `json:"execution,omitempty"`
			Tools     json.RawMessage `json:"tools"`
			Status    string          `json:"status"`
		}{it.Type, it.ID, nilIfEmpty(it.CallID), it.Execution, orEmptyArray(it.OutputRaw), it.Status}, nil
	case ItemLocalShellCallOutput:
		return struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			CallID string `json:"call_id"`
			Output string `json:"output"`
			Status string `json:"status"`
		}{it.Type, it.ID, it.CallID, it.Output, it.Status}, nil
	case ItemComputerCallOutput:
		return struct {
			Type                     string          `json:"type"`
			ID                       string          `json:"id"`
			CallID                   string          `json:"call_id"`
			Output                   json.RawMessage `json:"output"`
			AcknowledgedSafetyChecks json.RawMessage `json:"acknowledged_safety_checks"`
			Status                   string          `json:"status"`
		}{it.Type, it.ID, it.CallID, orEmptyObject(it.OutputRaw), orEmptyArray(it.SafetyChecks), it.Status}, nil
	case ItemShellCallOutput:
		return struct {
			Type   string          `json:"type"`
			ID     string          `json:"id"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
			Status string          `json:"status"`
		}{it.Type, it.ID, it.CallID, orEmptyArray(it.OutputRaw), it.Status}, nil
	case ItemApplyPatchCallOutput:
		return struct {
			Type   string  `json:"type"`
			ID     string  `json:"id"`
			CallID string  `json:"call_id"`
			Status string  `json:"status"`
			Output *string `json:"output"`
		}{it.Type, it.ID, it.CallID, it.Status, nilIfEmpty(it.Output)}, nil
	case ItemCustomToolCallOutput:
		var output any = it.Output
		if it.OutputParts != nil {
			output = it.OutputParts
		}
		return struct {
			Type   string `json:"type"`
			ID     string `json:"id"`
			CallID string `json:"call_id"`
			Output any    `json:"output"`
			Status string `json:"status"`
		}{it.Type, it.ID, it.CallID, output, it.Status}, nil
	case ItemFunctionCallOutput:
		var output any = it.Output
		if it.OutputParts != nil {
			output = it.OutputParts
		}
		return struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			CallID  string `json:"call_id"`
			Output  any    `json:"output"`
			Status  string `json:"status"`
			IsError bool   `json:"is_error,omitempty"`
		}{it.Type, it.ID, it.CallID, output, it.Status, it.IsError}, nil
	case ItemReasoning:
		return struct {
			Type             string `json:"type"`
			ID               string `json:"id"`
			Summary          []any  `json:"summary"`
			Content          []any  `json:"content,omitempty"`
			EncryptedContent string `json:"encrypted_content,omitempty"`
			Status           string `json:"status,omitempty"`
		}{it.Type, it.ID, partWires(it.Summary), partWires(it.Content), it.EncryptedContent, it.Status}, nil
	case ItemReference:
		return struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}{it.Type, it.ID}, nil
	case ItemMCPCall:
		var output *string
		if it.Output != "" || it.Status == ItemCompleted {
			output = &it.Output
		}
		var mcpErr *mcpError
		if it.Error != "" {
			mcpErr = &mcpError{Type: "mcp_tool_execution_error", Content: []mcpErrorText{{Type: "text", Text: it.Error}}}
		}
		return struct {
			Type              string    `json:"type"`
			ID                string    `json:"id"`
			ServerLabel       string    `json:"server_label"`
			Name              string    `json:"name"`
			Arguments         string    `json:"arguments"`
			Output            *string   `json:"output"`
			Error             *mcpError `json:"error"`
			ApprovalRequestID *string   `json:"approval_request_id"`
			Status            string    `json:"status"`
		}{it.Type, it.ID, it.ServerLabel, it.Name, it.Arguments, output, mcpErr, nilIfEmpty(it.ApprovalRequestID), it.Status}, nil
	case ItemCompaction:
		return struct {
			Type             string `json:"type"`
			ID               string `json:"id"`
			EncryptedContent string `json:"encrypted_content"`
		}{it.Type, it.ID, it.EncryptedContent}, nil
	case ItemMCPListTools:
		return struct {
			Type        string    `json:"type"`
			ID          string    `json:"id"`
			ServerLabel string    `json:"server_label"`
			Tools       []MCPTool `json:"tools"`
			Error       string    `json:"error,omitempty"`
		}{it.Type, it.ID, it.ServerLabel, orEmpty(it.Tools), it.Error}, nil
	case ItemMCPApprovalRequest:
		return struct {
			Type        string `json:"type"`
			ID          string `json:"id"`
			ServerLabel string `json:"server_label"`
			Name        string `json:"name"`
			Arguments   string `json:"arguments"`
		}{it.Type, it.ID, it.ServerLabel, it.Name, it.Arguments}, nil
	case ItemMCPApprovalResponse:
		return struct {
			Type              string  `json:"type"`
			ID                string  `json:"id"`
			ApprovalRequestID string  `json:"approval_request_id"`
			Approve           bool    `json:"approve"`
			Reason            *string `json:"reason"`
		}{it.Type, it.ID, it.ApprovalRequestID, it.Approve, nilIfEmpty(it.Reason)}, nil
	}
	return nil, fmt.Errorf("api: cannot marshal item of type %q", it.Type)
}

// mcpError is OpenAI's error object of a failed mcp_call
// (McpToolCallErrorMcpToolExecutionError).
type mcpError struct {
	Type    string         `json:"type"`
	Content []mcpErrorText `json:"content"`
}

type mcpErrorText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// mcpErrorMessage reads an mcp_call's error in any form clients send back:
// a string, or an object with a message or text content.
func mcpErrorMessage(raw json.RawMessage) string {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if decodes(raw, &s) {
		return s
	}
	var o struct {
		Message string         `json:"message"`
		Content []mcpErrorText `json:"content"`
	}
	if decodes(raw, &o) {
		var b strings.Builder
		b.WriteString(o.Message)
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return string(raw)
}

// orEmptyObject is raw, or {} when empty.
func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// orEmptyArray is raw, or [] when empty.
func orEmptyArray(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("[]")
	}
	return raw
}

// orEmpty returns s, or an empty slice when s is nil, so that it is
// written as [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// wireItemIn is the union of every input item's fields.
type wireItemIn struct {
	Type             *string         `json:"type"`
	ID               string          `json:"id"`
	Status           string          `json:"status"`
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	Phase            string          `json:"phase"`
	CallID           string          `json:"call_id"`
	Name             string          `json:"name"`
	Namespace        string          `json:"namespace"`
	Arguments        json.RawMessage `json:"arguments"`
	Input            *string         `json:"input"`
	Action           json.RawMessage `json:"action"`
	Operation        json.RawMessage `json:"operation"`
	PendingChecks    json.RawMessage `json:"pending_safety_checks"`
	AckChecks        json.RawMessage `json:"acknowledged_safety_checks"`
	Output           json.RawMessage `json:"output"`
	IsError          bool            `json:"is_error"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent *string         `json:"encrypted_content"`
	ServerLabel      string          `json:"server_label"`
	Error            json.RawMessage `json:"error"`
	ApprovalRequest  *string         `json:"approval_request_id"`
	Tools            json.RawMessage `json:"tools"`
	Execution        string          `json:"execution"`
	Approve          *bool           `json:"approve"`
	Reason           *string         `json:"reason"`
}

// UnmarshalJSON decodes an item in any of its accepted input shapes. A
// message may omit "type" (the "easy input message" form) and give content
// as a plain string; so may an item reference ({"id"} alone). Shape errors are returned as *Error with the param
// relative to the item (the caller prefixes the path).
func (it *Item) UnmarshalJSON(data []byte) error {
	var w wireItemIn
	if err := unmarshal(data, &w); err != nil {
		return InvalidRequest("", "invalid item: %s", jsonErrText(err))
	}
	typ := ItemMessage
	if w.Type != nil {
		typ = *w.Type
	}
	*it = Item{Type: typ, ID: w.ID, Status: w.Status}
	// Arguments are a string (function_call, mcp_call,
	// mcp_approval_request), but a tool_search_call's: any JSON value.
	var args string
	if typ != ItemToolSearchCall {
		var err error
		if args, err = stringField("arguments", w.Arguments); err != nil {
			return err
		}
	}
	switch typ {
	case ItemMessage:
		it.Role, it.Phase = w.Role, w.Phase
		parts, err := decodeContent(w.Content, "content")
		if err != nil {
			return err
		}
		it.Content = parts
	case ItemFunctionCall:
		it.CallID, it.Name, it.Namespace = w.CallID, w.Name, w.Namespace
		it.Arguments = args
	case ItemCustomToolCall:
		it.CallID, it.Name, it.Namespace = w.CallID, w.Name, w.Namespace
		if w.Input == nil {
			return InvalidRequest("input", "missing required parameter: input")
		}
		it.Input = *w.Input
	case ItemShellCall, ItemApplyPatchCall, ItemLocalShellCall, ItemComputerCall:
		it.CallID, it.Action = w.CallID, w.Action
		param := "action"
		if typ == ItemApplyPatchCall {
			param, it.Action = "operation", w.Operation
		}
		if len(it.Action) == 0 || it.Action[0] != '{' {
			return InvalidRequest(param, "missing required parameter: %s (an object)", param)
		}
		if typ == ItemComputerCall && len(w.PendingChecks) > 0 && w.PendingChecks[0] == '[' {
			it.SafetyChecks = w.PendingChecks
		}
	case ItemWebSearchCall:
		if len(w.Action) > 0 && !isNull(w.Action) {
			if err := checkWebSearchAction(w.Action); err != nil {
				return err
			}
			it.Action = w.Action
		}
	case ItemToolSearchCall:
		it.CallID, it.Execution = w.CallID, w.Execution
		if len(w.Arguments) == 0 || isNull(w.Arguments) {
			return InvalidRequestCode("arguments", "missing_required_parameter", "Missing required parameter: 'arguments'.")
		}
		if err := checkDepth("arguments", w.Arguments); err != nil {
			return err
		}
		it.Arguments = string(w.Arguments)
	case ItemToolSearchOutput:
		it.CallID, it.Execution = w.CallID, w.Execution
		if err := checkLoadedTools(w.Tools); err != nil {
			return err
		}
		it.OutputRaw = w.Tools
	case ItemLocalShellCallOutput:
		// OpenAI's SDKs name the call by "id" (the call id the model
		// issued); "call_id" is accepted too.
		it.CallID = cmp.Or(w.CallID, w.ID)
		if w.CallID == "" {
			it.ID = "" // the id was the call's: the item gets its own
		}
		if len(w.Output) == 0 || w.Output[0] != '"' {
			return InvalidRequest("output", "missing required parameter: output (a string)")
		}
		if err := unmarshal(w.Output, &it.Output); err != nil {
			return InvalidRequest("output", "invalid output: %s", jsonErrText(err))
		}
	case ItemComputerCallOutput:
		it.CallID, it.OutputRaw = w.CallID, w.Output
		if len(it.OutputRaw) == 0 || it.OutputRaw[0] != '{' {
			return InvalidRequest("output", "missing required parameter: output (a computer_screenshot object)")
		}
		if len(w.AckChecks) > 0 && w.AckChecks[0] == '[' {
			it.SafetyChecks = w.AckChecks
		}
	case ItemShellCallOutput:
		it.CallID, it.OutputRaw = w.CallID, w.Output
		if len(it.OutputRaw) == 0 || it.OutputRaw[0] != '[' {
			return InvalidRequest("output", "missing required parameter: output (an array)")
		}
	case ItemApplyPatchCallOutput:
		it.CallID = w.CallID
		if len(w.Output) > 0 && w.Output[0] == '"' {
			if err := unmarshal(w.Output, &it.Output); err != nil {
				return InvalidRequest("output", "invalid output: %s", jsonErrText(err))
			}
		}
	case ItemFunctionCallOutput, ItemCustomToolCallOutput:
		it.CallID = w.CallID
		if typ == ItemFunctionCallOutput {
			it.IsError = w.IsError
		}
		if len(w.Output) == 0 || bytes.Equal(w.Output, []byte("null")) {
			return InvalidRequest("output", "missing required parameter: output")
		}
		if w.Output[0] == '"' {
			if err := unmarshal(w.Output, &it.Output); err != nil {
				return InvalidRequest("output", "invalid output: %s", jsonErrText(err))
			}
		} else {
			parts, err := decodeContent(w.Output, "output")
			if err != nil {
				return err
			}
			it.OutputParts = parts
		}
	case ItemReasoning:
		summary, err := decodeSummary(w.Summary)
		if err != nil {
			return err
		}
		it.Summary = summary
		if w.EncryptedContent != nil {
			it.EncryptedContent = *w.EncryptedContent
		}
		if len(w.Content) > 0 && !bytes.Equal(w.Content, []byte("null")) {
			parts, err := decodeContent(w.Content, "content")
			if err != nil {
				return err
			}
			it.Content = parts
		}
	case ItemReference:
	case ItemMCPCall:
		it.ServerLabel, it.Name, it.Error = w.ServerLabel, w.Name, mcpErrorMessage(w.Error)
		it.Arguments = args
		if w.ApprovalRequest != nil {
			it.ApprovalRequestID = *w.ApprovalRequest
		}
		if len(w.Output) > 0 && w.Output[0] == '"' {
			if err := unmarshal(w.Output, &it.Output); err != nil {
				return InvalidRequest("output", "invalid output: %s", jsonErrText(err))
			}
			if it.Status == "" || it.Status == ItemInProgress {
				it.Status = ItemCompleted
			}
		}
		if it.Error != "" {
			it.Status = ItemFailed
		}
	case ItemCompactionTrigger:
	case ItemCompaction:
		if w.EncryptedContent == nil || *w.EncryptedContent == "" {
			return InvalidRequest("encrypted_content", "missing required parameter: encrypted_content")
		}
		it.EncryptedContent = *w.EncryptedContent
	case ItemMCPListTools:
		it.ServerLabel, it.Error = w.ServerLabel, mcpErrorMessage(w.Error)
		if len(w.Tools) > 0 && !isNull(w.Tools) {
			if w.Tools[0] == '[' {
				if err := checkArrayLen("tools", w.Tools); err != nil {
					return err
				}
			}
			if err := into("tools", w.Tools, &it.Tools); err != nil {
				return err
			}
		}
		if it.ServerLabel == "" {
			return InvalidRequest("server_label", "missing required parameter: server_label")
		}
		for j, t := range it.Tools {
			if t.Name == "" {
				return InvalidRequest("tools["+strconv.Itoa(j)+"].name", "missing required parameter: name")
			}
		}
	case ItemMCPApprovalRequest:
		it.ServerLabel, it.Name = w.ServerLabel, w.Name
		it.Arguments = args
		if it.ID == "" {
			return InvalidRequest("id", "missing required parameter: id")
		}
	case ItemMCPApprovalResponse:
		if w.ApprovalRequest == nil || *w.ApprovalRequest == "" {
			return InvalidRequest("approval_request_id", "missing required parameter: approval_request_id")
		}
		if w.Approve == nil {
			return InvalidRequest("approve", "missing required parameter: approve")
		}
		it.ApprovalRequestID, it.Approve = *w.ApprovalRequest, *w.Approve
		if w.Reason != nil {
			it.Reason = *w.Reason
		}
	default:
		return InvalidRequest("type", "unsupported item type %q; supported: message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, shell_call, shell_call_output, apply_patch_call, apply_patch_call_output, local_shell_call, local_shell_call_output, computer_call, computer_call_output, web_search_call, tool_search_call, tool_search_output, reasoning, item_reference, mcp_call, mcp_list_tools, mcp_approval_request, mcp_approval_response, compaction, compaction_trigger", typ)
	}
	return nil
}

// decodeSummary decodes a reasoning item's summary: absent, null or an
// array of parts, counted before any is decoded (checkArrayLen).
func decodeSummary(raw json.RawMessage) ([]ContentPart, error) {
	const param = "summary"
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, InvalidRequest(param, "invalid type for %s: expected an array of summary parts", param)
	}
	return decodeParts(param, raw)
}

// decodeParts decodes the array of content parts raw, counted before any
// is decoded (checkArrayLen); a part's error names it as param[j].
func decodeParts(param string, raw json.RawMessage) ([]ContentPart, error) {
	if err := checkArrayLen(param, raw); err != nil {
		return nil, err
	}
	return decodeElems(param, raw, func(j int, r json.RawMessage, p *ContentPart) error {
		if err := unmarshal(r, p); err != nil {
			return prefixParam(err, param+"["+strconv.Itoa(j)+"]")
		}
		return nil
	})
}

func decodeContent(raw json.RawMessage, param string) ([]ContentPart, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, InvalidRequest(param, "missing required parameter: %s", param)
	}
	if raw[0] == '"' {
		var s string
		if err := unmarshal(raw, &s); err != nil {
			return nil, InvalidRequest(param, "invalid %s: %s", param, jsonErrText(err))
		}
		return []ContentPart{{Type: PartInputText, Text: s}}, nil
	}
	if raw[0] != '[' {
		return nil, InvalidRequest(param, "invalid type for %s: expected a string or an array of content parts", param)
	}
	return decodeParts(param, raw)
}

type wirePartIn struct {
	Type        string          `json:"type"`
	Text        *string         `json:"text"`
	Refusal     *string         `json:"refusal"`
	Annotations json.RawMessage `json:"annotations"`
	Logprobs    json.RawMessage `json:"logprobs"`
	ImageURL    string          `json:"image_url"`
	Detail      string          `json:"detail"`
	FileID      string          `json:"file_id"`
	FileData    string          `json:"file_data"`
	FileURL     string          `json:"file_url"`
	Filename    string          `json:"filename"`
}

// decodeValues decodes a part's array of JSON values (param names it),
// counted before any is decoded (checkArrayLen); absent or null is nil.
func decodeValues(param string, raw json.RawMessage) ([]json.RawMessage, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if err := checkArrayLen(param, raw); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	if err := unmarshal(raw, &out); err != nil {
		return nil, InvalidRequest(param, "invalid %s: %s", param, jsonErrText(err))
	}
	return out, nil
}

// UnmarshalJSON decodes a content part, checking its type and required fields.
func (p *ContentPart) UnmarshalJSON(data []byte) error {
	var w wirePartIn
	if err := unmarshal(data, &w); err != nil {
		return InvalidRequest("", "invalid content part: %s", jsonErrText(err))
	}
	annotations, err := decodeValues("annotations", w.Annotations)
	if err != nil {
		return err
	}
	logprobs, err := decodeValues("logprobs", w.Logprobs)
	if err != nil {
		return err
	}
	*p = ContentPart{Type: w.Type, Annotations: annotations, Logprobs: logprobs,
		ImageURL: w.ImageURL, Detail: w.Detail, FileID: w.FileID, FileData: w.FileData, FileURL: w.FileURL, Filename: w.Filename}
	switch w.Type {
	case PartInputText, PartOutputText, PartText, PartSummaryText, PartReasoningText:
		if w.Text == nil {
			return InvalidRequest("text", "missing required parameter: text")
		}
		p.Text = *w.Text
	case PartRefusal:
		if w.Refusal == nil {
			return InvalidRequest("refusal", "missing required parameter: refusal")
		}
		p.Refusal = *w.Refusal
	case PartInputImage:
		if w.ImageURL == "" && w.FileID == "" {
			return InvalidRequest("image_url", "input_image needs image_url or file_id")
		}
	case PartInputFile:
	default:
		return InvalidRequest("type", "unsupported content part type %q", w.Type)
	}
	return nil
}

// MarshalJSON writes the part in the shape of its type:
//
//	output_text: type, text, annotations ([] when nil), logprobs (omitted when empty)
//	refusal:     type, refusal
//	input_image: type, image_url and file_id (omitted when empty), detail ("auto" when empty)
//	input_file:  type, file_id, file_data, file_url, filename (each omitted when empty)
//	other:       type, text
func (p ContentPart) MarshalJSON() ([]byte, error) { return wirejson.Marshal(p.wire()) }

// wire is the part in the shape MarshalJSON writes. Items encode their
// parts' shapes (partWires) rather than calling MarshalJSON for each: the
// encoder parses what a MarshalJSON returns again.
func (p ContentPart) wire() any {
	switch p.Type {
	case PartOutputText:
		return struct {
			Type        string            `json:"type"`
			Text        string            `json:"text"`
			Annotations []json.RawMessage `json:"annotations"`
			Logprobs    []json.RawMessage `json:"logprobs,omitempty"`
		}{p.Type, p.Text, orEmpty(p.Annotations), p.Logprobs}
	case PartRefusal:
		return struct {
			Type    string `json:"type"`
			Refusal string `json:"refusal"`
		}{p.Type, p.Refusal}
	case PartInputImage:
		detail := p.Detail
		if detail == "" {
			detail = "auto"
		}
		return struct {
			Type     string `json:"type"`
			ImageURL string `json:"image_url,omitempty"`
			FileID   string `json:"file_id,omitempty"`
			Detail   string `json:"detail"`
		}{p.Type, p.ImageURL, p.FileID, detail}
	case PartInputFile:
		return struct {
			Type     string `json:"type"`
			FileID   string `json:"file_id,omitempty"`
			FileData string `json:"file_data,omitempty"`
			FileURL  string `json:"file_url,omitempty"`
			Filename string `json:"filename,omitempty"`
		}{p.Type, p.FileID, p.FileData, p.FileURL, p.Filename}
	}
	return struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}{p.Type, p.Text}
}

// partWires is parts in the shape they are written in (never nil: an
// empty list is written []).
func partWires(parts []ContentPart) []any {
	out := make([]any, len(parts))
	for i := range parts {
		out[i] = parts[i].wire()
	}
	return out
}

// stringField decodes the string field v (param names it): "" when absent
// or null.
func stringField(param string, v json.RawMessage) (string, error) {
	if len(v) == 0 || isNull(v) {
		return "", nil
	}
	var s string
	if err := into(param, v, &s); err != nil {
		return "", err
	}
	return s, nil
}
