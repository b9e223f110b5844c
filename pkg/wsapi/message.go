package wsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
)

// TypeResponseCreate is the type of the one message a client sends.
const TypeResponseCreate = "response.create"

// Error codes of WebSocket mode.
const (
	// CodeConnectionLimit ends a connection that reached MaxAge.
	CodeConnectionLimit = "websocket_connection_limit_reached"
	// CodeUnknownMessageType answers a message whose type is not
	// response.create.
	CodeUnknownMessageType = "unknown_message_type"
	// CodeBinaryMessage answers a binary frame.
	CodeBinaryMessage = "unsupported_message_format"
	// CodeMessageTooLarge answers a response event larger than the
	// transport can send (API Gateway's 128 KB).
	CodeMessageTooLarge = "websocket_message_too_large"
	// CodeTooManyQueued answers a response.create while too many wait.
	CodeTooManyQueued = "too_many_queued_messages"
)

// Message is one message a client sent.
type Message struct {
	// Binary is set for a binary frame (the spec's messages are text).
	Binary bool
	// Data is the message, at most the read limit.
	Data []byte
	// Size is the message's full size; above len(Data) the message was
	// over the limit and only its start was read.
	Size int64
}

// Envelope is the spec's error message:
// {"type":"error","status":400,"error":{"code","message","param","type"}},
// with the request id of the message it answers (an extension field: a
// WebSocket message has no x-request-id header) and, for an error after
// its response started, the error event's sequence_number.
type Envelope struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	// SequenceNumber places an error after its response started among the
	// response's events (EncodeStreamError); nil for any other error.
	SequenceNumber *int64     `json:"sequence_number,omitempty"`
	Error          *api.Error `json:"error"`
	RequestID      string     `json:"request_id,omitempty"`
}

// EncodeError returns the error envelope of err for the message whose
// context is ctx: its request id, and a server error in general terms
// (api.Error.ForClient). Its error.code is never null (the spec's
// WebSocketErrorEvent requires a string): an error without a code of its
// own, null over HTTP, has its type's (invalid_request_error, ...).
func EncodeError(ctx context.Context, err error) []byte {
	return encodeEnvelope(ctx, api.AsError(err), nil)
}

// EncodeStreamError returns the message of a response's "error" event ev
// (an error after the response started, such as its store failing once it
// had run): EncodeError's envelope of its error, with its sequence_number,
// so that it is the spec's WebSocket error envelope and, like OpenAI's
// WebSocket error event, the stream's error event too.
func EncodeStreamError(ctx context.Context, ev *api.StreamEvent) []byte {
	e := &api.Error{Status: http.StatusInternalServerError, Type: api.ErrTypeServer, Message: api.ServerErrorMessage}
	if p := ev.Error; p != nil {
		e = &api.Error{Status: p.Status, Type: p.Type, Message: p.Message}
		if p.Code != nil {
			e.Code = *p.Code
		}
		if p.Param != nil {
			e.Param = *p.Param
		}
		if e.Status == 0 {
			e.Status = http.StatusInternalServerError
		}
	}
	return encodeEnvelope(ctx, e, &ev.SequenceNumber)
}

// encodeEnvelope encodes the envelope of e (EncodeError) with sequence
// number seq (nil: none).
func encodeEnvelope(ctx context.Context, e *api.Error, seq *int64) []byte {
	id := requestid.From(ctx)
	e = e.ForClient(id)
	if e.Code == "" {
		c := *e
		c.Code = c.Type
		e = &c
	}
	b, merr := wirejson.Marshal(Envelope{Type: api.EventError, Status: e.Status, SequenceNumber: seq, Error: e, RequestID: id})
	if merr != nil {
		return []byte(`{"type":"error","status":500,"error":{"message":"internal error: could not encode the error","type":"server_error","param":null,"code":"server_error"}}`)
	}
	return b
}

// maxErrorText bounds the message and the param of a shortened error.
const maxErrorText = 1 << 10

// shortened returns e with its message and param cut to maxErrorText
// bytes each (at a UTF-8 boundary, "…" appended), so that its envelope
// fits any transport's message limit.
func shortened(e *api.Error) *api.Error {
	c := *e
	c.Message, c.Param = clip(c.Message), clip(c.Param)
	return &c
}

