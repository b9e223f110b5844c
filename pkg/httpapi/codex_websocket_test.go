package httpapi_test

// Codex over WebSocket mode: its provider entry with
// supports_websockets = true, against the gateway's GET /v1/responses
// upgrade, through a front that relays (and records) every message.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// wsFront sits before a gateway: it relays WebSocket connections message
// by message, recording each connection's messages both ways, and proxies
// every other request, recording it as "METHOD path".
type wsFront struct {
	srv *httptest.Server
	mu  sync.Mutex
	// http are the requests that were not upgrades.
	http []string
	// conns are the relayed connections, in the order they opened.
	conns []*wsRecord
}

// wsRecord is what went through one relayed connection.
type wsRecord struct {
	mu sync.Mutex
	// sent are the client's messages, got the gateway's.
	sent, got []map[string]any
}

// newWSFront is a front for the gateway at gatewayURL.
func newWSFront(t *testing.T, gatewayURL string) *wsFront {
	t.Helper()
	gw, err := url.Parse(gatewayURL)
	require.NoError(t, err)
	f := &wsFront{}
	proxy := httputil.NewSingleHostReverseProxy(gw)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			f.relay(w, r, "ws"+strings.TrimPrefix(gatewayURL, "http")+r.URL.RequestURI())
			return
		}
		f.mu.Lock()
		f.http = append(f.http, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// relay dials the gateway with the client's headers (a refused dial
// answers the client with the gateway's answer: its status, headers and
// body, of which the WebSocket library keeps 1 KiB), then accepts the
// client and copies messages both ways until either side closes.
func (f *wsFront) relay(w http.ResponseWriter, r *http.Request, target string) {
	h := http.Header{}
	for k, v := range r.Header {
		if !strings.HasPrefix(k, "Sec-Websocket-") && k != "Upgrade" && k != "Connection" {
			h[k] = v
		}
	}
	up, res, err := websocket.Dial(r.Context(), target, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if res == nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(res.StatusCode)
		_, _ = io.Copy(w, res.Body)
		return
	}
	down, err := websocket.Accept(w, r, nil)
	if err != nil {
		_ = up.CloseNow()
		return
	}
	rec := &wsRecord{}
	f.mu.Lock()
	f.conns = append(f.conns, rec)
	f.mu.Unlock()
	up.SetReadLimit(-1)
	down.SetReadLimit(-1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyWS(ctx, up, down, rec, &rec.got)
		cancel()
	}()
	copyWS(ctx, down, up, rec, &rec.sent)
	cancel()
	<-done
}

// copyWS copies messages from src to dst, recording each in *log, until
// either fails; then it closes dst with src's close status.
func copyWS(ctx context.Context, src, dst *websocket.Conn, rec *wsRecord, log *[]map[string]any) {
	for {
		typ, data, err := src.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				_ = dst.Close(ce.Code, ce.Reason)
			} else {
				_ = dst.CloseNow()
			}
			return
		}
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		rec.mu.Lock()
		*log = append(*log, m)
		rec.mu.Unlock()
		if err := dst.Write(ctx, typ, data); err != nil {
			_ = src.CloseNow()
			return
		}
	}
}

// requests are the requests the front proxied without an upgrade.
func (f *wsFront) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.http...)
}

// connections are the connections relayed so far.
func (f *wsFront) connections() []*wsRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*wsRecord(nil), f.conns...)
}

// creates are the client's response.create messages on the connection.
func (r *wsRecord) creates() []map[string]any { return r.ofType(false, "response.create") }

// errors are the error messages the gateway sent on the connection.
func (r *wsRecord) errors() []map[string]any { return r.ofType(true, "error") }

// ofType returns the messages of type typ the gateway sent (got) or the
// client sent.
func (r *wsRecord) ofType(got bool, typ string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := r.sent
	if got {
		msgs = r.got
	}
	var out []map[string]any
	for _, m := range msgs {
		if m["type"] == typ {
			out = append(out, m)
		}
	}
	return out
}

