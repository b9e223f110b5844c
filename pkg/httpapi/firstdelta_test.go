package httpapi_test

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider/openai"
	"github.com/lambent/lambent/pkg/store"
)

// connWrites records what a server writes to its connections, one entry a
// Write (a write syscall: net/http buffers what goes to a connection and
// writes it when it flushes).
type connWrites struct {
	mu     sync.Mutex
	writes [][]byte
}

type countingListener struct {
	net.Listener
	w *connWrites
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, w: l.w}, nil
}

type countingConn struct {
	net.Conn
	w *connWrites
}

func (c countingConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.writes = append(c.w.writes, bytes.Clone(p))
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

// The first text delta reaches the client in the stream's first write to
// the connection, with the status line, the SSE headers and every event
// before it (response.created, response.in_progress, output_item.added,
// content_part.added): one write syscall and one flush before the first
// token, none for the headers or the events before it on their own. The
// flush delay is longer than the test, so that how fast the fake model
// answers does not matter.
func TestSSEFirstDeltaInTheFirstWrite(t *testing.T) {
	t.Parallel()
	fake := fakellm.New(fakellm.Turn{Text: "one two three"})
	t.Cleanup(fake.Close)
	p := openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: fake.Client()})
	e, err := engine.New(engine.Config{Provider: p, Store: store.NewMemory(store.MemoryConfig{}), DefaultModel: "test-model", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h := httpapi.New(httpapi.Config{Service: e, Logger: slog.New(slog.DiscardHandler), Pacing: pacing.Config{FlushDelay: time.Hour}})
	cw := &connWrites{}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = countingListener{Listener: srv.Listener, w: cw}
	srv.Start()
	t.Cleanup(srv.Close)

	res, err := srv.Client().Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(`{"input":"count","stream":true}`))
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), "data: [DONE]")

	cw.mu.Lock()
	defer cw.mu.Unlock()
	require.NotEmpty(t, cw.writes)
	first := string(cw.writes[0])
	require.True(t, strings.HasPrefix(first, "HTTP/1.1 200 OK\r\n"), "the first write starts with the status line: %.80q", first)
	for _, h := range []string{"Content-Type: text/event-stream; charset=utf-8", "Cache-Control: no-cache", "X-Accel-Buffering: no"} {
		require.Contains(t, first, "\r\n"+h+"\r\n", "the stream's headers")
	}
	at := 0
	for _, ev := range []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"} {
		i := strings.Index(first[at:], "event: "+ev+"\n")
		require.GreaterOrEqual(t, i, 0, "the first write holds %s (after the events before it): %q", ev, first)
		at += i
	}
}
