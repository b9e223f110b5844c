package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/conncount"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loopback is a connector that lets request-declared servers reach the
// test servers on 127.0.0.1.
func loopback(mut ...func(*Config)) *Connector {
	cfg := Config{AllowHosts: []string{"127.0.0.1"}, AllowStdio: true}
	for _, m := range mut {
		m(&cfg)
	}
	return New(cfg)
}

func server(label, url string) *tools.MCPServer {
	return &tools.MCPServer{Label: label, URL: url, Transport: tools.MCPStreamableHTTP}
}

func stdioBinary(t *testing.T) string {
	t.Helper()
	bin, err := mcptest.StdioServer()
	require.NoError(t, err)
	return bin
}

// Every transport lists the tools with their schemas and annotations and
// runs calls; a tool's isError is an is_error result.
func TestTransports(t *testing.T) {
	t.Parallel()
	streamable := mcptest.StartStreamable(mcptest.Options{})
	defer streamable.Close()
	sse := mcptest.StartSSE(mcptest.Options{})
	defer sse.Close()
	servers := map[string]*tools.MCPServer{
		"streamable": server("s", streamable.Endpoint),
		"sse":        {Label: "s", URL: sse.Endpoint, Transport: tools.MCPSSE},
		"stdio":      {Label: "s", Transport: tools.MCPStdio, Command: []string{stdioBinary(t)}, Trusted: true},
	}
	c := loopback()
	for name, srv := range servers {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, c.Check(srv))
			s := c.Open(srv, tools.MCPBounds{})
			defer func() { require.NoError(t, s.Close()) }()
			ctx := context.Background()
			list, err := s.ListTools(ctx)
			require.NoError(t, err)
			names := make([]string, len(list))
			for i, tl := range list {
				names[i] = tl.Name
			}
			assert.ElementsMatch(t, []string{"echo", "add", "fail", "huge", "sleep", "wait", "noop"}, names)
			for _, tl := range list {
				switch tl.Name {
				case "echo":
					assert.Equal(t, "Echo the text.", tl.Description)
					var schema struct {
						Type       string
						Properties map[string]json.RawMessage
					}
					require.NoError(t, json.Unmarshal(tl.InputSchema, &schema))
					assert.Equal(t, "object", schema.Type)
					assert.Contains(t, schema.Properties, "text")
				case "add":
					assert.JSONEq(t, `{"readOnlyHint":true,"idempotentHint":false}`, string(tl.Annotations))
				}
			}
			res, err := s.CallTool(ctx, "echo", `{"text":"hi"}`)
			require.NoError(t, err)
			assert.Equal(t, &tools.ToolResult{Output: "echo: hi"}, res)
			res, err = s.CallTool(ctx, "add", `{"a":2,"b":3}`)
			require.NoError(t, err)
			assert.Equal(t, "5", res.Output)
			res, err = s.CallTool(ctx, "fail", "")
			require.NoError(t, err)
			assert.Equal(t, &tools.ToolResult{Output: "the tool failed on purpose", IsError: true}, res)
		})
	}
}

// Concurrent calls of one response share one connection; a barrier proves
// they run at the same time.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	const n = 16
	srv := mcptest.StartStreamable(mcptest.Options{Barrier: n})
	defer srv.Close()
	s := loopback().Open(server("s", srv.Endpoint), tools.MCPBounds{})
	defer s.Close()
	var wg sync.WaitGroup
	outs := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			res, err := s.CallTool(context.Background(), "wait", "{}")
			errs[i] = err
			if err == nil {
				outs[i] = res.Output
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		assert.Equal(t, "released", outs[i])
	}
	inits := 0
	for _, h := range srv.Headers() {
		if h.Get("Mcp-Session-Id") == "" {
			inits++
		}
	}
	assert.LessOrEqual(t, inits, 2, "one connection (initialize, maybe a discover probe) for every call")
}

