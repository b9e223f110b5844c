package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/app"
)

var requestIDRe = regexp.MustCompile(`^req_[0-9a-f]{32}$`)

// logBuffer keeps JSON log lines.
type logBuffer struct{ logbuf.Buffer }

// records are the log records that match.
func (l *logBuffer) records(t *testing.T, match func(map[string]any) bool) []map[string]any {
	t.Helper()
	all, err := l.Records()
	require.NoError(t, err)
	var out []map[string]any
	for _, m := range all {
		if match(m) {
			out = append(out, m)
		}
	}
	return out
}

// messages are the messages of the log records of request id.
func (l *logBuffer) messages(t *testing.T, id string) []string {
	t.Helper()
	var out []string
	for _, r := range l.records(t, func(m map[string]any) bool { return m["request_id"] == id }) {
		out = append(out, r["msg"].(string))
	}
	return out
}

// loggedGateway is newGateway at log level debug, its logs kept.
func loggedGateway(t *testing.T, fake *fakellm.Server, env map[string]string) (*httptest.Server, *logBuffer) {
	t.Helper()
	t.Cleanup(fake.Close)
	vars := map[string]string{"LAMBENT_PROVIDER_URL": fake.URL, "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_STORE": "memory", "LAMBENT_LOG_LEVEL": "debug"}
	for k, v := range env {
		vars[k] = v
	}
	getenv := func(k string) string { return vars[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, getenv))
	logs := &logBuffer{}
	a, err := app.Build(context.Background(), cfg, app.Logger(cfg, logs), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	return srv, logs
}

// Every reply carries its own x-request-id (OpenAI's shape: req_ and 32
// hex digits), whatever the route and the outcome; a client's own
// X-Request-Id is not taken (ids are the gateway's, never a client's
// choice).
func TestEveryReplyCarriesARequestID(t *testing.T) {
	t.Parallel()
	srv, logs := loggedGateway(t, fakellm.New(fakellm.Turn{Text: "one"}, fakellm.Turn{Text: "two"}), map[string]string{"LAMBENT_MAX_BODY": "1024"})
	seen := map[string]bool{}
	for _, c := range []struct {
		method, path, ctype, body string
		status                    int
	}{
		{"GET", "/healthz", "", "", 200},
		{"POST", "/v1/responses", "application/json", `{"input":"hi"}`, 200},
		{"POST", "/v1/responses", "application/json", `{"input":"hi","stream":true}`, 200},
		{"POST", "/v1/responses", "application/json", `{"input":"hi","temperature":"hot"}`, 400},
		{"POST", "/v1/responses", "text/plain", `hi`, 415},
		{"POST", "/v1/responses", "application/json", `{"input":"` + strings.Repeat("x", 2048) + `"}`, 413},
		{"GET", "/v1/responses/resp_missing", "", "", 404},
		{"PUT", "/v1/responses", "", "", 405},
		{"GET", "/v2/nothing", "", "", 404},
	} {
		req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		require.NoError(t, err)
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		req.Header.Set("X-Request-Id", "req_mine")
		res, err := srv.Client().Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		require.Equal(t, c.status, res.StatusCode, "%s %s", c.method, c.path)
		id := res.Header.Get("X-Request-Id")
		require.Regexp(t, requestIDRe, id, "%s %s", c.method, c.path)
		require.False(t, seen[id], "ids are unique")
		seen[id] = true
	}

	// The log lines of a request repeat its id: the engine's too.
	res, err := srv.Client().Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"hi"}`))
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Contains(t, logs.messages(t, res.Header.Get("X-Request-Id")), "response done")
}

// The official SDKs surface the id: openai-go through the raw response
// (option.WithResponseInto, and the error's Response), the npm SDK as
// _request_id and requestID.
func TestSDKsSeeTheRequestID(t *testing.T) {
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "hi"}, fakellm.Turn{Text: "hi"}), nil)
	var raw *http.Response
	_, err := g.client.Responses.New(t.Context(), responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}},
		option.WithResponseInto(&raw))
	require.NoError(t, err)
	assert.Regexp(t, requestIDRe, raw.Header.Get("x-request-id"))
	_, err = g.client.Responses.Get(t.Context(), "resp_missing", responses.ResponseGetParams{})
	apiErr := wantAPIError(t, err, http.StatusNotFound)
	assert.Regexp(t, requestIDRe, apiErr.Response.Header.Get("x-request-id"))

	dir := jsClients(t)
	var got struct {
		Created, Failed string
		Status          int
	}
	runJS(t, dir, "npm_request_id.mjs", g.srv.URL+"/v1", &got)
	assert.Regexp(t, requestIDRe, got.Created)
	assert.Regexp(t, requestIDRe, got.Failed)
	assert.Equal(t, http.StatusNotFound, got.Status)
}

// On a WebSocket every message gets its own request id: its error
// envelope carries it (request_id), and so do its log lines.
func TestWebSocketMessagesHaveRequestIDs(t *testing.T) {
	t.Parallel()
	srv, logs := loggedGateway(t, wsModel(nil), nil)
	c, res, err := websocket.Dial(t.Context(), wsURL(srv), nil)
	require.NoError(t, err)
	defer func() { _ = c.CloseNow() }()
	upgrade := res.Header.Get("X-Request-Id")
	require.Regexp(t, requestIDRe, upgrade)
	ws := &wsConn{t: t, c: c}
	var ids []string
	for range 2 {
		ws.send(`{"type":"response.create","previous_response_id":"resp_gone","input":"hi"}`)
		var env struct {
			Type      string `json:"type"`
			RequestID string `json:"request_id"`
		}
		require.NoError(t, json.Unmarshal(ws.read(), &env))
		require.Equal(t, "error", env.Type)
		require.Regexp(t, requestIDRe, env.RequestID)
		ids = append(ids, env.RequestID)
	}
	assert.NotEqual(t, ids[0], ids[1])
	assert.NotContains(t, ids, upgrade)
	// A message that runs logs under its id ("response done" is logged
	// before the terminal event is sent).
	ws.send(`{"type":"response.create","input":"hi"}`)
	evs, e := ws.turn()
	require.Nil(t, e)
	require.NotEmpty(t, evs)
	done := logs.records(t, func(m map[string]any) bool { return m["msg"] == "response done" })
	require.Len(t, done, 1)
	id, _ := done[0]["request_id"].(string)
	assert.Regexp(t, requestIDRe, id)
	assert.NotContains(t, append(ids, upgrade), id)
}
