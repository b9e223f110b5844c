// Package provider defines how Lambent talks to a model: the Provider
// interface with a blocking Complete and a streaming Stream call, in terms of
// OpenResponses items. Implementations live in sub-packages (openai: any
// OpenAI-compatible Chat Completions API; bedrock: Amazon Bedrock's Converse
// API), and Router picks one of several per model.
package provider

import (
	"context"

	"github.com/lambent/lambent/pkg/api"
)

// Provider calls a model for one turn.
type Provider interface {
	// Complete runs one model call and returns its whole result.
	Complete(ctx context.Context, req *Request) (*Result, error)
	// Stream runs one model call, passing every delta to fn as it arrives,
	// and returns the accumulated result. An error from fn aborts the call
	// and is returned.
	Stream(ctx context.Context, req *Request, fn func(Delta) error) (*Result, error)
}

// Request is one model call.
type Request struct {
	Model string
	// Instructions become the leading system message.
	Instructions string
	// Items is the conversation in order: input messages, previous
	// outputs, function calls and their outputs.
	Items []api.Item
	// Tools are the functions the model may call (hosted tools included).
	Tools []api.ToolDefinition
	// ToolChoice is "auto", "none" or "required" (empty: provider default);
	// ForcedTool names one function the model must call.
	ToolChoice string
	ForcedTool string

	ParallelToolCalls *bool
	MaxOutputTokens   *int
	Temperature       *float64
	TopP              *float64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
	TopLogprobs       *int
	Text              *api.TextConfig
	ReasoningEffort   string
	// User is the end-user identifier (safety_identifier).
	User           string
	PromptCacheKey string
	ServiceTier    string
}

// Finish reasons.
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishToolCalls     = "tool_calls"
	FinishContentFilter = "content_filter"
)

// Result is what one model call produced.
type Result struct {
	Text      string
	Refusal   string
	Reasoning string
	// ReasoningBlocks, when set, are the reasoning in the blocks the model
	// produced, with the opaque data each must be sent back with; Reasoning
	// then holds their text joined. Consumers replaying a result use them
	// instead of Reasoning.
	ReasoningBlocks []ReasoningBlock
	// ToolCalls are the model's tool calls, in order: function_call items
	// with CallID, Name and Arguments (a JSON object text, "{}" when the
	// model sent none) set.
	ToolCalls []api.Item
	Usage     api.Usage
	// CacheWriteTokens are the input tokens the provider wrote to its
	// prompt cache (Bedrock's cacheWriteInputTokens), which
	// Usage.InputTokens includes; OpenAI's usage has no field for them.
	CacheWriteTokens int
	// FinishReason is one of the Finish constants.
	FinishReason string
	// Model is the model that answered.
	Model string
}

// DeltaKind says what a Delta carries.
type DeltaKind int

// Delta kinds.
const (
	DeltaText DeltaKind = iota + 1
	DeltaRefusal
	DeltaReasoning
	DeltaToolCall
	// DeltaAccepted carries nothing: a Stream passes it once, first, when
	// the provider has accepted the call (its 2xx status arrived), before
	// the model answers. A stream that refuses the call fails without it.
	// Consumers that only collect the answer ignore it; the engine opens
	// the client's stream then (the opening is held until the call is
	// accepted, so that a refused call becomes an HTTP error).
	DeltaAccepted
)

// Delta is one increment of a streamed model call.
type Delta struct {
	Kind DeltaKind
	// Text is the text, refusal or reasoning increment, or for DeltaToolCall
	// the arguments increment.
	Text string
	// ToolIndex identifies the tool call a DeltaToolCall belongs to (0-based,
	// in order of first appearance).
	ToolIndex int
	// ToolCallID and ToolName are set on the first delta of each tool call.
	ToolCallID string
	ToolName   string
	// Encrypted, on a DeltaReasoning, ends the current reasoning block: it is
	// the block's opaque provider data (a signature, redacted reasoning),
	// kept as the reasoning item's encrypted_content and sent back with it
	// on later calls. Text may be empty then.
	Encrypted string
	// More is set when the provider has already received the model's next
	// event: the next delta (or the end of the answer) most likely follows
	// without waiting on the model, so a transport may send this delta with
	// what follows instead of on its own (as a proxy sends what one read
	// gave it in one write). A transport holds such a delta only briefly
	// (pacing.Config.FlushDelay at most).
	More bool
}

// ReasoningBlock is one block of a model's reasoning.
type ReasoningBlock struct {
	// Text is the readable reasoning (empty for redacted reasoning).
	Text string
	// Encrypted is the block's opaque provider data (see Delta.Encrypted).
	Encrypted string
}
