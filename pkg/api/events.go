package api

// Streaming event types: every event of the OpenResponses spec, plus
// response.cancelled and OpenAI's events of server-executed (mcp_call)
// tool calls.
const (
	EventResponseCreated          = "response.created"
	EventResponseQueued           = "response.queued"
	EventResponseInProgress       = "response.in_progress"
	EventResponseCompleted        = "response.completed"
	EventResponseFailed           = "response.failed"
	EventResponseIncomplete       = "response.incomplete"
	EventResponseCancelled        = "response.cancelled"
	EventOutputItemAdded          = "response.output_item.added"
	EventOutputItemDone           = "response.output_item.done"
	EventContentPartAdded         = "response.content_part.added"
	EventContentPartDone          = "response.content_part.done"
	EventOutputTextDelta          = "response.output_text.delta"
	EventOutputTextDone           = "response.output_text.done"
	EventOutputTextAnnotation     = "response.output_text.annotation.added"
	EventRefusalDelta             = "response.refusal.delta"
	EventRefusalDone              = "response.refusal.done"
	EventReasoningDelta           = "response.reasoning.delta"
	EventReasoningDone            = "response.reasoning.done"
	EventReasoningSummaryPartAdd  = "response.reasoning_summary_part.added"
	EventReasoningSummaryPartDone = "response.reasoning_summary_part.done"
	EventReasoningSummaryDelta    = "response.reasoning_summary_text.delta"
	EventReasoningSummaryDone     = "response.reasoning_summary_text.done"
	EventFunctionCallArgsDelta    = "response.function_call_arguments.delta"
	EventFunctionCallArgsDone     = "response.function_call_arguments.done"
	EventCustomToolCallInputDelta = "response.custom_tool_call_input.delta"
	EventCustomToolCallInputDone  = "response.custom_tool_call_input.done"
	EventMCPCallInProgress        = "response.mcp_call.in_progress"
	EventMCPCallCompleted         = "response.mcp_call.completed"
	EventMCPCallFailed            = "response.mcp_call.failed"
	EventMCPCallArgsDelta         = "response.mcp_call_arguments.delta"
	EventMCPCallArgsDone          = "response.mcp_call_arguments.done"
	EventMCPListToolsInProgress   = "response.mcp_list_tools.in_progress"
	EventMCPListToolsCompleted    = "response.mcp_list_tools.completed"
	EventMCPListToolsFailed       = "response.mcp_list_tools.failed"
	EventError                    = "error"
)

// TerminalEvent returns the lifecycle event that ends a stream for status s:
// response.completed for completed and requires_action (the status is in
// the payload, so the SDKs' stream helpers accept the pause),
// response.incomplete, response.failed or response.cancelled.
func TerminalEvent(s Status) string {
	switch s {
	case StatusIncomplete:
		return EventResponseIncomplete
	case StatusFailed:
		return EventResponseFailed
	case StatusCancelled:
		return EventResponseCancelled
	}
	return EventResponseCompleted
}

// IsTerminalEvent reports whether t ends a stream.
func IsTerminalEvent(t string) bool {
	switch t {
	case EventResponseCompleted, EventResponseIncomplete, EventResponseFailed, EventResponseCancelled, EventError:
		return true
	}
	return false
}

// StreamEvent is one server-sent event. Only the fields of its type are
// set; index fields are pointers so that a zero index is still written.
type StreamEvent struct {
	Type            string       `json:"type"`
	SequenceNumber  int64        `json:"sequence_number"`
	Response        *Response    `json:"response,omitempty"`
	OutputIndex     *int         `json:"output_index,omitempty"`
	ItemID          string       `json:"item_id,omitempty"`
	ContentIndex    *int         `json:"content_index,omitempty"`
	SummaryIndex    *int         `json:"summary_index,omitempty"`
	AnnotationIndex *int         `json:"annotation_index,omitempty"`
	Item            *Item        `json:"item,omitempty"`
	Part            *ContentPart `json:"part,omitempty"`
	Delta           *string      `json:"delta,omitempty"`
	Text            *string      `json:"text,omitempty"`
	Arguments       *string      `json:"arguments,omitempty"`
	Input           *string      `json:"input,omitempty"`
	Refusal         *string      `json:"refusal,omitempty"`
	Annotation      any          `json:"annotation,omitempty"`
	// Logprobs are a text event's log probabilities: OpenAI sends [] on
	// every response.output_text.delta and .done when none were asked for
	// (its SDKs require the field), so a pointer to an empty slice is
	// written as [] and a nil pointer not at all.
	Logprobs *[]any        `json:"logprobs,omitempty"`
	Error    *ErrorPayload `json:"error,omitempty"`
}

