package api

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
)

// Tool types.
const (
	ToolFunction = "function"
	ToolMCP      = "mcp"
	// ToolCustom is a client-executed tool whose input is free text (an
	// optional format: text, or a grammar).
	ToolCustom = "custom"
	// ToolNamespace groups function and custom tools under a name; calls of
	// its tools carry it (Item.Namespace).
	ToolNamespace = "namespace"
)

// Built-in tool types of OpenAI (docs/tools.md, "Tool types").
const (
	// ToolShell is the client-executed shell tool (calls: shell_call).
	ToolShell = "shell"
	// ToolApplyPatch is the client-executed file editing tool (calls:
	// apply_patch_call).
	ToolApplyPatch = "apply_patch"
	// ToolLocalShell is the client-executed local shell tool (calls:
	// local_shell_call).
	ToolLocalShell = "local_shell"
	// ToolComputer and ToolComputerUsePreview are the client-executed
	// computer use tool (calls: computer_call).
	ToolComputer           = "computer"
	ToolComputerUsePreview = "computer_use_preview"
)

// CallItemType is the item type of the calls of OpenAI's client-executed
// built-in tool type typ (shell_call, ...; computer_call for "computer",
// "computer_use_preview" and tool_choice's "computer_use"), "" for other
// types.
func CallItemType(typ string) string {
	switch typ {
	case ToolShell:
		return ItemShellCall
	case ToolApplyPatch:
		return ItemApplyPatchCall
	case ToolLocalShell:
		return ItemLocalShellCall
	case ToolComputer, ToolComputerUsePreview, "computer_use":
		return ItemComputerCall
	}
	return ""
}

// The kinds of OpenAI's built-in tool types (BuiltinKind).
const (
	// BuiltinHosted types OpenAI runs itself; Lambent does not: they are
	// accepted, left out of what the model sees and reported
	// (LambentInfo.UnservedTools).
	BuiltinHosted = "hosted"
	// BuiltinClient types the client runs, with call items of their own:
	// Lambent offers them to the model (shell, apply_patch, local_shell,
	// computer, computer_use_preview).
	BuiltinClient = "client"
	// BuiltinUnsupported types the client runs at OpenAI that Lambent
	// does not offer: treated as BuiltinHosted.
	BuiltinUnsupported = "unsupported"
)

// BuiltinKind says whether typ is one of OpenAI's built-in tool types, and
// of which kind; "" for any other type.
func BuiltinKind(typ string) string {
	switch typ {
	case "web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11",
		"file_search", "code_interpreter", "image_generation", "tool_search":
		return BuiltinHosted
	case ToolShell, ToolApplyPatch, ToolLocalShell, ToolComputer, ToolComputerUsePreview:
		return BuiltinClient
	case "computer_use", "programmatic_tool_calling":
		return BuiltinUnsupported
	}
	return ""
}

// Tool is a tool declared in a request: a client-executed function or
// custom tool, a namespace of them, an MCP server, a hosted tool named by
// a prefixed type such as "lambent:calculator", or one of OpenAI's
// built-in types (BuiltinKind).
type Tool struct {
	Type        string
	Name        string
	Description *string
	Parameters  json.RawMessage
	Strict      *bool

	// Format is a custom tool's input format ({"type":"text"} or
	// {"type":"grammar","syntax","definition"}).
	Format json.RawMessage
	// Tools are a namespace's tools (function and custom).
	Tools []Tool

	// MCP fields.
	ServerLabel       string
	ServerURL         string
	ServerDescription string
	Headers           map[string]string
	AllowedTools      json.RawMessage
	RequireApproval   json.RawMessage
	Authorization     string

	// Output tool fields ("lambent:output", see output.go).
	Reflection json.RawMessage
	Validators []string

	// Raw is the declaration of a built-in tool as the request gave it,
	// echoed as it is.
	Raw json.RawMessage
}

// HostedPrefix is the type prefix of Lambent's hosted tools.
const HostedPrefix = "lambent:"

