package fakellm

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/lambent/lambent/internal/chatwire"
)

// OpenAI's bounds on a request's parameters (api.openai.com's Chat
// Completions validation, with the messages it answers).
const (
	// MaxTools is the most tools a request may declare ("array too long").
	MaxTools = 128
	// MaxFunctionName is the longest function name.
	MaxFunctionName = 64
	// MaxTopLogprobs is the largest top_logprobs.
	MaxTopLogprobs = 20
)

// functionName is the pattern OpenAI checks function names and
// response_format names against (their length is checked apart).
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// reasoningEfforts are the reasoning_effort values the API takes (the
// ReasoningEffort enum of openai-go v3.96).
var reasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"}

// imageDetails are the image_url.detail values the API takes.
var imageDetails = []string{"auto", "low", "high", "original"}

// toolChoiceModes are tool_choice's string values.
var toolChoiceModes = []string{"none", "auto", "required"}

// checkParams checks the request's parameters besides its messages, one
// rule after another, first fault first.
func (r Rules) checkParams(req *chatwire.Request) *Refusal {
	for _, check := range []func(*chatwire.Request) *Refusal{
		r.checkTools, r.checkToolChoice, r.checkResponseFormat, r.checkSampling, r.checkTokenLimits,
	} {
		if f := check(req); f != nil {
			return f
		}
	}
	return nil
}

// supported is OpenAI's refusal of an enum value outside values.
func (r Rules) supported(param, v string, values []string) *Refusal {
	if slices.Contains(values, v) {
		return nil
	}
	quoted := make([]string, len(values))
	for i, s := range values {
		quoted[i] = "'" + s + "'"
	}
	list := strings.Join(quoted[:len(quoted)-1], ", ") + ", and " + quoted[len(quoted)-1]
	if len(quoted) == 2 {
		list = quoted[0] + " and " + quoted[1]
	}
	return r.refuse(fmt.Sprintf("Invalid value: '%s'. Supported values are: %s.", v, list), param, "invalid_value")
}

// checkName checks a function or schema name: OpenAI refuses one that
// does not match ^[a-zA-Z0-9_-]+$ or is over 64 characters.
func (r Rules) checkName(param, name string) *Refusal {
	if !functionName.MatchString(name) {
		return r.refuse(fmt.Sprintf("Invalid '%s': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", param),
			param, "invalid_value")
	}
	if n := len(name); n > MaxFunctionName {
		return r.refuse(fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", param, MaxFunctionName, n),
			param, "string_above_max_length")
	}
	return nil
}

// checkTools checks "tools": at most 128, of type function or custom,
// function names of the pattern, strict functions' schemas by the strict
// rules (checkStrict), and parallel_tool_calls only with tools (OpenAI
// refuses it without them).
func (r Rules) checkTools(req *chatwire.Request) *Refusal {
	if n := len(req.Tools); n > MaxTools {
		return r.refuse(fmt.Sprintf("Invalid 'tools': array too long. Expected an array with maximum length %d, but got an array with length %d instead.", MaxTools, n),
			"tools", "array_above_max_length")
	}
	for i := range req.Tools {
		t := &req.Tools[i]
		if f := r.supported(fmt.Sprintf("tools[%d].type", i), t.Type, []string{"function", "custom"}); f != nil {
			return f
		}
		if f := r.checkName(fmt.Sprintf("tools[%d].function.name", i), t.Function.Name); f != nil {
			return f
		}
		if t.Function.Strict != nil && *t.Function.Strict {
			if msg := strictSchema(t.Function.Parameters); msg != "" {
				return r.refuse(fmt.Sprintf("Invalid schema for function '%s': %s", t.Function.Name, msg),
					fmt.Sprintf("tools[%d].function.parameters", i), "invalid_function_parameters")
			}
		}
	}
	if req.ParallelToolCalls != nil && len(req.Tools) == 0 {
		return r.refuse("Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.", "parallel_tool_calls", "")
	}
	return nil
}

// checkToolChoice checks "tool_choice": only with tools, a mode of none,
// auto or required, or a function of tools.
func (r Rules) checkToolChoice(req *chatwire.Request) *Refusal {
	if len(req.ToolChoice) == 0 || string(req.ToolChoice) == "null" {
		return nil
	}
	if len(req.Tools) == 0 {
		return r.refuse("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice", "")
	}
	var mode string
	if json.Unmarshal(req.ToolChoice, &mode) == nil {
		return r.supported("tool_choice", mode, toolChoiceModes)
	}
	var named chatwire.NamedToolChoice
	if json.Unmarshal(req.ToolChoice, &named) != nil || named.Type != "function" {
		return nil // allowed_tools and custom choices are not modelled
	}
	if !slices.ContainsFunc(req.Tools, func(t chatwire.Tool) bool { return t.Function.Name == named.Function.Name }) {
		return r.refuse(fmt.Sprintf("Invalid value for 'tool_choice': function '%s' is not in 'tools'.", named.Function.Name), "tool_choice", "")
	}
	return nil
}

// checkResponseFormat checks a json_schema response_format: its name's
// pattern, and with strict true its schema by the strict rules.
func (r Rules) checkResponseFormat(req *chatwire.Request) *Refusal {
	rf := req.ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil {
		return nil
	}
	js := rf.JSONSchema
	if f := r.checkName("response_format.json_schema.name", js.Name); f != nil {
		return f
	}
	if js.Strict != nil && *js.Strict {
		if msg := strictSchema(js.Schema); msg != "" {
			return r.refuse(fmt.Sprintf("Invalid schema for response_format '%s': %s", js.Name, msg), "response_format", "invalid_json_schema")
		}
	}
	return nil
}