func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	n := maxErrorText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// ConnectionLimitError is the error that ends a connection at MaxAge.
func ConnectionLimitError() *api.Error {
	return &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: CodeConnectionLimit,
		Message: "This WebSocket connection reached its 60-minute limit; open a new connection (continue with previous_response_id for store=true responses, else resend the full input)."}
}

// transportFields are the create request's HTTP-only fields that a
// WebSocket response.create must not carry.
var transportFields = []string{"stream", "stream_options", "background"}

// DecodeCreate decodes a response.create message into a streaming create
// request. The body is the standard create body plus "type" and OpenAI's
// WebSocket field "generate"; stream, stream_options and background are
// HTTP transport fields and rejected, except "stream": true, which only
// says what a WebSocket always does and which the OpenAI Agents SDK sends.
func DecodeCreate(m Message, limit int64) (*api.CreateResponseRequest, error) {
	if m.Binary {
		return nil, &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: CodeBinaryMessage,
			Message: "Binary WebSocket messages are not supported; send each response.create as a JSON text message."}
	}
	if m.Size > int64(len(m.Data)) || int64(len(m.Data)) > limit {
		return nil, &api.Error{Status: http.StatusRequestEntityTooLarge, Type: api.ErrTypeInvalidRequest, Code: "request_too_large",
			Message: fmt.Sprintf("The message of %d bytes exceeds the limit of %d bytes.", max(m.Size, int64(len(m.Data))), limit)}
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m.Data, &fields); err != nil || fields == nil {
		return nil, api.InvalidRequestCode("", "invalid_json", "Each WebSocket message must be a JSON object with \"type\": %q.", TypeResponseCreate)
	}
	var typ string
	if raw, ok := fields["type"]; !ok || json.Unmarshal(raw, &typ) != nil || typ != TypeResponseCreate {
		return nil, api.InvalidRequestCode("type", CodeUnknownMessageType, "Unsupported message type %s: the only message a client sends is %q.", typeText(fields["type"]), TypeResponseCreate)
	}
	delete(fields, "type")
	for _, k := range transportFields {
		v, ok := fields[k]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(fields, k)
			continue
		}
		if k == "stream" && bytes.Equal(bytes.TrimSpace(v), []byte("true")) {
			delete(fields, k)
			continue
		}
		return nil, api.InvalidRequestCode(k, "unsupported_parameter", "Unsupported parameter: '%s' is an HTTP transport field and is not accepted on a WebSocket connection.", k)
	}
	generate, err := takeGenerate(fields)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(fields)
	if err != nil {
		return nil, api.InvalidRequestCode("", "invalid_json", "could not parse the message: %v", err)
	}
	req, err := api.DecodeCreateRequest(body)
	if err != nil {
		return nil, err
	}
	req.Stream, req.NoGenerate = true, !generate
	return req, nil
}

// takeGenerate removes the WebSocket-only field "generate" from fields and
// returns its value: true when absent or null (every turn generates by
// default), false for a prewarm (api.CreateResponseRequest.NoGenerate).
func takeGenerate(fields map[string]json.RawMessage) (bool, error) {
	raw, ok := fields["generate"]
	delete(fields, "generate")
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return true, nil
	}
	var generate bool
	if err := json.Unmarshal(raw, &generate); err != nil {
		return false, api.InvalidRequestCode("generate", "invalid_type", "Invalid type for 'generate': expected a boolean.")
	}
	return generate, nil
}

// continuedFrom returns the previous_response_id of m when m is a
// response.create JSON object naming one, else "": the response that a
// continuation refused by DecodeCreate continued from.
func continuedFrom(m Message) string {
	var fields map[string]json.RawMessage
	if m.Binary || json.Unmarshal(m.Data, &fields) != nil {
		return ""
	}
	var typ, prev string
	if json.Unmarshal(fields["type"], &typ) != nil || typ != TypeResponseCreate || json.Unmarshal(fields["previous_response_id"], &prev) != nil {
		return ""
	}
	return prev
}

func typeText(raw json.RawMessage) string {
	if raw == nil {
		return "(none)"
	}
	if len(raw) > 64 {
		raw = raw[:64]
	}
	return string(raw)
}