// IsHosted reports whether t names a hosted tool.
func (t *Tool) IsHosted() bool { return strings.HasPrefix(t.Type, HostedPrefix) }

// HostedName is the tool name of a hosted tool ("lambent:calculator" → "calculator").
func (t *Tool) HostedName() string { return strings.TrimPrefix(t.Type, HostedPrefix) }

type wireTool struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	Description       *string           `json:"description,omitempty"`
	Parameters        json.RawMessage   `json:"parameters,omitempty"`
	Strict            *bool             `json:"strict,omitempty"`
	Format            json.RawMessage   `json:"format,omitempty"`
	Tools             []Tool            `json:"tools,omitempty"`
	ServerLabel       string            `json:"server_label,omitempty"`
	ServerURL         string            `json:"server_url,omitempty"`
	ServerDescription string            `json:"server_description,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
	AllowedTools      json.RawMessage   `json:"allowed_tools,omitempty"`
	RequireApproval   json.RawMessage   `json:"require_approval,omitempty"`
	Authorization     string            `json:"authorization,omitempty"`
	Reflection        json.RawMessage   `json:"reflection,omitempty"`
	Validators        []string          `json:"validators,omitempty"`
	Raw               json.RawMessage   `json:"-"`
}

// UnmarshalJSON decodes a tool declaration.
func (t *Tool) UnmarshalJSON(data []byte) error {
	var w wireTool
	if err := unmarshal(data, &w); err != nil {
		return InvalidRequest("", "invalid tool: %s", jsonErrText(err))
	}
	*t = Tool(w)
	for _, f := range []*json.RawMessage{&t.Parameters, &t.Reflection, &t.Format} {
		if bytes.Equal(*f, []byte("null")) {
			*f = nil
		}
	}
	if BuiltinKind(t.Type) != "" {
		t.Raw = append(json.RawMessage(nil), data...)
	}
	return nil
}

// MarshalJSON writes the tool as the response echoes it. A function tool
// is {type, name, description, parameters, strict}, every field present
// (null when absent); other tools have the fields of wireTool, each
// omitted when empty, except the headers and the authorization secret,
// which are never echoed.
func (t Tool) MarshalJSON() ([]byte, error) { return wirejson.Marshal(t.wire()) }

// wire is the value MarshalJSON encodes.
func (t *Tool) wire() any {
	if t.Type == ToolFunction {
		params := t.Parameters
		if len(params) == 0 {
			params = nil // written as null
		}
		return &struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description *string         `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      *bool           `json:"strict"`
		}{t.Type, t.Name, t.Description, params, t.Strict}
	}
	if t.Raw != nil {
		return t.Raw
	}
	w := wireTool(*t)
	w.Headers, w.Authorization = nil, ""
	return &w
}

// Tool choice modes.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceNone     = "none"
	ToolChoiceRequired = "required"
)

// ToolChoice is the request's tool_choice in any of its forms: a mode
// string ("auto", "none", "required"), a forced function
// {"type":"function","name"} (with "namespace" for a function of a
// namespace tool), a forced custom tool {"type":"custom","name"}, a forced
// client-executed built-in tool ({"type":"shell"}, "apply_patch",
// "computer", "computer_use_preview", "computer_use"; not "local_shell",
// which OpenAI does not let tool_choice name), a tool of an MCP server
// {"type":"mcp","server_label","name"} (without name, any tool of the
// server; the engine checks the label), or
// {"type":"allowed_tools","mode","tools"}. Forcing another of OpenAI's
// built-in tools ({"type":"web_search_preview"}, ...) is a 400 naming it:
// Lambent does not run them (BuiltinKind).
type ToolChoice struct {
	// Type is "" for the string form, "function", "custom", "mcp",
	// "allowed_tools", or the type of a forced built-in client tool.
	Type string
	// Mode is the string form's value, or the allowed_tools mode.
	Mode string
	// Name is the forced tool's name, Namespace its namespace tool's,
	// ServerLabel its MCP server's ("mcp"; Name may then be "").
	Name        string
	Namespace   string
	ServerLabel string
	// Tools lists the allowed tools of the allowed_tools form.
	Tools []ToolRef
}

