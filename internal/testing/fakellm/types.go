package fakellm

import (
	"net/http"

	"github.com/lambent/lambent/internal/chatwire"
)

// Turn scripts one model reply: the answer the fake gives to one
// Chat Completions request.
//
// The zero Turn is a valid reply: an empty assistant message with
// finish_reason "stop" and zero usage.
type Turn struct {
	// Text is the assistant message content. It may be empty when
	// ToolCalls or Refusal is set; the reply then carries "content": null.
	Text string
	// Refusal is the assistant's refusal message ("refusal" field or deltas).
	Refusal string
	// Reasoning is emitted as "reasoning_content" (the message field when not
	// streaming, deltas before the content when streaming), the way vLLM,
	// DeepSeek and Ollama expose reasoning over Chat Completions.
	Reasoning string
	// ToolCalls are the function calls the model makes, in order. A call with
	// an empty ID gets a generated "call_..." ID.
	ToolCalls []ToolCall
	// FinishReason is the choice's finish_reason. Empty means "stop", or
	// "tool_calls" when ToolCalls is set. Any other value ("length",
	// "content_filter") is sent as given.
	FinishReason string
	// Usage is reported in the reply ("usage" when not streaming; the final
	// usage chunk when streaming with stream_options.include_usage).
	Usage Usage

	// Status, when non-zero and not 200, makes the fake answer with this HTTP
	// status and an OpenAI error body {"error":{"message","type","param","code"}},
	// for streaming requests too (as OpenAI does before a stream starts).
	Status int
	// ErrorMessage is the error body's message when Status is set. Empty means
	// a generic message naming the status.
	ErrorMessage string
	// ErrorType overrides the error body's type. Empty means the type OpenAI
	// uses for Status ("invalid_request_error", "requests", "server_error"...).
	ErrorType string
	// ErrorCode overrides the error body's code (for example
	// "context_length_exceeded"). Empty means the code OpenAI uses for Status,
	// often null.
	ErrorCode string
	// Header is added to the reply, an error reply too (for example
	// Retry-After with a 429).
	Header http.Header

	// CutAfterChunks, for streaming requests, when > 0 makes the fake write
	// that many chunks and then abort the connection mid-stream (no final
	// chunk, no [DONE], no end of the chunked body), so the client sees a cut
	// stream. When the reply has fewer chunks, all are written and the
	// connection is cut before [DONE]. Ignored for non-streaming requests.
	CutAfterChunks int
	// Block, when non-nil, holds the request open before any answer is written
	// until Block is closed (or receives), the request's context ends (the
	// client went away: nothing is written) or the Server is closed (503).
	// It lets tests keep a model call in flight.
	Block <-chan struct{}
	// HoldAfterChunks, for streaming requests, when > 0 makes Block hold
	// the stream after that many chunks instead of before the answer: a
	// model call in flight in the middle of its reply (its text, a tool
	// call's arguments). When the request's context ends meanwhile nothing
	// more is written.
	HoldAfterChunks int
	// Chunks, for streaming requests, splits Text, Reasoning and Refusal into
	// about this many deltas each. Zero splits them per word (each delta is a
	// word with its leading white space). Tool call arguments are split into
	// about Chunks deltas too (zero: pieces of 8 bytes). Splits never cut a
	// UTF-8 sequence.
	Chunks int
}

// ToolCall is one function call the model makes in a Turn.
type ToolCall struct {
	// ID is the call's id ("call_...").
	ID string
	// Name is the function name.
	Name string
	// Arguments is the JSON-encoded arguments string, sent verbatim.
	Arguments string
}

// Usage is the token usage a Turn reports. The wire total_tokens is
// PromptTokens + CompletionTokens.
type Usage struct {
	// PromptTokens is usage.prompt_tokens.
	PromptTokens int
	// CompletionTokens is usage.completion_tokens.
	CompletionTokens int
	// CachedTokens is usage.prompt_tokens_details.cached_tokens.
	CachedTokens int
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens.
	ReasoningTokens int
}

// TotalTokens is PromptTokens + CompletionTokens, as sent in total_tokens.
func (u Usage) TotalTokens() int { return u.PromptTokens + u.CompletionTokens }

// wire is the usage object of a reply.
func (u Usage) wire() *chatwire.Usage {
	return &chatwire.Usage{
		PromptTokens:            u.PromptTokens,
		CompletionTokens:        u.CompletionTokens,
		TotalTokens:             u.TotalTokens(),
		PromptTokensDetails:     &chatwire.PromptTokensDetails{CachedTokens: u.CachedTokens},
		CompletionTokensDetails: &chatwire.CompletionTokensDetails{ReasoningTokens: u.ReasoningTokens},
	}
}

// Request is one Chat Completions request as the fake received and decoded
// it. Fields not modelled by chatwire.Request are in Body.
type Request struct {
	chatwire.Request

	// Seq is the request's zero-based arrival number on its Server.
	Seq int `json:"-"`
	// Body is the raw request body.
	Body []byte `json:"-"`
	// Authorization is the request's Authorization header ("Bearer ...").
	Authorization string `json:"-"`
}
