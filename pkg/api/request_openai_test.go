package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documentedParams are the parameters of POST /v1/responses that openai-go
// (ResponseNewParams), npm openai (ResponseCreateParamsBase) and the
// OpenResponses spec (CreateResponseBody) document, plus Lambent's
// allowed_tools.
func documentedParams() []string {
	return []string{
		"access_programs", "background", "background_options", "context_management", "conversation", "frequency_penalty", "image", "include",
		"input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "model", "moderation",
		"parallel_tool_calls", "presence_penalty", "previous_response_id", "prompt", "prompt_cache_key",
		"prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store",
		"stream", "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p",
		"truncation", "user", "allowed_tools", "client_metadata",
	}
}

// Explicit null is absent for every parameter, as OpenAI treats it.
func TestDecodeNullIsAbsent(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"input":"hi"`)
	for _, p := range documentedParams() {
		if p != "input" {
			b.WriteString(`,"` + p + `":null`)
		}
	}
	b.WriteString("}")
	r, err := DecodeCreateRequest([]byte(b.String()))
	require.NoError(t, err)
	assert.Equal(t, &CreateResponseRequest{Input: r.Input, InputString: true}, r)

	r, err = DecodeCreateRequest([]byte(`{"input":null,"previous_response_id":"resp_1"}`))
	require.NoError(t, err)
	assert.Empty(t, r.Input)
}

// okCase is a body that must decode; check, when set, inspects the result.
type okCase struct {
	name, body string
	check      func(t *testing.T, r *CreateResponseRequest)
}

func runOK(t *testing.T, cases []okCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeCreateRequest([]byte(c.body))
			require.NoError(t, err, c.body)
			require.NoError(t, r.Validate(), "a decoded request validates again")
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// Every documented parameter is accepted with each documented value.
func TestDecodeAcceptsOpenAIParams(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // characters, not bytes, count
	metadata := map[string]string{}
	for i := range 16 {
		metadata[fmt.Sprintf("%02d%s", i, strings.Repeat("k", 62))] = long(512)
	}
	md, err := json.Marshal(metadata)
	require.NoError(t, err)
	textFormat := func(want TextConfig) func(t *testing.T, r *CreateResponseRequest) {
		return func(t *testing.T, r *CreateResponseRequest) {
			require.NotNil(t, r.Text)
			assert.Equal(t, want, *r.Text)
		}
	}
	var cases []okCase
	add := func(name, params string, check func(t *testing.T, r *CreateResponseRequest)) {
		cases = append(cases, okCase{name, `{"input":"hi",` + params + `}`, check})
	}
	add("text {}", `"text":{}`, textFormat(TextConfig{Format: TextFormat{Type: FormatText}}))
	add("text format null", `"text":{"format":null,"verbosity":null}`, textFormat(TextConfig{Format: TextFormat{Type: FormatText}}))
	add("text verbosity only", `"text":{"verbosity":"low"}`, textFormat(TextConfig{Format: TextFormat{Type: FormatText}, Verbosity: "low"}))
	add("text json_object", `"text":{"format":{"type":"json_object"},"verbosity":"high"}`,
		textFormat(TextConfig{Format: TextFormat{Type: FormatJSONObject}, Verbosity: "high"}))
	add("text json_schema with nulls", `"text":{"format":{"type":"json_schema","name":"out-1","schema":{"type":"object"},"strict":null,"description":null}}`,
		textFormat(TextConfig{Format: TextFormat{Type: FormatJSONSchema, Name: "out-1", Schema: json.RawMessage(`{"type":"object"}`), Strict: new(false)}}))
	add("reasoning {}", `"reasoning":{}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, &Reasoning{}, r.Reasoning)
	})
	add("reasoning nulls", `"reasoning":{"effort":null,"summary":null,"generate_summary":null,"context":null,"mode":null}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, &Reasoning{}, r.Reasoning)
	})
	for _, e := range []string{"none", "minimal", "low", "medium", "high", "xhigh", "max"} {
		add("reasoning effort "+e, `"reasoning":{"effort":"`+e+`","summary":"detailed","context":"all_turns","mode":"pro"}`, func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, e, *r.Reasoning.Effort)
			assert.Equal(t, "detailed", *r.Reasoning.Summary)
		})
	}
	add("reasoning generate_summary", `"reasoning":{"generate_summary":"concise"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, "concise", *r.Reasoning.Summary)
	})
	add("stream_options {}", `"stream":true,"stream_options":{}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, &StreamOptions{}, r.StreamOptions)
	})
	add("stream_options include_obfuscation", `"stream":true,"stream_options":{"include_obfuscation":false}`, func(t *testing.T, r *CreateResponseRequest) {
		require.NotNil(t, r.StreamOptions.IncludeObfuscation)
		assert.False(t, *r.StreamOptions.IncludeObfuscation)
	})
	includes := []string{"reasoning.encrypted_content", "message.output_text.logprobs", "message.input_image.image_url",
		"file_search_call.results", "web_search_call.results", "web_search_call.action.sources",
		"computer_call_output.output.image_url", "code_interpreter_call.outputs"}
	inc, err := json.Marshal(includes)
	require.NoError(t, err)
	add("include every documented value", `"include":`+string(inc), func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, includes, r.Include)
	})
	add("include []", `"include":[]`, nil)
	for _, tier := range []string{"auto", "default", "flex", "scale", "priority", "ultrafast"} {
		add("service_tier "+tier, `"service_tier":"`+tier+`"`, func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, tier, r.ServiceTier)
		})
	}
	add("service_tier fast is priority", `"service_tier":"fast"`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, "priority", r.ServiceTier)
	})
	for _, ret := range []string{"in_memory", "24h"} {
		add("prompt_cache_retention "+ret, `"prompt_cache_retention":"`+ret+`"`, func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, ret, r.PromptCacheRetention)
		})
	}
	for _, tr := range []string{"auto", "disabled"} {
		add("truncation "+tr, `"truncation":"`+tr+`"`, nil)
	}
	add("identifiers at their limits", `"prompt_cache_key":"`+long(64)+`","safety_identifier":"`+long(128)+`","user":"u"`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, long(64), r.PromptCacheKey)
		assert.Equal(t, long(128), r.SafetyIdentifier)
		assert.Equal(t, "u", r.User)
	})
	add("metadata at its limits", `"metadata":`+string(md), func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, metadata, r.Metadata)
	})
	add("numbers at their lower bounds", `"temperature":0,"top_p":0,"presence_penalty":-2,"frequency_penalty":-2,"top_logprobs":0,"max_output_tokens":16,"max_tool_calls":1`, nil)
	add("numbers at their upper bounds", `"temperature":2,"top_p":1,"presence_penalty":2,"frequency_penalty":2,"top_logprobs":20,"max_output_tokens":1000000,"max_tool_calls":1000`,
		func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, 2.0, *r.Temperature)
			assert.Equal(t, 20, *r.TopLogprobs)
		})
	add("background, store, instructions", `"background":true,"store":true,"instructions":"be brief","parallel_tool_calls":false`, func(t *testing.T, r *CreateResponseRequest) {
		assert.True(t, r.Background)
		assert.Equal(t, "be brief", r.Instructions)
	})
	add("empty context_management", `"context_management":[]`, func(t *testing.T, r *CreateResponseRequest) {
		_, ok := r.CompactThreshold()
		assert.False(t, ok)
	})
	add("context_management compaction", `"context_management":[{"type":"compaction","compact_threshold":1000}]`, func(t *testing.T, r *CreateResponseRequest) {
		n, ok := r.CompactThreshold()
		assert.True(t, ok)
		assert.Equal(t, 1000, n)
	})
	add("context_management compaction at its maximum", `"context_management":[{"type":"compaction","compact_threshold":10000000}]`, nil)
	add("context_management compaction without a threshold", `"context_management":[{"type":"compaction","compact_threshold":null}]`, func(t *testing.T, r *CreateResponseRequest) {
		n, ok := r.CompactThreshold()
		assert.True(t, ok)
		assert.Equal(t, DefaultCompactThreshold, n)
	})
	add("prompt_cache_options", `"prompt_cache_options":{"comparison_response_id":"resp_1","mode":"explicit","prewarm":false,"ttl":"12h"}`, nil)
	add("prompt_cache_options {}", `"prompt_cache_options":{}`, nil)
	add("access_programs", `"access_programs":{"cyber":"standard"}`, nil)
	add("image", `"image":{"context_compression":"disabled"}`, nil)
	add("background_options soonest", `"background_options":{"completion_window":"soonest","continuation_id":"batch-7"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, "soonest", r.CompletionWindow)
	})
	add("background_options {}", `"background_options":{}`, nil)
	add("background_options 8h, background", `"background":true,"service_tier":"default","background_options":{"completion_window":"8h"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, "8h", r.CompletionWindow)
		assert.True(t, r.Background)
	})
	add("tools []", `"tools":[]`, nil)
	add("function tool with null strict and description", `"tools":[{"type":"function","name":"f","description":null,"parameters":null,"strict":null}],"tool_choice":"required"`, nil)
	add("allowed_tools choice with hosted and mcp tools",
		`"tools":[{"type":"function","name":"f"},{"type":"lambent:calculator"},{"type":"mcp","server_label":"x","server_url":"https://x"}],`+
			`"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"},{"type":"lambent:calculator"},{"type":"mcp","server_label":"x"}]}`, nil)
	runOK(t, cases)
}

// Every input item shape the SDKs send decodes.
func TestDecodeAcceptsSDKInputShapes(t *testing.T) {
	var cases []okCase
	add := func(name, items string, check func(t *testing.T, r *CreateResponseRequest)) {
		cases = append(cases, okCase{name, `{"input":[` + items + `]}`, check})
	}
	add("message without type, string content", `{"role":"user","content":"hi"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, ItemMessage, r.Input[0].Type)
	})
	add("message with null id and status", `{"type":"message","id":null,"status":null,"role":"developer","content":"be brief"}`, nil)
	add("input_text, input_image, input_file",
		`{"role":"user","content":[{"type":"input_text","text":"look"},`+
			`{"type":"input_image","image_url":"https://example.com/a.png","detail":"low"},`+
			`{"type":"input_image","file_id":"file_1","detail":"high"},`+
			`{"type":"input_image","image_url":"data:image/png;base64,AA==","detail":"auto"},`+
			`{"type":"input_image","image_url":"https://example.com/b.png","detail":"original"},`+
			`{"type":"input_image","image_url":"https://example.com/c.png","detail":null,"file_id":null},`+
			`{"type":"input_file","file_id":"file_2"},`+
			`{"type":"input_file","file_data":"data:application/pdf;base64,AA==","filename":"a.pdf","detail":"high"},`+
			`{"type":"input_file","file_url":"https://example.com/a.pdf"}]}`,
		func(t *testing.T, r *CreateResponseRequest) {
			assert.Len(t, r.Input[0].Content, 9)
		})
	add("assistant output_text with annotations and logprobs, refusal, phase",
		`{"type":"message","id":"msg_1","status":"completed","role":"assistant","phase":"final_answer","content":[`+
			`{"type":"output_text","text":"yo","annotations":[{"type":"url_citation","url":"https://x","title":"x","start_index":0,"end_index":2}],`+
			`"logprobs":[{"token":"yo","logprob":-0.1,"bytes":[121,111],"top_logprobs":[]}]},{"type":"refusal","refusal":"no"}]}`,
		func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, "no", r.Input[0].Content[1].Refusal)
		})
	add("assistant history as input_text (LangChain)", `{"type":"message","role":"assistant","content":[{"type":"input_text","text":"earlier"}]}`, nil)
	add("reasoning with summary and encrypted_content",
		`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"thought"}],"encrypted_content":"gAAAA=="},`+
			`{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":null,"content":null,"status":null}`,
		func(t *testing.T, r *CreateResponseRequest) {
			assert.Equal(t, "gAAAA==", r.Input[0].EncryptedContent)
			assert.Equal(t, "thought", r.Input[0].Summary[0].Text)
		})
	add("function_call with status, function_call_output with array output",
		`{"type":"function_call","id":"fc_1","call_id":"c1","name":"f","arguments":"{}","status":"completed"},`+
			`{"type":"function_call","call_id":"c2","name":"f","arguments":"{}","status":"in_progress"},`+
			`{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"4"},{"type":"input_image","image_url":"https://x/y.png"},{"type":"input_file","file_id":"file_1"}],"status":"incomplete"}`,
		func(t *testing.T, r *CreateResponseRequest) {
			assert.Len(t, r.Input[2].OutputParts, 3)
		})
	add("item_reference", `{"type":"item_reference","id":"msg_1"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, Item{Type: ItemReference, ID: "msg_1"}, r.Input[0])
	})
	add("item_reference without type", `{"id":"msg_1"},{"type":null,"id":"msg_2"},{"role":"user","content":"more"}`, func(t *testing.T, r *CreateResponseRequest) {
		assert.Equal(t, Item{Type: ItemReference, ID: "msg_1"}, r.Input[0])
		assert.Equal(t, Item{Type: ItemReference, ID: "msg_2"}, r.Input[1])
		assert.Equal(t, ItemMessage, r.Input[2].Type)
	})
	runOK(t, cases)
}

// badCase is a body that must be a 400 naming param, with code when set and
// a message containing msg.
type badCase struct{ body, param, code, msg string }

func runBad(t *testing.T, cases []badCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			_, err := DecodeCreateRequest([]byte(c.body))
			var ae *Error
			require.True(t, errors.As(err, &ae), "%v", err)
			assert.Equal(t, 400, ae.Status)
			assert.Equal(t, c.param, ae.Param)
			if c.code != "" {
				assert.Equal(t, c.code, ae.Code)
			}
			assert.Contains(t, ae.Message, c.msg)
		})
	}
}

// Values OpenAI refuses are a 400 naming the parameter, never forwarded.
func TestDecodeRejectsAsOpenAIDoes(t *testing.T) {
	in := func(params string) string { return `{"input":"hi",` + params + `}` }
	long := func(n int) string { return strings.Repeat("x", n) }
	many := map[string]string{}
	for i := range 17 {
		many[fmt.Sprint(i)] = "v"
	}
	md, err := json.Marshal(many)
	require.NoError(t, err)
	runBad(t, []badCase{
		// Ranges.
		{in(`"temperature":-0.1`), "temperature", "decimal_below_min_value", "between 0 and 2"},
		{in(`"temperature":2.01`), "temperature", "decimal_above_max_value", "got 2.01"},
		{in(`"top_p":1.5`), "top_p", "decimal_above_max_value", "between 0 and 1"},
		{in(`"top_p":-1`), "top_p", "decimal_below_min_value", ""},
		{in(`"presence_penalty":-2.5`), "presence_penalty", "decimal_below_min_value", "between -2 and 2"},
		{in(`"presence_penalty":3`), "presence_penalty", "decimal_above_max_value", ""},
		{in(`"frequency_penalty":2.1`), "frequency_penalty", "decimal_above_max_value", ""},
		{in(`"frequency_penalty":-9`), "frequency_penalty", "decimal_below_min_value", ""},
		{in(`"top_logprobs":21`), "top_logprobs", "integer_above_max_value", "between 0 and 20"},
		{in(`"top_logprobs":-1`), "top_logprobs", "integer_below_min_value", ""},
		{in(`"max_output_tokens":15`), "max_output_tokens", "integer_below_min_value", "at least 16, but got 15"},
		{in(`"max_tool_calls":0`), "max_tool_calls", "integer_below_min_value", "at least 1"},
		{in(`"max_output_tokens":100.5`), "max_output_tokens", "", "integer"},
		{in(`"top_logprobs":"5"`), "top_logprobs", "", "integer"},
		// Lengths.
		{in(`"prompt_cache_key":"` + long(65) + `"`), "prompt_cache_key", "string_above_max_length", "maximum length 64"},
		{in(`"safety_identifier":"` + long(129) + `"`), "safety_identifier", "string_above_max_length", "maximum length 128"},
		{in(`"metadata":` + string(md)), "metadata", "object_above_max_properties", "at most 16"},
		{in(`"metadata":{"` + long(65) + `":"v"}`), "metadata", "string_above_max_length", "64"},
		{in(`"metadata":{"k":"` + long(513) + `"}`), "metadata.k", "string_above_max_length", "512"},
		// Enumerations.
		{in(`"truncation":"sometimes"`), "truncation", "invalid_value", "sometimes"},
		{in(`"service_tier":"turbo"`), "service_tier", "invalid_value", "'flex'"},
		{in(`"prompt_cache_retention":"in-memory"`), "prompt_cache_retention", "invalid_value", "'in_memory'"},
		{in(`"include":["reasoning.encrypted_content","everything"]`), "include[1]", "invalid_value", "everything"},
		{in(`"reasoning":{"effort":"extreme"}`), "reasoning.effort", "invalid_value", "extreme"},
		{in(`"reasoning":{"summary":"long"}`), "reasoning.summary", "invalid_value", "long"},
		{in(`"reasoning":{"generate_summary":"long"}`), "reasoning.generate_summary", "invalid_value", "long"},
		{in(`"reasoning":{"context":"forever"}`), "reasoning.context", "invalid_value", ""},
		{in(`"reasoning":{"mode":"turbo"}`), "reasoning.mode", "invalid_value", ""},
		{in(`"text":{"verbosity":"loud"}`), "text.verbosity", "invalid_value", "loud"},
		{in(`"prompt_cache_options":{"ttl":"1h"}`), "prompt_cache_options.ttl", "invalid_value", ""},
		{in(`"prompt_cache_options":{"mode":"sometimes"}`), "prompt_cache_options.mode", "invalid_value", ""},
		{in(`"access_programs":{"cyber":"red"}`), "access_programs.cyber", "invalid_value", ""},
		{in(`"image":{"context_compression":"max"}`), "image.context_compression", "invalid_value", ""},
		{in(`"background_options":{"completion_window":"1h"}`), "background_options.completion_window", "invalid_value", "'soonest', '2h', '8h'"},
		{in(`"background_options":{"continuation_id":"` + long(MaxContinuationID+1) + `"}`), "background_options.continuation_id", "string_above_max_length", "maximum length 512"},
		{in(`"background_options":{"priority":1}`), "background_options.priority", "unknown_parameter", ""},
		{in(`"background_options":"2h"`), "background_options", "invalid_type", "object"},
		// A discounted completion window: background, not streamed, standard processing.
		{in(`"background_options":{"completion_window":"2h"}`), "background_options.completion_window", "", "requires background: true"},
		{in(`"background":true,"stream":true,"background_options":{"completion_window":"2h"}`), "background_options.completion_window", "", "stream: false"},
		{in(`"background":true,"service_tier":"flex","background_options":{"completion_window":"8h"}`), "background_options.completion_window", "", "standard processing"},
		// text.format.
		{in(`"text":{"format":{}}`), "text.format.type", "missing_required_parameter", "text.format.type"},
		{in(`"text":{"format":{"type":"json_schema","schema":{"type":"object"}}}`), "text.format.name", "missing_required_parameter", ""},
		{in(`"text":{"format":{"type":"json_schema","name":"has space","schema":{"type":"object"}}}`), "text.format.name", "", "has space"},
		{in(`"text":{"format":{"type":"json_schema","name":"n","schema":[]}}`), "text.format.schema", "", "JSON Schema object"},
		{in(`"text":{"format":"text"}`), "text.format", "invalid_type", "object"},
		{in(`"text":[]`), "text", "invalid_type", "object"},
		{in(`"reasoning":"high"`), "reasoning", "invalid_type", "object"},
		{in(`"stream_options":true`), "stream_options", "invalid_type", "object"},
		// Unknown nested parameters.
		{in(`"text":{"format":{"type":"text","name":"x"}}`), "text.format.name", "unknown_parameter", "Unknown parameter"},
		{in(`"text":{"format":{"type":"json_object","schema":{}}}`), "text.format.schema", "unknown_parameter", ""},
		{in(`"text":{"type":"text"}`), "text.type", "unknown_parameter", ""},
		{in(`"reasoning":{"budget":100}`), "reasoning.budget", "unknown_parameter", ""},
		{in(`"stream":true,"stream_options":{"include_usage":true}`), "stream_options.include_usage", "unknown_parameter", ""},
		{in(`"prompt_cache_options":{"size":1}`), "prompt_cache_options.size", "unknown_parameter", ""},
		{in(`"max_completion_tokens":100`), "max_completion_tokens", "unknown_parameter", "'max_completion_tokens'"},
		// Features this server does not have.
		// conversation: an id or {"id"}, never with previous_response_id.
		{in(`"conversation":"conv_1","previous_response_id":"resp_1"`), "conversation", "mutually_exclusive_parameters", "only providing one of"},
		{in(`"conversation":{"id":"conv_1"},"previous_response_id":"resp_1"`), "conversation", "mutually_exclusive_parameters", ""},
		{in(`"conversation":{}`), "conversation.id", "", "missing"},
		{in(`"conversation":{"id":"c","x":1}`), "conversation.x", "unknown_parameter", ""},
		{in(`"conversation":""`), "conversation", "empty_string", ""},
		{in(`"conversation":7`), "conversation", "", "string or an object"},
		{in(`"prompt":{"id":"pmpt_1","variables":{"x":"y"}}`), "prompt", "unsupported_parameter", "no stored prompts"},
		{in(`"context_management":{}`), "context_management", "", "array"},
		{in(`"context_management":[7]`), "context_management[0]", "invalid_type", "object"},
		{in(`"context_management":[{"compact_threshold":1000}]`), "context_management[0].type", "missing_required_parameter", ""},
		{in(`"context_management":[{"type":"truncation"}]`), "context_management[0].type", "invalid_value", "'compaction'"},
		{in(`"context_management":[{"type":"compaction","threshold":1000}]`), "context_management[0].threshold", "unknown_parameter", ""},
		{in(`"context_management":[{"type":"compaction","compact_threshold":999}]`), "context_management[0].compact_threshold", "integer_below_min_value", "1000"},
		{in(`"context_management":[{"type":"compaction","compact_threshold":10000001}]`), "context_management[0].compact_threshold", "integer_above_max_value", ""},
		{in(`"context_management":[{"type":"compaction","compact_threshold":1.5}]`), "context_management[0].compact_threshold", "", ""},
		{in(`"context_management":[{"type":"compaction","compact_threshold":"9000"}]`), "context_management[0].compact_threshold", "", ""},
		{in(`"context_management":[{"type":"compaction"},{"type":"compaction","compact_threshold":5000}]`), "context_management[1].type", "", "once"},
		{in(`"moderation":{"model":"omni-moderation-latest"}`), "moderation", "unsupported_parameter", ""},
		{in(`"prompt_cache_options":{"prewarm":true}`), "prompt_cache_options.prewarm", "unsupported_parameter", ""},
	})
}

// tool_choice forms Lambent cannot honour are a 400 naming the type: a
// built-in tool it does not run (unsupported_tool), an MCP server's tool.
func TestDecodeRejectsUnsupportedToolChoice(t *testing.T) {
	var cases []badCase
	cases = append(cases, badCase{`{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{}}`, "tool_choice.type", "", "tool_choice type"})
	for _, typ := range []string{"web_search_preview", "file_search", "image_generation", "code_interpreter",
		"programmatic_tool_calling"} {
		cases = append(cases, badCase{`{"input":"hi","tools":[{"type":"` + typ + `"}],"tool_choice":{"type":"` + typ + `"}}`, "tool_choice.type", "unsupported_tool", `"` + typ + `"`})
	}
	for _, typ := range []string{"shell", "apply_patch", "computer", "computer_use_preview", "computer_use"} {
		cases = append(cases, badCase{`{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"` + typ + `"}}`, "tool_choice.type", "", "not in tools"})
	}
	// OpenAI's tool_choice has no local_shell form.
	cases = append(cases, badCase{`{"input":"hi","tools":[{"type":"local_shell"}],"tool_choice":{"type":"local_shell"}}`, "tool_choice.type", "", "cannot force"})
	runBad(t, cases)
}

// unsupportedItemTypes are the input item types OpenAI defines that Lambent
// does not accept (yet).
func unsupportedItemTypes() []string {
	return []string{
		"file_search_call", "additional_tools", "configuration_update",
		"image_generation_call", "code_interpreter_call", "program", "program_output",
	}
}

// Input shapes OpenAI defines but Lambent does not handle, and malformed
// items, are a 400 naming the item's field.
func TestDecodeRejectsInputShapes(t *testing.T) {
	var cases []badCase
	for _, typ := range unsupportedItemTypes() {
		cases = append(cases, badCase{`{"input":[{"type":"` + typ + `","id":"x_1","call_id":"c"}]}`, "input[0].type", "", "unsupported item type"})
	}
	in := func(items string) string { return `{"input":[` + items + `]}` }
	cases = append(cases,
		badCase{in(`{"role":"user","content":[{"type":"input_image","image_url":"https://x/a.png","detail":"ultra"}]}`), "input[0].content[0].detail", "invalid_value", "ultra"},
		badCase{in(`{"role":"user","content":[{"type":"input_file","file_id":"f","detail":"original"}]}`), "input[0].content[0].detail", "invalid_value", ""},
		badCase{in(`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","file_id":"f","detail":"huge"}]}`),
			"input[1].output[0].detail", "invalid_value", ""},
		badCase{in(`{"type":"function_call","call_id":"c","name":"f","arguments":"{}","status":"done"}`), "input[0].status", "invalid_value", "done"},
		badCase{in(`{"type":"reasoning","summary":[{"type":"input_text","text":"x"}]}`), "input[0].summary[0].type", "invalid_value", "summary_text"},
		badCase{in(`{"type":"function_call_output","call_id":"c","output":[{"type":"input_video","video_url":"https://x/v.mp4"}]}`), "input[0].output[0].type", "", "input_video"},
		badCase{in(`{"id":""}`), "input[0].content", "", "content"},
		badCase{in(`{"id":"msg_1","role":"user"}`), "input[0].content", "", "content"},
		badCase{in(`{"id":"msg_1","extra":true}`), "input[0].content", "", "content"},
		badCase{in(`null`), "input[0].content", "", "content"},
	)
	runBad(t, cases)
}