// ToolRef names one tool in an allowed_tools list; an "mcp" reference
// names an MCP server by its ServerLabel (OpenAI's {"type": "mcp",
// "server_label": "deepwiki"}), and with Name one of its tools.
type ToolRef struct {
	Type        string `json:"type"`
	ServerLabel string `json:"server_label,omitempty"`
	Name        string `json:"name,omitempty"`
}

// Forced reports whether the choice forces one named function or custom
// tool, a built-in client tool, or a tool of an MCP server.
func (c ToolChoice) Forced() bool {
	return c.Type == ToolFunction || c.Type == ToolCustom || c.Type == ToolMCP || forcedBuiltin(c.Type)
}

// MaxMCPToolNameBytes bounds the name of an MCP tool a tool_choice forces
// (the MCP specification's bound on tool names: 128 characters; an MCP
// tool's name is not a function name and may hold dots or slashes).
const MaxMCPToolNameBytes = 128

// MaxMCPServerLabelBytes bounds an MCP server's label, in a tool's
// declaration and in a tool_choice (docs/configuration.md).
const MaxMCPServerLabelBytes = 256

// forcedBuiltin reports whether tool_choice may force the built-in tool
// type typ (OpenAI's ToolChoiceTypes and ToolChoiceShell/ApplyPatch).
func forcedBuiltin(typ string) bool {
	return CallItemType(typ) != "" && typ != ToolLocalShell
}

// EffectiveMode is the mode the model runs in: auto, none or required
// (a forced tool counts as required).
func (c ToolChoice) EffectiveMode() string {
	switch {
	case c.Forced():
		return ToolChoiceRequired
	case c.Mode == "":
		return ToolChoiceAuto
	}
	return c.Mode
}

// UnmarshalJSON decodes any tool_choice form.
func (c *ToolChoice) UnmarshalJSON(data []byte) error {
	*c = ToolChoice{}
	if len(data) > 0 && data[0] == '"' {
		if err := unmarshal(data, &c.Mode); err != nil {
			return InvalidRequest("tool_choice", "invalid tool_choice: %s", jsonErrText(err))
		}
		switch c.Mode {
		case ToolChoiceAuto, ToolChoiceNone, ToolChoiceRequired:
			return nil
		}
		return InvalidRequest("tool_choice", "invalid value %q for tool_choice; expected one of \"auto\", \"none\", \"required\" or an object", c.Mode)
	}
	var w struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Namespace   string          `json:"namespace"`
		ServerLabel string          `json:"server_label"`
		Mode        string          `json:"mode"`
		Tools       json.RawMessage `json:"tools"` // counted before it is decoded
	}
	if err := unmarshal(data, &w); err != nil {
		return InvalidRequest("tool_choice", "invalid type for tool_choice: expected a string or an object")
	}
	switch w.Type {
	case ToolFunction, ToolCustom:
		if w.Name == "" {
			return InvalidRequest("tool_choice.name", "missing required parameter: tool_choice.name")
		}
		c.Type, c.Name, c.Namespace = w.Type, w.Name, w.Namespace
	case ToolMCP:
		if w.ServerLabel == "" {
			return InvalidRequest("tool_choice.server_label", "missing required parameter: tool_choice.server_label")
		}
		if len(w.ServerLabel) > MaxMCPServerLabelBytes {
			return InvalidRequest("tool_choice.server_label", "invalid tool_choice.server_label: a server label is at most %d bytes, got %d", MaxMCPServerLabelBytes, len(w.ServerLabel))
		}
		if len(w.Name) > MaxMCPToolNameBytes {
			return InvalidRequest("tool_choice.name", "invalid tool_choice.name: an MCP tool name is at most %d bytes, got %d", MaxMCPToolNameBytes, len(w.Name))
		}
		c.Type, c.ServerLabel, c.Name = w.Type, w.ServerLabel, w.Name
	case "allowed_tools":
		if w.Mode != ToolChoiceAuto && w.Mode != ToolChoiceRequired {
			return InvalidRequest("tool_choice.mode", "invalid value %q for tool_choice.mode; expected \"auto\" or \"required\"", w.Mode)
		}
		if err := c.decodeAllowed(w.Tools); err != nil {
			return err
		}
		c.Type, c.Mode = w.Type, w.Mode
	case ToolLocalShell:
		return InvalidRequest("tool_choice.type", "tool_choice cannot force the %q tool; expected \"function\", \"custom\", \"mcp\", \"allowed_tools\" or a built-in tool type", w.Type)
	default:
		if forcedBuiltin(w.Type) {
			c.Type = w.Type
			return nil
		}
		if BuiltinKind(w.Type) != "" {
			return InvalidRequestCode("tool_choice.type", "unsupported_tool", "tool_choice forces the %q tool, which this gateway does not run (see the lambent.unserved_tools of a response).", w.Type)
		}
		return InvalidRequest("tool_choice.type", "unsupported tool_choice type %q; expected \"function\", \"custom\", \"mcp\" or \"allowed_tools\"", w.Type)
	}
	return nil
}

