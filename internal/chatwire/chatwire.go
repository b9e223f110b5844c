// Package chatwire declares the wire types of the OpenAI Chat Completions
// API (POST /v1/chat/completions): the request, the completion, the stream
// chunk and the error body. The openai provider encodes requests and decodes
// answers with them; the fake model (internal/testing/fakellm) decodes requests and
// encodes answers with them, so both speak one protocol.
//
// Fields are the ones Lambent and its tests use. A field that the API
// documents as "string or null" is a *string where the two must be told
// apart when encoding (nil is null); elsewhere a null decodes as "". Values
// are encoded and decoded with internal/wirejson (encoding/json's bytes and
// values); only the unions (message content, function arguments) have their
// own methods. A client encodes its requests' messages as OutMessage values
// (RequestOf[OutMessage]: the same JSON), whose content needs no method.
package chatwire

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/lambent/lambent/internal/wirejson"
)

// Request is the body of POST /chat/completions.
type Request = RequestOf[Message]

// RequestOf is a Request whose messages are M values: Message, or
// OutMessage in the requests a client encodes (the same JSON, encoded
// faster).
type RequestOf[M any] struct {
	Model    string `json:"model"`
	Messages []M    `json:"messages"`
	Tools    []Tool `json:"tools,omitempty"`
	// ToolChoice is "tool_choice" as raw JSON: a mode string ("auto",
	// "none", "required") or an object such as a NamedToolChoice.
	ToolChoice          json.RawMessage `json:"tool_choice,omitempty"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls,omitempty"`
	MaxTokens           *int            `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int            `json:"max_completion_tokens,omitempty"`
	Temperature         *float64        `json:"temperature,omitempty"`
	TopP                *float64        `json:"top_p,omitempty"`
	PresencePenalty     *float64        `json:"presence_penalty,omitempty"`
	FrequencyPenalty    *float64        `json:"frequency_penalty,omitempty"`
	Logprobs            bool            `json:"logprobs,omitempty"`
	TopLogprobs         *int            `json:"top_logprobs,omitempty"`
	ResponseFormat      *ResponseFormat `json:"response_format,omitempty"`
	Verbosity           string          `json:"verbosity,omitempty"`
	ReasoningEffort     string          `json:"reasoning_effort,omitempty"`
	User                string          `json:"user,omitempty"`
	PromptCacheKey      string          `json:"prompt_cache_key,omitempty"`
	ServiceTier         string          `json:"service_tier,omitempty"`
	Stream              bool            `json:"stream,omitempty"`
	StreamOptions       *StreamOptions  `json:"stream_options,omitempty"`
}

// IncludeUsage reports whether the request asks for a usage chunk at the
// end of the stream (stream_options.include_usage).
func (r RequestOf[M]) IncludeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// StreamOptions is "stream_options".
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Message is one entry of a request's "messages".
type Message struct {
	// Role is system, developer, user, assistant or tool.
	Role string `json:"role"`
	// Content is nil (null) only in an assistant message that carries
	// tool calls.
	Content    *Content   `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Refusal    string     `json:"refusal,omitempty"`
	// ReasoningContent is the non-standard field some backends accept back
	// in an assistant message of the history.
	ReasoningContent string `json:"reasoning_content,omitempty"`
}

// OutMessage is a Message as a client encodes it, in the same JSON: its
// Content is the *string or *[]ContentPart of the message's Content (nil
// for null), which the encoder writes as it writes every other string,
// where the output of a *Content's MarshalJSON would be parsed and escaped
// again (most of the encoding of a long conversation's request).
type OutMessage struct {
	Role             string     `json:"role"`
	Content          any        `json:"content"`
	Name             string     `json:"name,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	Refusal          string     `json:"refusal,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
}

// Out returns m as an OutMessage, which points into m's Content: that
// must not change while it is used.
func (m *Message) Out() OutMessage {
	o := OutMessage{Role: m.Role, Name: m.Name, ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID,
		Refusal: m.Refusal, ReasoningContent: m.ReasoningContent}
	switch c := m.Content; {
	case c == nil:
	case c.Parts != nil:
		o.Content = &c.Parts
	default:
		o.Content = &c.Text
	}
	return o
}

