package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// History fragments: a user message, an assistant message calling c1 (and
// c2), their tool messages.
const (
	userMsg   = `{"role":"user","content":"hi"}`
	callC1    = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	callC1C2  = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]}`
	toolC1    = `{"role":"tool","tool_call_id":"call_1","content":"one"}`
	toolC2    = `{"role":"tool","tool_call_id":"call_2","content":"two"}`
	answerMsg = `{"role":"assistant","content":"done"}`
)

func body(msgs ...string) string {
	return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
}

// openAIError is OpenAI's error body.
type openAIError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}

// The fake refuses what OpenAI refuses, with OpenAI's status and body
// (messages, params and codes as api.openai.com sends them), and takes
// every valid tool-call history.
func TestStrictOpenAI(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 65)
	checkRefusals(t, []refusalCase{
		{"plain", body(userMsg), "", "", ""},
		{"tool loop", body(userMsg, callC1, toolC1, answerMsg, userMsg), "", "", ""},
		{"parallel calls answered in any order", body(userMsg, callC1C2, toolC2, toolC1), "", "", ""},
		{"two turns", body(userMsg, callC1, toolC1, `{"role":"assistant","content":"x","tool_calls":[{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]}`, toolC2), "", "", ""},
		{"id of 40", body(userMsg, strings.ReplaceAll(callC1, "call_1", strings.Repeat("y", 40)), strings.ReplaceAll(toolC1, "call_1", strings.Repeat("y", 40))), "", "", ""},
		{"refusal without content", body(userMsg, `{"role":"assistant","content":null,"refusal":"no"}`, userMsg), "", "", ""},
		{"developer and system", body(`{"role":"developer","content":"d"}`, `{"role":"system","content":"s"}`, userMsg), "", "", ""},

		{"id over 40", body(userMsg, strings.ReplaceAll(callC1, "call_1", long), strings.ReplaceAll(toolC1, "call_1", long)),
			"Invalid 'messages[1].tool_calls[0].id': string too long. Expected a string with maximum length 40, but got a string with length 65 instead.",
			"messages[1].tool_calls[0].id", "string_above_max_length"},
		{"empty id", body(userMsg, strings.ReplaceAll(callC1, "call_1", ""), toolC1),
			"Missing required parameter: 'messages[1].tool_calls[0].id'.", "messages[1].tool_calls[0].id", "missing_required_parameter"},
		{"unanswered call", body(userMsg, callC1C2, toolC1, userMsg),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2",
			"messages.[3].role", ""},
		{"unanswered at the end", body(userMsg, callC1),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
			"messages.[1].role", ""},
		{"one turn split in two", body(userMsg, callC1, strings.ReplaceAll(callC1, "call_1", "call_2"), toolC1, toolC2),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_1",
			"messages.[2].role", ""},
		{"tool without call", body(userMsg, toolC1),
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "messages.[1].role", ""},
		{"tool answering another id", body(userMsg, callC1, toolC2),
			"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "messages.[2].role", ""},
		{"tool after a user message", body(userMsg, callC1, toolC1, userMsg, toolC1),
			"Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and messages[4].", "messages.[4].tool_call_id", ""},
		{"tool answering twice", body(userMsg, callC1C2, toolC1, toolC1, toolC2),
			"Invalid parameter: Duplicate value for 'tool_call_id' of 'call_1', in messages[2] and messages[3].", "messages.[3].tool_call_id", ""},
		{"tool without id", body(userMsg, callC1, `{"role":"tool","content":"x"}`),
			"Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.", "messages.[2].tool_call_id", ""},
		{"duplicate ids in one message", body(userMsg, strings.ReplaceAll(callC1C2, "call_2", "call_1"), toolC1),
			"Invalid parameter: Duplicate value for 'id' of 'call_1', in messages[1].tool_calls[0] and messages[1].tool_calls[1].", "messages.[1].tool_calls.[1].id", ""},
		{"duplicate ids across turns", body(userMsg, callC1, toolC1, callC1, toolC1),
			"Invalid parameter: Duplicate value for 'id' of 'call_1', in messages[1].tool_calls[0] and messages[3].tool_calls[0].", "messages.[3].tool_calls.[0].id", ""},
		{"empty assistant (null)", body(userMsg, `{"role":"assistant","content":null}`, userMsg),
			"Invalid value for 'content': expected a string, got null.", "messages.[1].content", ""},
		{"empty assistant (\"\")", body(userMsg, `{"role":"assistant","content":""}`, userMsg),
			"Invalid 'messages[1]': an assistant message must have non-empty 'content' or 'tool_calls'.", "messages[1].content", ""},
		{"unknown role", body(userMsg, `{"role":"model","content":"x"}`),
			"Invalid value: 'model'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", "messages[1].role", "invalid_value"},
		{"function role", body(userMsg, `{"role":"function","name":"f","content":"x"}`),
			"Unsupported value: 'messages[1].role' does not support 'function' with this model.", "messages[1].role", "unsupported_value"},
		{"tool calls on a user message", body(`{"role":"user","content":"x","tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}`, toolC1),
			"Invalid parameter: 'tool_calls' is only allowed for messages with role 'assistant', not 'user'.", "messages[0].tool_calls", ""},
	})
}

