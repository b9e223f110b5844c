// Package tools defines how Lambent executes the tools a model calls: the
// call and result every executor and the tool Lambda payload share, the
// ToolExecutor contract, the Catalog of hosted tools, the tool_choice /
// allowed_tools filter, and the registry of in-process hosted tools.
//
// Whether a call runs on the client or on the server follows from the
// request's tool definition: a {"type":"function"} tool is executed by the
// client; a hosted tool ({"type":"lambent:<name>"}) is resolved through a
// Catalog to its definition and the executor that runs it.
package tools

import (
	"context"
	"fmt"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/tooldef"
)

// ToolCall is a model's request to invoke a tool. Its JSON form is the
// request payload of a tool Lambda (docs/architecture.md, "Tool Lambda payload"):
// {"call_id","name","arguments","response_id","tenant"}.
type ToolCall struct {
	// ID is the call_id the model generated.
	ID string `json:"call_id"`
	// Name is the function name.
	Name string `json:"name"`
	// Arguments is the JSON-encoded arguments object, as a string.
	Arguments string `json:"arguments"`
	// ResponseID is the response the call belongs to.
	ResponseID string `json:"response_id"`
	// Tenant is the tenant whose response makes the call (the API key's
	// tenant, or the caller's IAM identity: docs/aws.md#tenants), so that
	// a tool serving several tenants keeps each one's data apart.
	Tenant string `json:"tenant,omitempty"`
}

// ToolResult is the output of one tool execution. Its JSON form is the
// reply payload of a tool Lambda: {"output","is_error"}.
type ToolResult struct {
	// CallID matches the originating ToolCall.ID. It is not part of the
	// reply payload: the executor sets it from the call.
	CallID string `json:"-"`
	// Output is the text the model receives.
	Output string `json:"output"`
	// IsError marks Output as an error message.
	IsError bool `json:"is_error"`
}

// ToolExecutor is a backend that runs the calls of hosted tools.
type ToolExecutor interface {
	// Execute runs one call. A returned error is fed back to the model as
	// an is_error result; it never fails the response.
	Execute(ctx context.Context, call ToolCall) (*ToolResult, error)
}

// Catalog resolves the name of a hosted tool ("lambent:<name>" in a
// request) to the definition the model sees and the executor that runs its
// calls. When ok is true, exec is not nil.
type Catalog interface {
	Lookup(name string) (def tooldef.ToolDefinition, exec ToolExecutor, ok bool)
}

// Catalogs looks a hosted tool up in each catalog in turn: the first that
// knows the name wins.
type Catalogs []Catalog

// Lookup implements Catalog.
func (cs Catalogs) Lookup(name string) (tooldef.ToolDefinition, ToolExecutor, bool) {
	for _, c := range cs {
		if def, exec, ok := c.Lookup(name); ok {
			return def, exec, true
		}
	}
	return tooldef.ToolDefinition{}, nil, false
}

// Handler runs one hosted tool call and returns its text output. A returned
// error becomes an is_error result for the model, never a failed response.
type Handler func(ctx context.Context, call ToolCall) (string, error)

// Hosted is a hosted tool: its definition and the handler that runs it.
type Hosted struct {
	Definition tooldef.ToolDefinition
	Handler    Handler
}

// Truncate returns s when it has at most max bytes, else its first max
// bytes (backed off to a UTF-8 boundary) followed by a visible note:
// "\n[output truncated: <len(s)> bytes, showing the first <n>]".
func Truncate(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	head := textcut.Prefix(s, max)
	return fmt.Sprintf("%s\n[output truncated: %d bytes, showing the first %d]", head, len(s), len(head))
}