// Headers and the token reach the server's host; errors never hold them.
func TestHeadersAndSecrets(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	spec := server("s", srv.Endpoint+"?key=query-secret")
	spec.Headers = map[string]string{"X-Api-Key": "header-secret"}
	spec.Authorization = "token-secret"
	s := loopback().Open(spec, tools.MCPBounds{})
	_, err := s.CallTool(context.Background(), "echo", `{"text":"x"}`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	hs := srv.Headers()
	require.NotEmpty(t, hs)
	for _, h := range hs {
		assert.Equal(t, "header-secret", h.Get("X-Api-Key"))
		assert.Equal(t, "Bearer token-secret", h.Get("Authorization"))
	}

	// A token given with its scheme is sent as is.
	spec.Authorization = "Bearer token-secret"
	s = loopback().Open(spec, tools.MCPBounds{})
	_, err = s.ListTools(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	hs = srv.Headers()
	assert.Equal(t, "Bearer token-secret", hs[len(hs)-1].Get("Authorization"))

	// The server goes away: the error names it without a secret.
	srv.Close()
	s = loopback().Open(spec, tools.MCPBounds{})
	defer s.Close()
	_, err = s.CallTool(context.Background(), "echo", `{"text":"x"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `MCP server "s"`)
	for _, secret := range []string{"query-secret", "header-secret", "token-secret"} {
		assert.NotContains(t, err.Error(), secret)
	}
}

// A redirect to another host does not carry the headers there.
func TestHeadersStayOnTheServersHost(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1), http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	spec := server("s", redirect.URL+"/mcp")
	spec.Headers = map[string]string{"X-Api-Key": "header-secret"}
	c := loopback(func(c *Config) { c.AllowHosts = []string{"127.0.0.1", "localhost"} })
	s := c.Open(spec, tools.MCPBounds{})
	defer s.Close()
	_, err := s.ListTools(context.Background())
	require.NoError(t, err)
	for _, h := range srv.Headers() {
		assert.Empty(t, h.Get("X-Api-Key"))
	}
}

// A redirect from the https server to plain http on the same host and
// port does not carry the headers nor the token there: secrets go only to
// the configured scheme, host and port.
func TestSecretsStayOnTheServersScheme(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewTLSServer(http.NotFoundHandler()) // its certificate and a client that trusts it
	defer front.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dual := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			http.Redirect(w, r, "http://"+r.Host+r.URL.RequestURI(), http.StatusTemporaryRedirect)
			return
		}
		proxy.ServeHTTP(w, r)
	})}
	go func() { _ = dual.Serve(&dualListener{Listener: ln, tls: front.TLS}) }()
	defer dual.Close()

	spec := server("s", "https://"+ln.Addr().String()+"/mcp")
	spec.Headers = map[string]string{"X-Api-Key": "header-secret"}
	spec.Authorization = "token-secret"
	c := loopback(func(c *Config) { c.HTTPClient = front.Client() })
	s := c.Open(spec, tools.MCPBounds{})
	defer s.Close()
	_, err = s.ListTools(context.Background())
	require.NoError(t, err)
	hs := srv.Headers()
	require.NotEmpty(t, hs, "the requests reached the server over plain http")
	for _, h := range hs {
		assert.Empty(t, h.Get("X-Api-Key"))
		assert.Empty(t, h.Get("Authorization"))
	}
}

// dualListener serves TLS and plain HTTP on one port: a connection whose
// first byte opens a TLS handshake is served over TLS.
type dualListener struct {
	net.Listener
	tls *tls.Config
}

func (l *dualListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	if err == nil && first[0] == 0x16 { // TLS handshake record
		return tls.Server(pc, l.tls), nil
	}
	return pc, nil
}

// peekedConn reads through the reader that peeked at it.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// Every kind of server failure is an error (or is_error result) the model
// can read; the connection recovers for the next call.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("down", func(t *testing.T) {
		srv := mcptest.StartStreamable(mcptest.Options{})
		srv.Close()
		s := loopback().Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		_, err := s.ListTools(ctx)
		require.ErrorContains(t, err, `MCP server "s": list tools: connect`)
	})
	t.Run("operator's server down", func(t *testing.T) {
		// The error reaches every tenant (mcp_list_tools.error, the
		// model): it names the server's label, not its URL nor address;
		// the log line has them.
		srv := mcptest.StartStreamable(mcptest.Options{})
		srv.Close()
		op := server("docs", srv.Endpoint)
		op.Trusted = true
		s := loopback().Open(op, tools.MCPBounds{})
		defer s.Close()
		_, err := s.ListTools(ctx)
		require.EqualError(t, err, `MCP server "docs": list tools: the server could not be reached`)
		var logged bytes.Buffer
		slog.New(slog.NewJSONHandler(&logged, nil)).Warn("mcp list tools failed", "err", err)
		host := strings.TrimPrefix(srv.Endpoint, "http://")
		host = host[:strings.IndexByte(host, '/')]
		assert.Contains(t, logged.String(), host)
	})
	t.Run("slow", func(t *testing.T) {
		srv := mcptest.StartStreamable(mcptest.Options{})
		defer srv.Close()
		s := loopback(func(c *Config) { c.Timeout = 200 * time.Millisecond }).Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		_, err := s.CallTool(ctx, "sleep", `{"ms":10000}`)
		require.ErrorContains(t, err, "no answer in time")
		res, err := s.CallTool(ctx, "echo", `{"text":"after"}`)
		require.NoError(t, err)
		assert.Equal(t, "echo: after", res.Output)
	})
	t.Run("caller deadline", func(t *testing.T) {
		srv := mcptest.StartStreamable(mcptest.Options{})
		defer srv.Close()
		s := loopback().Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		_, err := s.CallTool(cctx, "sleep", `{"ms":10000}`)
		require.ErrorContains(t, err, "no answer in time")
	})
	t.Run("unknown tool", func(t *testing.T) {
		srv := mcptest.StartStreamable(mcptest.Options{})
		defer srv.Close()
		s := loopback().Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		res, err := s.CallTool(ctx, "nope", `{}`)
		if err == nil {
			assert.True(t, res.IsError)
		} else {
			assert.Contains(t, err.Error(), "nope")
		}
		res, err = s.CallTool(ctx, "echo", `{"text":"still"}`)
		require.NoError(t, err)
		assert.Equal(t, "echo: still", res.Output)
	})
	t.Run("invalid arguments", func(t *testing.T) {
		s := loopback().Open(server("s", "https://unused.invalid/mcp"), tools.MCPBounds{})
		defer s.Close()
		res, err := s.CallTool(ctx, "echo", `{"text":`)
		require.NoError(t, err)
		assert.True(t, res.IsError)
	})
	for _, body := range []string{`{not json`, `{"jsonrpc":"2.0","id":1,"result":`, `"just a string"`, `<html>oops</html>`} {
		t.Run("malformed "+body, func(t *testing.T) {
			bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
			}))
			defer bad.Close()
			s := loopback().Open(server("s", bad.URL), tools.MCPBounds{})
			defer s.Close()
			_, err := s.ListTools(ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `MCP server "s"`)
		})
	}
	t.Run("huge message", func(t *testing.T) {
		for _, jsonResponse := range []bool{false, true} {
			srv := mcptest.StartStreamable(mcptest.Options{JSONResponse: jsonResponse})
			s := loopback().Open(server("s", srv.Endpoint), tools.MCPBounds{ReplyBytes: 1 << 20})
			_, err := s.CallTool(ctx, "huge", `{"bytes":2000000}`)
			require.Error(t, err, "json response %v", jsonResponse)
			res, err := s.CallTool(ctx, "echo", `{"text":"small"}`)
			require.NoError(t, err, "json response %v", jsonResponse)
			assert.Equal(t, "echo: small", res.Output)
			require.NoError(t, s.Close())
			srv.Close()
		}
	})
	t.Run("huge output", func(t *testing.T) {
		srv := mcptest.StartStreamable(mcptest.Options{})
		defer srv.Close()
		s := loopback(func(c *Config) { c.MaxOutput = 1000 }).Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		res, err := s.CallTool(ctx, "huge", `{"bytes":5000}`)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(res.Output), 1000)
		assert.True(t, strings.HasSuffix(res.Output, "[truncated: the tool returned 5000 bytes]"), res.Output)
	})
}

// A reply over the session's bound fails its operation, on both HTTP
// transports, and the session recovers for the next call.
func TestReplyBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, spec := range map[string]func(*mcptest.Server) *tools.MCPServer{
		"streamable": func(s *mcptest.Server) *tools.MCPServer { return server("s", s.Endpoint) },
		"sse": func(s *mcptest.Server) *tools.MCPServer {
			return &tools.MCPServer{Label: "s", URL: s.Endpoint, Transport: tools.MCPSSE}
		},
	} {
		t.Run(name, func(t *testing.T) {
			start := mcptest.StartStreamable
			if name == "sse" {
				start = mcptest.StartSSE
			}
			srv := start(mcptest.Options{})
			defer srv.Close()
			s := loopback().Open(spec(srv), tools.MCPBounds{ReplyBytes: 64 << 10})
			defer s.Close()
			_, err := s.CallTool(ctx, "huge", `{"bytes":100000}`)
			require.ErrorContains(t, err, `MCP server "s": call huge: the server's reply exceeds 65536 bytes (this gateway's limit)`)
			res, err := s.CallTool(ctx, "huge", `{"bytes":1000}`)
			require.NoError(t, err)
			assert.Len(t, res.Output, 1000)
		})
	}
}

// The event stream counter counts the bytes of the current event, line
// ends (LF, CR or CRLF) included, across reads.
func TestSSECounter(t *testing.T) {
	t.Parallel()
	for stream, want := range map[string]int64{
		"data: ab\n\ndata: c\n":        8,
		"data: ab\r\n\r\ndata: cd\r\n": 11, // the blank line's LF counts: never fewer than the SDK
		"data: ab\r\rdata: c":          7,
		"event: x\ndata: ab\n":         18,
		"data: ab\n\n":                 0,
	} {
		var c sseCounter
		var n int64
		for i := range len(stream) { // one byte a read
			n = c.count([]byte{stream[i]}, n)
		}
		assert.Equal(t, want, n, "%q", stream)
	}
}

// Secrets go to the server's origin: scheme, host and port, the scheme's
// default port when none is given.
func TestOrigin(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"https://example.com/mcp", "https://example.com:443/other"},
		{"https://Example.COM/mcp", "HTTPS://example.com/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/x?y"},
		{"https://[::1]:8443/mcp", "https://[::1]:8443/mcp"},
	}
	other := [][2]string{
		{"https://example.com/mcp", "http://example.com/mcp"},
		{"https://example.com/mcp", "http://example.com:443/mcp"},
		{"https://example.com/mcp", "https://example.com:8443/mcp"},
		{"https://example.com/mcp", "https://api.example.com/mcp"},
		{"http://127.0.0.1:8080/mcp", "https://127.0.0.1:8080/mcp"},
	}
	parse := func(s string) *url.URL {
		u, err := url.Parse(s)
		require.NoError(t, err)
		return u
	}
	for _, p := range same {
		assert.Equal(t, origin(parse(p[0])), origin(parse(p[1])), p)
	}
	for _, p := range other {
		assert.NotEqual(t, origin(parse(p[0])), origin(parse(p[1])), p)
	}
}

// Request-declared servers pass the SSRF guard and need https; manifest
// servers are trusted; stdio only where allowed.
func TestCheckAndSSRF(t *testing.T) {
	t.Parallel()
	strict := New(Config{})
	for url, want := range map[string]string{
		"http://example.com/mcp":            "must use https",
		"https://127.0.0.1/mcp":             "loopback",
		"https://169.254.169.254/mcp":       "metadata",
		"https://[::1]:8443/mcp":            "loopback",
		"https://10.1.2.3/mcp":              "private",
		"ftp://example.com/mcp":             "absolute https",
		"/relative":                         "absolute https",
		"https://user:pw@example.com/mcp":   "credentials",
		"https://example.com/mcp?key=value": "",
	} {
		err := strict.Check(server("s", url))
		if want == "" {
			assert.NoError(t, err, url)
		} else {
			assert.ErrorContains(t, err, want, url)
		}
	}
	// A host name that resolves to loopback is refused when dialed.
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	byName := server("s", strings.Replace(srv.Endpoint, "http://127.0.0.1", "https://localhost", 1))
	require.NoError(t, strict.Check(byName))
	s := strict.Open(byName, tools.MCPBounds{})
	_, err := s.ListTools(context.Background())
	require.ErrorContains(t, err, "not allowed")
	require.NoError(t, s.Close())

	// A redirect from an allowed server to a refused address is refused.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.Endpoint, http.StatusTemporaryRedirect)
	}))
	defer redirect.Close()
	onlyRedirect := New(Config{AllowHosts: []string{strings.TrimPrefix(redirect.URL, "http://")}})
	s = onlyRedirect.Open(server("s", redirect.URL+"/mcp"), tools.MCPBounds{})
	_, err = s.ListTools(context.Background())
	require.ErrorContains(t, err, "not allowed")
	require.NoError(t, s.Close())

	// The manifest's servers are trusted: http and loopback work.
	trusted := server("s", srv.Endpoint)
	trusted.Trusted = true
	require.NoError(t, strict.Check(trusted))
	s = strict.Open(trusted, tools.MCPBounds{})
	_, err = s.ListTools(context.Background())
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// stdio only where allowed (never on Lambda).
	require.ErrorContains(t, strict.Check(&tools.MCPServer{Label: "s", Transport: tools.MCPStdio, Command: []string{"x"}, Trusted: true}), "not available")
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", truncate("short", 10))
	s := truncate(strings.Repeat("é", 100), 60)
	assert.LessOrEqual(t, len(s), 60)
	assert.True(t, strings.HasPrefix(s, "é"))
	assert.Contains(t, s, "[truncated: the tool returned 200 bytes]")
}

// A turn's concurrent calls to one server leave their connections for the
// next turn's: two turns of 32 concurrent calls (a session each, as two
// responses) open about 32 connections to a request-declared server (the
// guarded client) and to a manifest's (the trusted one), not 32 and then
// 30 more (net/http's default pool keeps 2 a host; over the internet each
// is a TLS handshake). The server answers in JSON here (see
// TestSSERepliesReuseConnections for SSE replies).
func TestConcurrentCallsReuseConnections(t *testing.T) {
	t.Parallel()
	const n = 32
	for name, trusted := range map[string]bool{"guarded": false, "trusted": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := mcptest.StartStreamable(mcptest.Options{Barrier: n, JSONResponse: true})
			defer srv.Close()
			c := loopback()
			for range 2 {
				waitTurn(t, c.Open(&tools.MCPServer{Label: "s", URL: srv.Endpoint, Transport: tools.MCPStreamableHTTP, Trusted: trusted}, tools.MCPBounds{}), n)
			}
			t.Logf("2 turns of %d concurrent calls: %d connections", n, srv.Connections())
			assert.LessOrEqual(t, srv.Connections(), n+2, "2 turns of %d concurrent calls", n)
		})
	}
}

// A call answered with an event stream leaves its connection for the next
// call although the stream's end (the chunked body's last chunk) comes
// after the answer's event, as over a network: the call's end must not cut
// the SDK's reading of that end. Two turns of 8 concurrent calls (a
// session each; the second once the server has sent the first's ends, as
// a turn's model call takes longer than that) open 8 connections and 3
// for the first session's requests sent while the others' streams still
// end (its initialization, its close): 11; cutting the streams closed
// them, and the second turn dialed again (19-21).
func TestSSERepliesReuseConnections(t *testing.T) {
	t.Parallel()
	const n = 8
	srv := mcptest.StartStreamable(mcptest.Options{Barrier: n, EndDelay: 10 * time.Millisecond})
	defer srv.Close()
	c := loopback()
	for range 2 {
		waitTurn(t, c.Open(server("s", srv.Endpoint), tools.MCPBounds{}), n)
		srv.Idle()
	}
	t.Logf("2 turns of %d concurrent calls: %d connections", n, srv.Connections())
	assert.LessOrEqual(t, srv.Connections(), n+3, "2 turns of %d concurrent calls", n)
}

// waitTurn runs a turn of n concurrent calls of the wait tool in session s
// (a server's barrier of n answers them), then closes s.
func waitTurn(t *testing.T, s tools.MCPSession, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.CallTool(context.Background(), "wait", "{}") })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, s.Close())
}

// A server's error answer the SDK closes unread (a 503 is "transient" to
// it) is drained (up to egress.MaxDrain) before its body is closed, so
// its connection serves the next request: closed unread, net/http closed
// it and the next session dialed again.
func TestErrorAnswerKeepsConnection(t *testing.T) {
	t.Parallel()
	page := strings.Repeat("x", 16<<10)
	srv := conncount.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, page)
	}))
	c := loopback()
	defer c.guarded.CloseIdleConnections()
	for range 2 {
		s := c.Open(server("s", srv.URL+"/mcp"), tools.MCPBounds{})
		_, err := s.ListTools(t.Context())
		require.Error(t, err)
		_ = s.Close()
	}
	assert.Equal(t, 1, srv.Opened(), "connections of 2 sessions answered 503")
}
