package openai

import (
	"encoding/json"

	"github.com/lambent/lambent/pkg/api"
)

// chatPayload is a chat completion or one streamed chat.completion.chunk:
// only the fields Lambent uses. It is decoded by decodePayload.
type chatPayload struct {
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
	// Error is set by backends that report an error with a 2xx status or
	// mid-stream.
	Error json.RawMessage `json:"error"`
}

type chatChoice struct {
	Index int `json:"index"`
	// Message is set in a completion, Delta in a chunk.
	Message      chatOutMessage `json:"message"`
	Delta        chatOutMessage `json:"delta"`
	FinishReason string         `json:"finish_reason"`
}

// chatOutMessage is a completion's message or a chunk's delta.
type chatOutMessage struct {
	Content string `json:"content"`
	Refusal string `json:"refusal"`
	// ReasoningContent (DeepSeek, older vLLM) and Reasoning (Ollama, newer
	// vLLM, OpenRouter) carry the model's reasoning text.
	ReasoningContent string        `json:"reasoning_content"`
	Reasoning        string        `json:"reasoning"`
	ToolCalls        []chatOutCall `json:"tool_calls"`
}

func (m *chatOutMessage) reasoning() string {
	if m.ReasoningContent != "" {
		return m.ReasoningContent
	}
	return m.Reasoning
}

type chatOutCall struct {
	// Index is set in chunks only.
	Index    *int        `json:"index"`
	ID       string      `json:"id"`
	Function chatOutFunc `json:"function"`
}

type chatOutFunc struct {
	Name      string  `json:"name"`
	Arguments argText `json:"arguments"`
}

// argText is a function's arguments: a JSON string as the API specifies,
// or (some backends) the arguments object itself, kept as its JSON text.
type argText string

func (a *argText) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = argText(s)
	case string(b) == "null":
		*a = ""
	default:
		*a = argText(b)
	}
	return nil
}

type chatUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	PromptTokensDetails     *promptDetails     `json:"prompt_tokens_details"`
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

func (u *chatUsage) toAPI() api.Usage {
	out := api.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	if d := u.PromptTokensDetails; d != nil {
		out.InputTokensDetails.CachedTokens = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		out.OutputTokensDetails.ReasoningTokens = d.ReasoningTokens
	}
	return out
}

// decodePayload decodes a completion or chunk: with the fast decoder for
// well-formed input, else with encoding/json (same result, its errors).
func decodePayload(b []byte, p *chatPayload) error {
	if fastDecode(b, p) {
		return nil
	}
	*p = chatPayload{}
	return json.Unmarshal(b, p)
}

func hasError(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