// responseIDs are the ids of the responses the gateway completed on the
// connection, in order.
func (r *wsRecord) responseIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for _, m := range r.got {
		if m["type"] == "response.completed" {
			ids = append(ids, m["response"].(map[string]any)["id"].(string))
		}
	}
	return ids
}

// inputTypes are the types of a response.create's input items.
func inputTypes(create map[string]any) []string {
	input, _ := create["input"].([]any)
	var types []string
	for _, it := range input {
		m, _ := it.(map[string]any)
		types = append(types, fmt.Sprint(m["type"]))
	}
	return types
}

// websockets turns WebSocket mode on in Codex's provider entry.
func (c *codexCLI) websockets() {
	c.t.Helper()
	path := filepath.Join(c.home, "config.toml")
	b, err := os.ReadFile(path)
	require.NoError(c.t, err)
	b = []byte(strings.Replace(string(b), "wire_api = \"responses\"\n", "wire_api = \"responses\"\nsupports_websockets = true\n", 1))
	require.NoError(c.t, os.WriteFile(path, b, 0o600))
}

// Codex with supports_websockets = true stays on the WebSocket: one
// connection per Codex process, no HTTP request. An answer; its
// exec_command tool loop, whose follow-up turn continues the call's
// response (store false) with previous_response_id and only the call's
// output on the same connection; `codex exec resume` of that thread, its
// whole history on a new connection; and, in `codex app-server`, a second
// user turn that continues the first on the same connection.
func TestCodexCLIOverWebSocket(t *testing.T) {
	t.Parallel()
	codex, front := wsCodex(t, fakellm.NewHandler(codexTurn), 0)

	t.Run("answer", func(t *testing.T) {
		evs := codex.exec("say hello")
		require.Equal(t, "Hello from Lambent.", answer(evs))
	})

	var thread string
	t.Run("tool loop", func(t *testing.T) {
		thread = threadID(codex.toolLoop())

		// A prewarm, the call's turn from it, the follow-up turn with the
		// call's output only.
		conns := front.connections()
		require.Len(t, conns, 2)
		creates, ids := conns[1].creates(), conns[1].responseIDs()
		require.Len(t, creates, 3)
		require.Len(t, ids, 3)
		require.Equal(t, false, creates[0]["generate"])
		for i, m := range creates {
			require.Equal(t, false, m["store"])
			if i > 0 {
				require.Equal(t, ids[i-1], m["previous_response_id"], "create %d", i)
			}
		}
		require.Equal(t, []string{"function_call_output"}, inputTypes(creates[2]))
	})

	t.Run("resume", func(t *testing.T) {
		require.NotEmpty(t, thread)
		evs := codex.exec("resume", thread, "what did the command print?")
		require.Equal(t, "Earlier: lambent-42", answer(evs))
	})

	t.Run("second turn", func(t *testing.T) {
		s := codex.session()
		require.Contains(t, s.turn("run the command"), "lambent-42")
		require.Equal(t, "Earlier: lambent-42", s.turn("what did the command print?"))
		// The second user turn continues the first's last response on the
		// same connection with its new message only.
		conns := front.connections()
		require.Len(t, conns, 4)
		creates, ids := conns[3].creates(), conns[3].responseIDs()
		require.Len(t, creates, 4)
		require.Len(t, ids, 4)
		require.Equal(t, ids[2], creates[3]["previous_response_id"])
		require.Equal(t, []string{"message"}, inputTypes(creates[3]))
	})

	require.Empty(t, front.requests(), "Codex fell back to HTTP")
	// Codex sent nothing the gateway refused.
	for i, c := range front.connections() {
		require.Empty(t, c.errors(), "connection %d", i)
	}
}

// wsCodex is Codex in WebSocket mode against a gateway on fake, through
// a recording front, with n retries.
func wsCodex(t *testing.T, fake *fakellm.Server, n int) (*codexCLI, *wsFront) {
	t.Helper()
	g := newGateway(t, fake, nil)
	front := newWSFront(t, g.srv.URL)
	codex := newCodex(t, front.srv.URL+"/v1", nil)
	codex.websockets()
	codex.retry(n)
	return codex, front
}

