// Package mcp connects Lambent to MCP servers with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): streamable HTTP (the default)
// and HTTP+SSE for URLs, stdio for operator-configured servers in local
// runs. It implements tools.MCPConnector: one lazily connected session per
// server and response, shared by that response's concurrent calls.
//
// A server named by a request is untrusted: its URL must be https (http
// only for hosts on the allow-list) and every connection, redirect and DNS
// answer passes the SSRF guard (package egress). Headers and the authorization
// token go only to the server's own origin (scheme, host and port), and
// never into errors or logs; nor does the URL's query.
// A server that is down, slow, answers an error, malformed JSON-RPC or a
// huge message gives the call an error the model can read: every
// operation is bounded by Config.Timeout and the caller's deadline, every
// reply by the session's tools.MCPBounds (a listing also by its tools and
// by maxListPages), every output by Config.MaxOutput.
package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/pkg/egress"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/tooldef"
	"github.com/lambent/lambent/pkg/tools"
)

// Defaults of zero Config fields.
const (
	// DefaultTimeout bounds one operation: connecting plus a listing or a
	// call.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxOutput is the most bytes of a call's output the model gets.
	DefaultMaxOutput = 64 << 10
)

// maxListPages bounds the pages of one listing: a server that names a next
// page forever fails its listing after that many.
const maxListPages = 16

// Implementation is how Lambent introduces itself to MCP servers.
var Implementation = sdk.Implementation{Name: "lambent", Version: "1"}

// Config configures a Connector. The zero value works.
type Config struct {
	// AllowHosts lets request-declared servers on these hosts through the
	// SSRF guard and over http (LAMBENT_FETCH_ALLOW_HOSTS; see
	// egress.New).
	AllowHosts []string
	// AllowStdio permits stdio servers (local runs; never on Lambda).
	AllowStdio bool
	// Timeout bounds each operation (default DefaultTimeout).
	Timeout time.Duration
	// MaxOutput bounds a call's output (default DefaultMaxOutput); longer
	// output is cut with a note.
	MaxOutput int
	// HTTPClient is the base of the HTTP clients (default: a fresh one).
	HTTPClient *http.Client
	// Logger receives the SDK's logs (default: none).
	Logger *slog.Logger
	// Propagate, when set, wraps the transport of every request to a
	// server: the gateway's trace context headers (telemetry.Transport).
	Propagate func(http.RoundTripper) http.RoundTripper
}

// Connector opens MCP sessions (tools.MCPConnector). It is safe for
// concurrent use and holds no per-response state.
type Connector struct {
	cfg     Config
	guard   *egress.Guard
	guarded *http.Client // request-declared servers
	trusted *http.Client // manifest servers
	client  *sdk.Client
}

// New returns a Connector for cfg.
func New(cfg Config) *Connector {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	c := &Connector{cfg: cfg, guard: egress.New(cfg.AllowHosts)}
	c.guarded = c.guard.Client(cfg.HTTPClient, true)
	c.trusted = cfg.HTTPClient
	if c.trusted == nil {
		c.trusted = &http.Client{Transport: egress.PooledTransport()}
	}
	c.client = sdk.NewClient(&Implementation, &sdk.ClientOptions{Logger: cfg.Logger})
	return c
}

