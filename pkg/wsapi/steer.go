package wsapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
)

// TypeSteerFailed is OpenAI's server event that returns the input of a
// response.steer that was not committed.
const TypeSteerFailed = "response.steer.failed"

// Error codes of response.steer.failed.
const (
	// CodeSteeringNotSupported answers every valid response.steer: Lambent
	// does not steer.
	CodeSteeringNotSupported = "steering_not_supported"
	// CodeInvalidSteer answers a response.steer that OpenAI's validation
	// refuses.
	CodeInvalidSteer = "invalid_input"
)

// SteerFailed is OpenAI's response.steer.failed event. Lambent allocates no
// steering id (steer.id is omitted, as OpenAI omits it for a failure
// before one is allocated), and the event is a stream of its own: its
// sequence_number is 0.
type SteerFailed struct {
	Type           string     `json:"type"`
	SequenceNumber int64      `json:"sequence_number"`
	Steer          SteerRef   `json:"steer"`
	Error          SteerError `json:"error"`
	// StreamID is the lane of the targeted response, when the connection
	// keeps it and it has one.
	StreamID string `json:"stream_id,omitempty"`
}

// SteerRef is the submission a response.steer.failed returns.
type SteerRef struct {
	// Input is the steer's input as sent: a string or an array (an empty
	// string when it sent neither).
	Input              json.RawMessage `json:"input"`
	PreviousResponseID string          `json:"previous_response_id"`
}

// SteerError says why a steer was not committed.
type SteerError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Type is always invalid_request_error.
	Type string `json:"type"`
}

// steerFields are the fields a response.steer may have.
var steerFields = []string{"type", "previous_response_id", "input"}

// decodeSteer returns the response.steer.failed answering the
// response.steer whose fields are fields, lane not yet set: invalid_input
// when OpenAI's validation refuses it, else steering_not_supported.
func decodeSteer(fields map[string]json.RawMessage) *SteerFailed {
	ev := &SteerFailed{Type: TypeSteerFailed, Steer: SteerRef{Input: steerInputOf(fields["input"])},
		Error: SteerError{Code: CodeSteeringNotSupported, Type: api.ErrTypeInvalidRequest,
			Message: "Steering is not supported: this server does not steer responses. Send the input in a response.create that continues the response (previous_response_id) once it has ended."}}
	_ = json.Unmarshal(fields["previous_response_id"], &ev.Steer.PreviousResponseID)
	if err := validSteer(fields); err != nil {
		ev.Error.Code, ev.Error.Message = CodeInvalidSteer, err.Error()
	}
	return ev
}

// steerInputOf returns raw when it is a JSON string or array, else "".
func steerInputOf(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && (raw[0] == '"' || raw[0] == '[') {
		return raw
	}
	return json.RawMessage(`""`)
}

// validSteer checks a response.steer as OpenAI documents it: only type,
// previous_response_id (a non-empty string) and input, a non-empty string
// or a non-empty array of user messages (validSteerMessage).
func validSteer(fields map[string]json.RawMessage) error {
	for k := range fields {
		if !slices.Contains(steerFields, k) {
			return fmt.Errorf("unknown parameter %q: a response.steer has only type, previous_response_id and input (its lane is the target response's)", k)
		}
	}
	var prev string
	if json.Unmarshal(fields["previous_response_id"], &prev) != nil || prev == "" {
		return fmt.Errorf("previous_response_id must be the id of the response to steer")
	}
	var text string
	if json.Unmarshal(fields["input"], &text) == nil {
		if text == "" {
			return fmt.Errorf("input must not be empty")
		}
		return nil
	}
	var msgs []map[string]json.RawMessage
	if json.Unmarshal(fields["input"], &msgs) != nil || len(msgs) == 0 {
		return fmt.Errorf("input must be a string or a non-empty array of user messages")
	}
	for i, m := range msgs {
		if err := validSteerMessage(m); err != nil {
			return fmt.Errorf("input[%d]: %w", i, err)
		}
	}
	return nil
}

// validSteerMessage checks one message of a steer's input: only type
// ("message"), role ("user") and content, a string or an array of
// input_text, input_image and input_file parts.
func validSteerMessage(m map[string]json.RawMessage) error {
	for k := range m {
		if k != "type" && k != "role" && k != "content" {
			return fmt.Errorf("unknown field %q: a steering message has only type, role and content", k)
		}
	}
	if raw, ok := m["type"]; ok && !jsonStringIs(raw, "message") {
		return fmt.Errorf("only messages can steer")
	}
	if !jsonStringIs(m["role"], "user") {
		return fmt.Errorf("only user messages can steer")
	}
	var text string
	if json.Unmarshal(m["content"], &text) == nil {
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(m["content"], &parts) != nil {
		return fmt.Errorf("content must be a string or an array of input_text, input_image and input_file parts")
	}
	for _, p := range parts {
		switch p.Type {
		case "input_text", "input_image", "input_file":
		default:
			return fmt.Errorf("content part type %q cannot steer: only input_text, input_image and input_file", p.Type)
		}
	}
	return nil
}

// jsonStringIs reports whether raw is the JSON string want.
func jsonStringIs(raw json.RawMessage, want string) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && s == want
}

// shortened returns ev without the input it returns (an empty string),
// its previous_response_id and error message cut to maxErrorText bytes
// (clip), so that its message fits any transport's message limit.
func (ev *SteerFailed) shortened() *SteerFailed {
	c := *ev
	c.Steer.Input = json.RawMessage(`""`)
	c.Steer.PreviousResponseID, c.Error.Message = clip(c.Steer.PreviousResponseID), clip(c.Error.Message)
	return &c
}

// encodeSteerFailed returns the message of ev.
func encodeSteerFailed(ev *SteerFailed) ([]byte, error) {
	b, err := wirejson.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", ev.Type, err)
	}
	return b, nil
}