// A provider's 400 reaches Codex over WebSocket as the error envelope of
// its response.create (status 400): Codex shows it to its user at once,
// without retrying (its 5 retries allowed), and stays on the WebSocket.
func TestCodexCLIOverWebSocketProviderRefusalIsNotRetried(t *testing.T) {
	t.Parallel()
	fake := refusing(refusedTemperature)
	codex, front := wsCodex(t, fake, 5)

	failed := codex.execFailing("say hello")
	require.Contains(t, failed, "Unsupported parameter: 'temperature'")
	require.Equal(t, 1, fake.Calls(), "one model call")
	conns := front.connections()
	require.Len(t, conns, 1)
	creates := conns[0].creates()
	require.Len(t, creates, 2, "a prewarm and one turn")
	require.Equal(t, false, creates[0]["generate"])
	require.Empty(t, front.requests(), "Codex fell back to HTTP")
}

// Codex over WebSocket reads the gateway's other failures as over HTTP,
// and stays on the WebSocket: a full context window (response.failed
// context_length_exceeded, which stays in the stream) and an overloaded
// provider (the error envelope of status 503 server_is_overloaded) are
// told to its user as such; a stream the
// provider cuts (response.failed) is retried whole on a new connection.
// A 429 (the envelope's "status": 429) is not retried, unlike over HTTP:
// Codex takes a WebSocket 429 for a retry limit already reached. A stream
// that fails more often than Codex retries is sent once more over HTTP.
func TestCodexCLIOverWebSocketFailures(t *testing.T) {
	t.Parallel()
	failing := func(turn fakellm.Turn, want string) func(t *testing.T) {
		return func(t *testing.T) {
			fake := refusing(turn)
			codex, front := wsCodex(t, fake, 2)
			require.Contains(t, codex.execFailing("say hello"), want)
			require.Equal(t, 1, fake.Calls(), "no retry")
			require.Empty(t, front.requests(), "Codex fell back to HTTP")
		}
	}
	t.Run("context window", failing(fakellm.Turn{Status: http.StatusBadRequest, ErrorType: "BadRequestError",
		ErrorMessage: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."}, "context window"))
	t.Run("overloaded", failing(fakellm.Turn{Status: http.StatusServiceUnavailable, ErrorType: "service_unavailable_error",
		ErrorCode: "server_is_overloaded", ErrorMessage: "Our servers are currently overloaded."}, "at capacity"))
	t.Run("rate limited", failing(fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"1"}}},
		"429 Too Many Requests"))

	t.Run("stream cut", func(t *testing.T) {
		var mu sync.Mutex
		cut := false
		fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
			turn := codexTurn(req)
			mu.Lock()
			defer mu.Unlock()
			if req.Messages[len(req.Messages)-1].Role == "tool" && !cut {
				cut, turn.CutAfterChunks = true, 3
			}
			return turn
		})
		codex, front := wsCodex(t, fake, 1)
		evs := codex.exec("run the command")
		require.Len(t, items(evs, "command_execution"), 1)
		require.Contains(t, answer(evs), "lambent-42")
		// The follow-up turn failed on the first connection; the second
		// sends the whole history.
		conns := front.connections()
		require.Len(t, conns, 2)
		retried := conns[1].creates()
		require.Len(t, retried, 1)
		require.Nil(t, retried[0]["previous_response_id"])
		require.Contains(t, inputTypes(retried[0]), "function_call_output")
		require.Empty(t, front.requests(), "Codex fell back to HTTP")
	})

	t.Run("fallback to HTTP", func(t *testing.T) {
		var mu sync.Mutex
		cuts := 0
		fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
			turn := codexTurn(req)
			mu.Lock()
			defer mu.Unlock()
			if cuts < 2 {
				cuts++
				turn.CutAfterChunks = 2
			}
			return turn
		})
		codex, front := wsCodex(t, fake, 1)
		require.Equal(t, "Hello from Lambent.", answer(codex.exec("say hello")))
		require.Len(t, front.connections(), 2)
		require.Equal(t, []string{"POST /v1/responses"}, front.requests())
	})
}

