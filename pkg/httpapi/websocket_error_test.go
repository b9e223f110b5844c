package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/store"
)

// failingCreates is a memory store whose Create fails: a response runs to
// its end and cannot be stored.
type failingCreates struct{ *store.Memory }

func (failingCreates) Create(context.Context, *store.Record) error {
	return errors.New("store unavailable")
}

// An error after a WebSocket response started (its store failed once it
// had run) is sent in the error envelope a refused message gets
// (OpenResponses "WebSocket Errors": a status and a string error.code, the
// WebSocketErrorEvent schema), with the message's request id, and keeps its
// place among the response's events: its sequence_number follows theirs,
// so that it is the stream's error event (ErrorStreamingEvent) too, as
// OpenAI's WebSocket error event carries either field. The connection
// stays usable.
func TestWebSocketErrorAfterStart(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, wsModel(nil), map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA},
		&app.Options{Store: failingCreates{store.NewMemory(store.MemoryConfig{})}})
	ws := dialWS(t, g.srv, wsKeyA)
	ws.send(`{"type":"response.create","input":"hello"}`)
	var msg []byte
	last := int64(-1)
	for msg == nil {
		data := ws.read()
		var probe struct {
			Type           string `json:"type"`
			SequenceNumber *int64 `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal(data, &probe), "%s", data)
		require.NotNil(t, probe.SequenceNumber, "%s", data)
		if probe.Type == "error" {
			msg = data
			break
		}
		last = *probe.SequenceNumber
	}
	v, err := schema.Shared()
	require.NoError(t, err)
	require.NoError(t, v.Validate("WebSocketErrorEvent", msg), "%s", msg)
	require.NoError(t, v.ValidateEvent(msg), "%s", msg)
	var env struct {
		Status         int    `json:"status"`
		SequenceNumber int64  `json:"sequence_number"`
		RequestID      string `json:"request_id"`
		Error          struct {
			Code    *string `json:"code"`
			Type    string  `json:"type"`
			Message string  `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(msg, &env))
	require.Equal(t, 500, env.Status)
	require.NotNil(t, env.Error.Code)
	require.Equal(t, "store_failed", *env.Error.Code)
	require.Equal(t, "server_error", env.Error.Type)
	require.Equal(t, last+1, env.SequenceNumber)
	require.NotEmpty(t, env.RequestID)
	require.Contains(t, env.Error.Message, env.RequestID)

	ws.send(`{"type":"response.create","input":"hello again"}`)
	evs, e := ws.turn()
	require.Nil(t, e, "%+v", e)
	require.Equal(t, "response.created", evs[0].Type)
}

// A response.create whose model call the provider refuses gets the error
// envelope of the refusal, as OpenAI's WebSocket mode answers a
// response.create it refuses, not response.created and a response.failed;
// the connection stays usable.
func TestWebSocketProviderRefusalIsAnErrorEnvelope(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	ws.send(`{"type":"response.create","input":"Please fail"}`)
	evs, e := ws.turn()
	require.Zero(t, len(evs), "no event")
	require.NotNil(t, e)
	require.Equal(t, 400, e.Status)
	require.Contains(t, e.Error.Message, "the model refused this request")
	evs = ws.create(`{"type":"response.create","input":"Hi"}`)
	require.Equal(t, "response.completed", evs[len(evs)-1].Type)
}
