package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
)

// Client tools beyond plain functions (docs/tools.md, "Tool types"): the
// model sees every client tool as an ordinary function, and its calls come
// back to the client as the item OpenAI sends for that tool.
//
//   - A namespace tool's functions and custom tools are offered under
//     namespacedName; their calls come back with name and namespace
//     separate (function_call or custom_tool_call with "namespace").
//   - A custom tool (free-text input) is offered as a function of one
//     string parameter, "input" (customParameters); its calls come back as
//     custom_tool_call items whose input is that string, and the client
//     answers with custom_tool_call_output.
//   - OpenAI's client-executed built-in tools (shell, apply_patch,
//     local_shell, computer, computer_use_preview) are offered as functions
//     whose arguments are the call's action (operation); their calls come
//     back as shell_call, apply_patch_call, local_shell_call and
//     computer_call items (api.IsActionCall), answered with their *_output
//     items.
//
// The model's history shows them as function calls again (modelItem).

// clientRoute is how a client tool's calls appear in output: the item
// type, the tool's namespace tool (empty for a top-level tool) and its
// name there (empty for shell and apply_patch).
type clientRoute struct {
	typ       string
	namespace string
	name      string
}

// key is the route's key in toolset.clientNames.
func (c *clientRoute) key() clientKey { return clientKey{c.typ, c.namespace, c.name} }

// clientKey names a client tool by the type of its calls' items, its
// namespace and its name.
type clientKey struct{ typ, namespace, name string }

// namespacedName is the function name the model sees the tool name of
// the namespace tool namespace by: the two joined by "__", or joined as
// they are when the namespace already ends in "_" (Codex names its MCP
// namespaces "mcp__<server>__"). The reverse route is the toolset's
// (toolset.defs[model name].client); a name already taken gets a number
// (toolset.freeName), and the provider's name mapping makes any name
// valid for the model.
func namespacedName(namespace, name string) string {
	if strings.HasSuffix(namespace, "_") {
		return namespace + name
	}
	return namespace + "__" + name
}

// JSON Schemas of the tools Lambent defines for the model.
const (
	// customParameters: a custom tool's one string, its input.
	customParameters = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's input, as free text."}},"required":["input"],"additionalProperties":false}`
	// shellParameters: a shell_call's action.
	shellParameters = `{"type":"object","properties":{"commands":{"type":"array","items":{"type":"string"},"description":"The shell commands to run, in order."},"timeout_ms":{"type":"integer","description":"How long the commands may run, in milliseconds."},"max_output_length":{"type":"integer","description":"The most characters of output to return."}},"required":["commands"],"additionalProperties":false}`
	// applyPatchParameters: an apply_patch_call's operation.
	applyPatchParameters = `{"type":"object","properties":{"type":{"type":"string","enum":["create_file","update_file","delete_file"],"description":"What to do with the file."},"path":{"type":"string","description":"The file's path."},"diff":{"type":"string","description":"create_file: the file's content as a V4A diff (each line prefixed with +); update_file: the V4A diff of the change."}},"required":["type","path"],"additionalProperties":false}`
	// localShellParameters: a local_shell_call's exec action (without its
	// "type", which is always "exec").
	localShellParameters = `{"type":"object","properties":{"command":{"type":"array","items":{"type":"string"},"description":"The command and its arguments (argv)."},"timeout_ms":{"type":"integer","description":"How long the command may run, in milliseconds."},"working_directory":{"type":"string","description":"The directory to run the command in."},"env":{"type":"object","additionalProperties":{"type":"string"},"description":"Environment variables to set for the command."},"user":{"type":"string","description":"The user to run the command as."}},"required":["command"],"additionalProperties":false}`
	// computerParameters: a computer_call's action.
	computerParameters = `{"type":"object","properties":{"type":{"type":"string","enum":["click","double_click","drag","keypress","move","screenshot","scroll","type","wait"],"description":"The action."},"x":{"type":"integer","description":"click, double_click, move, scroll: the x coordinate."},"y":{"type":"integer","description":"click, double_click, move, scroll: the y coordinate."},"button":{"type":"string","enum":["left","right","wheel","back","forward"],"description":"click: the mouse button."},"scroll_x":{"type":"integer","description":"scroll: the horizontal scroll distance."},"scroll_y":{"type":"integer","description":"scroll: the vertical scroll distance."},"keys":{"type":"array","items":{"type":"string"},"description":"keypress: the keys to press together."},"text":{"type":"string","description":"type: the text to type."},"path":{"type":"array","items":{"type":"object","properties":{"x":{"type":"integer"},"y":{"type":"integer"}},"required":["x","y"]},"description":"drag: the points of the drag path."}},"required":["type"],"additionalProperties":false}`
)

