package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/app"
)

// maxLogLine bounds every log line of these tests: a few attributes of at
// most app.MaxLogAttrBytes each.
const maxLogLine = 16 << 10

// assertLogLinesBounded fails for each log line from the from-th on longer
// than maxLogLine, after checking that a line with msg was written.
func assertLogLinesBounded(t *testing.T, logs *logbuf.Buffer, from int, msg string) {
	t.Helper()
	assert.Contains(t, logs.String(), msg)
	for _, l := range logs.Lines()[from:] {
		if len(l) > maxLogLine {
			t.Errorf("a log line of %d bytes: %.200s…", len(l), l)
		}
	}
}

// A hostile request's text never makes a log line arbitrarily large: a
// WebSocket upgrade refused for a huge header (which the refusal quotes),
// an MCP server whose error is huge (the model gets 64 KiB of it).
func TestLogLinesBounded(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New(fakellm.Turn{Text: "no tools"})
	defer fake.Close()
	logs := &logbuf.Buffer{}
	g := newGateway(t, fake, map[string]string{"LAMBENT_TOOLS": "", "LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1"},
		app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "info"}}, logs), nil)

	t.Run("websocket upgrade", func(t *testing.T) {
		from := len(logs.Lines())
		req, err := http.NewRequest(http.MethodGet, g.url+"/v1/responses", nil)
		require.NoError(t, err)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", strings.Repeat("k", 512<<10))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assertLogLinesBounded(t, logs, from, "websocket upgrade refused")
	})

	t.Run("mcp error", func(t *testing.T) {
		from := len(logs.Lines())
		srv := mcptest.StartHostile(mcptest.Hostile{ErrorBytes: 512 << 10})
		defer srv.Close()
		resp, err := http.Post(g.url+"/v1/responses", "application/json", strings.NewReader(
			`{"input":"x","tools":[{"type":"mcp","server_label":"big","server_url":"`+srv.Endpoint+`","require_approval":"never"}]}`))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
		assertLogLinesBounded(t, logs, from, "mcp list tools failed")
	})
}
