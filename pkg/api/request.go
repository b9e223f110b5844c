package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// CreateResponseRequest is the body of POST /v1/responses.
type CreateResponseRequest struct {
	Model        string `json:"model,omitempty"`
	Instructions string `json:"instructions,omitempty"`
	// Input is the request's input items; a string input becomes one user message.
	Input []Item `json:"input,omitempty"`
	// InputString records that input was given as a plain string.
	InputString        bool              `json:"-"`
	Tools              []Tool            `json:"tools,omitempty"`
	ToolChoice         *ToolChoice       `json:"tool_choice,omitempty"`
	AllowedTools       []string          `json:"allowed_tools,omitempty"`
	ParallelToolCalls  *bool             `json:"parallel_tool_calls,omitempty"`
	MaxToolCalls       *int              `json:"max_tool_calls,omitempty"`
	MaxOutputTokens    *int              `json:"max_output_tokens,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	TopP               *float64          `json:"top_p,omitempty"`
	PresencePenalty    *float64          `json:"presence_penalty,omitempty"`
	FrequencyPenalty   *float64          `json:"frequency_penalty,omitempty"`
	TopLogprobs        *int              `json:"top_logprobs,omitempty"`
	Text               *TextConfig       `json:"text,omitempty"`
	Reasoning          *Reasoning        `json:"reasoning,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Store              *bool             `json:"store,omitempty"`
	Background         bool              `json:"background,omitempty"`
	Stream             bool              `json:"stream,omitempty"`
	StreamOptions      *StreamOptions    `json:"stream_options,omitempty"`
	Metadata           map[string]string `json:"metadata,omitempty"`
	Include            []string          `json:"include,omitempty"`
	Truncation         string            `json:"truncation,omitempty"`
	SafetyIdentifier   string            `json:"safety_identifier,omitempty"`
	PromptCacheKey     string            `json:"prompt_cache_key,omitempty"`
	ServiceTier        string            `json:"service_tier,omitempty"`
	User               string            `json:"user,omitempty"`
	// Lambent is the loop policy of validated output (extension).
	Lambent *LoopPolicy `json:"lambent,omitempty"`
}

// StreamOptions are the request's stream_options.
type StreamOptions struct {
	IncludeObfuscation *bool `json:"include_obfuscation,omitempty"`
}

// Stores reports whether the response is to be stored (default true).
func (r *CreateResponseRequest) Stores() bool { return r.Store == nil || *r.Store }

// knownParam lists the accepted top-level parameters.
func knownParam(k string) bool {
	switch k {
	case "model", "instructions", "input", "tools", "tool_choice", "allowed_tools", "parallel_tool_calls",
		"max_tool_calls", "max_output_tokens", "temperature", "top_p", "presence_penalty", "frequency_penalty",
		"top_logprobs", "text", "reasoning", "previous_response_id", "store", "background", "stream",
		"stream_options", "metadata", "include", "truncation", "safety_identifier", "prompt_cache_key",
		"service_tier", "user", "conversation", "prompt", "lambent":
		return true
	}
	return false
}

