// Package mcptest runs MCP servers built with the official Go SDK for
// tests and measurements: one server with a fixed set of tools, served
// over streamable HTTP or HTTP+SSE on loopback, or over stdio (Serve, for
// a test binary). The HTTP servers record the headers and URL queries
// they receive and count the connections they accept. StartHostile runs a malicious server beside them (see
// Hostile): huge listings, duplicate names, endless pages, oversized and
// trickling replies.
//
// Tools:
//   - echo {text}: "echo: <text>";
//   - add {a, b}: the sum (annotated read-only);
//   - fail {}: an isError result;
//   - huge {bytes}: that many "x";
//   - sleep {ms}: answers after ms milliseconds (or when cancelled);
//   - work {ms, bytes} (only with Options.Work): answers after ms
//     milliseconds with bytes of text that compresses like a tool's
//     report (WorkOutput);
//   - wait {}: answers once Options.Barrier calls of it are in flight
//     (then the next that many make the next round);
//   - image {} (only with Options.Image): an image content (a PNG's
//     first bytes) beside the text "a screenshot";
//   - noop {}: "ok".
package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a server.
type Options struct {
	// Barrier is how many wait calls must be in flight before they answer
	// (default 1).
	Barrier int
	// JSONResponse makes the streamable HTTP server answer with
	// application/json instead of an event stream.
	JSONResponse bool
	// Work adds the work tool (measurements of agentic loops).
	Work bool
	// Image adds the image tool.
	Image bool
	// EndDelay sends the end of each event stream answering a request
	// that much after its last event, as a network may (the last chunk of
	// a chunked body in a packet of its own).
	EndDelay time.Duration

	// stop ends sleep and wait calls (the HTTP servers close it first).
	stop <-chan struct{}
}

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// AddArgs are add's arguments.
type AddArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// HugeArgs are huge's arguments.
type HugeArgs struct {
	Bytes int `json:"bytes"`
}

// SleepArgs are sleep's arguments.
type SleepArgs struct {
	MS int `json:"ms"`
}

// WorkArgs are work's arguments.
type WorkArgs struct {
	MS    int `json:"ms"`
	Bytes int `json:"bytes"`
}

// WorkOutput is work's answer of n bytes: numbered report lines, text that
// compresses about as well as a tool's JSON or prose.
func WorkOutput(n int) string {
	var b strings.Builder
	b.Grow(n + 80)
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "row %d: queue %s depth %d, latency p99 %d ms, status %s\n", i,
			[]string{"ingest", "billing", "search", "mail"}[i%4], (i*7919)%1000, 100+(i*31)%400, []string{"ok", "degraded"}[i%7/6])
	}
	return b.String()[:n]
}

// Empty are the arguments of tools that take none.
type Empty struct{}

// barrier releases its waiters once n are in, then starts a new round.
type barrier struct {
	mu      sync.Mutex
	n, in   int
	release chan struct{}
}

func (b *barrier) wait(ctx context.Context, stop <-chan struct{}) error {
	b.mu.Lock()
	b.in++
	ch := b.release
	if b.in == b.n {
		close(b.release)
		b.in, b.release = 0, make(chan struct{})
	}
	b.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errors.New("the server is closing")
	}
}

// pause waits ms milliseconds, unless the call is cancelled or the server
// closes.
func pause(ctx context.Context, ms int, stop <-chan struct{}) error {
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errors.New("the server is closing")
	}
}

