package wsapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
)

// acceptAll is a Service that answers every response.create with a
// completed response and no event, so that fuzzing reaches every decoder
// of a message and not the engine.
type acceptAll struct{}

func (acceptAll) CreateResponse(context.Context, *api.CreateResponseRequest, engine.ResponseWriter) error {
	return nil
}

// FuzzHandleMessage: whatever a client sends in one WebSocket message
// (response.create with any fields and stream_id, response.steer, other
// types, binary, over the limit), Handle neither panics nor drops the
// connection, and whatever it sends back is one JSON object with a type;
// an error envelope is a 4xx (the service never fails: every error is the
// message's).
func FuzzHandleMessage(f *testing.F) {
	for _, s := range []string{
		`{"type":"response.create","model":"m","input":"hi"}`,
		`{"type":"response.create","model":"m","input":"hi","stream_id":"lane-1"}`,
		`{"type":"response.create","stream_id":"` + string(make([]byte, 70)) + `"}`,
		`{"type":"response.create","previous_response_id":"resp_1","stream_id":"a:b","generate":false}`,
		`{"type":"response.create","stream":true,"background":true}`,
		`{"type":"response.steer","previous_response_id":"resp_1","input":"faster"}`,
		`{"type":"response.steer","previous_response_id":"resp_1","input":[{"role":"user","content":[{"type":"input_text","text":"x"}]}]}`,
		`{"type":"response.steer","stream_id":"x","input":[]}`,
		`{"type":"session.update"}`,
		`[]`, `null`, `{"type":1}`, `{`,
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte{0xff, 0xfe}, true)
	f.Fuzz(func(t *testing.T, data []byte, binary bool) {
		out := &collect{}
		s := &Session{Service: acceptAll{}, Cache: NewMemoryCache(0), Sender: out, ReadLimit: 4 << 10, WriteLimit: 64 << 10,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		if err := s.Handle(context.Background(), Message{Binary: binary, Data: data, Size: int64(len(data))}); err != nil {
			t.Fatalf("Handle: %v", err)
		}
		for _, msg := range out.msgs {
			var v struct {
				Type   string `json:"type"`
				Status int    `json:"status"`
			}
			if err := json.Unmarshal(msg, &v); err != nil || v.Type == "" {
				t.Fatalf("sent %q: not a JSON object with a type (%v)", msg, err)
			}
			if v.Type == "error" && (v.Status < 400 || v.Status > 499) {
				t.Fatalf("sent %q: an error envelope that is not a 4xx", msg)
			}
		}
	})
}

// collect records the messages a session sends.
type collect struct{ msgs [][]byte }

func (c *collect) Send(_ context.Context, msg []byte) error {
	c.msgs = append(c.msgs, append([]byte(nil), msg...))
	return nil
}