// checkSampling checks top_logprobs (0 to 20, with logprobs true),
// reasoning_effort's value and stream_options (only when streaming).
func (r Rules) checkSampling(req *chatwire.Request) *Refusal {
	if n := req.TopLogprobs; n != nil {
		if *n > MaxTopLogprobs {
			return r.refuse(fmt.Sprintf("Invalid 'top_logprobs': integer above maximum value. Expected a value <= %d, but got %d instead.", MaxTopLogprobs, *n),
				"top_logprobs", "integer_above_max_value")
		}
		if !req.Logprobs {
			return r.refuse("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.", "top_logprobs", "")
		}
	}
	if e := req.ReasoningEffort; e != "" {
		if f := r.supported("reasoning_effort", e, reasoningEfforts); f != nil {
			return f
		}
	}
	if req.StreamOptions != nil && !req.Stream {
		return r.refuse("The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", "")
	}
	return nil
}

// reasoningModel reports whether model is one of OpenAI's reasoning
// models (the o-series and GPT-5), which refuse max_tokens.
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if model == p || strings.HasPrefix(model, p+"-") || strings.HasPrefix(model, p+".") {
			return true
		}
	}
	return false
}

// checkTokenLimits checks that a reasoning model is not sent max_tokens:
// OpenAI refuses it there and takes max_completion_tokens only.
func (r Rules) checkTokenLimits(req *chatwire.Request) *Refusal {
	if req.MaxTokens != nil && reasoningModel(req.Model) {
		return r.refuse("Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter")
	}
	return nil
}

// checkContent checks message i's content: null only in an assistant
// message (OpenAI refuses it elsewhere), image_url parts only in user
// messages, with a detail OpenAI knows.
func (r Rules) checkContent(i int, m *chatwire.Message) *Refusal {
	if m.Content == nil {
		if m.Role == "assistant" {
			return nil
		}
		return r.refuse("Invalid value for 'content': expected a string, got null.", fmt.Sprintf("messages.[%d].content", i), "")
	}
	for j, p := range m.Content.Parts {
		if p.Type != "image_url" || p.ImageURL == nil {
			continue
		}
		if m.Role != "user" {
			return r.refuse(fmt.Sprintf("Invalid 'messages[%d]'. Image URLs are only allowed for messages with role 'user', but this message with role '%s' contains an image URL.", i, m.Role),
				fmt.Sprintf("messages[%d]", i), "invalid_value")
		}
		if d := p.ImageURL.Detail; d != "" {
			if f := r.supported(fmt.Sprintf("messages[%d].content[%d].image_url.detail", i, j), d, imageDetails); f != nil {
				return f
			}
		}
	}
	return nil
}

// strictSchema checks a JSON Schema by Structured Outputs' strict rules
// and returns the fault as OpenAI words it, or "": the root is an object,
// and every object schema sets additionalProperties false and requires
// every key of its properties.
func strictSchema(raw json.RawMessage) string {
	var root map[string]any
	if json.Unmarshal(raw, &root) != nil || root == nil {
		return "schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'."
	}
	if t, _ := root["type"].(string); t != "object" {
		if t == "" {
			t = "None"
		}
		return fmt.Sprintf("schema must be a JSON Schema of 'type: \"%s\"', got 'type: \"%s\"'.", "object", t)
	}
	return strictNode(root, nil)
}

// strictNode checks one schema node at path and the nodes under it.
func strictNode(node map[string]any, path []string) string {
	props, _ := node["properties"].(map[string]any)
	if isObject(node) {
		if ap, ok := node["additionalProperties"].(bool); !ok || ap {
			return fmt.Sprintf("In context=%s, 'additionalProperties' is required to be supplied and to be false.", pyTuple(path))
		}
		required, _ := node["required"].([]any)
		for _, k := range slices.Sorted(maps.Keys(props)) {
			if !slices.Contains(required, any(k)) {
				return fmt.Sprintf("In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", pyTuple(path), k)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if sub, ok := props[k].(map[string]any); ok {
			if msg := strictNode(sub, append(slices.Clip(path), "properties", k)); msg != "" {
				return msg
			}
		}
	}
	for _, key := range []string{"items", "anyOf", "$defs", "definitions"} {
		if msg := strictChildren(node[key], append(slices.Clip(path), key)); msg != "" {
			return msg
		}
	}
	return ""
}

// strictChildren checks the schemas of a keyword's value: one schema, an
// array of them or an object of named ones.
func strictChildren(v any, path []string) string {
	switch c := v.(type) {
	case map[string]any:
		if _, named := c["type"]; named || path[len(path)-1] == "items" {
			return strictNode(c, path)
		}
		for _, k := range slices.Sorted(maps.Keys(c)) {
			if sub, ok := c[k].(map[string]any); ok {
				if msg := strictNode(sub, append(slices.Clip(path), k)); msg != "" {
					return msg
				}
			}
		}
	case []any:
		for i, s := range c {
			if sub, ok := s.(map[string]any); ok {
				if msg := strictNode(sub, append(slices.Clip(path), fmt.Sprint(i))); msg != "" {
					return msg
				}
			}
		}
	}
	return ""
}

// isObject reports whether a schema node describes an object: type
// "object" (or a type list holding it), or properties.
func isObject(node map[string]any) bool {
	switch t := node["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	_, ok := node["properties"]
	return ok
}

// pyTuple writes path as the Python tuple OpenAI's messages show: (),
// ('items',), ('properties', 'a').
func pyTuple(path []string) string {
	quoted := make([]string, len(path))
	for i, p := range path {
		quoted[i] = "'" + p + "'"
	}
	if len(quoted) == 1 {
		return "(" + quoted[0] + ",)"
	}
	return "(" + strings.Join(quoted, ", ") + ")"
}
