// Package tooldef holds what a tool is, apart from the wire package: a tool
// as the model sees it (ToolDefinition) and as an MCP server lists it
// (MCPTool). It imports only the standard library, so that a tool Lambda
// (pkg/tools/lambdatool) links neither pkg/api nor its JSON library; pkg/api
// names both types as its own (aliases).
package tooldef

import "encoding/json"

// ToolDefinition is a tool as the model sees it: an ordinary function with
// a name, a description and a JSON Schema for its arguments. The engine
// builds one for every tool of a request (client-executed functions and
// hosted tools alike) and hands them to the provider.
type ToolDefinition struct {
	// Name is the function name the model calls.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments object.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict asks the model for strict schema adherence when set.
	Strict *bool `json:"strict,omitempty"`
}

// MCPTool is one tool of an MCP server's listing (and of an mcp_list_tools
// item), as the server described it.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}