// addClient adds the function or custom tool t of the namespace tool
// namespace ("" for a top-level tool) under the name the model sees it by.
func (ts *toolset) addClient(namespace string, t *api.Tool) {
	ct := &clientRoute{typ: api.ItemFunctionCall, namespace: namespace, name: t.Name}
	def := api.ToolDefinition{Name: t.Name, Parameters: t.Parameters, Strict: t.Strict}
	if namespace != "" {
		def.Name = ts.freeName(namespacedName(namespace, t.Name))
	}
	if t.Description != nil {
		def.Description = *t.Description
	}
	if t.Type == api.ToolCustom {
		ct.typ = api.ItemCustomToolCall
		def.Parameters, def.Strict = json.RawMessage(customParameters), nil
		def.Description += customFormatNote(t.Format)
	}
	ts.addRoute(ct, def)
}

// addBuiltinClient adds OpenAI's client-executed tool t (shell,
// apply_patch, local_shell, computer, computer_use_preview), under its
// type as its name (numbered when a tool of the request has it already).
func (ts *toolset) addBuiltinClient(t *api.Tool) {
	def := api.ToolDefinition{Name: ts.freeName(t.Type)}
	ct := &clientRoute{typ: api.CallItemType(t.Type)}
	switch ct.typ {
	case api.ItemShellCall:
		def.Description = "Runs shell commands on the user's machine and returns the output of each (stdout, stderr, and its exit code or a timeout)."
		def.Parameters = json.RawMessage(shellParameters)
	case api.ItemApplyPatchCall:
		def.Description = "Creates, updates or deletes one file on the user's machine."
		def.Parameters = json.RawMessage(applyPatchParameters)
	case api.ItemLocalShellCall:
		def.Description = "Runs a command on the user's machine and returns its output."
		def.Parameters = json.RawMessage(localShellParameters)
	case api.ItemComputerCall:
		def.Description = "Performs one mouse or keyboard action on the user's computer and returns a screenshot of the screen after it." + displayNote(t.Raw)
		def.Parameters = json.RawMessage(computerParameters)
	}
	ts.addRoute(ct, def)
}

// displayNote describes the display of a computer_use_preview declaration
// for the computer tool's description (empty when it gives none).
func displayNote(decl json.RawMessage) string {
	var d struct {
		Width       int    `json:"display_width"`
		Height      int    `json:"display_height"`
		Environment string `json:"environment"`
	}
	if json.Unmarshal(decl, &d) != nil || d.Width <= 0 || d.Height <= 0 {
		return ""
	}
	note := fmt.Sprintf(" The display is %dx%d pixels", d.Width, d.Height)
	if d.Environment != "" {
		note += " (" + d.Environment + ")"
	}
	return note + "."
}

func (ts *toolset) addRoute(ct *clientRoute, def api.ToolDefinition) {
	if ts.clientNames == nil {
		ts.clientNames = map[clientKey]string{}
	}
	ts.clientNames[ct.key()] = def.Name
	ts.add(requestTool{def: def, client: ct})
}

// customFormatNote tells the model the grammar a custom tool's input must
// follow (the providers have no grammar-constrained tools): empty for free
// text.
func customFormatNote(format json.RawMessage) string {
	var f struct {
		Type       string `json:"type"`
		Syntax     string `json:"syntax"`
		Definition string `json:"definition"`
	}
	if json.Unmarshal(format, &f) != nil || f.Type != "grammar" {
		return ""
	}
	return "\n\nThe input must match this " + f.Syntax + " grammar:\n" + f.Definition
}