// The text format is echoed with every field its type has, as
// ResponseResource requires: a json_schema format's description is null
// and its strict false when the request left them out.
func TestTextFormatEcho(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{}`, `{"format":{"type":"text"}}`},
		{`{"format":{"type":"json_object"}}`, `{"format":{"type":"json_object"}}`},
		{`{"format":{"type":"text"},"verbosity":"low"}`, `{"format":{"type":"text"},"verbosity":"low"}`},
		{`{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}}`,
			`{"format":{"type":"json_schema","name":"n","description":null,"schema":{"type":"object"},"strict":false}}`},
		{`{"format":{"type":"json_schema","name":"n","description":"d","schema":{"type":"object"},"strict":true}}`,
			`{"format":{"type":"json_schema","name":"n","description":"d","schema":{"type":"object"},"strict":true}}`},
	} {
		r, err := DecodeCreateRequest([]byte(`{"input":"hi","text":` + c.in + `}`))
		require.NoError(t, err, c.in)
		b, err := json.Marshal(r.Text)
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(b), c.in)
	}
}

// clientBody is one request body an official client sent, captured by
// testdata/capture_client_bodies.mjs.
type clientBody struct {
	Name string          `json:"name"`
	Body json.RawMessage `json:"body"`
}

func clientBodies(t testing.TB) []clientBody {
	t.Helper()
	b, err := os.ReadFile("testdata/client_bodies.json")
	require.NoError(t, err)
	var bodies []clientBody
	require.NoError(t, json.Unmarshal(b, &bodies))
	require.NotEmpty(t, bodies)
	return bodies
}

// Every body LangChain, the AI SDK and the Agents SDK send decodes.
func TestDecodeClientBodies(t *testing.T) {
	for _, c := range clientBodies(t) {
		r, err := DecodeCreateRequest(c.Body)
		require.NoError(t, err, "%s: %s", c.Name, c.Body)
		if r.Text != nil {
			assert.NotEmpty(t, r.Text.Format.Type, c.Name)
		}
	}
}
