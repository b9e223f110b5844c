package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

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
	for _, tc := range []struct {
		name             string
		body             string
		msg, param, code string // empty msg: accepted
	}{
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, _ := start(t, fakellm.Turn{Text: "ok"})
			status, ct, b := post(t, s, "POST", fakellm.Path, "application/json", tc.body)
			if tc.msg == "" {
				if status != 200 || s.Calls() != 1 {
					t.Fatalf("refused a valid history: %d %s", status, b)
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