// A refused upgrade reaches Codex's user with its cause: Codex shows the
// status of the handshake's answer and the message of its error body (when
// the body came in with the headers: codex-api's map_ws_error takes what
// tungstenite read behind them), then falls back to HTTP for the session.
// A wrong key: "401 Unauthorized: Incorrect API key provided.", then
// the same over HTTP, which fails the turn. A tenant over
// LAMBENT_LIMIT_TENANT_WEBSOCKETS: "429 Too Many Requests" (Codex shows no
// body of a 429), then the turn over HTTP, where that limit does not apply.
func TestCodexCLIOverWebSocketRefusedUpgrade(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.NewHandler(codexTurn), map[string]string{
		"LAMBENT_API_KEYS": "acme=" + wsKeyA, "LAMBENT_LIMIT_TENANT_WEBSOCKETS": "1"})
	front := newWSFront(t, g.srv.URL)
	codex := newCodex(t, front.srv.URL+"/v1", nil)
	codex.websockets()
	codex.editConfig("wire_api = \"responses\"\n", "wire_api = \"responses\"\nenv_key = \"LAMBENT_KEY\"\n")
	fallback := func(evs []codexEvent) string {
		t.Helper()
		for _, ev := range evs {
			if ev.Type == "item.completed" && strings.HasPrefix(ev.Item.Message, "Falling back from WebSockets") {
				return ev.Item.Message
			}
		}
		require.FailNow(t, "Codex did not fall back to HTTP", "%+v", evs)
		return ""
	}

	t.Run("wrong key", func(t *testing.T) {
		codex.env = []string{"LAMBENT_KEY=sk-wrong-0123456789abcdef"}
		evs, stderr, err := codex.run("say hello")
		require.Error(t, err, "stderr: %s", stderr)
		require.Contains(t, fallback(evs), "401 Unauthorized: Incorrect API key provided., url: ws://")
	})

	t.Run("over the tenant's connections", func(t *testing.T) {
		dialWS(t, g.srv, wsKeyA)
		codex.env = []string{"LAMBENT_KEY=" + wsKeyA}
		evs := codex.exec("say hello")
		require.Contains(t, fallback(evs), "exceeded retry limit, last status: 429 Too Many Requests")
		require.Equal(t, "Hello from Lambent.", answer(evs))
	})
	require.Empty(t, front.connections(), "an upgrade was accepted")
}

// codexSession is `codex app-server` (Codex's JSON-RPC over stdio, what
// its IDE extension drives): one process, so one model connection, for
// several user turns of a thread.
type codexSession struct {
	t      *testing.T
	in     io.Writer
	out    *bufio.Scanner
	nextID int
	thread string
}

// session starts `codex app-server` with c's configuration, initializes
// it and starts a thread.
func (c *codexCLI) session() *codexSession {
	c.t.Helper()
	cmd := exec.Command(c.bin, "app-server")
	cmd.Dir = c.work
	cmd.Env = c.environ()
	in, err := cmd.StdinPipe()
	require.NoError(c.t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(c.t, err)
	// Node 20 runs Codex's native binary as a child of its npm wrapper:
	// the whole process group is ended, or the binary would outlive the
	// test and write into its CODEX_HOME while the directory is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(c.t, cmd.Start())
	c.t.Cleanup(func() {
		_ = in.Close() // the app server ends at the end of its input
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
			// Anything the app server left running in its group ends too.
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	s := &codexSession{t: c.t, in: in, out: bufio.NewScanner(out)}
	s.out.Buffer(nil, 16<<20)
	s.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "lambent-test", "title": nil, "version": "0"}, "capabilities": nil})
	s.send(map[string]any{"method": "initialized"})
	var started struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	require.NoError(c.t, json.Unmarshal(s.call("thread/start", map[string]any{}), &started))
	s.thread = started.Thread.ID
	return s
}

// rpcMessage is a JSON-RPC message of the app server.
type rpcMessage struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (s *codexSession) send(m map[string]any) {
	s.t.Helper()
	b, err := json.Marshal(m)
	require.NoError(s.t, err)
	_, err = s.in.Write(append(b, '\n'))
	require.NoError(s.t, err)
}