// Check validates srv before anything connects: the transport is known and
// available here; an HTTP server has an absolute http(s) URL without
// credentials; an untrusted one uses https unless its host is allow-listed,
// and no literal address the SSRF guard refuses.
func (c *Connector) Check(srv *tools.MCPServer) error {
	switch srv.Transport {
	case tools.MCPStdio:
		if !c.cfg.AllowStdio {
			return errors.New("stdio MCP servers are not available in this deployment (they run only in local runs, never on Lambda)")
		}
		if len(srv.Command) == 0 {
			return errors.New("a stdio MCP server needs a command")
		}
		return nil
	case "", tools.MCPStreamableHTTP, tools.MCPSSE:
	default:
		return fmt.Errorf("unknown MCP transport %q", srv.Transport)
	}
	u, err := url.Parse(srv.URL)
	if err != nil {
		return errors.New("server_url is not a valid URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" || u.Host == "" {
		return errors.New("server_url must be an absolute https:// URL")
	}
	if u.User != nil {
		return errors.New("server_url must not hold credentials; send them in headers or authorization")
	}
	if srv.Trusted {
		return nil
	}
	if u.Scheme != "https" && !c.guard.AllowsHost(u) {
		return errors.New("server_url must use https")
	}
	return c.guard.CheckURL(u)
}

// Open returns a session with srv, bounded by b, that connects on first
// use.
func (c *Connector) Open(srv *tools.MCPServer, b tools.MCPBounds) tools.MCPSession {
	if b.Tools <= 0 {
		b.Tools = limits.DefaultMCPToolsPerServer
	}
	if b.ReplyBytes <= 0 {
		b.ReplyBytes = limits.DefaultMCPReplyBytes
	}
	return &session{c: c, srv: srv, bounds: b}
}

// session is one response's connection to one server.
type session struct {
	c      *Connector
	srv    *tools.MCPServer
	bounds tools.MCPBounds
	mu     sync.Mutex
	cs     *sdk.ClientSession
	// end ends the context the connection lives in (the SSE transport's
	// event stream is bound to it).
	end context.CancelFunc
	// over records a reply over the bound on the connection's own requests
	// (connecting, the SSE transport's event stream).
	over *overflow
}

// connect returns the open SDK session and what records its own replies
// over the bound, connecting when there is none. Concurrent callers wait
// for one connection.
func (s *session) connect(ctx context.Context) (*sdk.ClientSession, *overflow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cs != nil {
		return s.cs, s.over, nil
	}
	over := &overflow{}
	if err := s.c.Check(s.srv); err != nil {
		return nil, over, err
	}
	// The connection outlives this operation's context but not its
	// cancellation while connecting.
	life, end := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), overflowKey{}, over))
	stop := context.AfterFunc(ctx, end)
	cs, err := s.c.client.Connect(life, s.transport(), nil)
	if !stop() && err == nil {
		_ = cs.Close()
		err = ctx.Err()
	}
	if err != nil {
		end()
		return nil, over, fmt.Errorf("connect: %w", err)
	}
	s.cs, s.end, s.over = cs, end, over
	return cs, over, nil
}

// drop closes cs if it is still the session's, so that the next operation
// connects anew (after a transport failure).
func (s *session) drop(cs *sdk.ClientSession) {
	s.mu.Lock()
	if s.cs != cs {
		s.mu.Unlock()
		return
	}
	end := s.end
	s.cs, s.end, s.over = nil, nil, nil
	s.mu.Unlock()
	_ = closeSession(cs, end)
}

// closeSession closes cs, then ends the context its connection lives in.
func closeSession(cs *sdk.ClientSession, end context.CancelFunc) error {
	defer end()
	return cs.Close()
}

func (s *session) transport() sdk.Transport {
	// The SDK bounds each event of a stream too (the HTTP+SSE transport's
	// replies all come on one stream).
	max := int(min(s.bounds.ReplyBytes, int64(math.MaxInt32)))
	switch s.srv.Transport {
	case tools.MCPStdio:
		return &sdk.CommandTransport{Command: exec.Command(s.srv.Command[0], s.srv.Command[1:]...)}
	case tools.MCPSSE:
		return &sdk.SSEClientTransport{Endpoint: s.srv.URL, HTTPClient: s.httpClient(), MaxEventSize: max}
	}
	return &sdk.StreamableClientTransport{Endpoint: s.srv.URL, HTTPClient: s.httpClient(), MaxEventSize: max, DisableStandaloneSSE: true}
}

// httpClient is the connector's client for the server's trust, sending the
// server's headers and bounding each response body.
func (s *session) httpClient() *http.Client {
	base := s.c.guarded
	if s.srv.Trusted {
		base = s.c.trusted
	}
	hc := *base
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	u, _ := url.Parse(s.srv.URL)
	hc.Transport = &serverTransport{base: rt, origin: origin(u), srv: s.srv, max: s.bounds.ReplyBytes}
	if p := s.c.cfg.Propagate; p != nil {
		hc.Transport = p(hc.Transport)
	}
	return &hc
}

