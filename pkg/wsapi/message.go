package wsapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
)

// Types of the messages a client sends.
const (
	// TypeResponseCreate starts a response.
	TypeResponseCreate = "response.create"
	// TypeResponseSteer asks to steer a running response (OpenAI's
	// WebSocket mode), which Lambent answers with TypeSteerFailed.
	TypeResponseSteer = "response.steer"
	// TypeResponseProcessed is Codex's notice that it has processed a
	// response (response_id): it asks for nothing, and gets no reply.
	TypeResponseProcessed = "response.processed"
)

// Error codes of WebSocket mode.
const (
	// CodeConnectionLimit ends a connection that reached MaxAge.
	CodeConnectionLimit = "websocket_connection_limit_reached"
	// CodeUnknownMessageType answers a message whose type is none a
	// client sends (response.create, response.steer, response.processed).
	CodeUnknownMessageType = "unknown_message_type"
	// CodeBinaryMessage answers a binary frame.
	CodeBinaryMessage = "unsupported_message_format"
	// CodeMessageTooLarge answers a response event larger than the
	// transport can send (API Gateway's 128 KB).
	CodeMessageTooLarge = "websocket_message_too_large"
	// CodeTooManyLanes answers a response.create that names a lane
	// (stream_id) beyond the connection's MaxLanes.
	CodeTooManyLanes = "too_many_stream_ids"
)

// MaxLanes bounds the lanes (distinct stream_ids) a connection keeps a
// response of or runs one on.
const MaxLanes = 16

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
	// StreamID is the lane of the response.create it answers (OpenAI's
	// stream_id), when that message named a valid one.
	StreamID string `json:"stream_id,omitempty"`
}

// EncodeError returns the error envelope of err for the message whose
// context is ctx: its request id, and a server error in general terms
// (api.Error.ForClient). Its error.code is never null (the spec's
// WebSocketErrorEvent requires a string): an error without a code of its
// own, null over HTTP, has its type's (invalid_request_error, ...).
func EncodeError(ctx context.Context, err error) []byte {
	return EncodeLaneError(ctx, err, "")
}

// EncodeLaneError is EncodeError's envelope for a response.create of lane
// (its stream_id; "": none), which every message answering it carries.
func EncodeLaneError(ctx context.Context, err error, lane string) []byte {
	return encodeEnvelope(ctx, api.AsError(err), nil, lane)
}

// EncodeStreamError returns the message of a response's "error" event ev
// (an error after the response started, such as its store failing once it
// had run): EncodeError's envelope of its error, with its sequence_number,
// so that it is the spec's WebSocket error envelope and, like OpenAI's
// WebSocket error event, the stream's error event too; lane is the
// response's stream_id ("": none).
func EncodeStreamError(ctx context.Context, ev *api.StreamEvent, lane string) []byte {
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
	return encodeEnvelope(ctx, e, &ev.SequenceNumber, lane)
}

// encodeEnvelope encodes the envelope of e (EncodeError) with sequence
// number seq (nil: none) and stream_id lane ("": none).
func encodeEnvelope(ctx context.Context, e *api.Error, seq *int64, lane string) []byte {
	id := requestid.From(ctx)
	e = e.ForClient(id)
	if e.Code == "" {
		c := *e
		c.Code = c.Type
		e = &c
	}
	b, merr := wirejson.Marshal(Envelope{Type: api.EventError, Status: e.Status, SequenceNumber: seq, Error: e, RequestID: id, StreamID: lane})
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
	return textcut.Ellipsis(s, maxErrorText)
}

// ConnectionLimitError is the error that ends a connection at MaxAge.
func ConnectionLimitError() *api.Error {
	return &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: CodeConnectionLimit,
		Message: "This WebSocket connection reached its 60-minute limit; open a new connection (continue with previous_response_id for store=true responses, else resend the full input)."}
}

// transportFields are the create request's HTTP-only fields that a
// WebSocket response.create must not carry.
var transportFields = []string{"stream", "stream_options", "background"}

// Create is a decoded response.create message.
type Create struct {
	// Request is the streaming create request.
	Request *api.CreateResponseRequest
	// StreamID is the lane of the response (OpenAI's WebSocket field
	// stream_id), "" for none.
	StreamID string
}

// DecodeCreate decodes a response.create message into a streaming create
// request. The body is the standard create body plus "type" and OpenAI's
// WebSocket fields "generate" and "stream_id" (validStreamID); stream,
// stream_options and background are HTTP transport fields and rejected,
// except "stream": true, which only says what a WebSocket always does and
// which the OpenAI Agents SDK sends.
func DecodeCreate(m Message, limit int64) (*Create, error) {
	fields, typ, err := decodeFields(m, limit)
	if err != nil {
		return nil, err
	}
	if typ != TypeResponseCreate {
		return nil, unknownType(fields["type"])
	}
	return createFrom(fields)
}