// refusalCase is a request body the fake takes (msg empty) or refuses
// with OpenAI's message, param and code.
type refusalCase struct {
	name             string
	body             string
	msg, param, code string // empty msg: accepted
}

// checkRefusals posts each case's body to a fresh fake: an accepted one is
// answered from the script, a refused one is a 400 in OpenAI's error
// shape, with the case's message, param and code, not answered.
func checkRefusals(t *testing.T, cases []refusalCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := start(t, fakellm.Turn{Text: "ok"})
			status, ct, b := post(t, s, "POST", fakellm.Path, "application/json", tc.body)
			if tc.msg == "" {
				if status != 200 || s.Calls() != 1 {
					t.Fatalf("refused a valid request: %d %s", status, b)
				}
				return
			}
			var e openAIError
			if err := json.Unmarshal(b, &e); err != nil || status != 400 || ct != "application/json" {
				t.Fatalf("got %d %s %s (%v)", status, ct, b, err)
			}
			if e.Error.Message != tc.msg || e.Error.Type != "invalid_request_error" || deref(e.Error.Param) != tc.param || deref(e.Error.Code) != orNull(tc.code) {
				t.Errorf("got  %s\nwant %q param %q code %q", b, tc.msg, tc.param, tc.code)
			}
			if s.Calls() != 0 || len(s.Requests()) != 0 {
				t.Errorf("a refused request was answered from the script")
			}
		})
	}
}

func orNull(s string) string {
	if s == "" {
		return "<null>"
	}
	return s
}

// The official SDK reads the refusal as OpenAI's: an *openai.Error with
// status, message, param and code.
func TestStrictOpenAISDK(t *testing.T) {
	t.Parallel()
	_, c := start(t, fakellm.Turn{Text: "unused"})
	id := "mcp_" + strings.Repeat("ab", 24) + "_" + strings.Repeat("c", 12)
	asst := openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
		OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: id,
			Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "f", Arguments: "{}"}},
	}}}
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi"), {OfAssistant: &asst}, openai.ToolMessage("r", id)},
	})
	var e *openai.Error
	if !errors.As(err, &e) || e.StatusCode != 400 || e.Code != "string_above_max_length" || e.Param != "messages[1].tool_calls[0].id" ||
		e.Type != "invalid_request_error" || !strings.Contains(e.Message, "got a string with length 65") {
		t.Fatalf("err = %v", err)
	}
}