// decodeAllowed decodes the tools of an allowed_tools choice, at least one
// and, counted before any is decoded, at most MaxTools (each names one of
// the request's tools).
func (c *ToolChoice) decodeAllowed(v json.RawMessage) error {
	const p = "tool_choice.tools"
	if len(v) > 0 && v[0] == '[' {
		if n := arrayLen(v); n > MaxTools {
			return InvalidRequestCode(p, "limit_exceeded", "the number of allowed tools: %d is over this gateway's limit of %d.", n, MaxTools)
		}
	}
	if len(v) > 0 && !isNull(v) {
		if err := into(p, v, &c.Tools); err != nil {
			return err
		}
	}
	if len(c.Tools) == 0 {
		return InvalidRequest(p, "tool_choice.tools must list at least one tool")
	}
	return nil
}

// MarshalJSON writes the form the choice was given in: {type, name} for a
// forced tool (and namespace when set), {type, server_label, name} for an
// MCP server's tool (name when set), {type, mode, tools} for
// allowed_tools, else the effective mode as a string.
func (c ToolChoice) MarshalJSON() ([]byte, error) { return wirejson.Marshal(c.wire()) }

// wire is the choice in the shape MarshalJSON writes.
func (c ToolChoice) wire() any {
	switch c.Type {
	case ToolFunction, ToolCustom:
		return struct {
			Type      string `json:"type"`
			Name      string `json:"name"`
			Namespace string `json:"namespace,omitempty"`
		}{c.Type, c.Name, c.Namespace}
	case ToolMCP:
		return struct {
			Type        string `json:"type"`
			ServerLabel string `json:"server_label"`
			Name        string `json:"name,omitempty"`
		}{c.Type, c.ServerLabel, c.Name}
	case "allowed_tools":
		return struct {
			Type  string    `json:"type"`
			Mode  string    `json:"mode"`
			Tools []ToolRef `json:"tools"`
		}{c.Type, c.Mode, c.Tools}
	}
	if forcedBuiltin(c.Type) {
		return struct {
			Type string `json:"type"`
		}{c.Type}
	}
	return c.EffectiveMode()
}

// TextConfig is the text output configuration.
type TextConfig struct {
	Format    TextFormat `json:"format"`
	Verbosity string     `json:"verbosity,omitempty"`
}

// Text format types.
const (
	FormatText       = "text"
	FormatJSONObject = "json_object"
	FormatJSONSchema = "json_schema"
)

// TextFormat is text.format: text, json_object or json_schema.
type TextFormat struct {
	Type        string          `json:"type"`
	Name        string          `json:"name,omitempty"`
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}