// next reads the app server's next message.
func (s *codexSession) next() rpcMessage {
	s.t.Helper()
	require.True(s.t, s.out.Scan(), "app-server ended: %v", s.out.Err())
	var m rpcMessage
	require.NoError(s.t, json.Unmarshal(s.out.Bytes(), &m), "%s", s.out.Bytes())
	return m
}

// call sends a request and returns its result, skipping notifications.
func (s *codexSession) call(method string, params any) json.RawMessage {
	s.t.Helper()
	s.nextID++
	id := s.nextID
	s.send(map[string]any{"id": id, "method": method, "params": params})
	for {
		m := s.next()
		if m.ID != nil && m.Method == "" && *m.ID == id {
			require.Empty(s.t, m.Error, "%s", method)
			return m.Result
		}
	}
}

// turn runs one user turn of the thread and returns the text of its last
// agent message; a failed turn fails the test.
func (s *codexSession) turn(text string) string {
	s.t.Helper()
	s.call("turn/start", map[string]any{"threadId": s.thread, "input": []map[string]any{{"type": "text", "text": text, "text_elements": []any{}}}})
	deadline := time.Now().Add(time.Minute)
	var answer string
	for time.Now().Before(deadline) {
		m := s.next()
		switch m.Method {
		case "item/completed":
			var p struct {
				Item struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"item"`
			}
			require.NoError(s.t, json.Unmarshal(m.Params, &p))
			if p.Item.Type == "agentMessage" {
				answer = p.Item.Text
			}
		case "error":
			require.Fail(s.t, "codex error", "%s", m.Params)
		case "turn/completed":
			var p struct {
				Turn struct {
					Status string          `json:"status"`
					Error  json.RawMessage `json:"error"`
				} `json:"turn"`
			}
			require.NoError(s.t, json.Unmarshal(m.Params, &p))
			require.Equal(s.t, "completed", p.Turn.Status, "turn error: %s", p.Turn.Error)
			return answer
		}
	}
	require.FailNow(s.t, fmt.Sprintf("turn %q did not complete", text))
	return ""
}

// Codex's built-in "openai" provider pointed at the gateway with
// openai_base_url (how most users set Codex up: no provider entry) and
// its API key from CODEX_API_KEY (what `codex exec` reads). That provider talks WebSocket mode by
// default; its tool loop's turns continue on one connection, and the key
// reaches the gateway, which requires one.
func TestCodexCLIBuiltinOpenAIProvider(t *testing.T) {
	t.Parallel()
	const key = "sk-codex-0123456789abcdef"
	g := newGateway(t, fakellm.NewHandler(codexTurn), map[string]string{"LAMBENT_API_KEYS": "acme=" + key})
	front := newWSFront(t, g.srv.URL)
	codex := newCodex(t, front.srv.URL+"/v1", nil)
	path := filepath.Join(codex.home, "config.toml")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	cfg, _, ok := strings.Cut(string(b), "[model_providers.lambent]")
	require.True(t, ok)
	cfg = fmt.Sprintf("openai_base_url = %q\n", front.srv.URL+"/v1") + strings.Replace(cfg, "model_provider = \"lambent\"\n", "", 1)
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	codex.env = []string{"CODEX_API_KEY=" + key}

	evs := codex.exec("say hello")
	require.Equal(t, "Hello from Lambent.", answer(evs))
	codex.toolLoop()

	conns := front.connections()
	require.Len(t, conns, 2, "one WebSocket per codex process")
	creates, ids := conns[1].creates(), conns[1].responseIDs()
	require.GreaterOrEqual(t, len(creates), 2)
	require.Len(t, ids, len(creates))
	last := creates[len(creates)-1]
	require.Equal(t, ids[len(ids)-2], last["previous_response_id"])
	require.Equal(t, []string{"function_call_output"}, inputTypes(last))
	for i, c := range conns {
		require.Empty(t, c.errors(), "connection %d", i)
	}
	for _, r := range front.requests() {
		require.Equal(t, "GET /v1/models", r, "Codex fell back to HTTP")
	}
}
