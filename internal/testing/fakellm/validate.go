package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/lambent/lambent/internal/chatwire"
)

// MaxToolCallIDLength is the longest tool call id OpenAI's Chat Completions
// accepts in a request's history (messages[i].tool_calls[j].id); a longer
// one is refused with code "string_above_max_length".
const MaxToolCallIDLength = 40

// mistralID is Mistral's rule for tool call ids: exactly 9 of [a-zA-Z0-9].
var mistralID = regexp.MustCompile(`^[a-zA-Z0-9]{9}$`)

// Rules are the checks the fake applies to every request's messages before
// it answers, and the provider whose error shape a refusal takes. The zero
// Rules are OpenAI's: what api.openai.com refuses, the fake refuses, with
// the same HTTP status (400) and body. Every test runs against them; see
// docs/development.md ("Strict fake providers") for the list.
type Rules struct {
	// Mistral applies Mistral's rules instead: tool call ids (in assistant
	// tool_calls and in tool messages' tool_call_id) must be exactly 9
	// characters of [a-zA-Z0-9], and refusals take Mistral's error shape,
	// {"object":"error","message","type","param","code"} at the top level.
	Mistral bool
	// ContextWindow, when > 0, is the model's context window in tokens:
	// a request whose messages and functions come to more
	// (ContextTokens) is refused as OpenAI refuses one, 400
	// context_length_exceeded naming the window and the request's tokens.
	ContextWindow int
}

// Refusal is a request the provider modelled by [Rules] refuses: the HTTP
// status and error body it answers with. It is an error.
type Refusal struct {
	// Status is the HTTP status (400).
	Status int
	// Message, Type, Param and Code are the error body's fields; an empty
	// Param or Code is sent as null.
	Message, Type, Param, Code string
	// Mistral selects Mistral's body shape (top-level fields) over OpenAI's
	// ({"error":{...}}).
	Mistral bool
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("HTTP %d %s: %s", r.Status, r.Type, r.Message)
}

// mistralError is Mistral's error body.
type mistralError struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

// Body is the JSON error body.
func (r *Refusal) Body() []byte {
	var param, code any
	if r.Param != "" {
		param = r.Param
	}
	if r.Code != "" {
		code = r.Code
	}
	var v any = chatwire.ErrorBody{Error: chatwire.Error{Message: r.Message, Type: r.Type, Param: param, Code: code}}
	if r.Mistral {
		v = mistralError{Object: "error", Message: r.Message, Type: r.Type, Param: param, Code: code}
	}
	b, err := json.Marshal(v)
	if err != nil { // strings and nulls only
		panic(err)
	}
	return b
}

// Write answers an HTTP request with the refusal.
func (r *Refusal) Write(w http.ResponseWriter) {
	b := append(r.Body(), '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(r.Status)
	_, _ = w.Write(b)
}

// Check validates req's messages as the provider of the rules does and
// returns its refusal, or nil when the provider would accept them. Fakes
// of Chat Completions servers in tests call it on every request they
// decode, so all of them are as strict as this one.
//
// The checks run in the provider's order: the shape of each message
// (role, ids, content) first, over the whole list, then the other
// parameters (params.go), then the pairing of tool calls and tool
// messages, first fault first.
func (r Rules) Check(req *chatwire.Request) *Refusal {
	if f := r.checkShape(req.Messages); f != nil {
		return f
	}
	if f := r.checkParams(req); f != nil {
		return f
	}
	if f := r.checkPairs(req.Messages); f != nil {
		return f
	}
	return r.checkWindow(req)
}

// ContextTokens is the fake's estimate of req's input tokens: a token per
// 4 bytes of its messages' JSON, and of its tools' (functions).
func ContextTokens(req *chatwire.Request) (messages, functions int) {
	m, _ := json.Marshal(req.Messages)
	if len(req.Tools) > 0 {
		f, _ := json.Marshal(req.Tools)
		functions = (len(f) + 3) / 4
	}
	return (len(m) + 3) / 4, functions
}

// checkWindow refuses a request over the rules' context window with
// OpenAI's message.
func (r Rules) checkWindow(req *chatwire.Request) *Refusal {
	if r.ContextWindow <= 0 {
		return nil
	}
	m, f := ContextTokens(req)
	if m+f <= r.ContextWindow {
		return nil
	}
	msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", r.ContextWindow, m+f)
	if f > 0 {
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens (%d in the messages, %d in the functions). Please reduce the length of the messages or functions.",
			r.ContextWindow, m+f, m, f)
	}
	return r.refuse(msg, "messages", "context_length_exceeded")
}

// refuse is a 400 invalid_request_error in the rules' shape.
func (r Rules) refuse(message, param, code string) *Refusal {
	return &Refusal{Status: http.StatusBadRequest, Message: message, Type: "invalid_request_error", Param: param, Code: code, Mistral: r.Mistral}
}

