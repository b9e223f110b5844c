// Package tools defines how Lambent executes the tools a model calls: the
// ToolExecutor contract, tool kinds, calls and results, the tool_choice /
// allowed_tools filter, and the registry of hosted tools.
package tools

import (
	"context"
	"encoding/json"
)

// ToolKind classifies how a tool is hosted and executed.
type ToolKind string

// Tool kinds.
const (
	// KindFunction tools are executed by the client: the loop pauses with requires_action.
	KindFunction ToolKind = "function"
	// KindMCP tools are executed on an MCP server.
	KindMCP ToolKind = "mcp"
	// KindHosted tools are executed by Lambent itself (in-process or as a Lambda function).
	KindHosted ToolKind = "hosted"
)

// Definition describes a tool as the model sees it: an ordinary function.
type Definition struct {
	// Name is the function name the model calls.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks the model for strict schema adherence when set.
	Strict *bool `json:"strict,omitempty"`
	// Kind says who executes the tool.
	Kind ToolKind `json:"-"`
}

// ToolCall is a model's request to invoke a tool.
type ToolCall struct {
	// ID is the call_id the model generated.
	ID string `json:"call_id"`
	// Name is the function name.
	Name string `json:"name"`
	// Arguments is the JSON-encoded arguments object.
	Arguments string `json:"arguments"`
	// ResponseID is the response the call belongs to.
	ResponseID string `json:"response_id,omitempty"`
}

// ToolResult is the output of one tool execution.
type ToolResult struct {
	// CallID matches the originating ToolCall.ID.
	CallID string `json:"call_id"`
	// Output is the text the model receives.
	Output string `json:"output"`
	// IsError marks Output as an error message.
	IsError bool `json:"is_error"`
}

// Handler runs one hosted tool call and returns its text output. A returned
// error becomes an is_error result for the model, never a failed response.
type Handler func(ctx context.Context, call ToolCall) (string, error)

// Hosted is a hosted tool: its definition and the handler that runs it.
type Hosted struct {
	Definition Definition
	Handler    Handler
}