// clientItem is the output item of the model's call of the client tool it
// knows as name: a function_call, custom_tool_call, shell_call or
// apply_patch_call, with the tool's namespace and its name there.
func (r *run) clientItem(name, callID string) api.Item {
	it := api.Item{Type: api.ItemFunctionCall, ID: r.newItemID(api.PrefixFunctionCall), Status: api.ItemInProgress, CallID: callID, Name: name}
	if ct := r.tools.defs[name].client; ct != nil {
		it.Type, it.Name, it.Namespace = ct.typ, ct.name, ct.namespace
		if ct.typ != api.ItemFunctionCall {
			it.ID = r.newItemID(api.ItemIDPrefix(ct.typ))
		}
	}
	return it
}

// finishClientItem completes a custom_tool_call or an action call
// (api.IsActionCall) from the model's complete arguments (emitting a
// custom call's input events) and reports whether it was one.
func (a *assembler) finishClientItem(idx int, it *api.Item) bool {
	switch it.Type {
	case api.ItemCustomToolCall:
		it.Input = customInput(it.Arguments)
		if a.r.em.stream {
			in := it.Input
			a.r.em.emit(&api.StreamEvent{Type: api.EventCustomToolCallInputDelta, ItemID: it.ID, OutputIndex: &idx, Delta: &in})
			a.r.em.emit(&api.StreamEvent{Type: api.EventCustomToolCallInputDone, ItemID: it.ID, OutputIndex: &idx, Input: &in})
		}
	case api.ItemShellCall, api.ItemApplyPatchCall, api.ItemLocalShellCall, api.ItemComputerCall:
		it.Action = callAction(it.Type, it.Arguments)
	default:
		return false
	}
	return true
}

// cutStatus is the status a client call of type typ ends its turn with,
// status being the turn's: an apply_patch_call has no "incomplete" status
// (OpenAI's has in_progress and completed only; the Vercel AI SDK refuses
// any other), so one the output limit cut stays in_progress, never
// completed.
func cutStatus(typ, status string) string {
	if typ == api.ItemApplyPatchCall && status == api.ItemIncomplete {
		return api.ItemInProgress
	}
	return status
}

// callAction is the action of an action call of type typ from the model's
// arguments: the arguments object (arguments that are not one, the
// model's mistake, give {}), a local_shell_call's with "type":"exec"
// first.
func callAction(typ, arguments string) json.RawMessage {
	args := strings.TrimSpace(arguments)
	if !json.Valid([]byte(args)) || !strings.HasPrefix(args, "{") {
		args = "{}"
	}
	if typ != api.ItemLocalShellCall {
		return json.RawMessage(args)
	}
	if rest := withoutType(json.RawMessage(args)); len(rest) > 2 {
		return json.RawMessage(`{"type":"exec",` + string(rest[1:]))
	}
	return json.RawMessage(`{"type":"exec"}`)
}

// withoutType returns the JSON object obj without its "type" key: a
// local_shell_call's action as the model's arguments (callAction adds the
// "type":"exec" of the item's shape); obj itself when it is not an object.
func withoutType(obj json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(obj, &fields) != nil || fields == nil {
		return obj
	}
	delete(fields, "type")
	b, err := wirejson.Marshal(fields)
	if err != nil {
		return obj
	}
	return b
}

// customInput is a custom tool call's input: the "input" string of the
// model's arguments, or the arguments as they are when they are not that
// object.
func customInput(arguments string) string {
	var a struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(arguments), &a) == nil && a.Input != nil {
		return *a.Input
	}
	return arguments
}

