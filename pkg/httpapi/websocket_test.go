package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/wsapi"
)

// WebSocket mode (OpenResponses 2026-04-24 "WebSocket Transport") through
// a Go WebSocket client (github.com/coder/websocket) against the real
// handler.

const (
	wsKeyA = "sk-ws-acme-0123456789abcdef"
	wsKeyB = "sk-ws-globex-0123456789abcdef"
)

// wsModel answers like clientModel, and: "slow" accepts the call and waits
// for block before answering; "fail" makes the model call fail (a 400 from
// the provider); "cut" cuts the answer's stream after its first chunk.
func wsModel(block <-chan struct{}) *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := strings.ToLower(req.Messages[len(req.Messages)-1].Content.String())
		switch {
		case strings.Contains(last, "slow"):
			// Accepted (the status line and the role chunk sent), the
			// answer held: a model call in flight.
			return fakellm.Turn{Text: "Slow answer.", Block: block, HoldAfterChunks: 1}
		case strings.Contains(last, "fail"):
			return fakellm.Turn{Status: http.StatusBadRequest, ErrorMessage: "the model refused this request"}
		case strings.Contains(last, "cut"):
			return fakellm.Turn{Text: "An answer cut short.", CutAfterChunks: 2}
		}
		return clientTurn(req)
	})
}

func newWSGateway(t *testing.T, block <-chan struct{}) *gateway {
	t.Helper()
	return newGateway(t, wsModel(block), map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA + ",globex=" + wsKeyB})
}

