package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// A client that closes its WebSocket while a response runs: the response
// (its model call, its tools) stops and the connection ends at once, as an
// SSE request's does when its client goes away (it ran until the model
// answered, or the pinger missed a pong: 60 s).
func TestWebSocketClientGoneStopsResponse(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	g := newWSGateway(t, block)
	h, srv := g.ownHandler(t)
	ws := dialWS(t, srv, wsKeyA)
	ws.send(`{"type":"response.create","store":false,"input":"Be slow"}`)
	ev, err := ssecheck.Decode(ws.read())
	require.NoError(t, err)
	require.Equal(t, "response.created", ev.Type)
	require.NoError(t, ws.c.CloseNow()) // the client goes away

	// Shutdown waits for the connections still served: the closed one
	// ends (its response would block until the test ends otherwise); the
	// bound is generous for a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err = h.Shutdown(ctx)
	require.NoError(t, err, "the connection's response still runs %v after its client closed", time.Since(start))
}

// A store=true response deleted over HTTP (DELETE /v1/responses/{id}) is
// gone for every reader, the socket that made it included: the connection
// keeps only store: false responses, and reads stored ones from the store
// (a cached copy made the deleted conversation live again in the
// continuation's stored context).
func TestWebSocketDeletedResponseNotContinued(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	evs := ws.create(`{"type":"response.create","input":"My name is Ada"}`)
	id := last(evs).Response.ID
	status, _, body := g.doAuth(http.MethodDelete, "/v1/responses/"+id, wsKeyA)
	require.Equal(t, http.StatusOK, status, "%s", body)
	status, _, _ = g.doAuth(http.MethodGet, "/v1/responses/"+id, wsKeyA)
	require.Equal(t, http.StatusNotFound, status)

	ws.send(fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, id))
	evs, e := ws.turn()
	if e == nil {
		t.Errorf("a deleted response was continued: %q (response %s, stored with the deleted context)", textOf(t, evs), last(evs).Response.ID)
	}
}
