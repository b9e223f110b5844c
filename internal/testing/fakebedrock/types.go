package fakebedrock

import "encoding/json"

// Turn scripts one model reply: the answer the fake gives to one Converse
// or ConverseStream request.
//
// The content blocks of a reply come in this order: the reasoning block
// (Reasoning), the redacted reasoning block (Redacted), the text block
// (Text), then one toolUse block per ToolUses entry. The zero Turn is a
// valid reply: an assistant message with no content, stop reason end_turn
// and zero usage.
type Turn struct {
	// Text is the answer's text block (none when empty).
	Text string
	// Reasoning is a reasoningContent.reasoningText block, signed with
	// Signature (default: a signature the fake makes up and remembers).
	Reasoning string
	Signature string
	// Redacted is a reasoningContent.redactedContent block.
	Redacted []byte
	// ToolUses are the toolUse blocks, in order.
	ToolUses []ToolUse
	// StopReason is the reply's stopReason. Empty means end_turn, or
	// tool_use when ToolUses is set.
	StopReason string
	// Usage is reported in the reply (usage, or the metadata event). When
	// it sets no input figure (InputTokens, CacheReadInputTokens,
	// CacheWriteInputTokens), the reply reports the fake's own estimate of
	// the request's input, read from and written to its prompt cache
	// (Request.Metered), with Usage.OutputTokens.
	Usage Usage

	// Error, when set, makes the fake answer with this Bedrock exception
	// (ValidationException, ThrottlingException, AccessDeniedException,
	// ResourceNotFoundException, ServiceQuotaExceededException,
	// ModelTimeoutException, ModelNotReadyException, ModelErrorException,
	// InternalServerException, ServiceUnavailableException) before any
	// answer: its HTTP status, an X-Amzn-ErrorType header and a
	// {"message"} body, as Bedrock sends them (a ModelErrorException's
	// with OriginalStatusCode and ResourceName when set).
	Error string
	// ErrorMessage is the exception's message (default: one naming it).
	ErrorMessage string
	// StreamError, for ConverseStream, is an exception event
	// (internalServerException, modelStreamErrorException,
	// validationException, throttlingException,
	// serviceUnavailableException) sent after the content events, in place
	// of messageStop and metadata; ErrorMessage is its message.
	StreamError string
	// OriginalStatusCode, when set, is the originalStatusCode of a
	// ModelErrorException (Error) or of a modelStreamErrorException
	// (StreamError): the status the model itself answered, as Bedrock
	// relays it (429 when the model throttles).
	OriginalStatusCode int
	// OriginalMessage, when set, is the originalMessage of a
	// modelStreamErrorException: the model's own message.
	OriginalMessage string
	// ResourceName, when set, is the resourceName of a ModelErrorException:
	// the ARN of what failed (a Marketplace model's SageMaker endpoint, an
	// imported model).
	ResourceName string
	// OmitOutput, for Converse, leaves "output" out of the 200 reply.
	OmitOutput bool
	// Events, for ConverseStream, are sent verbatim instead of the events
	// the fields above make.
	Events []Event
	// CutAfterEvents, for ConverseStream, when > 0 aborts the connection
	// after that many events (no messageStop): the client sees a cut stream.
	CutAfterEvents int
	// Interleave, for ConverseStream, sends the input deltas of the toolUse
	// blocks round-robin across the blocks instead of block by block.
	Interleave bool
	// Chunks splits Text and Reasoning into about this many deltas (zero:
	// one per word) and tool inputs into about this many pieces (zero:
	// pieces of 8 bytes).
	Chunks int
	// Block, when non-nil, holds the request open before any answer until
	// Block is closed, the request's context ends or the Server is closed
	// (503 ServiceUnavailableException).
	Block <-chan struct{}
}

// ToolUse is one toolUse block of a Turn.
type ToolUse struct {
	// ID is the toolUseId (default: a made-up "tooluse_..." id).
	ID   string
	Name string
	// Input is the tool input as JSON text (default {}); it is sent as a
	// JSON object by Converse and as partial JSON text by ConverseStream.
	Input string
}

// Usage is the token usage a Turn reports. totalTokens is the sum of all
// four, as Bedrock reports it.
type Usage struct {
	InputTokens, OutputTokens                   int
	CacheReadInputTokens, CacheWriteInputTokens int
}

// Event is one ConverseStream event: its :event-type (messageStart,
// contentBlockStart, contentBlockDelta, contentBlockStop, messageStop,
// metadata) and its JSON payload.
type Event struct {
	Type    string
	Payload any
}

// Request is one Converse or ConverseStream request as the fake received
// and decoded it.
type Request struct {
	Input
	// Operation is "Converse" or "ConverseStream".
	Operation string
	// ModelID is the modelId path label, unescaped.
	ModelID string
	// Seq is the request's zero-based arrival number on its Server.
	Seq int
	// Body is the raw request body.
	Body []byte
	// Authorization is the request's (SigV4) Authorization header.
	Authorization string
	// Metered is the fake's estimate of the request's input tokens and of
	// those it read from and wrote to the prompt cache (cache.go); its
	// OutputTokens is zero.
	Metered Usage
}