// Content is a message's "content": a string, or an array of parts when
// Parts is non-nil.
type Content struct {
	Text  string
	Parts []ContentPart
}

// String returns the content's text: Text, or the text (and refusal) of
// the parts. A nil Content (null) is "".
func (c *Content) String() string {
	if c == nil {
		return ""
	}
	if c.Parts == nil {
		return c.Text
	}
	var b strings.Builder
	for _, p := range c.Parts {
		b.WriteString(p.Text)
		b.WriteString(p.Refusal)
	}
	return b.String()
}

// MarshalJSON encodes Parts as an array when non-nil, otherwise Text as a
// string.
func (c *Content) MarshalJSON() ([]byte, error) {
	if c.Parts != nil {
		return wirejson.Marshal(c.Parts)
	}
	return wirejson.Marshal(c.Text)
}

// UnmarshalJSON accepts a string or an array of parts.
func (c *Content) UnmarshalJSON(b []byte) error {
	*c = Content{}
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '[' {
		c.Parts = []ContentPart{}
		return wirejson.Unmarshal(b, &c.Parts)
	}
	return wirejson.Unmarshal(b, &c.Text)
}

// ContentPart is one element of an array "content".
type ContentPart struct {
	// Type is text, image_url, input_audio, file or refusal.
	Type       string          `json:"type"`
	Text       string          `json:"text,omitempty"`
	Refusal    string          `json:"refusal,omitempty"`
	ImageURL   *ImageURL       `json:"image_url,omitempty"`
	InputAudio json.RawMessage `json:"input_audio,omitempty"`
	File       json.RawMessage `json:"file,omitempty"`
}

// ImageURL is an image_url part's "image_url".
type ImageURL struct {
	// URL is an https URL or a data: URL.
	URL string `json:"url"`
	// Detail is auto, low or high.
	Detail string `json:"detail,omitempty"`
}

// ToolCall is a function call: in an assistant message of the history, in
// a completion's message, or a fragment of one in a stream chunk (which
// has Index, and ID, Type and Name in the first fragment only).
type ToolCall struct {
	Index    *int         `json:"index,omitempty"`
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a tool call's "function".
type FunctionCall struct {
	Name      string    `json:"name,omitempty"`
	Arguments Arguments `json:"arguments"`
}

// Arguments is a function's arguments: a JSON string as the API specifies
// (encoded so), or when decoding, from some backends, the arguments object
// itself, kept as its JSON text. Null decodes as "".
type Arguments string

// UnmarshalJSON accepts a string, null or any other JSON value.
func (a *Arguments) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := wirejson.Unmarshal(b, &s); err != nil {
			return err
		}
		*a = Arguments(s)
	case string(b) == "null":
		*a = ""
	default:
		*a = Arguments(b)
	}
	return nil
}

// Tool is one entry of "tools".
type Tool struct {
	// Type is "function" for function tools.
	Type     string      `json:"type"`
	Function FunctionDef `json:"function"`
}

// FunctionDef is a function tool's "function".
type FunctionDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments.
	Parameters json.RawMessage `json:"parameters,omitempty"`
	Strict     *bool           `json:"strict,omitempty"`
}

// NamedToolChoice is a "tool_choice" that makes the model call one function.
type NamedToolChoice struct {
	Type     string       `json:"type"`
	Function FunctionName `json:"function"`
}

// FunctionName names a function.
type FunctionName struct {
	Name string `json:"name"`
}

// ResponseFormat is "response_format".
type ResponseFormat struct {
	// Type is text, json_object or json_schema.
	Type       string      `json:"type"`
	JSONSchema *JSONSchema `json:"json_schema,omitempty"`
}