// op bounds an operation by the connector's timeout and turns its failure
// into an error the model can read, without the server's secrets and cut
// to Config.MaxOutput like an output (a server's error message is its
// text: the model reads it, the item stores it). A reply over the
// session's bound is reported as such, whatever the SDK made of the cut
// body.
func (s *session) op(ctx context.Context, what string, fn func(ctx context.Context, cs *sdk.ClientSession) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.c.cfg.Timeout)
	defer cancel()
	over := &overflow{}
	ctx = context.WithValue(ctx, overflowKey{}, over)
	cs, conn, err := s.connect(ctx)
	if err == nil {
		err = fn(ctx, cs)
		var wire *jsonrpc.Error
		if err != nil && !errors.As(err, &wire) && ctx.Err() == nil {
			// A failure other than an error the server answered or a
			// deadline (the SDK tells the server the call is cancelled)
			// leaves the connection in doubt.
			s.drop(cs)
		}
	}
	if err == nil {
		return nil
	}
	if o := cmp.Or(over.get(), conn.get()); o != nil {
		err = o
	} else if ctx.Err() != nil && errors.Is(err, ctx.Err()) || errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("no answer in time (%w)", context.DeadlineExceeded)
	}
	if s.srv.Trusted && isTransport(err) {
		// An operator's server: the client sees what failed, the logs how
		// (its URL without its query and fragment, and addresses).
		return &hiddenCause{text: fmt.Sprintf("MCP server %q: %s: the server could not be reached", s.srv.Label, what), cause: err,
			logged: s.redact(err.Error())}
	}
	return errors.New(truncate(fmt.Sprintf("MCP server %q: %s: %s", s.srv.Label, what, s.redact(err.Error())), s.c.cfg.MaxOutput))
}

