package fakellm

import (
	"bytes"
	"encoding/json"
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
	// Chunks, for streaming requests, splits Text, Reasoning and Refusal into
	// about this many deltas each. Zero splits them per word (each delta is a
	// word with its leading white space). Tool call arguments are split into
	// about Chunks deltas too (zero: pieces of 8 bytes). Splits never cut a
	// UTF-8 sequence.
	Chunks int
}

// ToolCall is one function call: in a Turn, a call the model makes; in a
// Request message, a call from the conversation history. It marshals to and
// from the Chat Completions wire shape
// {"id","type":"function","function":{"name","arguments"}}.
type ToolCall struct {
	// ID is the call's id ("call_...").
	ID string
	// Name is the function name.
	Name string
	// Arguments is the JSON-encoded arguments string, sent verbatim.
	Arguments string
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// MarshalJSON encodes the call in the Chat Completions wire shape.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	var w wireToolCall
	w.ID, w.Type, w.Function.Name, w.Function.Arguments = c.ID, "function", c.Name, c.Arguments
	return json.Marshal(w)
}

// UnmarshalJSON decodes a call from the Chat Completions wire shape.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	var w wireToolCall
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*c = ToolCall{ID: w.ID, Name: w.Function.Name, Arguments: w.Function.Arguments}
	return nil
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

// Request is one Chat Completions request as the fake received and decoded
// it. Fields not modelled here are in Body.
type Request struct {
	// Model is "model".
	Model string `json:"model"`
	// Messages is "messages".
	Messages []Message `json:"messages"`
	// Tools is "tools".
	Tools []Tool `json:"tools,omitempty"`
	// ToolChoice is "tool_choice" as raw JSON (a string or an object), nil when absent.
	ToolChoice json.RawMessage `json:"tool_choice,omitempty"`
	// ParallelToolCalls is "parallel_tool_calls", nil when absent.
	ParallelToolCalls *bool `json:"parallel_tool_calls,omitempty"`
	// ResponseFormat is "response_format" as raw JSON, nil when absent.
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Stream is "stream".
	Stream bool `json:"stream,omitempty"`
	// StreamOptions is "stream_options", nil when absent.
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// MaxTokens is the deprecated "max_tokens", nil when absent.
	MaxTokens *int `json:"max_tokens,omitempty"`
	// MaxCompletionTokens is "max_completion_tokens", nil when absent.
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
	// Temperature is "temperature", nil when absent.
	Temperature *float64 `json:"temperature,omitempty"`
	// TopP is "top_p", nil when absent.
	TopP *float64 `json:"top_p,omitempty"`
	// ReasoningEffort is "reasoning_effort".
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// User is "user".
	User string `json:"user,omitempty"`

	// Seq is the request's zero-based arrival number on its Server.
	Seq int `json:"-"`
	// Body is the raw request body.
	Body []byte `json:"-"`
	// Authorization is the request's Authorization header ("Bearer ...").
	Authorization string `json:"-"`
}

// IncludeUsage reports whether the request asked for a usage chunk
// (stream_options.include_usage).
func (r Request) IncludeUsage() bool { return r.StreamOptions != nil && r.StreamOptions.IncludeUsage }

// StreamOptions is "stream_options".
type StreamOptions struct {
	// IncludeUsage is "include_usage".
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of "messages".
type Message struct {
	// Role is "role": system, developer, user, assistant or tool.
	Role string `json:"role"`
	// Content is "content": a string or an array of parts.
	Content Content `json:"content"`
	// Name is "name".
	Name string `json:"name,omitempty"`
	// ToolCalls is an assistant message's "tool_calls".
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID is a tool message's "tool_call_id".
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Refusal is an assistant message's "refusal".
	Refusal string `json:"refusal,omitempty"`
	// ReasoningContent is an assistant message's "reasoning_content", the
	// non-standard field some backends accept back in the history.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// Content is a message's "content", which the wire sends either as a
// string or as an array of parts. Exactly one of Text and Parts is used:
// Parts is non-nil when the content was an array; otherwise Text holds the
// string (empty for null or absent content).
type Content struct {
	// Text is the content when it was a string.
	Text string
	// Parts is the content when it was an array of parts.
	Parts []ContentPart
}

// String returns the content's text: Text, or the concatenated text of
// the text (and refusal) parts.
func (c Content) String() string {
	if c.Parts == nil {
		return c.Text
	}
	var b bytes.Buffer
	for _, p := range c.Parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String()
}

// UnmarshalJSON accepts a string, an array of parts or null.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		return nil
	case b[0] == '[':
		parts := []ContentPart{}
		if err := json.Unmarshal(b, &parts); err != nil {
			return err
		}
		c.Parts = parts
		return nil
	default:
		return json.Unmarshal(b, &c.Text)
	}
}

// MarshalJSON encodes Parts as an array when non-nil, otherwise Text as a string.
func (c Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// ContentPart is one element of an array "content".
type ContentPart struct {
	// Type is "type": text, image_url, input_audio, file, refusal.
	Type string `json:"type"`
	// Text is a text part's "text".
	Text string `json:"text,omitempty"`
	// Refusal is a refusal part's "refusal".
	Refusal string `json:"refusal,omitempty"`
	// ImageURL is an image_url part's "image_url".
	ImageURL *ImageURL `json:"image_url,omitempty"`
	// InputAudio is an input_audio part's "input_audio", raw.
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
	// File is a file part's "file", raw.
	File json.RawMessage `json:"file,omitempty"`
}

// ImageURL is an image_url part's "image_url".
type ImageURL struct {
	// URL is "url": an https URL or a data: URL.
	URL string `json:"url"`
	// Detail is "detail": auto, low or high.
	Detail string `json:"detail,omitempty"`
}

// Tool is one entry of "tools".
type Tool struct {
	// Type is "type", "function" for function tools.
	Type string `json:"type"`
	// Function is "function".
	Function FunctionDef `json:"function"`
}

// FunctionDef is a function tool's "function".
type FunctionDef struct {
	// Name is "name".
	Name string `json:"name"`
	// Description is "description".
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema in "parameters", raw.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	// Strict is "strict", nil when absent.
	Strict *bool `json:"strict,omitempty"`
}