// checkShape checks each message on its own: its role, its ids and its
// content.
func (r Rules) checkShape(msgs []chatwire.Message) *Refusal {
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool":
		case "function":
			return r.refuse(fmt.Sprintf("Unsupported value: 'messages[%d].role' does not support 'function' with this model.", i),
				fmt.Sprintf("messages[%d].role", i), "unsupported_value")
		default:
			return r.refuse(fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role),
				fmt.Sprintf("messages[%d].role", i), "invalid_value")
		}
		if f := r.checkContent(i, m); f != nil {
			return f
		}
		if m.Role == "tool" {
			if m.ToolCallID == "" {
				return r.refuse("Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
					fmt.Sprintf("messages.[%d].tool_call_id", i), "")
			}
			if f := r.checkMistralID(m.ToolCallID); f != nil {
				return f
			}
		}
		if len(m.ToolCalls) > 0 && m.Role != "assistant" {
			return r.refuse(fmt.Sprintf("Invalid parameter: 'tool_calls' is only allowed for messages with role 'assistant', not '%s'.", m.Role),
				fmt.Sprintf("messages[%d].tool_calls", i), "")
		}
		for j := range m.ToolCalls {
			at := fmt.Sprintf("messages[%d].tool_calls[%d].id", i, j)
			if m.ToolCalls[j].ID == "" {
				return r.refuse(fmt.Sprintf("Missing required parameter: '%s'.", at), at, "missing_required_parameter")
			}
			if f := r.checkMistralID(m.ToolCalls[j].ID); f != nil {
				return f
			}
			if n := len(m.ToolCalls[j].ID); !r.Mistral && n > MaxToolCallIDLength {
				return r.refuse(fmt.Sprintf("Invalid '%s': string too long. Expected a string with maximum length %d, but got a string with length %d instead.", at, MaxToolCallIDLength, n),
					at, "string_above_max_length")
			}
		}
	}
	return nil
}

// checkMistralID checks a tool call id against Mistral's rule (nothing
// under OpenAI's rules).
func (r Rules) checkMistralID(id string) *Refusal {
	if !r.Mistral || mistralID.MatchString(id) {
		return nil
	}
	f := r.refuse(fmt.Sprintf("Tool call id was %s but must be a-z, A-Z, 0-9, with a length of 9.", id), "", "3280")
	f.Type = "invalid_function_call"
	return f
}

// mistralOrder is Mistral's refusal of calls and tool messages that do
// not pair up.
func (r Rules) mistralOrder() *Refusal {
	f := r.refuse("Not the same number of function calls and responses", "", "3230")
	f.Type = "invalid_request_message_order"
	return f
}

// empty reports whether an assistant message says nothing: no tool
// calls, no refusal, and content null, "" or parts without text.
func empty(m *chatwire.Message) bool {
	return len(m.ToolCalls) == 0 && m.Refusal == "" && m.Content.String() == ""
}

// checkPairs checks that every tool call is answered by a tool message
// right after its assistant message (before any other message), that every
// tool message answers a call of the assistant message it follows, once,
// that no two calls share an id, and that no assistant message is empty.
func (r Rules) checkPairs(msgs []chatwire.Message) *Refusal {
	callAt := map[string]string{} // id → "messages[i].tool_calls[j]"
	answeredAt := map[string]int{}
	open := -1           // index of the assistant message whose calls are being answered
	var pending []string // its calls not answered yet, in order
	unanswered := func(at int) *Refusal {
		if r.Mistral {
			return r.mistralOrder()
		}
		return r.refuse("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
			"The following tool_call_ids did not have response messages: "+strings.Join(pending, ", "),
			fmt.Sprintf("messages.[%d].role", at), "")
	}
	for i := range msgs {
		m := &msgs[i]
		if m.Role != "tool" {
			if len(pending) > 0 {
				return unanswered(i)
			}
			open = -1
		}
		switch m.Role {
		case "assistant":
			if empty(m) {
				switch {
				case r.Mistral:
					return r.refuse("Assistant message must have either content or tool_calls, but not none.", "", "")
				case m.Content == nil:
					return r.refuse("Invalid value for 'content': expected a string, got null.", fmt.Sprintf("messages.[%d].content", i), "")
				default:
					// OpenAI itself takes "", but Anthropic, Gemini and
					// Mistral behind OpenAI-compatible endpoints do not.
					return r.refuse(fmt.Sprintf("Invalid 'messages[%d]': an assistant message must have non-empty 'content' or 'tool_calls'.", i),
						fmt.Sprintf("messages[%d].content", i), "")
				}
			}
			for j := range m.ToolCalls {
				id := m.ToolCalls[j].ID
				at := fmt.Sprintf("messages[%d].tool_calls[%d]", i, j)
				if prev, dup := callAt[id]; dup {
					return r.refuse(fmt.Sprintf("Invalid parameter: Duplicate value for 'id' of '%s', in %s and %s.", id, prev, at),
						fmt.Sprintf("messages.[%d].tool_calls.[%d].id", i, j), "")
				}
				callAt[id] = at
				pending = append(pending, id)
			}
			if len(m.ToolCalls) > 0 {
				open = i
			}
		case "tool":
			id := m.ToolCallID
			if prev, dup := answeredAt[id]; dup {
				return r.refuse(fmt.Sprintf("Invalid parameter: Duplicate value for 'tool_call_id' of '%s', in messages[%d] and messages[%d].", id, prev, i),
					fmt.Sprintf("messages.[%d].tool_call_id", i), "")
			}
			k := -1
			for n, p := range pending {
				if p == id {
					k = n
					break
				}
			}
			if open < 0 || k < 0 {
				if r.Mistral {
					return r.mistralOrder()
				}
				return r.refuse("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
					fmt.Sprintf("messages.[%d].role", i), "")
			}
			answeredAt[id] = i
			pending = append(pending[:k], pending[k+1:]...)
		}
	}
	if len(pending) > 0 {
		return unanswered(open)
	}
	return nil
}