// Wire returns the value to encode for ev, whose JSON is ev's: ev itself,
// or a value that encodes in place what ev would encode through a
// MarshalJSON method, whose output the encoder would parse and copy again:
// for a lifecycle event (one that carries a response and nothing else but
// its type and number) the response's fields (about four times the work
// of a response.created event), for an event carrying an item or a
// content part (response.output_item.*, response.content_part.*) the
// fields of the item's or part's shape. The streaming writers encode
// events with it.
func (ev *StreamEvent) Wire() any {
	switch {
	case ev.Response != nil:
		if ev.onlyResponse() {
			return &lifecycleWire{Type: ev.Type, SequenceNumber: ev.SequenceNumber, Response: ev.Response.wire()}
		}
	case ev.Item != nil || ev.Part != nil:
		w := &eventWire{Type: ev.Type, SequenceNumber: ev.SequenceNumber, OutputIndex: ev.OutputIndex, ItemID: ev.ItemID,
			ContentIndex: ev.ContentIndex, SummaryIndex: ev.SummaryIndex, AnnotationIndex: ev.AnnotationIndex,
			Delta: ev.Delta, Text: ev.Text, Arguments: ev.Arguments, Input: ev.Input, Refusal: ev.Refusal,
			Annotation: ev.Annotation, Logprobs: ev.Logprobs, Error: ev.Error}
		if ev.Item != nil {
			w.Item = ev.Item.value()
		}
		if ev.Part != nil {
			w.Part = ev.Part.wire()
		}
		return w
	}
	return ev
}

// lifecycleWire is how a lifecycle event is encoded (Wire): StreamEvent's
// first three fields, the response's without its MarshalJSON.
type lifecycleWire struct {
	Type           string        `json:"type"`
	SequenceNumber int64         `json:"sequence_number"`
	Response       *responseWire `json:"response"`
}

// eventWire is how an event carrying an item or a content part but no
// response is encoded (Wire): StreamEvent's fields but its response, with
// the item's and the part's shapes (Item.wire, ContentPart.wire) in place
// of the values whose MarshalJSON encodes them
// (TestEventWireMirrorsStreamEvent keeps it up to date with StreamEvent).
type eventWire struct {
	Type            string        `json:"type"`
	SequenceNumber  int64         `json:"sequence_number"`
	OutputIndex     *int          `json:"output_index,omitempty"`
	ItemID          string        `json:"item_id,omitempty"`
	ContentIndex    *int          `json:"content_index,omitempty"`
	SummaryIndex    *int          `json:"summary_index,omitempty"`
	AnnotationIndex *int          `json:"annotation_index,omitempty"`
	Item            any           `json:"item,omitempty"`
	Part            any           `json:"part,omitempty"`
	Delta           *string       `json:"delta,omitempty"`
	Text            *string       `json:"text,omitempty"`
	Arguments       *string       `json:"arguments,omitempty"`
	Input           *string       `json:"input,omitempty"`
	Refusal         *string       `json:"refusal,omitempty"`
	Annotation      any           `json:"annotation,omitempty"`
	Logprobs        *[]any        `json:"logprobs,omitempty"`
	Error           *ErrorPayload `json:"error,omitempty"`
}

// onlyResponse reports whether ev has no field set but its type, sequence
// number and response (TestWireCoversEveryField keeps it up to date with
// StreamEvent's fields).
func (ev *StreamEvent) onlyResponse() bool {
	return ev.OutputIndex == nil && ev.ItemID == "" && ev.ContentIndex == nil && ev.SummaryIndex == nil &&
		ev.AnnotationIndex == nil && ev.Item == nil && ev.Part == nil && ev.Delta == nil && ev.Text == nil &&
		ev.Arguments == nil && ev.Input == nil && ev.Refusal == nil && ev.Annotation == nil && ev.Logprobs == nil &&
		ev.Error == nil
}

// ErrorPayload is the payload of an "error" streaming event.
type ErrorPayload struct {
	Type    string  `json:"type"`
	Code    *string `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
	// Status is the error's HTTP status, which a WebSocket error envelope
	// carries; never serialized here.
	Status int `json:"-"`
}

// NewErrorEvent builds the "error" event for err.
func NewErrorEvent(e *Error) StreamEvent {
	return StreamEvent{Type: EventError, Error: &ErrorPayload{Type: e.Type, Code: nilIfEmpty(e.Code), Message: e.Message, Param: nilIfEmpty(e.Param), Status: e.Status}}
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }
