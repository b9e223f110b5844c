package api

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