// JSONSchema is a json_schema response format's "json_schema".
type JSONSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// Completion is a chat completion ("chat.completion") or one chunk of a
// streamed one ("chat.completion.chunk").
type Completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	ServiceTier       string   `json:"service_tier,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint,omitempty"`
	Choices           []Choice `json:"choices"`
	Usage             *Usage   `json:"usage,omitempty"`
	// Error is set by backends that report an error with a 2xx status or
	// mid-stream: an error object, or (some backends) a string.
	Error json.RawMessage `json:"error,omitempty"`
	// XGroq is Groq's extension; Groq reports a stream's usage in it, on
	// the chunk with the finish_reason, instead of in Usage.
	XGroq *XGroq `json:"x_groq,omitempty"`
}

// Chunk is a stream chunk ("chat.completion.chunk") or a completion
// ("chat.completion") as a client reads it: only the fields the openai
// provider uses (the others, such as id, created and logprobs, are
// skipped, never kept) and values where null and absent need not be told
// apart, so that one Chunk decodes every chunk of a stream (Reset between
// them) without allocating its choices anew, and a completion decodes
// with a few allocations: its strings, its choices and its usage. Servers
// write chunks and completions as Completion values.
type Chunk struct {
	Model   string        `json:"model"`
	Choices []ChunkChoice `json:"choices"`
	Usage   *Usage        `json:"usage"`
	// Error is as Completion's.
	Error json.RawMessage `json:"error"`
	XGroq *XGroq          `json:"x_groq"`
}

// ChunkChoice is one of a chunk's or a completion's "choices".
type ChunkChoice struct {
	Index int `json:"index"`
	// Delta is a chunk's, Message a completion's.
	Delta   ChunkDelta `json:"delta"`
	Message ChunkDelta `json:"message"`
	// FinishReason is "" (null) until the last chunk.
	FinishReason string `json:"finish_reason"`
}

// ChunkDelta is a chunk's "delta" or a completion's "message" as a client
// reads it: Delta's fields but the role, with the content as a value (null
// and absent are "").
type ChunkDelta struct {
	Content          Answer     `json:"content"`
	Refusal          string     `json:"refusal"`
	ReasoningContent string     `json:"reasoning_content"`
	Reasoning        string     `json:"reasoning"`
	ToolCalls        []ToolCall `json:"tool_calls"`
}

// Reset empties c for the next chunk, keeping the room of its choices and
// of their deltas' tool calls (a decoder makes room for ten elements of a
// slice at once).
func (c *Chunk) Reset() {
	for i := range c.Choices {
		calls := c.Choices[i].Delta.ToolCalls
		clear(calls)
		c.Choices[i] = ChunkChoice{Delta: ChunkDelta{ToolCalls: calls[:0]}}
	}
	*c = Chunk{Choices: c.Choices[:0]}
}

// ChunkUsage is the chunk's usage: Usage, or else Groq's x_groq.usage; nil
// when there is none.
func (c *Chunk) ChunkUsage() *Usage {
	if c.Usage == nil && c.XGroq != nil {
		return c.XGroq.Usage
	}
	return c.Usage
}

// XGroq is Groq's "x_groq" object.
type XGroq struct {
	ID    string `json:"id,omitempty"`
	Usage *Usage `json:"usage,omitempty"`
}

// CompletionUsage is the completion's or chunk's usage: Usage, or else
// Groq's x_groq.usage; nil when there is none.
func (c *Completion) CompletionUsage() *Usage {
	if c.Usage == nil && c.XGroq != nil {
		return c.XGroq.Usage
	}
	return c.Usage
}

// Choice is one of a completion's or a chunk's "choices".
type Choice struct {
	Index int `json:"index"`
	// Message is set in a completion, Delta in a chunk.
	Message *ResponseMessage `json:"message,omitempty"`
	Delta   *Delta           `json:"delta,omitempty"`
	// Logprobs is kept raw (nil is null).
	Logprobs json.RawMessage `json:"logprobs"`
	// FinishReason is null in a chunk until the last one.
	FinishReason *string `json:"finish_reason"`
}