// DecodeCreateRequest reads, decodes and validates a create-response body.
// Every failure is an *Error with status 400 naming the parameter.
func DecodeCreateRequest(body []byte) (*CreateResponseRequest, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, InvalidRequest("", "the request body must be a JSON object")
		}
		return nil, InvalidRequestCode("", "invalid_json", "could not parse the JSON body of your request: %s", jsonErrText(err))
	}
	if fields == nil {
		return nil, InvalidRequest("", "the request body must be a JSON object")
	}
	for k := range fields {
		if !knownParam(k) {
			return nil, InvalidRequestCode(k, "unknown_parameter", "Unknown parameter: '%s'.", k)
		}
	}
	for _, k := range []string{"conversation", "prompt"} {
		if v, ok := fields[k]; ok && !isNull(v) {
			return nil, InvalidRequestCode(k, "unsupported_parameter", "Unsupported parameter: '%s' is not supported by this server.", k)
		}
	}
	r := &CreateResponseRequest{}
	for k, v := range fields {
		if isNull(v) {
			continue
		}
		if err := r.decodeField(k, v); err != nil {
			return nil, err
		}
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return r, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func (r *CreateResponseRequest) decodeField(k string, v json.RawMessage) error {
	var target any
	switch k {
	case "input":
		return r.decodeInput(v)
	case "tools":
		if v[0] != '[' {
			return InvalidRequest("tools", "invalid type for 'tools': expected an array of tools")
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(v, &raws); err != nil {
			return InvalidRequest("tools", "invalid tools: %s", jsonErrText(err))
		}
		r.Tools = make([]Tool, len(raws))
		for i, raw := range raws {
			if err := json.Unmarshal(raw, &r.Tools[i]); err != nil {
				return prefixParam(err, "tools["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	case "tool_choice":
		r.ToolChoice = &ToolChoice{}
		target = r.ToolChoice
	case "model":
		target = &r.Model
	case "instructions":
		target = &r.Instructions
	case "allowed_tools":
		target = &r.AllowedTools
	case "parallel_tool_calls":
		target = &r.ParallelToolCalls
	case "max_tool_calls":
		target = &r.MaxToolCalls
	case "max_output_tokens":
		target = &r.MaxOutputTokens
	case "temperature":
		target = &r.Temperature
	case "top_p":
		target = &r.TopP
	case "presence_penalty":
		target = &r.PresencePenalty
	case "frequency_penalty":
		target = &r.FrequencyPenalty
	case "top_logprobs":
		target = &r.TopLogprobs
	case "text":
		target = &r.Text
	case "reasoning":
		target = &r.Reasoning
	case "previous_response_id":
		target = &r.PreviousResponseID
	case "store":
		target = &r.Store
	case "background":
		target = &r.Background
	case "stream":
		target = &r.Stream
	case "stream_options":
		target = &r.StreamOptions
	case "metadata":
		target = &r.Metadata
	case "include":
		target = &r.Include
	case "truncation":
		target = &r.Truncation
	case "safety_identifier":
		target = &r.SafetyIdentifier
	case "prompt_cache_key":
		target = &r.PromptCacheKey
	case "service_tier":
		target = &r.ServiceTier
	case "user":
		target = &r.User
	case "lambent":
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r.Lambent); err != nil {
			return prefixParam(typeError(k, err), k)
		}
		return nil
	default:
		return nil
	}
	if err := json.Unmarshal(v, target); err != nil {
		return prefixParam(typeError(k, err), k)
	}
	return nil
}

func (r *CreateResponseRequest) decodeInput(v json.RawMessage) error {
	switch v[0] {
	case '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return InvalidRequest("input", "invalid input: %s", jsonErrText(err))
		}
		r.Input = []Item{{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: PartInputText, Text: s}}}}
		r.InputString = true
		return nil
	case '[':
		var raws []json.RawMessage
		if err := json.Unmarshal(v, &raws); err != nil {
			return InvalidRequest("input", "invalid input: %s", jsonErrText(err))
		}
		r.Input = make([]Item, len(raws))
		for i, raw := range raws {
			if err := json.Unmarshal(raw, &r.Input[i]); err != nil {
				return prefixParam(typeError("", err), "input["+strconv.Itoa(i)+"]")
			}
		}
		return nil
	}
	return InvalidRequest("input", "invalid type for 'input': expected a string or an array of input items")
}

// typeError turns encoding/json errors into *Error; *Error passes through.
func typeError(param string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		p := ute.Field
		if p == "" {
			p = param
		} else if param != "" {
			p = param + "." + p
		}
		return InvalidRequest(p, "invalid type for '%s': expected %s, got %s", strings.TrimPrefix(p, "."), goTypeName(ute.Type.Kind().String()), ute.Value)
	}
	return InvalidRequest(param, "invalid '%s': %s", param, jsonErrText(err))
}

