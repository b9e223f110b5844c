// Package schema validates Lambent's wire output against the component
// schemas of the OpenResponses OpenAPI document (a copy of
// shared/openresponses/openapi.json, embedded). Tests use it on every
// response body and streaming event.
package schema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed openapi.json
var openapiJSON []byte

// Validator compiles component schemas on demand.
type Validator struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	cache    map[string]*jsonschema.Schema
}

// Shared returns one Validator for the whole process, built on first use:
// the fixture every test shares (a Validator is safe for concurrent use
// and caches what it compiles).
var Shared = sync.OnceValues(New)

// New loads the OpenAPI document. Deliberate widenings follow the spec's
// extension rules: a response's tools (and an allowed_tools tool_choice)
// may hold implementor-prefixed tool types (e.g. "lambent:calculator") and
// MCP tools next to function tools,
// and a json_schema text format may echo its schema object (the document
// allows only null there, which no server can echo faithfully).
func New() (*Validator, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("schema: parse openapi.json: %w", err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	tool := schemas["Tool"].(map[string]any)
	tool["oneOf"] = append(tool["oneOf"].([]any), map[string]any{
		"type":     "object",
		"required": []any{"type"},
		"properties": map[string]any{
			"type": map[string]any{"type": "string", "pattern": "^([a-z0-9_-]+:[a-zA-Z0-9_-]+|mcp)$"},
		},
	})
	delete(tool, "discriminator")
	allowed := schemas["AllowedToolChoice"].(map[string]any)["properties"].(map[string]any)["tools"].(map[string]any)["items"].(map[string]any)
	allowed["oneOf"] = append(allowed["oneOf"].([]any), map[string]any{
		"type":       "object",
		"required":   []any{"type"},
		"properties": map[string]any{"type": map[string]any{"type": "string", "pattern": "^[a-z0-9_-]+:[a-zA-Z0-9_-]+$"}},
	})
	if js, ok := schemas["JsonSchemaResponseFormat"].(map[string]any); ok {
		js["properties"].(map[string]any)["schema"] = map[string]any{"type": []any{"object", "null"}}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("openapi.json", inst); err != nil {
		return nil, err
	}
	return &Validator{compiler: c, cache: map[string]*jsonschema.Schema{}}, nil
}

func (v *Validator) schema(name string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.cache[name]; ok {
		return s, nil
	}
	s, err := v.compiler.Compile("openapi.json#/components/schemas/" + name)
	if err != nil {
		return nil, fmt.Errorf("schema: compile %s: %w", name, err)
	}
	v.cache[name] = s
	return s, nil
}

// Validate checks data against the named component schema.
func (v *Validator) Validate(name string, data []byte) error {
	s, err := v.schema(name)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("schema: %s: invalid JSON: %w", name, err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("schema: %s: %w", name, err)
	}
	return nil
}

// EventSchema returns the component schema of a streaming event type, or
// "" when the spec defines none (response.cancelled, extension events).
func EventSchema(eventType string) string {
	switch eventType {
	case "error":
		return "ErrorStreamingEvent"
	case "response.cancelled":
		return ""
	}
	if !strings.HasPrefix(eventType, "response.") {
		return ""
	}
	name := "Response"
	for _, part := range strings.FieldsFunc(strings.TrimPrefix(eventType, "response."), func(r rune) bool { return r == '.' || r == '_' }) {
		name += strings.ToUpper(part[:1]) + part[1:]
	}
	switch name {
	case "ResponseOutputTextAnnotationAdded":
		return "ResponseOutputTextAnnotationAddedStreamingEvent"
	case "ResponseReasoningSummaryTextDelta":
		return "ResponseReasoningSummaryDeltaStreamingEvent"
	case "ResponseReasoningSummaryTextDone":
		return "ResponseReasoningSummaryDoneStreamingEvent"
	}
	return name + "StreamingEvent"
}

// ValidateEvent checks one streaming event's JSON against its schema.
func (v *Validator) ValidateEvent(data []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("schema: event is not JSON: %w", err)
	}
	name := EventSchema(head.Type)
	if name == "" {
		return v.Validate("ResponseCompletedStreamingEvent", bytes.Replace(data, []byte(`"response.cancelled"`), []byte(`"response.completed"`), 1))
	}
	return v.Validate(name, data)
}