// ResponseMessage is a completion's "message".
type ResponseMessage struct {
	Role    string  `json:"role"`
	Content *Answer `json:"content"`
	Refusal *string `json:"refusal"`
	// ReasoningContent (DeepSeek, older vLLM) and Reasoning (Ollama,
	// newer vLLM, OpenRouter) carry the model's reasoning text.
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Reasoning        string     `json:"reasoning,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	// Annotations is encoded when non-nil (an empty array as OpenAI sends).
	Annotations []json.RawMessage `json:"annotations,omitzero"`
}

// Delta is a chunk's "delta".
type Delta struct {
	Role string `json:"role,omitempty"`
	// Content is a pointer so that the first delta can carry "" as OpenAI
	// sends it.
	Content          *Answer    `json:"content,omitempty"`
	Refusal          string     `json:"refusal,omitempty"`
	ReasoningContent string     `json:"reasoning_content,omitempty"`
	Reasoning        string     `json:"reasoning,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
}

// Answer is the "content" of a completion's message or of a chunk's
// delta: a string, or (Mistral's reasoning models) an array of "text" and
// "thinking" parts, whose thinking is kept apart. It encodes as the string
// Text; a nil *Answer is null.
type Answer struct {
	Text string
	// Thinking is the text of the "thinking" parts.
	Thinking string
}

// MarshalJSON encodes Text as a string.
func (a *Answer) MarshalJSON() ([]byte, error) { return wirejson.Marshal(a.Text) }

// UnmarshalJSON accepts a string or an array of parts: "text" parts
// ({"type":"text","text":...}) make Text, "thinking" parts
// ({"type":"thinking","thinking":[{"type":"text","text":...}]}, or a
// string) make Thinking; other parts are skipped.
func (a *Answer) UnmarshalJSON(b []byte) error {
	*a = Answer{}
	if b = bytes.TrimSpace(b); len(b) == 0 || b[0] != '[' {
		return wirejson.Unmarshal(b, &a.Text)
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		Thinking json.RawMessage `json:"thinking"`
	}
	if err := wirejson.Unmarshal(b, &parts); err != nil {
		return err
	}
	var text, thinking strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "text":
			text.WriteString(p.Text)
		case "thinking":
			if t := bytes.TrimSpace(p.Thinking); len(t) > 0 && t[0] == '"' {
				var s string
				if err := wirejson.Unmarshal(t, &s); err != nil {
					return err
				}
				thinking.WriteString(s)
				continue
			}
			var inner []struct {
				Text string `json:"text"`
			}
			if len(p.Thinking) > 0 && string(p.Thinking) != "null" {
				if err := wirejson.Unmarshal(p.Thinking, &inner); err != nil {
					return err
				}
			}
			for _, in := range inner {
				thinking.WriteString(in.Text)
			}
		}
	}
	a.Text, a.Thinking = text.String(), thinking.String()
	return nil
}

// String is the text; "" for nil (null).
func (a *Answer) String() string {
	if a == nil {
		return ""
	}
	return a.Text
}

// Reasoning is the thinking text; "" for nil (null).
func (a *Answer) Reasoning() string {
	if a == nil {
		return ""
	}
	return a.Thinking
}

// Usage is a completion's or the last chunk's "usage".
type Usage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	PromptTokensDetails     *PromptTokensDetails     `json:"prompt_tokens_details,omitempty"`
	CompletionTokensDetails *CompletionTokensDetails `json:"completion_tokens_details,omitempty"`
}

// PromptTokensDetails is usage "prompt_tokens_details".
type PromptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
	AudioTokens  int `json:"audio_tokens"`
}

// CompletionTokensDetails is usage "completion_tokens_details".
type CompletionTokensDetails struct {
	ReasoningTokens          int `json:"reasoning_tokens"`
	AudioTokens              int `json:"audio_tokens"`
	AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
	RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
}

// ErrorBody is an OpenAI error response body.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is an error body's "error" object. Param and Code are strings or
// null in OpenAI's bodies; other backends send numbers too.
type Error struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}