// With Mistral's rules, tool call ids are 9 alphanumerics and refusals take
// Mistral's top-level error shape.
func TestStrictMistral(t *testing.T) {
	t.Parallel()
	nine := func(m string) string {
		return strings.ReplaceAll(strings.ReplaceAll(m, "call_1", "a1B2c3D4e"), "call_2", "Z9y8X7w6v")
	}
	for _, tc := range []struct {
		name           string
		body           string
		msg, typ, code string
	}{
		{"valid", body(userMsg, nine(callC1C2), nine(toolC1), nine(toolC2), answerMsg), "", "", ""},
		{"call_ id", body(userMsg, callC1, toolC1),
			"Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.", "invalid_function_call", "3280"},
		{"ten characters", body(userMsg, strings.ReplaceAll(callC1, "call_1", "abcdefghij"), strings.ReplaceAll(toolC1, "call_1", "abcdefghij")),
			"Tool call id was abcdefghij but must be a-z, A-Z, 0-9, with a length of 9.", "invalid_function_call", "3280"},
		{"bad tool message id", body(userMsg, nine(callC1), toolC1),
			"Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9.", "invalid_function_call", "3280"},
		{"unanswered", body(userMsg, nine(callC1C2), nine(toolC1), userMsg),
			"Not the same number of function calls and responses", "invalid_request_message_order", "3230"},
		{"orphan tool", body(userMsg, nine(toolC1)),
			"Not the same number of function calls and responses", "invalid_request_message_order", "3230"},
		{"empty assistant", body(userMsg, `{"role":"assistant","content":""}`, userMsg),
			"Assistant message must have either content or tool_calls, but not none.", "invalid_request_error", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := start(t, fakellm.Turn{Text: "ok"})
			s.SetRules(fakellm.Rules{Mistral: true})
			status, _, b := post(t, s, "POST", fakellm.Path, "application/json", tc.body)
			if tc.msg == "" {
				if status != 200 {
					t.Fatalf("refused a valid history: %d %s", status, b)
				}
				return
			}
			var e struct {
				Object  string  `json:"object"`
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			}
			if err := json.Unmarshal(b, &e); err != nil || status != 400 {
				t.Fatalf("got %d %s (%v)", status, b, err)
			}
			if e.Object != "error" || e.Message != tc.msg || e.Type != tc.typ || e.Param != nil || deref(e.Code) != orNull(tc.code) {
				t.Errorf("got  %s\nwant %q %s %s", b, tc.msg, tc.typ, tc.code)
			}
		})
	}
}

// reqBody is a request of one user message with the given extra
// top-level fields (JSON object members, without braces).
func reqBody(model, fields string) string {
	return `{"model":"` + model + `","messages":[` + userMsg + `],` + fields + `}`
}

// fnTool is a tools entry declaring function name with parameters params.
func fnTool(name, params string) string {
	return `{"type":"function","function":{"name":"` + name + `","parameters":` + params + `}}`
}

// The fake refuses the request parameters OpenAI refuses (tools, tool
// choice, response format, logprobs, reasoning, token limits, content),
// with OpenAI's messages, params and codes.
func TestStrictOpenAIParams(t *testing.T) {
	t.Parallel()
	obj := `{"type":"object","properties":{}}`
	strictObj := `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"object","properties":{"c":{"type":"integer"}},"required":["c"],"additionalProperties":false}},"required":["a","b"],"additionalProperties":false}`
	tools129 := strings.TrimSuffix(strings.Repeat(fnTool("f", obj)+",", 129), ",")
	checkRefusals(t, []refusalCase{
		{"tools and choices", reqBody("m", `"tools":[`+fnTool("get_weather-2", obj)+`],"tool_choice":{"type":"function","function":{"name":"get_weather-2"}},"parallel_tool_calls":false`), "", "", ""},
		{"strict schemas", reqBody("m", `"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":`+strictObj+`}}],"response_format":{"type":"json_schema","json_schema":{"name":"out","strict":true,"schema":`+strictObj+`}}`), "", "", ""},
		{"reasoning model", reqBody("gpt-5-mini", `"max_completion_tokens":100,"reasoning_effort":"minimal"`), "", "", ""},
		{"images", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"original"}}]}]}`, "", "", ""},
		{"logprobs", reqBody("m", `"logprobs":true,"top_logprobs":20`), "", "", ""},

		{"129 tools", reqBody("m", `"tools":[`+tools129+`]`),
			"Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.", "tools", "array_above_max_length"},
		{"tool name pattern", reqBody("m", `"tools":[`+fnTool("get.weather", obj)+`]`),
			"Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", "tools[0].function.name", "invalid_value"},
		{"tool name of 65", reqBody("m", `"tools":[`+fnTool(strings.Repeat("n", 65), obj)+`]`),
			"Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.", "tools[0].function.name", "string_above_max_length"},
		{"parallel_tool_calls without tools", reqBody("m", `"parallel_tool_calls":true`),
			"Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.", "parallel_tool_calls", ""},
		{"tool_choice without tools", reqBody("m", `"tool_choice":"auto"`),
			"Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "tool_choice", ""},
		{"tool_choice naming no tool", reqBody("m", `"tools":[`+fnTool("f", obj)+`],"tool_choice":{"type":"function","function":{"name":"g"}}`),
			"Invalid value for 'tool_choice': function 'g' is not in 'tools'.", "tool_choice", ""},
		{"strict tool without additionalProperties", reqBody("m", `"tools":[{"type":"function","function":{"name":"f","strict":true,"parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}}}]`),
			"Invalid schema for function 'f': In context=(), 'additionalProperties' is required to be supplied and to be false.", "tools[0].function.parameters", "invalid_function_parameters"},
		{"strict format missing a required key", reqBody("m", `"response_format":{"type":"json_schema","json_schema":{"name":"out","strict":true,"schema":`+strings.Replace(strictObj, `"required":["c"]`, `"required":[]`, 1)+`}}`),
			"Invalid schema for response_format 'out': In context=('properties', 'b'), 'required' is required to be supplied and to be an array including every key in properties. Missing 'c'.", "response_format", "invalid_json_schema"},
		{"strict format not an object", reqBody("m", `"response_format":{"type":"json_schema","json_schema":{"name":"out","strict":true,"schema":{"type":"array","items":{"type":"string"}}}}`),
			"Invalid schema for response_format 'out': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.", "response_format", "invalid_json_schema"},
		{"format name pattern", reqBody("m", `"response_format":{"type":"json_schema","json_schema":{"name":"my schema","schema":{"type":"object"}}}`),
			"Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", "response_format.json_schema.name", "invalid_value"},
		{"top_logprobs over 20", reqBody("m", `"logprobs":true,"top_logprobs":21`),
			"Invalid 'top_logprobs': integer above maximum value. Expected a value <= 20, but got 21 instead.", "top_logprobs", "integer_above_max_value"},
		{"top_logprobs without logprobs", reqBody("m", `"top_logprobs":2`),
			"Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is used.", "top_logprobs", ""},
		{"reasoning_effort value", reqBody("m", `"reasoning_effort":"extreme"`),
			"Invalid value: 'extreme'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', and 'max'.", "reasoning_effort", "invalid_value"},
		{"max_tokens on a reasoning model", reqBody("o3", `"max_tokens":100`),
			"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", "max_tokens", "unsupported_parameter"},
		{"stream_options without stream", reqBody("m", `"stream_options":{"include_usage":true}`),
			"The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options", ""},
		{"image detail", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"medium"}}]}]}`,
			"Invalid value: 'medium'. Supported values are: 'auto', 'low', 'high', and 'original'.", "messages[0].content[0].image_url.detail", "invalid_value"},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},` + userMsg + `]}`,
			"Invalid 'messages[0]'. Image URLs are only allowed for messages with role 'user', but this message with role 'system' contains an image URL.", "messages[0]", "invalid_value"},
		{"null user content", `{"model":"m","messages":[{"role":"user","content":null}]}`,
			"Invalid value for 'content': expected a string, got null.", "messages.[0].content", ""},
	})
}