// ownHandler serves g's engine (key wsKeyA, tenant acme) through a
// handler of its own, whose Shutdown a test calls, on a server of its own.
func (g *gateway) ownHandler(t *testing.T) (*httpapi.Handler, *httptest.Server) {
	t.Helper()
	h := httpapi.New(httpapi.Config{Service: g.app.Engine, Tenants: tenant.Rule{Keys: tenant.NewKeyring(map[string]string{wsKeyA: "acme"})}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

// wsURL is the WebSocket URL of /v1/responses on srv.
func wsURL(srv *httptest.Server) string {
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/v1/responses"
}

// wsConn is a client connection with helpers that fail the test.
type wsConn struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, srv *httptest.Server, key string) *wsConn {
	t.Helper()
	c, res, err := websocket.Dial(t.Context(), wsURL(srv), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	require.NoError(t, err)
	require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
	t.Cleanup(func() { _ = c.CloseNow() })
	return &wsConn{t: t, c: c}
}

func (w *wsConn) send(msg string) {
	w.t.Helper()
	require.NoError(w.t, w.c.Write(w.t.Context(), websocket.MessageText, []byte(msg)))
}

func (w *wsConn) read() []byte {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(w.t.Context(), 30*time.Second)
	defer cancel()
	typ, data, err := w.c.Read(ctx)
	require.NoError(w.t, err)
	require.Equal(w.t, websocket.MessageText, typ)
	return data
}

// wsError is an error envelope as a client decodes it.
type wsError struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	Error  struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// turn reads the messages of one response.create: its events up to the
// terminal one, or an error envelope (then no events).
func (w *wsConn) turn() ([]ssecheck.Event, *wsError) {
	w.t.Helper()
	var evs []ssecheck.Event
	for {
		data := w.read()
		var probe struct {
			Type string          `json:"type"`
			Seq  json.RawMessage `json:"sequence_number"`
		}
		require.NoError(w.t, json.Unmarshal(data, &probe), "%s", data)
		if probe.Type == "error" && probe.Seq == nil {
			var e wsError
			require.NoError(w.t, json.Unmarshal(data, &e))
			require.Empty(w.t, evs, "an error envelope in the middle of a response: %s", data)
			return nil, &e
		}
		ev, err := ssecheck.Decode(data)
		require.NoError(w.t, err)
		evs = append(evs, ev)
		switch ev.Type {
		case "response.completed", "response.incomplete", "response.failed", "response.cancelled", "error":
			return evs, nil
		}
	}
}

// create sends a response.create and returns its checked events.
func (w *wsConn) create(body string) []ssecheck.Event {
	w.t.Helper()
	w.send(body)
	evs, e := w.turn()
	require.Nil(w.t, e, "error envelope: %+v", e)
	checkEvents(w.t, evs)
	return evs
}

// checkEvents checks the stream invariants and OpenAI's types, and the
// OpenResponses schema when no server-executed (mcp) items are in it, as
// readSDKStream does for SSE.
func checkEvents(t *testing.T, evs []ssecheck.Event) {
	t.Helper()
	require.NoError(t, ssecheck.Check(nil, evs))
	require.NoError(t, ssecheck.CheckOpenAI(evs))
	for _, ev := range evs {
		if bytes.Contains(ev.Data, []byte(`"mcp`)) {
			return
		}
	}
	require.NoError(t, ssecheck.Check(validator(t), evs))
}

// createErr sends a response.create that must fail with an error envelope.
func (w *wsConn) createErr(body string, status int, code string) *wsError {
	w.t.Helper()
	w.send(body)
	evs, e := w.turn()
	require.NotNil(w.t, e, "want error %s, got events %v", code, evs)
	require.Equal(w.t, "error", e.Type)
	require.Equal(w.t, status, e.Status, "%+v", e)
	if code != "" {
		require.NotNil(w.t, e.Error.Code)
		require.Equal(w.t, code, *e.Error.Code, "%+v", e)
	}
	require.NotEmpty(w.t, e.Error.Message)
	return e
}

func textOf(t *testing.T, evs []ssecheck.Event) string {
	t.Helper()
	s, err := ssecheck.OutputText(evs)
	require.NoError(t, err)
	return s
}

func last(evs []ssecheck.Event) ssecheck.Event { return evs[len(evs)-1] }

func TestWebSocketCreateAndContinue(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)

	evs := ws.create(`{"type":"response.create","input":"Hi there"}`)
	require.Equal(t, "response.completed", last(evs).Type)
	require.Equal(t, "Hello from Lambent.", textOf(t, evs))
	first := last(evs).Response.ID

	// Continuation by previous_response_id, with only the new input.
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"My name is Ada"}`, first))
	second := last(evs).Response.ID
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, second))
	require.Equal(t, "Your name is Ada.", textOf(t, evs))

	// store=true responses are persisted: readable over HTTP by the same
	// tenant and continuable from a new socket.
	status, _, body := g.doAuth(http.MethodGet, "/v1/responses/"+second, wsKeyA)
	require.Equal(t, http.StatusOK, status, "%s", body)
	other := dialWS(t, g.srv, wsKeyA)
	evs = other.create(fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, second))
	require.Equal(t, "Your name is Ada.", textOf(t, evs))
	// Another tenant sees nothing of them.
	foreign := dialWS(t, g.srv, wsKeyB)
	foreign.createErr(fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, second), http.StatusNotFound, "previous_response_not_found")
}

// A response.create with "generate": false (OpenAI's prewarm, which Codex
// sends on its WebSocket when a session starts) prepares the response's
// state without calling the model: the response completes with no output,
// and the next turn continues from it with only its new input.
func TestWebSocketPrewarm(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	evs := ws.create(`{"type":"response.create","store":false,"generate":false,"instructions":"Be brief.","input":"My name is Ada"}`)
	require.Equal(t, "response.completed", last(evs).Type)
	require.Len(t, evs, 3, "response.created, response.in_progress, response.completed")
	require.Contains(t, string(last(evs).Data), `"output":[]`)
	require.Zero(t, g.fake.Calls(), "a prewarm does not call the model")
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, last(evs).Response.ID))
	require.Equal(t, "Your name is Ada.", textOf(t, evs))
	msgs := g.fake.Requests()[0].Messages
	require.Len(t, msgs, 2, "the prewarm's input, then the turn's; instructions do not carry over, as at OpenAI")
	require.Equal(t, "My name is Ada", msgs[0].Content.String())

	ws.createErr(`{"type":"response.create","generate":"no","input":"Hi"}`, http.StatusBadRequest, "")
	// "generate": true is every turn's default.
	evs = ws.create(`{"type":"response.create","generate":true,"input":"Hi"}`)
	require.Equal(t, "Hello from Lambent.", textOf(t, evs))
}

// store=false responses live in the connection's cache only: they continue
// on the same socket, never on another, and are never readable over HTTP.
func TestWebSocketStoreFalseContinuation(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	evs := ws.create(`{"type":"response.create","store":false,"input":"My name is Grace"}`)
	id := last(evs).Response.ID
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, id))
	require.Equal(t, "Your name is Grace.", textOf(t, evs))
	latest := last(evs).Response.ID

	// Not stored: HTTP does not find either response.
	for _, rid := range []string{id, latest} {
		status, _, body := g.doAuth(http.MethodGet, "/v1/responses/"+rid, wsKeyA)
		require.Equal(t, http.StatusNotFound, status, "%s", body)
	}
	// A new socket has no connection-local state: previous_response_not_found.
	other := dialWS(t, g.srv, wsKeyA)
	e := other.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, latest), http.StatusNotFound, "previous_response_not_found")
	require.Equal(t, "previous_response_id", *e.Error.Param)
	// The connection goes on after an error.
	evs = other.create(`{"type":"response.create","store":false,"input":"Hi"}`)
	require.Equal(t, "Hello from Lambent.", textOf(t, evs))
}

// A continuation that fails evicts the referenced response from the
// connection's cache: continuing from it again is previous_response_not_found.
func TestWebSocketEvictionAfterFailedContinuation(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	for _, tc := range []struct {
		name string
		// fail continues from id and must fail.
		fail func(ws *wsConn, id string)
	}{
		{"4xx before the response starts", func(ws *wsConn, id string) {
			ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":[{"type":"function_call_output","call_id":"call_nope","output":"x"}]}`, id),
				http.StatusBadRequest, "")
		}},
		{"4xx of the message itself", func(ws *wsConn, id string) {
			ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Hi","temperature":9}`, id),
				http.StatusBadRequest, "")
		}},
		{"HTTP transport field", func(ws *wsConn, id string) {
			ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Hi","background":true}`, id),
				http.StatusBadRequest, "unsupported_parameter")
		}},
		{"provider's 4xx", func(ws *wsConn, id string) {
			ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Please fail"}`, id),
				http.StatusBadRequest, "")
		}},
		{"response.failed", func(ws *wsConn, id string) {
			evs := ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Please cut"}`, id))
			require.Equal(t, "response.failed", last(evs).Type)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := dialWS(t, g.srv, wsKeyA)
			evs := ws.create(`{"type":"response.create","store":false,"input":"My name is Linus"}`)
			id := last(evs).Response.ID
			tc.fail(ws, id)
			ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, id), http.StatusNotFound, "previous_response_not_found")
		})
	}
}