// modelItem is it as the model sees it: a namespaced function_call under
// the name the model knows its tool by; a custom_tool_call or an action
// call as a function_call of that tool (arguments: the input as {"input"},
// the action, the operation); their outputs as function_call_output items
// (a shell call's output array as JSON text, a failed patch as an error, a
// local shell call's output text, a computer call's screenshot as an
// image); a reasoning item with its provider state, hidden from the client
// or not (api.Item.ReasoningState); other items as they are.
func (ts *toolset) modelItem(it *api.Item) api.Item {
	call := func(args string) api.Item {
		return api.Item{Type: api.ItemFunctionCall, ID: it.ID, Status: it.Status, CallID: it.CallID, Name: ts.modelName(it), Arguments: args}
	}
	output := func(text string, isError bool) api.Item {
		return api.Item{Type: api.ItemFunctionCallOutput, ID: it.ID, Status: api.ItemCompleted, CallID: it.CallID, Output: text, IsError: isError}
	}
	switch it.Type {
	case api.ItemFunctionCall:
		if it.Namespace != "" {
			return call(it.Arguments)
		}
	case api.ItemCustomToolCall:
		args, _ := wirejson.Marshal(struct {
			Input string `json:"input"`
		}{it.Input})
		return call(string(args))
	case api.ItemShellCall, api.ItemApplyPatchCall, api.ItemComputerCall:
		return call(string(it.Action))
	case api.ItemLocalShellCall:
		// The action is the model's arguments with the "type":"exec" the
		// item's shape adds (callAction); the model gets its arguments
		// back as it wrote them.
		return call(string(withoutType(it.Action)))
	case api.ItemCustomToolCallOutput:
		c := *it
		c.Type = api.ItemFunctionCallOutput
		return c
	case api.ItemReasoning:
		// The model gets its state back, shown to the client or not.
		c := *it
		c.EncryptedContent = it.ReasoningState()
		return c
	case api.ItemShellCallOutput:
		return output(string(it.OutputRaw), false)
	case api.ItemLocalShellCallOutput:
		return output(it.Output, it.Status == api.ItemFailed)
	case api.ItemComputerCallOutput:
		c := output("", false)
		c.OutputParts = []api.ContentPart{{Type: api.PartInputText, Text: "Action performed. The screen after it:"}}
		if shot, ok := it.Screenshot(); ok {
			c.OutputParts = append(c.OutputParts, shot)
		}
		return c
	case api.ItemApplyPatchCallOutput:
		text := it.Output
		if text == "" {
			text = "The patch was applied."
			if it.Status == api.ItemFailed {
				text = "The patch failed."
			}
		}
		return output(text, it.Status == api.ItemFailed)
	}
	return *it
}

// clientModelName is the function name the model knows the client tool
// of a function_call, custom_tool_call or action call item by, and
// whether the item names one (a top-level function_call does not: its
// name is the model's).
func (ts *toolset) clientModelName(it *api.Item) (string, bool) {
	switch it.Type {
	case api.ItemFunctionCall:
		if it.Namespace == "" {
			return "", false
		}
	case api.ItemCustomToolCall:
	default:
		if !api.IsActionCall(it.Type) {
			return "", false
		}
	}
	key := clientKey{it.Type, it.Namespace, it.Name}
	if api.IsActionCall(it.Type) {
		key = clientKey{typ: it.Type} // the tool is its type's
	}
	if n, ok := ts.clientNames[key]; ok {
		return n, true
	}
	switch {
	case api.IsActionCall(it.Type):
		// A call of a tool this request does not declare: the name the
		// tool would have (computer_call: "computer").
		return strings.TrimSuffix(it.Type, "_call"), true
	case it.Namespace != "":
		return namespacedName(it.Namespace, it.Name), true
	}
	return it.Name, true
}

// forcedName is the function name of the tool a forced tool_choice names.
func (ts *toolset) forcedName(c *api.ToolChoice) string {
	typ := api.CallItemType(c.Type)
	switch c.Type {
	case api.ToolFunction:
		typ = api.ItemFunctionCall
	case api.ToolCustom:
		typ = api.ItemCustomToolCall
	}
	if n, ok := ts.clientNames[clientKey{typ, c.Namespace, c.Name}]; ok {
		return n
	}
	return c.Name
}

// reportUnserved reports the request's built-in tools that Lambent does
// not run: in the response's lambent.unserved_tools, and in the log.
func (r *run) reportUnserved(ctx context.Context, e *Engine) {
	if len(r.tools.unserved) == 0 {
		return
	}
	if r.resp.Lambent == nil {
		r.resp.Lambent = &api.LambentInfo{}
	}
	r.resp.Lambent.UnservedTools = r.tools.unserved
	e.log.InfoContext(ctx, "built-in tools not served, left out of what the model sees", "tools", r.tools.unserved)
}