// With a context window the fake refuses a request whose messages and
// functions come to more tokens (ContextTokens) as OpenAI refuses one:
// 400 context_length_exceeded, naming the window and the request's
// tokens (the functions' apart when it has some); a request within it is
// answered.
func TestContextWindow(t *testing.T) {
	t.Parallel()
	big := `{"role":"user","content":"` + strings.Repeat("x", 400) + `"}`
	withTools := `{"model":"m","messages":[` + big + `],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	for _, tc := range []struct {
		body, msg string
	}{
		{body(userMsg), ""},
		{body(big), "This model's maximum context length is 50 tokens. However, your messages resulted in %[1]d tokens. Please reduce the length of the messages."},
		{withTools, "This model's maximum context length is 50 tokens. However, your messages resulted in %[3]d tokens (%[1]d in the messages, %[2]d in the functions). Please reduce the length of the messages or functions."},
	} {
		s, _ := start(t, fakellm.Turn{Text: "ok"})
		s.SetRules(fakellm.Rules{ContextWindow: 50})
		status, _, b := post(t, s, "POST", fakellm.Path, "application/json", tc.body)
		if tc.msg == "" {
			if status != 200 {
				t.Errorf("refused a request within the window: %d %s", status, b)
			}
			continue
		}
		var req chatwire.Request
		if err := json.Unmarshal([]byte(tc.body), &req); err != nil {
			t.Fatal(err)
		}
		m, f := fakellm.ContextTokens(&req)
		want := fmt.Sprintf(tc.msg, m, f, m+f)
		var e openAIError
		if err := json.Unmarshal(b, &e); err != nil || status != 400 || e.Error.Message != want || deref(e.Error.Param) != "messages" || deref(e.Error.Code) != "context_length_exceeded" {
			t.Errorf("got %d %s\nwant %q (%v)", status, b, want, err)
		}
		if s.Calls() != 0 {
			t.Errorf("a refused request was answered from the script")
		}
	}
}