// Several response.create messages sent at once are processed one after
// the other: each response's events end before the next begins, each with
// its own sequence numbers from 0.
func TestWebSocketSequentialCreates(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	const n = 4
	for i := range n {
		ws.send(fmt.Sprintf(`{"type":"response.create","store":false,"input":"Message %d"}`, i))
	}
	ids := map[string]bool{}
	for range n {
		evs, e := ws.turn()
		require.Nil(t, e)
		checkEvents(t, evs)
		require.Equal(t, int64(0), evs[0].Seq)
		require.Equal(t, "response.created", evs[0].Type)
		require.Equal(t, "response.completed", last(evs).Type)
		ids[last(evs).Response.ID] = true
	}
	require.Len(t, ids, n)
	// The model saw each request on its own: never two in flight.
	require.Equal(t, n, g.fake.Calls())
}

// The events of a WebSocket response are the SSE events: the same
// objects in the same order with the same sequence numbers (ids and times
// aside).
func TestWebSocketEventsMatchSSE(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	body := `"input":"Please calculate","tools":[{"type":"lambent:calculator"}],"store":false`
	ws := dialWS(t, g.srv, wsKeyA)
	wsEvs := ws.create(`{"type":"response.create",` + body + `}`)

	req, err := http.NewRequest(http.MethodPost, g.srv.URL+"/v1/responses", strings.NewReader(`{"stream":true,`+body+`}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+wsKeyA)
	req.Header.Set("Content-Type", "application/json")
	res, err := g.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	sseEvs, done, err := ssecheck.Parse(res.Body)
	require.NoError(t, err)
	require.True(t, done)

	require.Len(t, wsEvs, len(sseEvs))
	for i := range sseEvs {
		require.Equal(t, sseEvs[i].Name, wsEvs[i].Type)
		require.Equal(t, sseEvs[i].Seq, wsEvs[i].Seq)
		require.JSONEq(t, normalize(sseEvs[i].Data), normalize(wsEvs[i].Data), "event %d", i)
	}
	require.Equal(t, "Result: 391", textOf(t, wsEvs))
}

var (
	idPattern   = regexp.MustCompile(`"[a-z]+_[0-9a-f]{48}(_[0-9a-f]{12})?"`)
	timePattern = regexp.MustCompile(`"(created_at|completed_at|duration_ms|model_ms|tool_ms)":\d+`)
	// stampPattern matches lambent.timing's times.
	stampPattern = regexp.MustCompile(`"(started_at|ended_at)":"[^"]*"`)
)

// normalize blanks the ids and times of an event's JSON.
func normalize(data []byte) string {
	s := idPattern.ReplaceAllString(string(data), `"ID"`)
	s = stampPattern.ReplaceAllString(s, `"$1":""`)
	return timePattern.ReplaceAllString(s, `"$1":0`)
}

// Tool loops: a hosted tool runs on the server within the turn; a client
// tool pauses the response, and the client continues with its output.
func TestWebSocketToolLoops(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	ws := dialWS(t, g.srv, wsKeyA)
	evs := ws.create(`{"type":"response.create","store":false,"input":"Please calculate 17*23","tools":[{"type":"lambent:calculator"}]}`)
	require.Equal(t, "Result: 391", textOf(t, evs))

	weather := `{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}`
	evs = ws.create(`{"type":"response.create","store":false,"input":"What is the weather in Rome?","tools":[` + weather + `]}`)
	var call struct {
		Item struct{ Type, CallID, Name, Arguments string } `json:"item"`
	}
	for _, ev := range evs {
		if ev.Type == "response.output_item.done" {
			require.NoError(t, json.Unmarshal(ev.Data, &call))
		}
	}
	require.Equal(t, "function_call", call.Item.Type)
	require.Equal(t, "get_weather", call.Item.Name)
	callID := callIDOf(t, evs)
	id := last(evs).Response.ID
	evs = ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"tools":[%s],"input":[{"type":"function_call_output","call_id":%q,"output":"sunny in Rome"}]}`, id, weather, callID))
	require.Equal(t, "Result: sunny in Rome", textOf(t, evs))
}

func callIDOf(t *testing.T, evs []ssecheck.Event) string {
	t.Helper()
	for _, ev := range evs {
		var d struct {
			Item struct {
				Type   string `json:"type"`
				CallID string `json:"call_id"`
			} `json:"item"`
		}
		if ev.Type == "response.output_item.done" && json.Unmarshal(ev.Data, &d) == nil && d.Item.Type == "function_call" {
			return d.Item.CallID
		}
	}
	t.Fatal("no function_call item")
	return ""
}

// Bad messages get an error envelope and the connection stays usable.
func TestWebSocketBadMessages(t *testing.T) {
	t.Parallel()
	g := newGateway(t, wsModel(nil), map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA, "LAMBENT_MAX_BODY": "4096"})
	ws := dialWS(t, g.srv, wsKeyA)
	for _, tc := range []struct {
		name   string
		binary bool
		msg    string
		status int
		code   string
		param  string
	}{
		{"binary", true, `{"type":"response.create","input":"hi"}`, 400, wsapi.CodeBinaryMessage, ""},
		{"not JSON", false, `hello`, 400, "invalid_json", ""},
		{"JSON array", false, `[1,2]`, 400, "invalid_json", ""},
		{"no type", false, `{"input":"hi"}`, 400, wsapi.CodeUnknownMessageType, "type"},
		{"unknown type", false, `{"type":"response.cancel"}`, 400, wsapi.CodeUnknownMessageType, "type"},
		{"huge", false, `{"type":"response.create","input":"` + strings.Repeat("x", 8000) + `"}`, 413, "request_too_large", ""},
		{"stream false", false, `{"type":"response.create","input":"hi","stream":false}`, 400, "unsupported_parameter", "stream"},
		{"stream_options", false, `{"type":"response.create","input":"hi","stream_options":{"include_obfuscation":false}}`, 400, "unsupported_parameter", "stream_options"},
		{"background", false, `{"type":"response.create","input":"hi","background":true}`, 400, "unsupported_parameter", "background"},
		{"invalid body", false, `{"type":"response.create","input":"hi","temperature":"hot"}`, 400, "", "temperature"},
		{"unknown parameter", false, `{"type":"response.create","input":"hi","bogus":1}`, 400, "unknown_parameter", "bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := websocket.MessageText
			if tc.binary {
				typ = websocket.MessageBinary
			}
			require.NoError(t, ws.c.Write(t.Context(), typ, []byte(tc.msg)))
			// One message: the spec's error envelope, whose error.code is a
			// string (WebSocketErrorEvent).
			data := ws.read()
			require.NoError(t, validator(t).Validate("WebSocketErrorEvent", data), "%s", data)
			var e wsError
			require.NoError(t, json.Unmarshal(data, &e))
			require.Equal(t, "error", e.Type)
			require.Equal(t, tc.status, e.Status, "%+v", e)
			if tc.code != "" {
				require.Equal(t, tc.code, *e.Error.Code, "%+v", e)
			}
			if tc.param != "" {
				require.Equal(t, tc.param, *e.Error.Param, "%+v", e)
			}
			// Still usable.
			evs := ws.create(`{"type":"response.create","store":false,"input":"Hi"}`)
			require.Equal(t, "Hello from Lambent.", textOf(t, evs))
		})
	}
	// "stream": true only restates what a WebSocket does (the OpenAI Agents
	// SDK sends it): accepted.
	evs := ws.create(`{"type":"response.create","store":false,"input":"Hi","stream":true}`)
	require.Equal(t, "Hello from Lambent.", textOf(t, evs))
}

// The upgrade is authenticated like every other request: the API key in
// the Authorization header.
func TestWebSocketAuth(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	for _, h := range []http.Header{{}, {"Authorization": {"Bearer sk-wrong"}}} {
		_, res, err := websocket.Dial(t.Context(), wsURL(g.srv), &websocket.DialOptions{HTTPHeader: h})
		require.Error(t, err)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		wantErrorBody(t, res, "invalid_api_key")
	}
	dialWS(t, g.srv, wsKeyB).create(`{"type":"response.create","input":"Hi"}`)
}

// Client pings are answered while a response is in flight; the response
// is not disturbed.
func TestWebSocketPingDuringResponse(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	g := newWSGateway(t, block)
	ws := dialWS(t, g.srv, wsKeyA)
	ws.send(`{"type":"response.create","store":false,"input":"Be slow"}`)
	// The client's Ping needs a reader: read the events meanwhile.
	msgs := make(chan []byte, 64)
	readCtx, stopRead := context.WithCancel(t.Context())
	defer stopRead()
	go func() {
		defer close(msgs)
		for {
			_, data, err := ws.c.Read(readCtx)
			if err != nil {
				return
			}
			msgs <- data
		}
	}()
	for range 3 {
		require.NoError(t, ws.c.Ping(t.Context()))
	}
	close(block)
	var evs []ssecheck.Event
	for data := range msgs {
		ev, err := ssecheck.Decode(data)
		require.NoError(t, err)
		evs = append(evs, ev)
		if ev.Type == "response.completed" {
			break
		}
	}
	checkEvents(t, evs)
	require.Equal(t, "Slow answer.", textOf(t, evs))
}

// A shutdown whose grace ends before a response in flight does closes its
// connection at once: the response is cancelled and stored as far as it
// got (the process exits next: left running, it would be lost).
func TestWebSocketShutdownDeadline(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	g := newWSGateway(t, block)
	h, srv := g.ownHandler(t)
	ws := dialWS(t, srv, wsKeyA)
	ws.send(`{"type":"response.create","input":"Be slow"}`)
	ev, err := ssecheck.Decode(ws.read())
	require.NoError(t, err)
	require.Equal(t, "response.created", ev.Type)
	id := ev.Response.ID

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, h.Shutdown(ctx), context.DeadlineExceeded)
	rctx, rcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer rcancel()
	for {
		_, data, err := ws.c.Read(rctx)
		if err != nil {
			require.NoError(t, rctx.Err(), "the connection is still open after the shutdown")
			break
		}
		ev, derr := ssecheck.Decode(data)
		require.NoError(t, derr, "%s", data)
		require.NotEqual(t, "response.completed", ev.Type)
	}
	status, _, body := g.doAuth(http.MethodGet, "/v1/responses/"+id, wsKeyA)
	require.Equal(t, http.StatusOK, status, "the response in flight is stored: %s", body)
}

// On shutdown a connection finishes its response in flight, then closes
// with 1001 (going away); new upgrades get 503.
func TestWebSocketShutdown(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	g := newWSGateway(t, block)
	h, srv := g.ownHandler(t)
	ws := dialWS(t, srv, wsKeyA)
	idle := dialWS(t, srv, wsKeyA)
	ws.send(`{"type":"response.create","store":false,"input":"Be slow"}`)
	first := ws.read() // response.created: in flight
	ev, err := ssecheck.Decode(first)
	require.NoError(t, err)
	require.Equal(t, "response.created", ev.Type)

	done := make(chan error, 1)
	go func() { done <- h.Shutdown(context.Background()) }()
	// The idle connection closes at once.
	_, _, err = idle.c.Read(t.Context())
	require.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)
	close(block)
	evs, e := ws.turn()
	require.Nil(t, e)
	require.Equal(t, "response.completed", last(evs).Type)
	_, _, err = ws.c.Read(t.Context())
	require.Equal(t, websocket.StatusGoingAway, websocket.CloseStatus(err), "%v", err)
	require.NoError(t, <-done)

	_, res, err := websocket.Dial(t.Context(), wsURL(srv), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + wsKeyA}}})
	require.Error(t, err)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	wantErrorBody(t, res, "server_shutting_down")
}

// At MaxAge (60 minutes by default) the client gets
// websocket_connection_limit_reached and the connection closes.
func TestWebSocketConnectionLimit(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	h := httpapi.New(httpapi.Config{Service: g.app.Engine, WebSocket: wsapi.Config{MaxAge: time.Nanosecond}})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ws := dialWS(t, srv, "unused")
	var e wsError
	require.NoError(t, json.Unmarshal(ws.read(), &e))
	require.Equal(t, "error", e.Type)
	require.Equal(t, wsapi.CodeConnectionLimit, *e.Error.Code)
	require.Equal(t, http.StatusBadRequest, e.Status)
	_, _, err := ws.c.Read(t.Context())
	require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "%v", err)
}

// A plain GET of /v1/responses is still 405; POST still creates.
func TestWebSocketRouteKeepsHTTP(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	status, hdr, body := g.doAuth(http.MethodGet, "/v1/responses", wsKeyA)
	require.Equal(t, http.StatusMethodNotAllowed, status, "%s", body)
	require.Equal(t, "POST", hdr.Get("Allow"))
}

// wantErrorBody checks an HTTP error body's code.
func wantErrorBody(t *testing.T, res *http.Response, code string) {
	t.Helper()
	var b struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&b))
	require.Equal(t, code, b.Error.Code)
}

// doAuth sends a request with a bearer key.
func (g *gateway) doAuth(method, path, key string) (int, http.Header, []byte) {
	g.t.Helper()
	return g.doWith(method, path, "", "Authorization", "Bearer "+key)
}

// The OpenAI Agents SDK's Responses WebSocket transport works unchanged:
// create, continuation, store=false continuation on the same socket and
// its failure on a new one, eviction after a failed continuation,
// sequential runs on one socket, client and hosted tools, errors, auth,
// and its keep-alive pings.
func TestWebSocketAgentsSDK(t *testing.T) {
	dir := jsClients(t)
	g := newWSGateway(t, nil)
	type attempt struct {
		Text, Final, LastResponseID string
		Envelope                    *struct {
			Status      int
			Code, Param string
		}
		Thrown string
	}
	var got struct {
		Errors                            []string
		Create                            *struct{ Text, LastResponseID string }
		Previous, StoreFalse, AfterErrors *struct{ Text string }
		Streamed                          *struct{ Text, Final, Thrown string }
		Sequential                        []string
		Tools                             *struct {
			Text string
			Ran  []string
		}
		Hosted *struct {
			Text  string
			Items []string
		}
		FailedTurn, AfterEviction, Invalid, NewSocket, BadKey, OtherTenant *attempt
	}
	runJS(t, dir, "agents_ws.mjs", g.srv.URL+"/v1", &got, wsKeyA, wsKeyB)
	require.Empty(t, got.Errors)
	require.Equal(t, "Hello from Lambent.", got.Create.Text)
	require.Equal(t, "Your name is Ada.", got.Previous.Text)
	require.Equal(t, "Your name is Grace.", got.StoreFalse.Text)
	require.Equal(t, "Hello from Lambent.", got.Streamed.Text)
	require.Empty(t, got.Streamed.Thrown)
	require.Equal(t, []string{"Hello from Lambent.", "Hello from Lambent.", "Hello from Lambent."}, got.Sequential)
	require.Equal(t, "Result: sunny in Rome", got.Tools.Text)
	require.Equal(t, []string{"Rome"}, got.Tools.Ran)
	require.Equal(t, "Result: 391", got.Hosted.Text)
	require.NotContains(t, got.Hosted.Items, "function_call", "the SDK must not run a hosted tool")

	require.NotEmpty(t, got.FailedTurn.Thrown)
	for name, a := range map[string]*attempt{"afterEviction": got.AfterEviction, "newSocket": got.NewSocket, "otherTenant": got.OtherTenant} {
		require.NotNil(t, a.Envelope, name)
		require.Equal(t, "previous_response_not_found", a.Envelope.Code, name)
		require.Equal(t, http.StatusNotFound, a.Envelope.Status, name)
		require.NotEmpty(t, a.Thrown, name)
	}
	require.NotNil(t, got.Invalid.Envelope)
	require.Equal(t, http.StatusBadRequest, got.Invalid.Envelope.Status)
	require.Equal(t, "temperature", got.Invalid.Envelope.Param)
	require.Equal(t, "Hello from Lambent.", got.AfterErrors.Text)
	require.Nil(t, got.BadKey.Envelope)
	require.NotEmpty(t, got.BadKey.Thrown)
}

// A refused upgrade is answered in the OpenAI error shape, as every other
// refusal: a malformed handshake (the WebSocket library answers those in
// plain text), a cross-origin page, and a front door that cannot upgrade
// (a ResponseWriter without Hijack: Lambda's adapters) — the last one a
// 501 that says where WebSocket mode is served.
func TestWebSocketRefusedUpgradeIsAnOpenAIError(t *testing.T) {
	t.Parallel()
	g := newWSGateway(t, nil)
	auth := "Authorization: Bearer " + wsKeyA
	up := []string{auth, "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13"}
	for _, c := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no key", up, http.StatusBadRequest, "invalid_websocket_handshake"},
		{"bad version", append([]string{auth, "Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 8"}, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="), http.StatusBadRequest, "invalid_websocket_handshake"},
		{"foreign origin", append(up, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Origin: https://evil.example"), http.StatusForbidden, "invalid_websocket_handshake"},
		{"no hijack", append(up, "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="), http.StatusNotImplemented, "websocket_unsupported"},
	} {
		rec := serveRaw(t, g.srv.Config.Handler, http.MethodGet, "/v1/responses", "", c.header...)
		wantError(t, rec.Code, rec.Body.Bytes(), c.status, "", c.code)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"), c.name)
		require.Empty(t, rec.Header().Get("Sec-WebSocket-Accept"), c.name)
	}
}

// overlapModel answers like clientModel, but its call for "My name is
// Ann" waits until the call for "My name is Bob" has arrived: the two
// responses overlap, or the wait ends at a guard and waitedOut is set.
func overlapModel() (m *fakellm.Server, waitedOut *atomic.Bool) {
	bob, once, waitedOut := make(chan struct{}), sync.Once{}, &atomic.Bool{}
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		switch strings.ToLower(req.Messages[len(req.Messages)-1].Content.String()) {
		case "my name is bob":
			once.Do(func() { close(bob) })
		case "my name is ann":
			select {
			case <-bob:
			case <-time.After(20 * time.Second):
				waitedOut.Store(true)
			}
		}
		return clientTurn(req)
	}), waitedOut
}

// The npm openai SDK's ResponsesWS drives two lanes (stream_id) on one
// socket, in parallel: lane B's response runs while lane A's model call
// waits for it; interleaved store: false turns each continue their own
// chain, a new lane forks from another's, every message of a lane carries
// its stream_id (an error envelope too), a response.steer is answered with
// response.steer.failed on the target's lane, and a turn without
// stream_id gets none.
func TestWebSocketLanesOpenAINode(t *testing.T) {
	dir := jsClients(t)
	model, waitedOut := overlapModel()
	g := newGateway(t, model, map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA})
	lanesOpenAINode(t, dir, g.srv.URL+"/v1", waitedOut)
}

// lanesOpenAINode runs lanes_ws.mjs (the npm openai SDK's ResponsesWS) against
// the WebSocket API at baseURL and checks what its lanes got: the local
// server's and the AWS front door's tests expect the same. waitedOut
// is overlapModel's.
func lanesOpenAINode(t *testing.T, dir, baseURL string, waitedOut *atomic.Bool) {
	t.Helper()
	type terminal struct {
		Type, Text, ID, Code string
		StreamID             *string `json:"stream_id"`
		SequenceNumber       *int64  `json:"sequence_number"`
		Steer                *struct {
			Input              string `json:"input"`
			PreviousResponseID string `json:"previous_response_id"`
		}
	}
	var got struct {
		Errors    []string
		Terminals []terminal
		Counts    map[string]int
		SDKErrors int
	}
	runJS(t, dir, "lanes_ws.mjs", baseURL, &got, wsKeyA)
	require.Empty(t, got.Errors)
	require.False(t, waitedOut.Load(), "lane B's response did not reach the model while lane A's waited there")
	require.Len(t, got.Terminals, 8, "%+v", got.Terminals)
	lane := func(i int) string {
		require.NotNil(t, got.Terminals[i].StreamID, "terminal %d has no stream_id: %+v", i, got.Terminals[i])
		return *got.Terminals[i].StreamID
	}
	for i, want := range []struct{ lane, text string }{
		{"lane-a", "Hello from Lambent."}, {"lane-b", "Hello from Lambent."},
		{"lane-a", "Your name is Ann."}, {"lane-b", "Your name is Bob."},
		{"lane-c", "Your name is Ann."},
	} {
		require.Equal(t, "response.completed", got.Terminals[i].Type, "terminal %d: %+v", i, got.Terminals[i])
		require.Equal(t, want.lane, lane(i))
		require.Equal(t, want.text, got.Terminals[i].Text, "terminal %d", i)
	}
	require.Equal(t, "error", got.Terminals[5].Type)
	require.Equal(t, "previous_response_not_found", got.Terminals[5].Code)
	require.Equal(t, "lane-a", lane(5))
	require.Equal(t, 1, got.SDKErrors, "the SDK reports the error event")

	steer := got.Terminals[6]
	require.Equal(t, "response.steer.failed", steer.Type)
	require.Equal(t, "steering_not_supported", steer.Code)
	require.Equal(t, "lane-b", lane(6))
	require.Equal(t, "Be brief.", steer.Steer.Input)
	require.Equal(t, got.Terminals[3].ID, steer.Steer.PreviousResponseID)
	require.NotNil(t, steer.SequenceNumber)

	require.Equal(t, "response.completed", got.Terminals[7].Type)
	require.Nil(t, got.Terminals[7].StreamID)
	require.Positive(t, got.Counts[""], "the turn without stream_id")
	require.Positive(t, got.Counts["lane-c"])
}