func goTypeName(k string) string {
	switch k {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "float64":
		return "a number"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return k
}

// prefixParam prefixes an *Error's param with the path of its container.
func prefixParam(err error, prefix string) error {
	var e *Error
	if !errors.As(err, &e) {
		return InvalidRequest(prefix, "invalid %s: %s", prefix, jsonErrText(err))
	}
	c := *e
	switch {
	case c.Param == "" || c.Param == prefix:
		c.Param = prefix
	case strings.HasPrefix(c.Param, prefix+".") || strings.HasPrefix(c.Param, prefix+"["):
	case c.Param[0] == '[':
		c.Param = prefix + c.Param
	default:
		c.Param = prefix + "." + c.Param
	}
	return &c
}

// jsonErrText makes encoding/json's messages a little friendlier.
func jsonErrText(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

// Validate checks the request's values and cross-field rules.
func (r *CreateResponseRequest) Validate() error {
	if len(r.Input) == 0 && r.PreviousResponseID == "" {
		return InvalidRequest("input", "input must not be empty")
	}
	if r.InputString && r.Input[0].Content[0].Text == "" && r.PreviousResponseID == "" {
		return InvalidRequest("input", "input must not be empty")
	}
	for i := range r.Input {
		if err := validateInputItem(&r.Input[i]); err != nil {
			return prefixParam(err, "input["+strconv.Itoa(i)+"]")
		}
	}
	names := make(map[string]bool, len(r.Tools))
	for i := range r.Tools {
		t := &r.Tools[i]
		p := "tools[" + strconv.Itoa(i) + "]"
		name, err := validateTool(t, p)
		if err != nil {
			return err
		}
		if name != "" {
			if names[name] {
				return InvalidRequest(p+".name", "duplicate tool name %q", name)
			}
			names[name] = true
		}
	}
	if err := r.validateValidatedOutput(names); err != nil {
		return err
	}
	if c := r.ToolChoice; c != nil {
		switch c.Type {
		case ToolFunction:
			if !names[c.Name] {
				return InvalidRequest("tool_choice.name", "tool_choice names function %q, which is not in tools", c.Name)
			}
		case "allowed_tools":
			for i, t := range c.Tools {
				if t.Type != ToolFunction && !strings.Contains(t.Type, ":") && t.Type != ToolMCP {
					return InvalidRequest(fmt.Sprintf("tool_choice.tools[%d].type", i), "unsupported tool type %q", t.Type)
				}
				n := t.Name
				if strings.HasPrefix(t.Type, HostedPrefix) && n == "" {
					n = strings.TrimPrefix(t.Type, HostedPrefix)
				}
				if t.Type != ToolMCP && !names[n] {
					return InvalidRequest(fmt.Sprintf("tool_choice.tools[%d]", i), "allowed tool %q is not in tools", n)
				}
			}
		default:
			if c.Mode != ToolChoiceAuto && len(r.Tools) == 0 && c.Mode != ToolChoiceNone {
				return InvalidRequest("tool_choice", "tool_choice %q requires tools", c.Mode)
			}
		}
	}
	for i, n := range r.AllowedTools {
		if !names[n] {
			return InvalidRequest(fmt.Sprintf("allowed_tools[%d]", i), "allowed tool %q is not in tools", n)
		}
	}
	if r.MaxToolCalls != nil && *r.MaxToolCalls < 1 {
		return InvalidRequest("max_tool_calls", "max_tool_calls must be at least 1")
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 16 {
		return InvalidRequest("max_output_tokens", "max_output_tokens must be at least 16")
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return InvalidRequest("temperature", "temperature must be between 0 and 2")
	}
	if r.TopP != nil && (*r.TopP < 0 || *r.TopP > 1) {
		return InvalidRequest("top_p", "top_p must be between 0 and 1")
	}
	if r.TopLogprobs != nil && (*r.TopLogprobs < 0 || *r.TopLogprobs > 20) {
		return InvalidRequest("top_logprobs", "top_logprobs must be between 0 and 20")
	}
	if r.Text != nil {
		if err := validateFormat(&r.Text.Format); err != nil {
			return err
		}
	}
	if len(r.Metadata) > 16 {
		return InvalidRequest("metadata", "metadata may hold at most 16 pairs")
	}
	for k, v := range r.Metadata {
		if len(k) > 64 || len(v) > 512 {
			return InvalidRequest("metadata", "metadata keys are at most 64 and values at most 512 characters")
		}
	}
	for i, inc := range r.Include {
		if inc != "reasoning.encrypted_content" && inc != "message.output_text.logprobs" {
			return InvalidRequest(fmt.Sprintf("include[%d]", i), "unsupported include value %q", inc)
		}
	}
	switch r.Truncation {
	case "", "auto", "disabled":
	default:
		return InvalidRequest("truncation", "invalid value %q for truncation; expected \"auto\" or \"disabled\"", r.Truncation)
	}
	switch r.ServiceTier {
	case "", "auto", "default", "flex", "priority":
	default:
		return InvalidRequest("service_tier", "invalid value %q for service_tier", r.ServiceTier)
	}
	if r.Stores() == false && r.Background {
		return InvalidRequest("background", "background responses must be stored (store=false is not allowed)")
	}
	return nil
}

func validateTool(t *Tool, p string) (string, error) {
	switch {
	case t.IsOutput():
		if err := validateOutputTool(t, p); err != nil {
			return "", err
		}
		return t.Name, nil
	case t.Type == ToolFunction:
		if t.Name == "" {
			return "", InvalidRequest(p+".name", "missing required parameter: '%s.name'", p)
		}
		if !validName(t.Name) {
			return "", InvalidRequest(p+".name", "invalid function name %q: use a-z, A-Z, 0-9, underscores and dashes, at most 64 characters", t.Name)
		}
		if len(t.Parameters) > 0 && t.Parameters[0] != '{' {
			return "", InvalidRequest(p+".parameters", "parameters must be a JSON Schema object")
		}
		return t.Name, nil
	case t.IsHosted():
		if !validName(t.HostedName()) {
			return "", InvalidRequest(p+".type", "invalid hosted tool type %q", t.Type)
		}
		return t.HostedName(), nil
	case t.Type == ToolMCP:
		if t.ServerLabel == "" {
			return "", InvalidRequest(p+".server_label", "missing required parameter: '%s.server_label'", p)
		}
		if t.ServerURL == "" {
			return "", InvalidRequest(p+".server_url", "missing required parameter: '%s.server_url'", p)
		}
		return "", nil
	case t.Type == "":
		return "", InvalidRequest(p+".type", "missing required parameter: '%s.type'", p)
	}
	return "", InvalidRequest(p+".type", "unsupported tool type %q; supported: function, mcp and hosted tools (%s<name>)", t.Type, HostedPrefix)
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateFormat(f *TextFormat) error {
	switch f.Type {
	case FormatText, FormatJSONObject:
	case FormatJSONSchema:
		if f.Name == "" {
			return InvalidRequest("text.format.name", "missing required parameter: 'text.format.name'")
		}
		if len(f.Schema) == 0 || f.Schema[0] != '{' {
			return InvalidRequest("text.format.schema", "text.format.schema must be a JSON Schema object")
		}
	case "":
		return InvalidRequest("text.format.type", "missing required parameter: 'text.format.type'")
	default:
		return InvalidRequest("text.format.type", "invalid value %q for text.format.type; expected text, json_object or json_schema", f.Type)
	}
	return nil
}

func validateInputItem(it *Item) error {
	switch it.Type {
	case ItemMessage:
		switch it.Role {
		case RoleUser, RoleSystem, RoleDeveloper:
			for j, p := range it.Content {
				if p.Type == PartOutputText || p.Type == PartRefusal {
					return InvalidRequest(fmt.Sprintf("content[%d].type", j), "%s content is only valid in assistant messages", p.Type)
				}
			}
		case RoleAssistant:
			for j, p := range it.Content {
				if p.Type == PartInputImage || p.Type == PartInputFile {
					return InvalidRequest(fmt.Sprintf("content[%d].type", j), "%s content is not valid in assistant messages", p.Type)
				}
			}
		case "":
			return InvalidRequest("role", "missing required parameter: role")
		default:
			return InvalidRequest("role", "invalid role %q; expected user, assistant, system or developer", it.Role)
		}
	case ItemFunctionCall:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
		if it.Name == "" {
			return InvalidRequest("name", "missing required parameter: name")
		}
	case ItemFunctionCallOutput:
		if it.CallID == "" {
			return InvalidRequest("call_id", "missing required parameter: call_id")
		}
	case ItemReference:
		if it.ID == "" {
			return InvalidRequest("id", "missing required parameter: id")
		}
	}
	return nil
}

// ReadLimited reads at most limit bytes from r; more is an *Error with
// status 413.
func ReadLimited(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, InvalidRequest("", "could not read the request body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, &Error{Status: 413, Type: ErrTypeInvalidRequest, Code: "request_too_large", Message: fmt.Sprintf("request body exceeds the limit of %d bytes", limit)}
	}
	return b, nil
}
