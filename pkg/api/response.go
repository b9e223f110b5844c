package api

import "github.com/lambent/lambent/internal/wirejson"

// Response is the response object (ResponseResource). Every field the spec
// requires is always written; nullable ones are pointers.
type Response struct {
	ID string `json:"id"`
	// AccessPrograms is OpenAI's access_programs: the programs the
	// response ran under, null for the implicit standard one (OpenAI's
	// SDKs require the field; AccessPrograms.Shown).
	AccessPrograms     *AccessPrograms    `json:"access_programs"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             Status             `json:"status"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Model              string             `json:"model"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Output             []Item             `json:"output"`
	Error              *ResponseError     `json:"error"`
	Tools              []Tool             `json:"tools"`
	ToolChoice         ToolChoice         `json:"tool_choice"`
	Truncation         string             `json:"truncation"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Text               TextConfig         `json:"text"`
	TopP               float64            `json:"top_p"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	TopLogprobs        int                `json:"top_logprobs"`
	Temperature        float64            `json:"temperature"`
	Reasoning          *Reasoning         `json:"reasoning"`
	Usage              *Usage             `json:"usage"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	Metadata           map[string]string  `json:"metadata"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	// Conversation is the conversation the response belongs to, omitted
	// when none (as responses without one always looked).
	Conversation *ConversationRef `json:"conversation,omitempty"`
	// Lambent is Lambent's extension field, omitted when it has nothing to
	// say (strict clients see nothing new).
	Lambent *LambentInfo `json:"lambent,omitempty"`
}

// MarshalJSON writes every field, nil output, tools and metadata as empty
// ones, as the schema requires, from its wire: the output items and the
// tools are encoded in place, not through their own MarshalJSON methods,
// whose bytes the encoder would parse and compact again.
func (r *Response) MarshalJSON() ([]byte, error) { return wirejson.Marshal(r.wire()) }

// responseWire is how a Response is encoded: its fields, in order, with
// the same names and options, once nil output, tools and metadata are
// empty ones (wire), and the tool choice and text format in the shapes
// their MarshalJSON methods write (ToolChoice.wire, TextFormat.wire). A
// value that holds one encodes the response's fields in place
// (StreamEvent.Wire), rather than through MarshalJSON, whose output the
// encoder parses again (TestResponseWireMirrorsResponse keeps it up to
// date with Response).
type responseWire struct {
	ID                 string             `json:"id"`
	AccessPrograms     *AccessPrograms    `json:"access_programs"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             Status             `json:"status"`
	IncompleteDetails  *IncompleteDetails `json:"incomplete_details"`
	Model              string             `json:"model"`
	PreviousResponseID *string            `json:"previous_response_id"`
	Instructions       *string            `json:"instructions"`
	Output             []any              `json:"output"`
	Error              *ResponseError     `json:"error"`
	Tools              []any              `json:"tools"`
	ToolChoice         any                `json:"tool_choice"`
	Truncation         string             `json:"truncation"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	Text               textConfigWire     `json:"text"`
	TopP               float64            `json:"top_p"`
	PresencePenalty    float64            `json:"presence_penalty"`
	FrequencyPenalty   float64            `json:"frequency_penalty"`
	TopLogprobs        int                `json:"top_logprobs"`
	Temperature        float64            `json:"temperature"`
	Reasoning          *Reasoning         `json:"reasoning"`
	Usage              *Usage             `json:"usage"`
	MaxOutputTokens    *int               `json:"max_output_tokens"`
	MaxToolCalls       *int               `json:"max_tool_calls"`
	Store              bool               `json:"store"`
	Background         bool               `json:"background"`
	ServiceTier        string             `json:"service_tier"`
	// Metadata is the response's map, or when it is nil an empty struct
	// (whose JSON is an empty object too, with no map to allocate).
	Metadata         any              `json:"metadata"`
	SafetyIdentifier *string          `json:"safety_identifier"`
	PromptCacheKey   *string          `json:"prompt_cache_key"`
	Conversation     *ConversationRef `json:"conversation,omitempty"`
	Lambent          *LambentInfo     `json:"lambent,omitempty"`
}

// textConfigWire is how a TextConfig is encoded in a response
// (responseWire): its format in the shape TextFormat.MarshalJSON writes.
type textConfigWire struct {
	Format    any    `json:"format"`
	Verbosity string `json:"verbosity,omitempty"`
}

// wire returns the value r is encoded from (responseWire).
func (r *Response) wire() *responseWire {
	w := &responseWire{ID: r.ID, AccessPrograms: r.AccessPrograms, Object: r.Object, CreatedAt: r.CreatedAt, CompletedAt: r.CompletedAt, Status: r.Status,
		IncompleteDetails: r.IncompleteDetails, Model: r.Model, PreviousResponseID: r.PreviousResponseID,
		Instructions: r.Instructions, Output: itemValues(Shown(r.Output)), Error: r.Error, Tools: toolValues(r.Tools),
		ToolChoice: r.ToolChoice.wire(), Truncation: r.Truncation, ParallelToolCalls: r.ParallelToolCalls,
		Text: textConfigWire{Format: r.Text.Format.wire(), Verbosity: r.Text.Verbosity}, TopP: r.TopP,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty, TopLogprobs: r.TopLogprobs,
		Temperature: r.Temperature, Reasoning: r.Reasoning, Usage: r.Usage, MaxOutputTokens: r.MaxOutputTokens,
		MaxToolCalls: r.MaxToolCalls, Store: r.Store, Background: r.Background, ServiceTier: r.ServiceTier,
		Metadata: struct{}{}, SafetyIdentifier: r.SafetyIdentifier, PromptCacheKey: r.PromptCacheKey,
		Conversation: r.Conversation, Lambent: r.Lambent}
	if r.Metadata != nil {
		w.Metadata = r.Metadata
	}
	return w
}

// Shell returns a copy of r without its output items and tools, and the
// wirejson.Arrays of them: the parts of a wirejson.Stream of a value
// holding r (the response itself, a stream event), which encodes the items
// and tools one at a time, each in place. The output is the items shown
// (Shown), as MarshalJSON writes it.
func (r *Response) Shell() (*Response, []wirejson.Array) { return r.shell(Shown(r.Output)) }

// StoredShell is Shell for a stored record: its output array holds every
// output item, the ones set aside too (ItemHidden.Aside), which a resumed
// run gives the model again.
func (r *Response) StoredShell() (*Response, []wirejson.Array) { return r.shell(r.Output) }

// shell is Shell with output as the output items.
func (r *Response) shell(output []Item) (*Response, []wirejson.Array) {
	c := *r
	c.Output, c.Tools = nil, nil
	return &c, []wirejson.Array{ItemsArray("output", output),
		{Key: "tools", Len: len(r.Tools), Elem: func(i int) (any, error) { return r.Tools[i].wire(), nil }}}
}

// itemValues are the values items are encoded from in place
// (Item.value). Never nil.
func itemValues(items []Item) []any {
	vs := make([]any, len(items))
	for i := range items {
		vs[i] = items[i].value()
	}
	return vs
}

// value is the value it is encoded from in place (wire); for an item that
// has none, a value whose encoding fails with the reason.
func (it *Item) value() any {
	v, err := it.wire()
	if err != nil {
		return failing{err}
	}
	return v
}

// toolValues are the values tools are encoded from in place (Tool.wire).
// Never nil.
func toolValues(tools []Tool) []any {
	vs := make([]any, len(tools))
	for i := range tools {
		vs[i] = tools[i].wire()
	}
	return vs
}

// failing is a value whose encoding fails with err.
type failing struct{ err error }

// MarshalJSON returns f's error.
func (f failing) MarshalJSON() ([]byte, error) { return nil, f.err }

// ItemsArray is the wirejson.Array of items at key: each encoded as its
// MarshalJSON encodes it, without the copy that method returns.
func ItemsArray(key string, items []Item) wirejson.Array {
	return wirejson.Array{Key: key, Len: len(items), Elem: func(i int) (any, error) { return items[i].wire() }}
}

// Clone returns a copy of r whose Output slice can be appended to without
// touching r's.
func (r *Response) Clone() *Response {
	c := *r
	c.Output = append([]Item(nil), r.Output...)
	if r.Usage != nil {
		u := *r.Usage
		c.Usage = &u
	}
	c.Lambent = r.Lambent.clone()
	return &c
}

// IncompleteDetails says why a response is incomplete.
type IncompleteDetails struct {
	Reason string `json:"reason"`
}

// Incomplete reasons.
const (
	ReasonMaxOutputTokens = "max_output_tokens"
	ReasonContentFilter   = "content_filter"
	ReasonMaxTurns        = "max_turns"
	ReasonDeadline        = "deadline"
)

// ResponseError is the error of a failed response.
type ResponseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Reasoning is the reasoning configuration (request and response).
type Reasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

// Usage is token usage, summed over every model call of a response.
type Usage struct {
	InputTokens         int                 `json:"input_tokens"`
	OutputTokens        int                 `json:"output_tokens"`
	TotalTokens         int                 `json:"total_tokens"`
	InputTokensDetails  InputTokensDetails  `json:"input_tokens_details"`
	OutputTokensDetails OutputTokensDetails `json:"output_tokens_details"`
}

// InputTokensDetails breaks down input tokens: those read from the
// provider's prompt cache, and those written to it (OpenAI's
// cache_write_tokens, which Codex reads; Bedrock's cacheWriteInputTokens).
type InputTokensDetails struct {
	CachedTokens     int `json:"cached_tokens"`
	CacheWriteTokens int `json:"cache_write_tokens"`
}

// OutputTokensDetails breaks down output tokens.
type OutputTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.TotalTokens += o.TotalTokens
	u.InputTokensDetails.CachedTokens += o.InputTokensDetails.CachedTokens
	u.InputTokensDetails.CacheWriteTokens += o.InputTokensDetails.CacheWriteTokens
	u.OutputTokensDetails.ReasoningTokens += o.OutputTokensDetails.ReasoningTokens
}

// DeleteResult is the body of DELETE /v1/responses/{id}.
type DeleteResult struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// ItemList is the body of GET /v1/responses/{id}/input_items.
type ItemList struct {
	Object  string  `json:"object"`
	Data    []Item  `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// AccessPrograms are OpenAI's access programs of a request and of the
// response that echoes it.
type AccessPrograms struct {
	// Cyber is "standard", "daybreak_blue" or "daybreak_red".
	Cyber string `json:"cyber"`
}

// Shown is what a response echoes of the request's access programs p:
// OpenAI shows an explicit standard selection as such and an implicit one
// as null. This gateway runs every request as the standard program, so a
// Daybreak selection (checked, then without effect) is shown as null, the
// program that ran.
func (p *AccessPrograms) Shown() *AccessPrograms {
	if p == nil || p.Cyber != "standard" {
		return nil
	}
	return &AccessPrograms{Cyber: p.Cyber}
}
