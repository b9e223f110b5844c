package engine

import (
	"context"
	"encoding/json"
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
//
// The model's history shows them as function calls again (modelItem).

// clientRoute is how a client tool's calls appear in output: its
// namespace tool (empty for a top-level tool) and its name there, and
// whether it is a custom tool.
type clientRoute struct {
	namespace string
	name      string
	custom    bool
}

// clientKey names a client tool by its namespace and name.
type clientKey struct{ namespace, name string }

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

// customParameters is the JSON Schema of a custom tool as the model sees
// it: one string, its input.
var customParameters = json.RawMessage(`{"type":"object","properties":{"input":{"type":"string","description":"The tool's input, as free text."}},"required":["input"],"additionalProperties":false}`)

// addClient adds the function or custom tool t of the namespace tool
// namespace ("" for a top-level tool) under the name the model sees it by.
func (ts *toolset) addClient(namespace string, t *api.Tool) {
	ct := &clientRoute{namespace: namespace, name: t.Name, custom: t.Type == api.ToolCustom}
	def := api.ToolDefinition{Name: t.Name, Parameters: t.Parameters, Strict: t.Strict}
	if namespace != "" {
		def.Name = ts.freeName(namespacedName(namespace, t.Name))
	}
	if t.Description != nil {
		def.Description = *t.Description
	}
	if ct.custom {
		def.Parameters, def.Strict = customParameters, nil
		def.Description += customFormatNote(t.Format)
	}
	if ts.clientNames == nil {
		ts.clientNames = map[clientKey]string{}
	}
	ts.clientNames[clientKey{namespace, t.Name}] = def.Name
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
// knows as name: a function_call, or a custom_tool_call, with the tool's
// namespace and its name there.
func (r *run) clientItem(name, callID string) api.Item {
	it := api.Item{Type: api.ItemFunctionCall, ID: r.newItemID(api.PrefixFunctionCall), Status: api.ItemInProgress, CallID: callID, Name: name}
	if ct := r.tools.defs[name].client; ct != nil {
		it.Name, it.Namespace = ct.name, ct.namespace
		if ct.custom {
			it.Type, it.ID = api.ItemCustomToolCall, r.newItemID(api.PrefixCustomToolCall)
		}
	}
	return it
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
// the name the model knows its tool by, a custom_tool_call as a
// function_call of that tool and its output as a function_call_output;
// other items as they are.
func (ts *toolset) modelItem(it *api.Item) api.Item {
	switch it.Type {
	case api.ItemFunctionCall:
		if it.Namespace != "" {
			c := *it
			c.Name, c.Namespace = ts.modelName(it), ""
			return c
		}
	case api.ItemCustomToolCall:
		args, _ := wirejson.Marshal(struct {
			Input string `json:"input"`
		}{it.Input})
		return api.Item{Type: api.ItemFunctionCall, ID: it.ID, Status: it.Status, CallID: it.CallID, Name: ts.modelName(it), Arguments: string(args)}
	case api.ItemCustomToolCallOutput:
		c := *it
		c.Type = api.ItemFunctionCallOutput
		return c
	}
	return *it
}

// clientModelName is the function name the model knows the client tool
// of a function_call or custom_tool_call item by, and whether the item
// names one (a namespace, or a custom tool call).
func (ts *toolset) clientModelName(it *api.Item) (string, bool) {
	if it.Namespace == "" && it.Type != api.ItemCustomToolCall {
		return "", false
	}
	if n, ok := ts.clientNames[clientKey{it.Namespace, it.Name}]; ok {
		return n, true
	}
	if it.Namespace != "" {
		return namespacedName(it.Namespace, it.Name), true
	}
	return it.Name, true
}

// forcedName is the function name of the tool a forced tool_choice names.
func (ts *toolset) forcedName(c *api.ToolChoice) string {
	if n, ok := ts.clientNames[clientKey{c.Namespace, c.Name}]; ok {
		return n
	}
	return c.Name
}

// customInputEvents emits the input events of the custom tool call at
// output index idx: its whole input as one delta, then done.
func (a *assembler) customInputEvents(idx int, it *api.Item) {
	if !a.r.em.stream {
		return
	}
	in := it.Input
	a.r.em.emit(&api.StreamEvent{Type: api.EventCustomToolCallInputDelta, ItemID: it.ID, OutputIndex: &idx, Delta: &in})
	a.r.em.emit(&api.StreamEvent{Type: api.EventCustomToolCallInputDone, ItemID: it.ID, OutputIndex: &idx, Input: &in})
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