func text(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// NewServer returns the SDK server with the tools above.
func NewServer(opts Options) *sdk.Server {
	n := opts.Barrier
	if n <= 0 {
		n = 1
	}
	b := &barrier{n: n, release: make(chan struct{})}
	s := sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echo the text."}, func(_ context.Context, _ *sdk.CallToolRequest, in EchoArgs) (*sdk.CallToolResult, any, error) {
		return text("echo: " + in.Text), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Add two numbers.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, in AddArgs) (*sdk.CallToolResult, any, error) {
		return text(strconv.Itoa(in.A + in.B)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."}, func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "huge", Description: "Return a long text."}, func(_ context.Context, _ *sdk.CallToolRequest, in HugeArgs) (*sdk.CallToolResult, any, error) {
		return text(strings.Repeat("x", in.Bytes)), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "sleep", Description: "Answer after a while."}, func(ctx context.Context, _ *sdk.CallToolRequest, in SleepArgs) (*sdk.CallToolResult, any, error) {
		if err := pause(ctx, in.MS, opts.stop); err != nil {
			return nil, nil, err
		}
		return text("slept"), nil, nil
	})
	if opts.Work {
		sdk.AddTool(s, &sdk.Tool{Name: "work", Description: "Answer after a while with a report."}, func(ctx context.Context, _ *sdk.CallToolRequest, in WorkArgs) (*sdk.CallToolResult, any, error) {
			if err := pause(ctx, in.MS, opts.stop); err != nil {
				return nil, nil, err
			}
			return text(WorkOutput(in.Bytes)), nil, nil
		})
	}
	if opts.Image {
		sdk.AddTool(s, &sdk.Tool{Name: "image", Description: "Take a screenshot."}, func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a screenshot"},
				&sdk.ImageContent{Data: []byte("\x89PNG\r\n\x1a\n"), MIMEType: "image/png"}}}, nil, nil
		})
	}
	sdk.AddTool(s, &sdk.Tool{Name: "wait", Description: "Answer once enough calls wait."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ Empty) (*sdk.CallToolResult, any, error) {
		if err := b.wait(ctx, opts.stop); err != nil {
			return nil, nil, err
		}
		return text("released"), nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "noop", Description: "Do nothing."}, func(context.Context, *sdk.CallToolRequest, Empty) (*sdk.CallToolResult, any, error) {
		return text("ok"), nil, nil
	})
	return s
}

// Server is a running HTTP MCP server.
type Server struct {
	*httptest.Server
	// Endpoint is the MCP endpoint's URL.
	Endpoint string

	// mcp is the MCP server, whose sessions Close closes.
	mcp *sdk.Server

	mu      sync.Mutex
	headers []http.Header
	queries []string
	stop    chan struct{}
	once    sync.Once
	opened  atomic.Int64
	// busy counts the requests being answered.
	busy sync.WaitGroup
}

// Close ends the calls still waiting, closes the sessions a client left
// open (a session whose DELETE never came keeps a goroutine reading its
// messages) and stops the server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
	s.Server.Close()
}

// Headers returns the headers of every request received so far.
func (s *Server) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// Connections returns how many connections the server has accepted.
func (s *Server) Connections() int { return int(s.opened.Load()) }

// Idle waits until the server has answered every request it received,
// the ends of their bodies sent.
func (s *Server) Idle() { s.busy.Wait() }

// Queries returns the URL query of every request received so far.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.queries...)
}

func (s *Server) record(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.busy.Add(1)
		defer s.busy.Done()
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.queries = append(s.queries, r.URL.RawQuery)
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// StartStreamable serves the tools over streamable HTTP at /mcp.
func StartStreamable(opts Options) *Server {
	s := &Server{stop: make(chan struct{})}
	opts.stop = s.stop
	srv := NewServer(opts)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{JSONResponse: opts.JSONResponse})
	return s.start(srv, endLater(h, opts.EndDelay))
}

// endLater delays the end of h's event streams answering a POST by d.
func endLater(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method == http.MethodPost && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			_ = http.NewResponseController(w).Flush()
			time.Sleep(d)
		}
	})
}

// StartSSE serves the tools over HTTP+SSE at /mcp.
func StartSSE(opts Options) *Server {
	s := &Server{stop: make(chan struct{})}
	opts.stop = s.stop
	srv := NewServer(opts)
	return s.start(srv, sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil))
}

// start serves h, the handler of mcp, at /mcp.
func (s *Server) start(mcp *sdk.Server, h http.Handler) *Server {
	s.mcp = mcp
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.record(h))
	s.Server = httptest.NewUnstartedServer(mux)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.opened.Add(1)
		}
	}
	s.Start()
	s.Endpoint = s.URL + "/mcp"
	return s
}

// Serve serves the tools over stdio until ctx ends or stdin closes (the
// main of a stdio test server).
func Serve(ctx context.Context, opts Options) error {
	return NewServer(opts).Run(ctx, &sdk.StdioTransport{})
}

// StdioServer builds the stdio test server (./stdioserver) once per test
// binary and returns the path of the binary; the OS temp directory holds
// it for the other tests.
var StdioServer = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lambent-mcp-stdio")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "stdioserver")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lambent/lambent/internal/testing/mcptest/stdioserver").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v: %s", err, out)
	}
	return bin, nil
})