// isTransport reports whether err failed on the way to the server (its
// text names the server's URL, host or address).
func isTransport(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// hiddenCause is an error whose text leaves its cause out; logged with
// slog, it shows the cause too, as logged has it (without the server's
// secrets).
type hiddenCause struct {
	text   string
	cause  error
	logged string
}

func (e *hiddenCause) Error() string        { return e.text }
func (e *hiddenCause) Unwrap() error        { return e.cause }
func (e *hiddenCause) LogValue() slog.Value { return slog.StringValue(e.text + ": " + e.logged) }

// redact removes the server URL's query (which may hold a key) and
// fragment from text, as tools.RedactMCPURL shows the URL: each as written
// in the URL and as url.URL.String writes it, plain and as %q writes it (a
// url.Error's text quotes its URL).
func (s *session) redact(text string) string {
	u, err := url.Parse(s.srv.URL)
	if err != nil {
		return text
	}
	var parts []string
	if i := strings.IndexAny(s.srv.URL, "?#"); i >= 0 {
		parts = append(parts, s.srv.URL[i:])
	}
	if i := strings.IndexAny(u.String(), "?#"); i >= 0 {
		parts = append(parts, u.String()[i:])
	}
	if u.RawQuery != "" {
		parts = append(parts, "?"+u.RawQuery)
	}
	if u.Fragment != "" {
		parts = append(parts, "#"+u.EscapedFragment(), "#"+u.Fragment)
	}
	shown := tools.RedactMCPURL(s.srv.URL)
	shown = shown[strings.IndexAny(shown+"?", "?"):]
	// Longest first, in one pass: a part never matches inside another's
	// replacement.
	slices.SortStableFunc(parts, func(a, b string) int { return len(b) - len(a) })
	var pairs []string
	for _, p := range parts {
		q := strconv.Quote(p)
		pairs = append(pairs, q[1:len(q)-1], shown, p, shown)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// ListTools lists the server's tools, following pagination within the
// session's bounds: more than bounds.Tools tools, more than
// bounds.ReplyBytes of names, descriptions, schemas and annotations, or
// more than maxListPages pages fail the listing.
func (s *session) ListTools(ctx context.Context) ([]tooldef.MCPTool, error) {
	var out []tooldef.MCPTool
	err := s.op(ctx, "list tools", func(ctx context.Context, cs *sdk.ClientSession) error {
		out = out[:0]
		var size int64
		params := &sdk.ListToolsParams{}
		for page := 1; ; page++ {
			res, err := cs.ListTools(ctx, params)
			if err != nil {
				return err
			}
			if len(out)+len(res.Tools) > s.bounds.Tools {
				return fmt.Errorf("the server lists more than %d tools (this gateway's limit)", s.bounds.Tools)
			}
			for _, t := range res.Tools {
				mt, err := listedTool(t)
				if err != nil {
					return err
				}
				if size += int64(len(mt.Name) + len(mt.Description) + len(mt.InputSchema) + len(mt.Annotations)); size > s.bounds.ReplyBytes {
					return errTooLarge(s.bounds.ReplyBytes)
				}
				out = append(out, mt)
			}
			if res.NextCursor == "" {
				return nil
			}
			if page == maxListPages {
				return fmt.Errorf("the server's listing goes on past %d pages (this gateway's limit)", maxListPages)
			}
			params = &sdk.ListToolsParams{Cursor: res.NextCursor}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// listedTool is a tool of a listing as Lambent keeps it.
func listedTool(t *sdk.Tool) (tooldef.MCPTool, error) {
	mt := tooldef.MCPTool{Name: t.Name, Description: t.Description, InputSchema: json.RawMessage(`{"type":"object"}`)}
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return mt, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		mt.InputSchema = b
	}
	if t.Annotations != nil {
		b, err := json.Marshal(t.Annotations)
		if err != nil {
			return mt, fmt.Errorf("tool %q: annotations: %w", t.Name, err)
		}
		mt.Annotations = b
	}
	return mt, nil
}

// CallTool calls the tool name. Output is the text of the result's content
// (other content as JSON, structured content when there is no other),
// bounded by Config.MaxOutput; isError makes it an is_error result.
func (s *session) CallTool(ctx context.Context, name, arguments string) (*tools.ToolResult, error) {
	if strings.TrimSpace(arguments) == "" {
		arguments = "{}"
	}
	if !json.Valid([]byte(arguments)) {
		return &tools.ToolResult{Output: "Error: the arguments are not valid JSON.", IsError: true}, nil
	}
	var res *sdk.CallToolResult
	err := s.op(ctx, "call "+name, func(ctx context.Context, cs *sdk.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: json.RawMessage(arguments)})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &tools.ToolResult{Output: truncate(render(res), s.c.cfg.MaxOutput), IsError: res.IsError}, nil
}

// Close ends the session (stdio: the server process).
func (s *session) Close() error {
	s.mu.Lock()
	cs, end := s.cs, s.end
	s.cs, s.end = nil, nil
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	return closeSession(cs, end)
}

// render is a call result as text: text content as is, other content as
// its JSON, one part a line; the structured content when there is nothing
// else.
func render(res *sdk.CallToolResult) string {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		if t, ok := c.(*sdk.TextContent); ok {
			b.WriteString(t.Text)
			continue
		}
		if j, err := c.MarshalJSON(); err == nil {
			b.Write(j)
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	return b.String()
}

// truncate cuts s to at most max bytes (on a rune boundary) with a note.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	note := fmt.Sprintf("\n[truncated: the tool returned %d bytes]", len(s))
	return textcut.Prefix(s, max-len(note)) + note
}

// origin is u's scheme, host and port (the scheme's default when absent):
// where a server's secrets may go.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// serverTransport sends the server's headers and token to its own origin
// only (not to another scheme, host or port a redirect leads to), and
// bounds the body of every reply to max bytes: a JSON body, or the event
// stream that answers one request (the HTTP+SSE transport's session
// stream, which carries every reply, per event).
type serverTransport struct {
	base   http.RoundTripper
	origin string
	srv    *tools.MCPServer
	max    int64
}

func (t *serverTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL) != t.origin && req.Header.Get("Referer") != "" {
		// A redirect elsewhere: http.Client set Referer to the URL before
		// it, whose query may hold the server's key.
		req = req.Clone(req.Context())
		req.Header.Del("Referer")
	}
	if origin(req.URL) == t.origin && (len(t.srv.Headers) > 0 || t.srv.Authorization != "") {
		req = req.Clone(req.Context())
		for k, v := range t.srv.Headers {
			req.Header.Set(k, v)
		}
		if token := t.srv.Authorization; token != "" {
			if len(token) < 7 || !strings.EqualFold(token[:7], "bearer ") {
				token = "Bearer " + token
			}
			req.Header.Set("Authorization", token)
		}
	}
	ctx, arrived, release := outlive(req.Context())
	cancel := release
	if req.Method == http.MethodDelete {
		// Closing the session: a server may hold the DELETE until its
		// calls end; the response does not wait for that.
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, closeGrace)
		cancel = func() { stop(); release() }
	}
	req = req.WithContext(ctx)
	res, err := t.base.RoundTrip(req)
	if err != nil {
		cancel()
		return nil, err
	}
	arrived()
	over, _ := req.Context().Value(overflowKey{}).(*overflow)
	if t.srv.Transport == tools.MCPSSE && req.Method == http.MethodGet {
		res.Body = &limitedBody{r: res.Body, c: res.Body, max: t.max, perEvent: true, done: cancel, over: over}
		return res, nil
	}
	res.Body = &limitedBody{r: io.LimitReader(res.Body, t.max+1), c: res.Body, max: t.max, done: cancel, over: over,
		drain: res.StatusCode/100 != 2}
	return res, nil
}

// closeGrace bounds how long closing a session waits on the server.
const closeGrace = time.Second

// replyEndWait bounds how long a reply's end is still read once the call
// it answers has ended.
const replyEndWait = 200 * time.Millisecond

// outlive returns the context of a request made in parent: it ends with
// parent before the response arrives (marked by arrived), and
// replyEndWait after parent once it has (cancel releases it). The SDK
// reads an event stream answering a call to its end after the call's
// answer, but the call returns with that answer and its operation's
// context ends at once: ending the request then, before the chunked body's
// last chunk arrived (over a network, often in a packet of its own), made
// net/http close the connection, and the next call dialed again.
func outlive(parent context.Context) (ctx context.Context, arrived func(), cancel context.CancelFunc) {
	ctx, end := context.WithCancel(context.WithoutCancel(parent))
	var got atomic.Bool
	stop := context.AfterFunc(parent, func() {
		if got.Load() {
			time.AfterFunc(replyEndWait, end)
			return
		}
		end()
	})
	return ctx, func() { got.Store(true) }, func() { stop(); end() }
}

// errTooLarge is the error of a reply over max bytes.
func errTooLarge(max int64) error {
	return errors.New("the server's reply exceeds " + strconv.FormatInt(max, 10) + " bytes (this gateway's limit)")
}

// overflow records, for one operation or connection (a context value of
// its requests), that a reply went over the bound: the operation reports
// that, not what the SDK made of the cut body.
type overflow struct{ err atomic.Pointer[error] }

type overflowKey struct{}

// set records err (the first one only).
func (o *overflow) set(err error) {
	if o != nil {
		o.err.CompareAndSwap(nil, &err)
	}
}

// get is the recorded error, nil when none (or o is nil).
func (o *overflow) get() error {
	if o == nil {
		return nil
	}
	if err := o.err.Load(); err != nil {
		return *err
	}
	return nil
}

// limitedBody fails a read past max bytes, or with perEvent past max bytes
// of one server-sent event (a stream of many replies), recording it in
// over, and calls done when closed. An error answer's (drain) is drained
// when closed: the SDK closes some unread (a 503), and its connection
// would close.
type limitedBody struct {
	r        io.Reader
	c        io.ReadCloser
	n        int64
	max      int64
	perEvent bool
	sse      sseCounter
	done     context.CancelFunc
	over     *overflow
	drain    bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if b.perEvent {
		b.n = b.sse.count(p[:n], b.n)
	} else {
		b.n += int64(n)
	}
	if b.n > b.max {
		err := errTooLarge(b.max)
		b.over.set(err)
		return 0, err
	}
	return n, err
}

// sseCounter follows the lines of an event stream to count the bytes of
// its current event, line ends included, as the SDK counts them (an event
// ends at a blank line; a line at CR, LF or CRLF). It never counts fewer
// than the SDK, so the bound trips here first, with a clear error.
type sseCounter struct {
	line   int64
	lastCR bool
}

// count returns the bytes of the current event after p, given n before.
func (c *sseCounter) count(p []byte, n int64) int64 {
	for _, ch := range p {
		n++
		switch {
		case ch == '\n' && c.lastCR:
			c.lastCR = false
		case ch == '\r' || ch == '\n':
			c.lastCR = ch == '\r'
			if c.line == 0 {
				n = 0
			}
			c.line = 0
		default:
			c.lastCR = false
			c.line++
		}
	}
	return n
}

func (b *limitedBody) Close() error {
	defer b.done()
	if b.drain {
		return egress.DrainClose(b.c)
	}
	return b.c.Close()
}