// decodeFields returns the fields of m, a JSON object, and its type ("":
// none, or not a string).
func decodeFields(m Message, limit int64) (map[string]json.RawMessage, string, error) {
	if m.Binary {
		return nil, "", &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: CodeBinaryMessage,
			Message: "Binary WebSocket messages are not supported; send each response.create as a JSON text message."}
	}
	if m.Size > int64(len(m.Data)) || int64(len(m.Data)) > limit {
		return nil, "", &api.Error{Status: http.StatusRequestEntityTooLarge, Type: api.ErrTypeInvalidRequest, Code: "request_too_large",
			Message: fmt.Sprintf("The message of %d bytes exceeds the limit of %d bytes.", max(m.Size, int64(len(m.Data))), limit)}
	}
	if err := api.CheckMembers("", m.Data); err != nil {
		return nil, "", err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(m.Data, &fields); err != nil || fields == nil {
		return nil, "", api.InvalidRequestCode("", "invalid_json", "Each WebSocket message must be a JSON object with a \"type\": %q, %q or %q.", TypeResponseCreate, TypeResponseSteer, TypeResponseProcessed)
	}
	var typ string
	_ = json.Unmarshal(fields["type"], &typ)
	return fields, typ, nil
}

// unknownType is the error of a message of another type than a client
// sends (raw: its "type" field).
func unknownType(raw json.RawMessage) error {
	return api.InvalidRequestCode("type", CodeUnknownMessageType, "Unsupported message type %s: a client sends %q, %q or %q.", typeText(raw), TypeResponseCreate, TypeResponseSteer, TypeResponseProcessed)
}

// createFrom decodes the fields of a response.create message (DecodeCreate).
func createFrom(fields map[string]json.RawMessage) (*Create, error) {
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
	lane, err := takeStreamID(fields)
	if err != nil {
		return nil, err
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
	return &Create{Request: req, StreamID: lane}, nil
}

// maxStreamID bounds the length of a stream_id.
const maxStreamID = 64

// validStreamID reports whether s is a valid stream_id: 1 to 64 characters
// of A-Z, a-z, 0-9, '.', '_', ':' and '-'.
func validStreamID(s string) bool {
	if s == "" || len(s) > maxStreamID {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

// takeStreamID removes the WebSocket-only field "stream_id" from fields and
// returns its value: "" when absent or null.
func takeStreamID(fields map[string]json.RawMessage) (string, error) {
	raw, ok := fields["stream_id"]
	delete(fields, "stream_id")
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", nil
	}
	var lane string
	if err := json.Unmarshal(raw, &lane); err != nil {
		return "", api.InvalidRequestCode("stream_id", "invalid_type", "Invalid type for 'stream_id': expected a string.")
	}
	if !validStreamID(lane) {
		return "", api.InvalidRequestCode("stream_id", "invalid_value",
			"Invalid 'stream_id': expected 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'.", maxStreamID)
	}
	return lane, nil
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

// Route returns the lane (stream_id) message m runs on, and whether it is a
// response.create (a JSON object of that type): a front door runs those on
// their lane, FIFO, and answers the other messages at once. A
// response.create without a valid stream_id runs on the lane "".
func Route(m Message) (lane string, create bool) {
	_, lane, create = createRefs(m)
	return lane, create
}

// createRefs reports whether m is a response.create JSON object, and
// returns the previous_response_id and the valid stream_id it names ("":
// none): for a message DecodeCreate refused, the response it continued
// from and the lane its error envelope goes to; for the local front door,
// the lane a message runs on.
func createRefs(m Message) (prev, lane string, ok bool) {
	var fields map[string]json.RawMessage
	// A message of too many members is none: decodeFields refuses it.
	if m.Binary || api.CheckMembers("", m.Data) != nil || json.Unmarshal(m.Data, &fields) != nil {
		return "", "", false
	}
	var typ string
	if json.Unmarshal(fields["type"], &typ) != nil || typ != TypeResponseCreate {
		return "", "", false
	}
	_ = json.Unmarshal(fields["previous_response_id"], &prev)
	if json.Unmarshal(fields["stream_id"], &lane) != nil || !validStreamID(lane) {
		lane = ""
	}
	return prev, lane, true
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

// checkProcessed checks a response.processed notice: only type and
// response_id, a string of at most maxIDBytes.
func checkProcessed(fields map[string]json.RawMessage) error {
	for k := range fields {
		if k != "type" && k != "response_id" {
			return api.InvalidRequestCode(k, "unknown_parameter", "Unknown parameter: '%s'. A response.processed has only type and response_id.", k)
		}
	}
	var id string
	if raw, ok := fields["response_id"]; ok && (json.Unmarshal(raw, &id) != nil || len(id) > maxIDBytes) {
		return api.InvalidRequest("response_id", "Invalid 'response_id': a response id, a string of at most %d bytes.", maxIDBytes)
	}
	return nil
}

// maxIDBytes bounds a response id a notice names.
const maxIDBytes = 256