// Input is the JSON body of a Converse or ConverseStream request.
type Input struct {
	Messages                     []Message        `json:"messages"`
	System                       []SystemBlock    `json:"system,omitempty"`
	InferenceConfig              *InferenceConfig `json:"inferenceConfig,omitempty"`
	ToolConfig                   *ToolConfig      `json:"toolConfig,omitempty"`
	GuardrailConfig              *GuardrailConfig `json:"guardrailConfig,omitempty"`
	AdditionalModelRequestFields json.RawMessage  `json:"additionalModelRequestFields,omitempty"`
	OutputConfig                 json.RawMessage  `json:"outputConfig,omitempty"`
	ServiceTier                  *ServiceTier     `json:"serviceTier,omitempty"`
}

// Message is a Converse message.
type Message struct {
	Role    string         `json:"role"`
	Content []ContentBlock `json:"content"`
}

// ContentBlock is one block of a message: exactly one field is set.
type ContentBlock struct {
	Text             *string           `json:"text,omitempty"`
	Image            *Image            `json:"image,omitempty"`
	Document         *Document         `json:"document,omitempty"`
	ToolUse          *ToolUseBlock     `json:"toolUse,omitempty"`
	ToolResult       *ToolResultBlock  `json:"toolResult,omitempty"`
	ReasoningContent *ReasoningContent `json:"reasoningContent,omitempty"`
	CachePoint       *CachePoint       `json:"cachePoint,omitempty"`
}

// Image is an image block.
type Image struct {
	Format string `json:"format"`
	Source struct {
		Bytes []byte `json:"bytes,omitempty"`
	} `json:"source"`
}

// Document is a document block.
type Document struct {
	Format string `json:"format"`
	Name   string `json:"name"`
	Source struct {
		Bytes []byte `json:"bytes,omitempty"`
	} `json:"source"`
}

// ToolUseBlock is a toolUse block.
type ToolUseBlock struct {
	ToolUseID string          `json:"toolUseId"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// ToolResultBlock is a toolResult block.
type ToolResultBlock struct {
	ToolUseID string              `json:"toolUseId"`
	Content   []ToolResultContent `json:"content"`
	Status    string              `json:"status,omitempty"`
}

// ToolResultContent is one block of a tool result.
type ToolResultContent struct {
	Text  *string         `json:"text,omitempty"`
	JSON  json.RawMessage `json:"json,omitempty"`
	Image *Image          `json:"image,omitempty"`
}

// ReasoningContent is a reasoningContent block.
type ReasoningContent struct {
	ReasoningText   *ReasoningText `json:"reasoningText,omitempty"`
	RedactedContent []byte         `json:"redactedContent,omitempty"`
}

// ReasoningText is signed reasoning text.
type ReasoningText struct {
	Text      string `json:"text"`
	Signature string `json:"signature,omitempty"`
}

// SystemBlock is one system prompt block.
type SystemBlock struct {
	Text       *string     `json:"text,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// InferenceConfig is a request's inferenceConfig.
type InferenceConfig struct {
	MaxTokens     *int     `json:"maxTokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"topP,omitempty"`
	StopSequences []string `json:"stopSequences,omitempty"`
}

// ToolConfig is a request's toolConfig.
type ToolConfig struct {
	Tools      []Tool      `json:"tools"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
}

// Tool is one tool of a toolConfig, or a cache point after the tools
// before it: one field is set.
type Tool struct {
	ToolSpec   *ToolSpec   `json:"toolSpec,omitempty"`
	CachePoint *CachePoint `json:"cachePoint,omitempty"`
}

// CachePoint is a cachePoint block: the end of a prompt prefix to cache
// (see cache.go).
type CachePoint struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// ToolSpec is a tool's specification.
type ToolSpec struct {
	Name string `json:"name"`
	// Description is nil when absent (Bedrock refuses it empty).
	Description *string `json:"description,omitempty"`
	InputSchema struct {
		JSON json.RawMessage `json:"json"`
	} `json:"inputSchema"`
}

// ToolChoice is a toolConfig's toolChoice: one field is set.
type ToolChoice struct {
	Auto *struct{} `json:"auto,omitempty"`
	Any  *struct{} `json:"any,omitempty"`
	Tool *struct {
		Name string `json:"name"`
	} `json:"tool,omitempty"`
}

// GuardrailConfig is a request's guardrailConfig.
type GuardrailConfig struct {
	GuardrailIdentifier  string `json:"guardrailIdentifier"`
	GuardrailVersion     string `json:"guardrailVersion"`
	Trace                string `json:"trace,omitempty"`
	StreamProcessingMode string `json:"streamProcessingMode,omitempty"`
}

// ServiceTier is a request's serviceTier.
type ServiceTier struct {
	Type string `json:"type"`
}

// wireUsage is the usage object of a reply.
type wireUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	TotalTokens           int `json:"totalTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens,omitempty"`
}

func (u Usage) wire() wireUsage {
	return wireUsage{
		InputTokens:           u.InputTokens,
		OutputTokens:          u.OutputTokens,
		TotalTokens:           u.InputTokens + u.OutputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens,
		CacheReadInputTokens:  u.CacheReadInputTokens,
		CacheWriteInputTokens: u.CacheWriteInputTokens,
	}
}
