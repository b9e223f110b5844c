package httpapi_test

// End-to-end tests through the real stack: the official openai-go client →
// a loopback HTTP server → the handler built by app.Build (engine, memory
// store, in-process hosted tools, OpenAI-compatible provider) → a fake
// Chat Completions backend speaking real HTTP and SSE (internal/testing/fakellm).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
)

func TestMain(m *testing.M) { os.Exit(dynamolocal.MainLeakChecked(m)) }

// validator returns the shared OpenResponses schema validator.
func validator(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := schema.Shared()
	require.NoError(t, err)
	return v
}

// gateway is one wired gateway on a loopback server in front of a fake model.
type gateway struct {
	t      testing.TB
	fake   *fakellm.Server
	app    *app.App
	srv    *httptest.Server
	client openai.Client
	http   *http.Client
}

// newGateway builds the gateway exactly as the mains do (app.FromEnv then
// app.Build) against fake; env entries override the defaults.
func newGateway(t *testing.T, fake *fakellm.Server, env map[string]string) *gateway {
	t.Helper()
	return newGatewayWith(t, fake, env, nil)
}

// newGatewayWith is newGateway with parts of the wiring replaced.
func newGatewayWith(t testing.TB, fake *fakellm.Server, env map[string]string, opts *app.Options) *gateway {
	t.Helper()
	return newGatewayLogged(t, fake, env, opts, io.Discard)
}

// newGatewayLogged is newGatewayWith logging to logs.
func newGatewayLogged(t testing.TB, fake *fakellm.Server, env map[string]string, opts *app.Options, logs io.Writer) *gateway {
	t.Helper()
	t.Cleanup(fake.Close)
	vars := map[string]string{
		"LAMBENT_PROVIDER_URL":  fake.URL,
		"LAMBENT_DEFAULT_MODEL": "test-model",
		"LAMBENT_MAX_TURNS":     "10",
		"LAMBENT_MAX_BODY":      strconv.Itoa(8 << 20),
		"LAMBENT_STORE":         "memory",
		"LAMBENT_RETENTION":     "1h",
		"LAMBENT_LOG_LEVEL":     "error",
	}
	for k, v := range env {
		vars[k] = v
	}
	getenv := func(k string) string { return vars[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, getenv))
	require.Equal(t, "memory", cfg.Store.Kind)
	require.Equal(t, time.Hour, cfg.Store.Retention)
	ctx := context.Background()
	a, err := app.Build(ctx, cfg, app.Logger(cfg, logs), opts)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	g := &gateway{t: t, fake: fake, app: a, srv: srv, http: srv.Client()}
	g.client = openai.NewClient(
		option.WithBaseURL(srv.URL+"/v1/"),
		option.WithAPIKey("test"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(srv.Client()),
	)
	return g
}

// do sends a raw request and returns the status, headers and whole body.
func (g *gateway) do(method, path, contentType, body string) (int, http.Header, []byte) {
	g.t.Helper()
	return g.doWith(method, path, body, "Content-Type", contentType)
}

// doWith sends a raw request with the headers of kv (name, value, …; an
// empty value is no header) and returns the status, headers and whole
// body.
func (g *gateway) doWith(method, path, body string, kv ...string) (int, http.Header, []byte) {
	g.t.Helper()
	req, err := http.NewRequest(method, g.srv.URL+path, strings.NewReader(body))
	require.NoError(g.t, err)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			req.Header.Set(kv[i], kv[i+1])
		}
	}
	res, err := g.http.Do(req)
	require.NoError(g.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(g.t, err)
	return res.StatusCode, res.Header, b
}

func (g *gateway) postJSON(body string) (int, http.Header, []byte) {
	g.t.Helper()
	return g.do(http.MethodPost, "/v1/responses", "application/json", body)
}

// wantError asserts an OpenAI-shaped error body: exactly
// {"error":{"message","type","param","code"}} with a non-empty message and
// type, param and code strings or null. param and code are checked when
// not empty ("-" means must be null).
func wantError(t *testing.T, status int, body []byte, wantStatus int, param, code string) {
	t.Helper()
	require.Equalf(t, wantStatus, status, "body: %s", body)
	var env map[string]json.RawMessage
	require.NoErrorf(t, json.Unmarshal(body, &env), "error body is not JSON: %s", body)
	require.Lenf(t, env, 1, "error body must only hold \"error\": %s", body)
	var e map[string]any
	require.NoError(t, json.Unmarshal(env["error"], &e), "body: %s", body)
	require.Lenf(t, e, 4, "error object must have exactly message, type, param, code: %s", body)
	for _, k := range []string{"message", "type", "param", "code"} {
		require.Containsf(t, e, k, "error object lacks %q: %s", k, body)
	}
	msg, ok := e["message"].(string)
	require.Truef(t, ok && msg != "", "message must be a non-empty string: %s", body)
	typ, ok := e["type"].(string)
	require.Truef(t, ok && typ != "", "type must be a non-empty string: %s", body)
	for _, k := range []string{"param", "code"} {
		if e[k] != nil {
			_, ok := e[k].(string)
			require.Truef(t, ok, "%s must be a string or null: %s", k, body)
		}
	}
	check := func(k, want string) {
		switch want {
		case "":
		case "-":
			require.Nilf(t, e[k], "%s must be null: %s", k, body)
		default:
			require.Equalf(t, want, e[k], "%s: %s", k, body)
		}
	}
	check("param", param)
	check("code", code)
}

// wantAPIError asserts that err is the SDK's *openai.Error with status.
func wantAPIError(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	require.Error(t, err)
	var apiErr *openai.Error
	require.Truef(t, errors.As(err, &apiErr), "not an *openai.Error: %v", err)
	require.Equal(t, status, apiErr.StatusCode, "%v", err)
	require.NotEmpty(t, apiErr.Message)
	require.NotEmpty(t, apiErr.Type)
	return apiErr
}

// wire is the subset of a response the tests inspect, decoded from raw JSON
// independently of the SDK's types.
type wire struct {
	ID                 string  `json:"id"`
	Object             string  `json:"object"`
	Status             string  `json:"status"`
	Model              string  `json:"model"`
	PreviousResponseID *string `json:"previous_response_id"`
	Instructions       *string `json:"instructions"`
	Output             []struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Status    string `json:"status"`
		Role      string `json:"role"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
		Output    string `json:"output"`
		Content   []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens        int `json:"input_tokens"`
		OutputTokens       int `json:"output_tokens"`
		TotalTokens        int `json:"total_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	} `json:"usage"`
}

func decodeWire(t testing.TB, raw []byte) wire {
	t.Helper()
	var w wire
	require.NoErrorf(t, json.Unmarshal(raw, &w), "response: %s", raw)
	return w
}

func (w wire) types() []string {
	var ts []string
	for _, it := range w.Output {
		ts = append(ts, it.Type)
	}
	return ts
}

// validResponse validates a response body against ResponseResource.
func validResponse(t *testing.T, raw []byte) wire {
	t.Helper()
	require.NoErrorf(t, validator(t).Validate("ResponseResource", raw), "response: %s", raw)
	return decodeWire(t, raw)
}

func textParams(input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(input)}}
}

// ---------------------------------------------------------------------------
// Non-streaming create.

func TestE2ECreateNonStreaming(t *testing.T) {
	t.Parallel()
	const answer = "Hello there, \"world\" — 日本語 <ok>."
	usage := fakellm.Usage{PromptTokens: 12, CompletionTokens: 5, CachedTokens: 3, ReasoningTokens: 2}
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: answer, Usage: usage}, fakellm.Turn{Text: answer, Usage: usage}), nil)
	ctx := context.Background()

	params := textParams("Say hello")
	params.Instructions = openai.String("Be brief.")
	params.Metadata = map[string]string{"k": "v"}
	resp, err := g.client.Responses.New(ctx, params)
	require.NoError(t, err)
	w := validResponse(t, []byte(resp.RawJSON()))

	require.True(t, strings.HasPrefix(resp.ID, "resp_"), resp.ID)
	require.Equal(t, "response", w.Object)
	require.Equal(t, responses.ResponseStatusCompleted, resp.Status)
	require.Equal(t, "test-model", resp.Model)
	require.Equal(t, answer, resp.OutputText())
	require.Equal(t, []string{"message"}, w.types())
	require.Equal(t, "assistant", w.Output[0].Role)
	require.Equal(t, "completed", w.Output[0].Status)
	require.Equal(t, "output_text", w.Output[0].Content[0].Type)
	require.NotNil(t, w.Instructions)
	require.Equal(t, "Be brief.", *w.Instructions)
	require.Equal(t, "v", resp.Metadata["k"])

	require.Equal(t, int64(12), resp.Usage.InputTokens)
	require.Equal(t, int64(5), resp.Usage.OutputTokens)
	require.Equal(t, int64(17), resp.Usage.TotalTokens)
	require.Equal(t, int64(3), resp.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(2), resp.Usage.OutputTokensDetails.ReasoningTokens)

	reqs := g.fake.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "test-model", reqs[0].Model)
	require.False(t, reqs[0].Stream)
	require.Len(t, reqs[0].Messages, 2)
	require.Contains(t, []string{"system", "developer"}, reqs[0].Messages[0].Role)
	require.Equal(t, "Be brief.", reqs[0].Messages[0].Content.String())
	require.Equal(t, "user", reqs[0].Messages[1].Role)
	require.Equal(t, "Say hello", reqs[0].Messages[1].Content.String())

	// The same through a plain HTTP call with a charset in the content type.
	status, hdr, body := g.do(http.MethodPost, "/v1/responses", "application/json; charset=utf-8", `{"input":"Say hello"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "application/json"), hdr.Get("Content-Type"))
	w2 := validResponse(t, body)
	require.Equal(t, "completed", w2.Status)
	require.NotEqual(t, resp.ID, w2.ID)
	require.Equal(t, answer, w2.Output[0].Content[0].Text)
	require.Nil(t, w2.Instructions)
	require.Equal(t, 17, w2.Usage.TotalTokens)
	require.Equal(t, 2, g.fake.Calls())
}

// ---------------------------------------------------------------------------
// Streaming create.

// sdkEvent is one event read through the SDK stream.
type sdkEvent struct {
	ev  responses.ResponseStreamEventUnion
	raw []byte
}

// readSDKStream reads a whole SDK stream, validating every event against
// its schema and the stream invariants (ssecheck on the raw JSON the SDK
// received).
func readSDKStream(t *testing.T, stream interface {
	Next() bool
	Current() responses.ResponseStreamEventUnion
	Err() error
	Close() error
}) []sdkEvent {
	t.Helper()
	defer stream.Close()
	var evs []sdkEvent
	var checked []ssecheck.Event
	for stream.Next() {
		ev := stream.Current()
		raw := []byte(ev.RawJSON())
		evs = append(evs, sdkEvent{ev: ev, raw: raw})
		dec, err := ssecheck.Decode(raw)
		require.NoError(t, err)
		checked = append(checked, dec)
	}
	require.NoError(t, stream.Err())
	require.NoError(t, ssecheck.Check(nil, checked))
	// Every stream decodes as OpenAI's types; one without server-executed
	// (mcp) items — every stream in the function_call item mode — also
	// validates against the OpenResponses document.
	require.NoError(t, ssecheck.CheckOpenAI(checked))
	mcp := false
	for _, e := range evs {
		mcp = mcp || bytes.Contains(e.raw, []byte(`"mcp`))
	}
	if !mcp {
		require.NoError(t, ssecheck.Check(validator(t), checked))
	}
	return evs
}

func countTypes(evs []sdkEvent) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.ev.Type]++
	}
	return n
}

func TestE2ECreateStreaming(t *testing.T) {
	t.Parallel()
	const answer = "Streaming is fun, and every delta counts."
	usage := fakellm.Usage{PromptTokens: 9, CompletionTokens: 8, CachedTokens: 1, ReasoningTokens: 0}
	turn := fakellm.Turn{Text: answer, Usage: usage}
	g := newGateway(t, fakellm.New(turn, turn, turn), nil)
	ctx := context.Background()

	t.Run("sdk", func(t *testing.T) {
		evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, textParams("Tell me something")))
		n := countTypes(evs)
		require.Equal(t, 1, n["response.created"])
		require.Equal(t, 1, n["response.in_progress"])
		require.Equal(t, 1, n["response.completed"])
		require.Equal(t, 1, n["response.output_item.added"])
		require.Equal(t, 1, n["response.content_part.added"])
		require.Greater(t, n["response.output_text.delta"], 1, "the text should arrive in several deltas")
		require.Equal(t, 1, n["response.output_text.done"])

		var deltas strings.Builder
		var doneText string
		for _, e := range evs {
			switch e.ev.Type {
			case "response.output_text.delta":
				deltas.WriteString(e.ev.AsResponseOutputTextDelta().Delta)
			case "response.output_text.done":
				doneText = e.ev.AsResponseOutputTextDone().Text
			}
		}
		require.Equal(t, answer, deltas.String())
		require.Equal(t, answer, doneText)

		last := evs[len(evs)-1].ev
		require.Equal(t, "response.completed", last.Type)
		final := last.AsResponseCompleted().Response
		require.Equal(t, responses.ResponseStatusCompleted, final.Status)
		require.Equal(t, answer, final.OutputText())
		require.Equal(t, int64(9), final.Usage.InputTokens)
		require.Equal(t, int64(8), final.Usage.OutputTokens)
		require.Equal(t, int64(17), final.Usage.TotalTokens)
		require.Equal(t, int64(1), final.Usage.InputTokensDetails.CachedTokens)
		created := evs[0].ev.AsResponseCreated().Response
		require.Equal(t, final.ID, created.ID)
		require.Equal(t, responses.ResponseStatusInProgress, created.Status)

		// The streamed response was stored.
		stored, err := g.client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{})
		require.NoError(t, err)
		validResponse(t, []byte(stored.RawJSON()))
		require.Equal(t, answer, stored.OutputText())

		req := g.fake.Requests()[0]
		require.True(t, req.Stream)
		require.True(t, req.IncludeUsage(), "the gateway must ask the backend for usage when streaming")
	})

	t.Run("raw-tcp-frames", func(t *testing.T) {
		chunks := rawStream(t, g.srv.Listener.Addr().String(), `{"input":"Tell me something","stream":true}`)
		var all bytes.Buffer
		frames := 0
		for i, c := range chunks {
			all.Write(c)
			fs, done := sseFrames(t, c)
			require.Equalf(t, i == len(chunks)-1, done, "chunk %d: only the last chunk, and it always, ends with data: [DONE]", i)
			for _, f := range fs {
				var head struct {
					Type string `json:"type"`
				}
				require.NoError(t, json.Unmarshal(f.data, &head))
				require.Equal(t, f.event, head.Type, "event field and payload type differ")
				require.NotContains(t, string(f.data), `{"error":`, "no top-level error key on non-error events")
			}
			frames += len(fs)
		}
		evs, done, err := ssecheck.Parse(&all)
		require.NoError(t, err)
		require.True(t, done, "stream must end with data: [DONE]")
		require.NoError(t, ssecheck.Check(validator(t), evs))
		require.Len(t, evs, frames)
		require.Equal(t, "response.completed", evs[len(evs)-1].Type)
		text, err := ssecheck.OutputText(evs)
		require.NoError(t, err)
		require.Equal(t, answer, text)
	})

	t.Run("whole-events-per-write", func(t *testing.T) {
		rec := &writeRecorder{header: http.Header{}}
		req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(`{"input":"Tell me something","stream":true}`))
		req.Header.Set("Content-Type", "application/json")
		g.app.Handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.status)
		require.True(t, strings.HasPrefix(rec.header.Get("Content-Type"), "text/event-stream"), rec.header.Get("Content-Type"))
		// The fake model sends its answer at once: its deltas share a write.
		// The last write, with data: [DONE], goes out with the end of the
		// response (net/http flushes it when the handler returns).
		require.GreaterOrEqual(t, len(rec.ops), 3)
		require.NotEqual(t, "flush", rec.ops[len(rec.ops)-1], "the end of the stream is not flushed apart from the response's end")
		for i, op := range rec.ops {
			if i%2 == 1 {
				require.Equalf(t, "flush", op, "op %d: every write but the last must be followed by a flush (ops %v)", i, rec.opNames())
				continue
			}
			require.NotEqualf(t, "flush", op, "op %d: a flush without a write", i)
			_, done := sseFrames(t, []byte(op))
			require.Equalf(t, i == len(rec.ops)-1, done, "op %d: only the last write, and it always, ends with data: [DONE]", i)
		}
	})
}

// sseFrame is one SSE event frame of the Responses API.
type sseFrame struct {
	event string
	data  []byte
}

// sseFrames splits one write (or chunk) of a stream into its frames,
// failing unless it holds only whole "event: <type>\ndata: <json>\n\n"
// frames, optionally followed by the closing "data: [DONE]\n\n".
func sseFrames(t *testing.T, b []byte) (frames []sseFrame, done bool) {
	t.Helper()
	frame := regexp.MustCompile(`\Aevent: ([a-z_.]+)\ndata: (\{[^\n]*\})\n\n`)
	rest := b
	for len(rest) > 0 {
		if string(rest) == "data: [DONE]\n\n" {
			return frames, true
		}
		m := frame.FindSubmatch(rest)
		require.NotNilf(t, m, "not whole SSE event frames at byte %d: %q", len(b)-len(rest), b)
		frames = append(frames, sseFrame{event: string(m[1]), data: m[2]})
		rest = rest[len(m[0]):]
	}
	require.NotEmpty(t, frames, "an empty write")
	return frames, false
}

// writeRecorder is an http.ResponseWriter recording each Write and Flush
// (safe for the pacer's goroutine, package pacing).
type writeRecorder struct {
	mu     sync.Mutex
	header http.Header
	status int
	ops    []string // each Write's bytes, or "flush"
}

func (r *writeRecorder) Header() http.Header { return r.header }
func (r *writeRecorder) WriteHeader(s int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = s
	}
}
func (r *writeRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.ops = append(r.ops, string(p))
	return len(p), nil
}
func (r *writeRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, "flush")
}
func (r *writeRecorder) opNames() []string {
	var s []string
	for _, op := range r.ops {
		if op == "flush" {
			s = append(s, op)
		} else {
			s = append(s, "write")
		}
	}
	return s
}

// rawStream POSTs body to /v1/responses over a raw TCP connection and
// returns the body's HTTP/1.1 chunks, one per flush on the server side.
func rawStream(t *testing.T, addr, body string) [][]byte {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = fmt.Fprintf(conn, "POST /v1/responses HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", addr, len(body), body)
	require.NoError(t, err)
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "HTTP/1.1 200 OK\r\n", status)
	chunked := false
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == "\r\n" {
			break
		}
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		switch strings.ToLower(k) {
		case "transfer-encoding":
			chunked = strings.TrimSpace(v) == "chunked"
		case "content-type":
			require.True(t, strings.HasPrefix(strings.TrimSpace(v), "text/event-stream"), v)
		}
	}
	require.True(t, chunked, "a stream must use chunked transfer encoding")
	var chunks [][]byte
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		size, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		require.NoError(t, err, "chunk size line %q", line)
		if size == 0 {
			break
		}
		c := make([]byte, size)
		_, err = io.ReadFull(br, c)
		require.NoError(t, err)
		crlf := make([]byte, 2)
		_, err = io.ReadFull(br, crlf)
		require.NoError(t, err)
		require.Equal(t, "\r\n", string(crlf))
		chunks = append(chunks, c)
	}
	return chunks
}

// ---------------------------------------------------------------------------
// Multi-turn via previous_response_id.

func TestE2EMultiTurnPreviousResponseID(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(
		fakellm.Turn{Text: "Nice to meet you, Ada."},
		fakellm.Turn{Text: "Your name is Ada."},
		fakellm.Turn{Text: "You told me twice."},
	), nil)
	ctx := context.Background()

	p1 := textParams("My name is Ada.")
	p1.Instructions = openai.String("Answer like a pirate.")
	r1, err := g.client.Responses.New(ctx, p1)
	require.NoError(t, err)

	p2 := textParams("What is my name?")
	p2.PreviousResponseID = openai.String(r1.ID)
	r2, err := g.client.Responses.New(ctx, p2)
	require.NoError(t, err)
	w2 := validResponse(t, []byte(r2.RawJSON()))
	require.Equal(t, "Your name is Ada.", r2.OutputText())
	require.NotNil(t, w2.PreviousResponseID)
	require.Equal(t, r1.ID, *w2.PreviousResponseID)
	require.Nil(t, w2.Instructions, "instructions do not carry over")

	reqs := g.fake.Requests()
	require.Len(t, reqs, 2)
	type msg struct{ Role, Text string }
	var got []msg
	for _, m := range reqs[1].Messages {
		got = append(got, msg{m.Role, m.Content.String()})
		require.NotContains(t, m.Content.String(), "pirate", "the first request's instructions must not carry over")
	}
	require.Equal(t, []msg{
		{"user", "My name is Ada."},
		{"assistant", "Nice to meet you, Ada."},
		{"user", "What is my name?"},
	}, got)

	// A streamed continuation of the continuation sees the whole chain.
	p3 := textParams("Again?")
	p3.PreviousResponseID = openai.String(r2.ID)
	evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, p3))
	require.Equal(t, "You told me twice.", evs[len(evs)-1].ev.AsResponseCompleted().Response.OutputText())
	reqs = g.fake.Requests()
	require.Len(t, reqs, 3)
	got = got[:0]
	for _, m := range reqs[2].Messages {
		got = append(got, msg{m.Role, m.Content.String()})
	}
	require.Equal(t, []msg{
		{"user", "My name is Ada."},
		{"assistant", "Nice to meet you, Ada."},
		{"user", "What is my name?"},
		{"assistant", "Your name is Ada."},
		{"user", "Again?"},
	}, got)
}

// ---------------------------------------------------------------------------
// GET, DELETE, input_items.

func TestE2EGetDeleteInputItems(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "Three messages received."}), nil)
	ctx := context.Background()

	params := responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("first", responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfMessage("second", responses.EasyInputMessageRoleAssistant),
		responses.ResponseInputItemParamOfMessage("third", responses.EasyInputMessageRoleUser),
	}}}
	created, err := g.client.Responses.New(ctx, params)
	require.NoError(t, err)
	id := created.ID

	// GET through the SDK and raw.
	got, err := g.client.Responses.Get(ctx, id, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, id, got.ID)
	require.Equal(t, "Three messages received.", got.OutputText())
	status, _, body := g.do(http.MethodGet, "/v1/responses/"+id, "", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	w := validResponse(t, body)
	require.Equal(t, "completed", w.Status)
	require.Equal(t, created.Output[0].ID, w.Output[0].ID)

	// input_items: default order is desc.
	page, err := g.client.Responses.InputItems.List(ctx, id, responses.InputItemListParams{})
	require.NoError(t, err)
	require.Len(t, page.Data, 3)
	require.False(t, page.HasMore)
	var desc []string
	for _, it := range page.Data {
		require.Equal(t, "message", it.Type)
		require.NotEmpty(t, it.ID)
		desc = append(desc, it.ID)
	}
	require.Equal(t, "third", inputText(t, page.Data[0].RawJSON()))
	require.Equal(t, "first", inputText(t, page.Data[2].RawJSON()))

	type list struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore *bool             `json:"has_more"`
	}
	getList := func(query string) list {
		t.Helper()
		status, _, body := g.do(http.MethodGet, "/v1/responses/"+id+"/input_items"+query, "", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var l list
		require.NoError(t, json.Unmarshal(body, &l), "%s", body)
		require.Equal(t, "list", l.Object)
		require.NotNil(t, l.HasMore, "has_more is required: %s", body)
		require.NotNil(t, l.FirstID, "first_id: %s", body)
		require.NotNil(t, l.LastID, "last_id: %s", body)
		return l
	}
	ids := func(l list) []string {
		var s []string
		for _, raw := range l.Data {
			var it struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(raw, &it))
			s = append(s, it.ID)
		}
		return s
	}

	all := getList("")
	require.Equal(t, desc, ids(all))
	require.Equal(t, desc[0], *all.FirstID)
	require.Equal(t, desc[2], *all.LastID)
	require.False(t, *all.HasMore)

	asc := getList("?order=asc")
	require.Equal(t, []string{desc[2], desc[1], desc[0]}, ids(asc))

	p1 := getList("?order=asc&limit=2")
	require.Equal(t, []string{desc[2], desc[1]}, ids(p1))
	require.True(t, *p1.HasMore)
	require.Equal(t, desc[2], *p1.FirstID)
	require.Equal(t, desc[1], *p1.LastID)
	p2 := getList("?order=asc&limit=2&after=" + *p1.LastID)
	require.Equal(t, []string{desc[0]}, ids(p2))
	require.False(t, *p2.HasMore)

	d1 := getList("?order=desc&limit=1")
	require.Equal(t, []string{desc[0]}, ids(d1))
	require.True(t, *d1.HasMore)

	// The SDK's paging agrees.
	sp, err := g.client.Responses.InputItems.List(ctx, id, responses.InputItemListParams{
		Order: responses.InputItemListParamsOrderAsc, Limit: openai.Int(2), After: openai.String(desc[2]),
	})
	require.NoError(t, err)
	require.Len(t, sp.Data, 2)
	require.Equal(t, desc[1], sp.Data[0].ID)
	require.Equal(t, desc[0], sp.Data[1].ID)
	require.False(t, sp.HasMore)

	status, _, body = g.do(http.MethodGet, "/v1/responses/"+id+"/input_items?order=sideways", "", "")
	wantError(t, status, body, http.StatusBadRequest, "order", "")
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+id+"/input_items?limit=0", "", "")
	wantError(t, status, body, http.StatusBadRequest, "limit", "")
	status, _, body = g.do(http.MethodGet, "/v1/responses/resp_nope/input_items", "", "")
	wantError(t, status, body, http.StatusNotFound, "", "")

	// DELETE.
	status, hdr, body := g.do(http.MethodDelete, "/v1/responses/"+id, "", "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.True(t, strings.HasPrefix(hdr.Get("Content-Type"), "application/json"))
	require.JSONEq(t, `{"id":"`+id+`","object":"response","deleted":true}`, string(body))

	// GET after delete is a 404 in the OpenAI shape, through the SDK and raw.
	_, err = g.client.Responses.Get(ctx, id, responses.ResponseGetParams{})
	apiErr := wantAPIError(t, err, http.StatusNotFound)
	require.Contains(t, apiErr.Message, id)
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+id, "", "")
	wantError(t, status, body, http.StatusNotFound, "", "")
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+id+"/input_items", "", "")
	wantError(t, status, body, http.StatusNotFound, "", "")
	// Deleting again is a 404 too; so is the SDK's Delete.
	status, _, body = g.do(http.MethodDelete, "/v1/responses/"+id, "", "")
	wantError(t, status, body, http.StatusNotFound, "", "")
	wantAPIError(t, g.client.Responses.Delete(ctx, id), http.StatusNotFound)
	// A deleted response cannot be continued.
	status, _, body = g.postJSON(`{"input":"more","previous_response_id":"` + id + `"}`)
	wantError(t, status, body, http.StatusNotFound, "previous_response_id", "previous_response_not_found")
	require.Equal(t, 1, g.fake.Calls())
}

// Item ids are unique in a request's input, as at OpenAI ("Duplicate item
// found with id …", a 400): two input items of one id (given, or resolved
// from references) are refused, naming the second. (They were stored, and
// input_items' cursor, an item id, then named two items: the official
// clients' auto-paging, asc with limit 1, returned the second one for
// ever.)
func TestE2EDuplicateInputItemIDs(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "first"}), nil)
	msg := func(text, id string) string {
		return `{"type":"message","role":"user","content":"` + text + `","id":"` + id + `"}`
	}
	status, _, body := g.postJSON(`{"input":[` + msg("a", "msg_dup") + `,` + msg("b", "msg_dup") + `,{"role":"user","content":"c"}]}`)
	wantError(t, status, body, http.StatusBadRequest, "input[1].id", "duplicate_item_id")
	require.Contains(t, string(body), "Duplicate item found with id msg_dup.")

	status, _, body = g.postJSON(`{"input":[` + msg("a", "msg_one") + `]}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	first := decodeWire(t, body).ID
	status, _, body = g.postJSON(`{"previous_response_id":"` + first + `","input":[{"type":"item_reference","id":"msg_one"},{"type":"item_reference","id":"msg_one"}]}`)
	wantError(t, status, body, http.StatusBadRequest, "input[1].id", "duplicate_item_id")
	require.Len(t, g.fake.Requests(), 1, "no model call for a refused request")
}

// A requires_action response continued without the outputs of its calls
// ("never mind"): the calls get error results (the engine's
// TestEdge_ContinuationWithoutOutputs), which the model sees right after
// the assistant message that made the calls, as Chat Completions requires,
// before the new input. (They followed the new user message: a strict
// provider refused the history, a 400 upstream_error, and the response was
// stored failed.)
func TestE2EContinuationWithoutOutputs(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.NewHandler(clientTurn), nil)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	status, _, body := g.postJSON(`{"input":"what is the weather",` + tools + `}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	first := decodeWire(t, body)
	require.Equal(t, "requires_action", first.Status)

	status, _, body = g.postJSON(`{"previous_response_id":"` + first.ID + `","input":"never mind, hello",` + tools + `}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.Equal(t, "completed", decodeWire(t, body).Status)
	reqs := g.fake.Requests()
	require.Len(t, reqs, 2)
	var roles []string
	for _, m := range reqs[1].Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"user", "assistant", "tool", "user"}, roles)
}

// A continuation whose input names an item the conversation it continues
// holds already (an item reference to the paused call, as clients that
// replay their history send it, or the item sent again) hands the model
// that item once: through previous_response_id and in a conversation.
// (The model got the call twice, and Chat Completions refused the
// history: a 400 upstream_error, the response stored failed.)
func TestE2EReferenceToHeldItemSentOnce(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.NewHandler(clientTurn), nil)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	status, _, body := g.do(http.MethodPost, "/v1/conversations", "application/json", `{}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	conv := decodeWire(t, body).ID
	for _, scope := range continuationScopes(conv) {
		status, _, body := g.postJSON(`{` + scope("") + `"input":"what is the weather",` + tools + `}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		paused := decodeWire(t, body)
		require.Equal(t, "requires_action", paused.Status)
		var out struct {
			Output []struct {
				ID     string `json:"id"`
				CallID string `json:"call_id"`
			} `json:"output"`
		}
		require.NoError(t, json.Unmarshal(body, &out))
		call := out.Output[0]
		status, _, body = g.postJSON(`{` + scope(paused.ID) + `"input":[{"type":"item_reference","id":"` + call.ID + `"},` +
			`{"type":"function_call_output","call_id":"` + call.CallID + `","output":"sunny"}],` + tools + `}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		require.Equal(t, "completed", decodeWire(t, body).Status)
		reqs := g.fake.Requests()
		var roles []string
		for _, m := range reqs[len(reqs)-1].Messages {
			roles = append(roles, m.Role)
		}
		require.Equal(t, []string{"user", "assistant", "tool"}, roles)
	}
}

// continuationScopes are the two ways a request continues a conversation,
// each the JSON fields (ending with a comma) of a request that continues
// the response prev ("": the first request): through previous_response_id,
// and in the conversation conv.
func continuationScopes(conv string) []func(prev string) string {
	return []func(prev string) string{
		func(prev string) string {
			if prev == "" {
				return ""
			}
			return `"previous_response_id":"` + prev + `",`
		},
		func(string) string { return `"conversation":"` + conv + `",` },
	}
}

// A client that re-sends its history (the Agents SDK's sessions, the AI
// SDK) sends the paused call again without its id, its arguments
// serialized anew, with the call's output: the model gets the call once,
// as one assistant tool call, through previous_response_id and in a
// conversation. A different call with that call_id is a 400 naming the
// item's call_id, before any model call.
func TestE2ECallSentAgainWithoutID(t *testing.T) {
	t.Parallel()
	call := fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city": "Rome"}`}}}
	done := fakellm.Turn{Text: "Sunny in Rome."}
	g := newGateway(t, fakellm.New(call, done, done, call, done, done), nil)
	tools := `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	status, _, body := g.do(http.MethodPost, "/v1/conversations", "application/json", `{}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	conv := decodeWire(t, body).ID
	fc := func(args string) string {
		return `{"type":"function_call","call_id":"call_w","name":"get_weather","arguments":` + strconv.Quote(args) + `}`
	}
	for _, scope := range continuationScopes(conv) {
		status, _, body := g.postJSON(`{` + scope("") + `"input":"what is the weather",` + tools + `}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		paused := decodeWire(t, body)
		require.Equal(t, "requires_action", paused.Status)
		n := len(g.fake.Requests())
		status, _, body = g.postJSON(`{` + scope(paused.ID) + `"input":[` + fc(`{"city":"Paris"}`) + `],` + tools + `}`)
		wantError(t, status, body, http.StatusBadRequest, "input[0].call_id", "")
		require.Len(t, g.fake.Requests(), n, "a refused request reaches no model")
		status, _, body = g.postJSON(`{` + scope(paused.ID) + `"input":[` + fc(`{"city":"Rome"}`) + `,` +
			`{"type":"function_call_output","call_id":"call_w","output":"sunny"}],` + tools + `}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		answered := decodeWire(t, body)
		require.Equal(t, "completed", answered.Status)
		reqs := g.fake.Requests()
		var roles []string
		var toolCalls int
		for _, m := range reqs[len(reqs)-1].Messages {
			roles = append(roles, m.Role)
			toolCalls += len(m.ToolCalls)
		}
		require.Equal(t, []string{"user", "assistant", "tool"}, roles)
		require.Equal(t, 1, toolCalls, "the call reaches the model once")

		// Once answered, the call id may name a new call (a model that
		// numbers its calls per turn reuses it) with its own output.
		status, _, body = g.postJSON(`{` + scope(answered.ID) + `"input":[{"role":"user","content":"again"},` + fc(`{"city":"Paris"}`) + `,` +
			`{"type":"function_call_output","call_id":"call_w","output":"cloudy"}],` + tools + `}`)
		require.Equal(t, http.StatusOK, status, "%s", body)
		reqs = g.fake.Requests()
		toolCalls = 0
		ids := map[string]bool{}
		for _, m := range reqs[len(reqs)-1].Messages {
			for _, c := range m.ToolCalls {
				toolCalls++
				ids[c.ID] = true
			}
		}
		require.Equal(t, 2, toolCalls, "both calls reach the model")
		require.Len(t, ids, 2, "each with an id of its own")
	}
}

// inputText returns the text of a message item's first content part.
func inputText(t *testing.T, raw string) string {
	t.Helper()
	var it struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &it), raw)
	require.NotEmpty(t, it.Content, raw)
	return it.Content[0].Text
}

func TestE2ESDKDelete(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "bye"}), nil)
	ctx := context.Background()
	r, err := g.client.Responses.New(ctx, textParams("hi"))
	require.NoError(t, err)
	require.NoError(t, g.client.Responses.Delete(ctx, r.ID))
	_, err = g.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	wantAPIError(t, err, http.StatusNotFound)
}

// ---------------------------------------------------------------------------
// The agentic loop over HTTP with the built-in calculator.

// fnItems runs a gateway in the function_call item mode (strict
// OpenResponses: every body and event validates against openapi.json).
var fnItems = map[string]string{"LAMBENT_HOSTED_TOOL_ITEMS": "function_call"}

func TestE2EAgenticLoopCalculatorStream(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call_mul", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			{ID: "call_pow", Name: "calculator", Arguments: `{"expression":"2^10"}`},
		}, Usage: fakellm.Usage{PromptTokens: 10, CompletionTokens: 5}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call_add", Name: "calculator", Arguments: `{"expression":"1024 + 42 / 4"}`},
		}, Usage: fakellm.Usage{PromptTokens: 20, CompletionTokens: 6, CachedTokens: 4}},
		fakellm.Turn{Text: "6*7 is 42, 2^10 is 1024 and the sum is 1034.5.", Usage: fakellm.Usage{PromptTokens: 30, CompletionTokens: 7}},
	), fnItems)
	ctx := context.Background()

	evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, textParams("Compute 6*7 and 2^10, then 1024 + 42/4."),
		option.WithJSONSet("tools", []map[string]any{{"type": "lambent:calculator"}})))

	n := countTypes(evs)
	require.Equal(t, 1, n["response.created"])
	require.Equal(t, 1, n["response.in_progress"])
	require.Equal(t, 1, n["response.completed"])
	require.Equal(t, 0, n["error"]+n["response.failed"]+n["response.incomplete"])
	require.Equal(t, 7, n["response.output_item.added"])
	require.Equal(t, 7, n["response.output_item.done"])
	require.Equal(t, 3, n["response.function_call_arguments.done"])
	require.GreaterOrEqual(t, n["response.function_call_arguments.delta"], 3)

	// Items of all turns, output_index increasing, in this order.
	var addedTypes []string
	next := int64(0)
	for _, e := range evs {
		if e.ev.Type != "response.output_item.added" {
			continue
		}
		added := e.ev.AsResponseOutputItemAdded()
		require.Equal(t, next, added.OutputIndex)
		next++
		addedTypes = append(addedTypes, added.Item.Type)
	}
	wantTypes := []string{"function_call", "function_call", "function_call_output", "function_call_output", "function_call", "function_call_output", "message"}
	require.Equal(t, wantTypes, addedTypes)

	args := map[string]string{}
	for _, e := range evs {
		if e.ev.Type == "response.function_call_arguments.done" {
			d := e.ev.AsResponseFunctionCallArgumentsDone()
			args[d.ItemID] = d.Arguments
		}
	}

	final := evs[len(evs)-1].ev.AsResponseCompleted().Response
	require.Equal(t, responses.ResponseStatusCompleted, final.Status)
	require.Equal(t, "6*7 is 42, 2^10 is 1024 and the sum is 1034.5.", final.OutputText())
	w := decodeWire(t, []byte(final.RawJSON()))
	require.Equal(t, wantTypes, w.types())
	type call struct{ CallID, Name, Arguments string }
	type result struct{ CallID, Output string }
	var calls []call
	var results []result
	for _, it := range w.Output {
		switch it.Type {
		case "function_call":
			require.Equal(t, it.Arguments, args[it.ID], "arguments.done must carry the item's arguments")
			calls = append(calls, call{it.CallID, it.Name, it.Arguments})
		case "function_call_output":
			results = append(results, result{it.CallID, it.Output})
		}
	}
	require.Equal(t, []call{
		{"call_mul", "calculator", `{"expression":"6*7"}`},
		{"call_pow", "calculator", `{"expression":"2^10"}`},
		{"call_add", "calculator", `{"expression":"1024 + 42 / 4"}`},
	}, calls)
	require.Equal(t, []result{{"call_mul", "42"}, {"call_pow", "1024"}, {"call_add", "1034.5"}}, results)

	require.Equal(t, int64(60), final.Usage.InputTokens)
	require.Equal(t, int64(18), final.Usage.OutputTokens)
	require.Equal(t, int64(78), final.Usage.TotalTokens)
	require.Equal(t, int64(4), final.Usage.InputTokensDetails.CachedTokens)

	// The model saw the calculator as a function and got the results back.
	reqs := g.fake.Requests()
	require.Len(t, reqs, 3)
	for _, r := range reqs {
		require.Len(t, r.Tools, 1)
		require.Equal(t, "function", r.Tools[0].Type)
		require.Equal(t, "calculator", r.Tools[0].Function.Name)
		require.NotEmpty(t, r.Tools[0].Function.Parameters)
	}
	toolMsgs := func(r fakellm.Request) map[string]string {
		m := map[string]string{}
		for _, msg := range r.Messages {
			if msg.Role == "tool" {
				m[msg.ToolCallID] = msg.Content.String()
			}
		}
		return m
	}
	require.Equal(t, map[string]string{"call_mul": "42", "call_pow": "1024"}, toolMsgs(reqs[1]))
	require.Equal(t, map[string]string{"call_mul": "42", "call_pow": "1024", "call_add": "1034.5"}, toolMsgs(reqs[2]))

	// The whole loop was stored.
	stored, err := g.client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	sw := validResponse(t, []byte(stored.RawJSON()))
	require.Equal(t, wantTypes, sw.types())
	require.Equal(t, 78, sw.Usage.TotalTokens)
}

func TestE2EAgenticLoopCalculatorNonStreaming(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_div", Name: "calculator", Arguments: `{"expression":"1/0"}`}}},
		fakellm.Turn{Text: "Division by zero is undefined."},
	), fnItems)
	status, _, raw := g.postJSON(`{"input":"What is 1/0?","tools":[{"type":"lambent:calculator"}]}`)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	w := validResponse(t, raw)
	require.Equal(t, "completed", w.Status)
	require.Equal(t, []string{"function_call", "function_call_output", "message"}, w.types())
	require.Equal(t, "call_div", w.Output[1].CallID)
	require.Contains(t, strings.ToLower(w.Output[1].Output), "zero", "a tool error is fed back to the model")
	require.Contains(t, string(raw), `"is_error":true`)
}

// In the default item mode a hosted tool's calls are mcp_call items
// (server_label "lambent") that the official SDK decodes, streaming and
// not, with OpenAI's mcp_call events; the model saw ordinary function calls.
func TestE2EHostedToolAsMCPCall(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			g := newGateway(t, fakellm.New(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{
					{ID: "call_mul", Name: "calculator", Arguments: `{"expression":"6*7"}`},
					{ID: "call_div", Name: "calculator", Arguments: `{"expression":"1/0"}`},
				}},
				fakellm.Turn{Text: "42, and 1/0 is undefined."},
			), nil)
			ctx := context.Background()
			params := textParams("Compute 6*7 and 1/0.")
			tools := option.WithJSONSet("tools", []map[string]any{{"type": "lambent:calculator"}})
			var final responses.Response
			if streaming {
				evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, params, tools))
				n := countTypes(evs)
				require.Equal(t, 2, n["response.mcp_call.in_progress"])
				require.Equal(t, 2, n["response.mcp_call_arguments.done"])
				require.Equal(t, 1, n["response.mcp_call.completed"])
				require.Equal(t, 1, n["response.mcp_call.failed"])
				require.Zero(t, n["response.function_call_arguments.done"])
				for _, e := range evs {
					if e.ev.Type == "response.mcp_call_arguments.done" {
						require.Contains(t, e.ev.AsResponseMcpCallArgumentsDone().Arguments, "expression")
					}
				}
				final = evs[len(evs)-1].ev.AsResponseCompleted().Response
			} else {
				r, err := g.client.Responses.New(ctx, params, tools)
				require.NoError(t, err)
				require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(r.RawJSON())))
				final = *r
			}
			require.Equal(t, responses.ResponseStatusCompleted, final.Status)
			require.Len(t, final.Output, 3)
			ok, failed := final.Output[0].AsMcpCall(), final.Output[1].AsMcpCall()
			require.Equal(t, "lambent", ok.ServerLabel)
			require.Equal(t, "calculator", ok.Name)
			require.Equal(t, "42", ok.Output)
			require.Equal(t, "completed", ok.Status)
			require.Equal(t, "failed", failed.Status)
			require.Equal(t, "mcp_tool_execution_error", failed.Error.Type)
			require.Equal(t, "42, and 1/0 is undefined.", final.OutputText())
			require.Len(t, final.Tools, 1)
			require.Equal(t, "lambent", final.Tools[0].AsMcp().ServerLabel)

			got, err := g.client.Responses.Get(ctx, final.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
			require.NoError(t, ssecheck.CheckOpenAIResponse([]byte(got.RawJSON())))
			require.Equal(t, ok.ID, got.Output[0].AsMcpCall().ID)

			// The model saw its turn as it made it — one assistant message
			// with both calls under the ids it issued, then both results,
			// the failure marked as an error.
			reqs := g.fake.Requests()
			require.Len(t, reqs, 2)
			var roles []string
			tool := map[string]string{}
			for _, m := range reqs[1].Messages {
				roles = append(roles, m.Role)
				if m.Role == "tool" {
					tool[m.ToolCallID] = m.Content.String()
				}
			}
			require.Equal(t, []string{"user", "assistant", "tool", "tool"}, roles)
			require.Len(t, reqs[1].Messages[1].ToolCalls, 2)
			require.Equal(t, "call_mul", reqs[1].Messages[1].ToolCalls[0].ID)
			require.Equal(t, "call_div", reqs[1].Messages[1].ToolCalls[1].ID)
			require.Equal(t, "42", tool["call_mul"])
			require.True(t, strings.HasPrefix(tool["call_div"], "Error: "), tool["call_div"])
			require.Contains(t, strings.ToLower(tool["call_div"]), "zero")
		})
	}
}

// ---------------------------------------------------------------------------
// requires_action round trips with a client function tool.

func weatherTool() responses.ToolUnionParam {
	return responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
		Name:        "get_weather",
		Description: openai.String("Current weather in a city"),
		Parameters: map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"city": map[string]any{"type": "string"}},
			"required":             []string{"city"},
			"additionalProperties": false,
		},
		Strict: openai.Bool(true),
	}}
}

func functionOutput(callID, output string) responses.ResponseInputItemUnionParam {
	item := responses.ResponseInputItemParamOfFunctionCallOutput(output)
	item.OfFunctionCallOutput.CallID = openai.String(callID)
	return item
}

func TestE2ERequiresActionRoundTrip(t *testing.T) {
	t.Parallel()
	for _, streaming := range []bool{false, true} {
		name := "non-streaming"
		if streaming {
			name = "streaming"
		}
		t.Run(name, func(t *testing.T) {
			g := newGateway(t, fakellm.New(
				fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_w1", Name: "get_weather", Arguments: `{"city":"Paris"}`}},
					Usage: fakellm.Usage{PromptTokens: 15, CompletionTokens: 4}},
				fakellm.Turn{Text: "It is sunny in Paris, 22°C.", Usage: fakellm.Usage{PromptTokens: 25, CompletionTokens: 9}},
			), nil)
			ctx := context.Background()

			p1 := textParams("What's the weather in Paris?")
			p1.Tools = []responses.ToolUnionParam{weatherTool()}
			var paused responses.Response
			if streaming {
				evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, p1))
				last := evs[len(evs)-1]
				require.Equal(t, "response.completed", last.ev.Type, "a client-tool pause ends with response.completed")
				paused = last.ev.AsResponseCompleted().Response

				// The SDK's response accumulator accepts the whole stream,
				// including the terminal response.completed carrying the pause.
				var acc responses.ResponseAccumulator
				for _, e := range evs {
					var sev responses.ResponsesServerEventUnion
					require.NoError(t, json.Unmarshal(e.raw, &sev))
					require.NoErrorf(t, acc.AddEvent(sev), "accumulator rejected %s", e.ev.Type)
				}
				snap := acc.Snapshot()
				require.Equal(t, "response.completed", snap.TerminalEvent)
				require.Equal(t, paused.ID, snap.ResponseID)
				require.Len(t, snap.Output, 1)
				require.Equal(t, "function_call", snap.Output[0].Type)
				require.Equal(t, "call_w1", snap.Output[0].CallID)
				require.Equal(t, `{"city":"Paris"}`, snap.Output[0].Arguments)
				rec, err := acc.ReconstructedResponse()
				require.NoError(t, err)
				require.Equal(t, responses.ResponseStatus("requires_action"), rec.Status)
			} else {
				r, err := g.client.Responses.New(ctx, p1)
				require.NoError(t, err)
				paused = *r
			}
			pw := validResponse(t, []byte(paused.RawJSON()))
			require.Equal(t, responses.ResponseStatus("requires_action"), paused.Status)
			require.Equal(t, []string{"function_call"}, pw.types())
			require.Equal(t, "call_w1", pw.Output[0].CallID)
			require.Equal(t, "get_weather", pw.Output[0].Name)
			require.Equal(t, `{"city":"Paris"}`, pw.Output[0].Arguments)
			require.Equal(t, int64(19), paused.Usage.TotalTokens)

			// The pause is stored.
			stored, err := g.client.Responses.Get(ctx, paused.ID, responses.ResponseGetParams{})
			require.NoError(t, err)
			require.Equal(t, responses.ResponseStatus("requires_action"), stored.Status)

			// An output for a call the previous response never made is a 400.
			bad := responses.ResponseNewParams{
				PreviousResponseID: openai.String(paused.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput("call_nope", "rain")}},
				Tools:              []responses.ToolUnionParam{weatherTool()},
			}
			if streaming {
				stream := g.client.Responses.NewStreaming(ctx, bad)
				require.False(t, stream.Next())
				wantAPIError(t, stream.Err(), http.StatusBadRequest)
				require.NoError(t, stream.Close())
			} else {
				_, err = g.client.Responses.New(ctx, bad)
				apiErr := wantAPIError(t, err, http.StatusBadRequest)
				require.Equal(t, "input[0].call_id", apiErr.Param)
			}
			require.Equal(t, 1, g.fake.Calls(), "a rejected continuation must not call the model")

			// The continuation with the right call_id completes the answer.
			cont := responses.ResponseNewParams{
				PreviousResponseID: openai.String(paused.ID),
				Input:              responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{functionOutput("call_w1", `{"sky":"sunny","celsius":22}`)}},
				Tools:              []responses.ToolUnionParam{weatherTool()},
			}
			var done responses.Response
			if streaming {
				evs := readSDKStream(t, g.client.Responses.NewStreaming(ctx, cont))
				done = evs[len(evs)-1].ev.AsResponseCompleted().Response
			} else {
				r, err := g.client.Responses.New(ctx, cont)
				require.NoError(t, err)
				done = *r
			}
			dw := validResponse(t, []byte(done.RawJSON()))
			require.Equal(t, responses.ResponseStatusCompleted, done.Status)
			require.Equal(t, "It is sunny in Paris, 22°C.", done.OutputText())
			require.Equal(t, []string{"message"}, dw.types())
			require.Equal(t, paused.ID, *dw.PreviousResponseID)

			reqs := g.fake.Requests()
			require.Len(t, reqs, 2)
			msgs := reqs[1].Messages
			require.Len(t, msgs, 3)
			require.Equal(t, "user", msgs[0].Role)
			require.Equal(t, "assistant", msgs[1].Role)
			require.Len(t, msgs[1].ToolCalls, 1)
			require.Equal(t, chatwire.ToolCall{ID: "call_w1", Type: "function",
				Function: chatwire.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}, msgs[1].ToolCalls[0])
			require.Equal(t, "tool", msgs[2].Role)
			require.Equal(t, "call_w1", msgs[2].ToolCallID)
			require.Equal(t, `{"sky":"sunny","celsius":22}`, msgs[2].Content.String())
		})
	}
}

// ---------------------------------------------------------------------------
// Errors over HTTP.

func TestE2EBadRequests(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), nil)
	cases := []struct {
		name        string
		contentType string
		body        string
		status      int
		param, code string
	}{
		{"invalid JSON", "application/json", `{"input":`, 400, "", ""},
		{"not an object", "application/json", `["hi"]`, 400, "", ""},
		{"input number", "application/json", `{"input":42}`, 400, "input", ""},
		{"tools object", "application/json", `{"input":"hi","tools":{}}`, 400, "tools", ""},
		{"empty input string", "application/json", `{"input":""}`, 400, "input", ""},
		{"empty input list", "application/json", `{"input":[]}`, 400, "input", ""},
		{"missing input", "application/json", `{"model":"m"}`, 400, "input", ""},
		{"unknown tool_choice", "application/json", `{"input":"hi","tool_choice":"sometimes"}`, 400, "tool_choice", ""},
		{"forced tool not in tools", "application/json",
			`{"input":"hi","tools":[{"type":"function","name":"a","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"b"}}`, 400, "", ""},
		{"unknown item type", "application/json", `{"input":[{"type":"bogus_item"}]}`, 400, "", ""},
		{"unknown top-level parameter", "application/json", `{"input":"hi","frobnicate":true}`, 400, "frobnicate", "unknown_parameter"},
		{"unknown hosted tool", "application/json", `{"input":"hi","tools":[{"type":"lambent:nope"}]}`, 400, "", ""},
		{"text/plain", "text/plain", `{"input":"hi"}`, 415, "", ""},
		{"form", "application/x-www-form-urlencoded", `input=hi`, 415, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := g.do(http.MethodPost, "/v1/responses", c.contentType, c.body)
			wantError(t, status, body, c.status, c.param, c.code)
			if c.name == "unknown top-level parameter" {
				require.Contains(t, string(body), "frobnicate")
			}
			if c.name == "unknown item type" {
				require.Contains(t, string(body), `"param":"input[0]`)
			}
			if c.name == "forced tool not in tools" {
				require.Contains(t, string(body), `"param":"tool_choice`)
			}
		})
	}
	require.Equal(t, 0, g.fake.Calls(), "bad requests must never reach the model")

	t.Run("sdk sees the 400", func(t *testing.T) {
		_, err := g.client.Responses.New(context.Background(), textParams("hi"), option.WithJSONSet("frobnicate", 1))
		apiErr := wantAPIError(t, err, http.StatusBadRequest)
		require.Equal(t, "frobnicate", apiErr.Param)
	})

	t.Run("unknown id", func(t *testing.T) {
		status, _, body := g.do(http.MethodGet, "/v1/responses/resp_doesnotexist", "", "")
		wantError(t, status, body, http.StatusNotFound, "", "")
		_, err := g.client.Responses.Get(context.Background(), "resp_doesnotexist", responses.ResponseGetParams{})
		wantAPIError(t, err, http.StatusNotFound)
	})

	t.Run("unknown previous_response_id", func(t *testing.T) {
		status, _, body := g.postJSON(`{"input":"hi","previous_response_id":"resp_doesnotexist"}`)
		wantError(t, status, body, http.StatusNotFound, "previous_response_id", "previous_response_not_found")
		p := textParams("hi")
		p.PreviousResponseID = openai.String("resp_doesnotexist")
		_, err := g.client.Responses.New(context.Background(), p)
		apiErr := wantAPIError(t, err, http.StatusNotFound)
		require.Equal(t, "previous_response_not_found", apiErr.Code)
	})

	t.Run("unknown route", func(t *testing.T) {
		status, _, body := g.do(http.MethodGet, "/v1/nothing", "", "")
		wantError(t, status, body, http.StatusNotFound, "", "")
		status, _, body = g.do(http.MethodPut, "/v1/responses", "application/json", `{}`)
		wantError(t, status, body, http.StatusMethodNotAllowed, "", "")
	})
	require.Equal(t, 0, g.fake.Calls(), "bad requests must never reach the model")
}

func TestE2EBodyLimit(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "small enough"}), map[string]string{"LAMBENT_MAX_BODY": "1024"})
	big := `{"input":"` + strings.Repeat("a", 2048) + `"}`
	status, _, body := g.postJSON(big)
	wantError(t, status, body, http.StatusRequestEntityTooLarge, "", "")
	// Chunked (no Content-Length) bodies are limited too.
	req, err := http.NewRequest(http.MethodPost, g.srv.URL+"/v1/responses", io.MultiReader(strings.NewReader(big)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := g.http.Do(req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	wantError(t, res.StatusCode, b, http.StatusRequestEntityTooLarge, "", "")
	require.Equal(t, 0, g.fake.Calls())
	// A body under the limit still works.
	status, _, body = g.postJSON(`{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
}

func TestE2ECancelNonBackground(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "done"}), nil)
	ctx := context.Background()
	r, err := g.client.Responses.New(ctx, textParams("hi"))
	require.NoError(t, err)
	status, _, body := g.do(http.MethodPost, "/v1/responses/"+r.ID+"/cancel", "", "")
	wantError(t, status, body, http.StatusBadRequest, "", "")
	_, err = g.client.Responses.Cancel(ctx, r.ID)
	wantAPIError(t, err, http.StatusBadRequest)
	status, _, body = g.do(http.MethodPost, "/v1/responses/resp_doesnotexist/cancel", "", "")
	wantError(t, status, body, http.StatusNotFound, "", "")
	// The response is untouched.
	got, err := g.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, got.Status)
}

func TestE2EUpstreamErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		turn   fakellm.Turn
		status int
	}{
		{"upstream 500", fakellm.Turn{Status: http.StatusInternalServerError, ErrorMessage: "the model crashed"}, http.StatusBadGateway},
		{"upstream 503", fakellm.Turn{Status: http.StatusServiceUnavailable}, http.StatusServiceUnavailable},
		{"upstream 429", fakellm.Turn{Status: http.StatusTooManyRequests, ErrorMessage: "slow down"}, http.StatusTooManyRequests},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGateway(t, fakellm.New(c.turn, c.turn), nil)
			status, _, body := g.postJSON(`{"input":"hi"}`)
			wantError(t, status, body, c.status, "", "")
			_, err := g.client.Responses.New(context.Background(), textParams("hi"))
			wantAPIError(t, err, c.status)
			require.Equal(t, 2, g.fake.Calls(), "no retries inside the gateway")
		})
	}

	// A stream the provider refuses before it began gets the HTTP error of
	// the request without streaming.
	t.Run("upstream 500 while streaming", func(t *testing.T) {
		g := newGateway(t, fakellm.New(fakellm.Turn{Status: http.StatusInternalServerError}), nil)
		status, _, body := g.postJSON(`{"input":"hi","stream":true}`)
		wantError(t, status, body, http.StatusBadGateway, "", "")
		id := regexp.MustCompile(`\(response (resp_\w+) failed\)`).FindSubmatch(body)
		require.Len(t, id, 2, "%s", body)
		// The failed response is stored with its error.
		status, _, body = g.do(http.MethodGet, "/v1/responses/"+string(id[1]), "", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		validResponse(t, body)
		var r struct {
			Status string `json:"status"`
			Error  *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Equal(t, "failed", r.Status)
		require.NotNil(t, r.Error)
		require.NotEmpty(t, r.Error.Message)
	})
}

// ---------------------------------------------------------------------------
// A client that goes away mid-stream.

func TestE2EClientDisconnectMidStream(t *testing.T) {
	t.Parallel()
	block := make(chan struct{}) // never released: the model call hangs until the client leaves
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "never sent", Block: block, HoldAfterChunks: 1}), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream := g.client.Responses.NewStreaming(ctx, textParams("hang on"))
	require.True(t, stream.Next(), "%v", stream.Err())
	require.Equal(t, "response.created", stream.Current().Type)
	id := stream.Current().AsResponseCreated().Response.ID
	// Wait until the gateway's model call is in flight, then hang up.
	deadline := time.Now().Add(10 * time.Second)
	for g.fake.Calls() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 1, g.fake.Calls())
	cancel()
	for stream.Next() {
	}
	require.Error(t, stream.Err())
	require.NoError(t, stream.Close())

	// The response ends as cancelled and is stored as such.
	var status string
	for time.Now().Before(deadline) {
		code, _, body := g.do(http.MethodGet, "/v1/responses/"+id, "", "")
		if code == http.StatusOK {
			w := validResponse(t, body)
			if status = w.Status; status != "in_progress" {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.Equal(t, "cancelled", status)
}

// TestE2EQuotaErrorNotRetried: the model provider's account out of quota
// (OpenAI's 429 insufficient_quota) is a 502 that tells the official SDKs
// not to retry it (x-should-retry: false), which they otherwise do for any
// 5xx: two more calls that fail the same way.
func TestE2EQuotaErrorNotRetried(t *testing.T) {
	t.Parallel()
	quota := fakellm.Turn{Status: http.StatusTooManyRequests, ErrorType: "insufficient_quota", ErrorCode: "insufficient_quota",
		ErrorMessage: "You exceeded your current quota, please check your plan and billing details."}
	g := newGateway(t, fakellm.New(quota, quota, quota, quota), nil)
	status, hdr, body := g.postJSON(`{"input":"hi"}`)
	wantError(t, status, body, http.StatusBadGateway, "-", "upstream_error")
	require.Equal(t, "false", hdr.Get("x-should-retry"))
	require.NotContains(t, string(body), "Please retry", "no retry helps")

	retrying := openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithHTTPClient(g.srv.Client()))
	_, err := retrying.Responses.New(t.Context(), textParams("hi"))
	wantAPIError(t, err, http.StatusBadGateway)
	require.Equal(t, 2, g.fake.Calls(), "the SDK's create called the model once")
}

// Nor does a retry cure the provider refusing the gateway's own
// credentials (401, 403): the same x-should-retry: false, so the SDKs do
// not call again (they retried the 502 twice).
func TestE2ECredentialsErrorNotRetried(t *testing.T) {
	t.Parallel()
	for _, st := range []int{http.StatusUnauthorized, http.StatusForbidden} {
		denied := fakellm.Turn{Status: st, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided: sk-abc***xyz."}
		g := newGateway(t, fakellm.New(denied, denied, denied), nil)
		retrying := openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithHTTPClient(g.srv.Client()))
		_, err := retrying.Responses.New(t.Context(), textParams("hi"))
		wantAPIError(t, err, http.StatusBadGateway)
		require.Equal(t, 1, g.fake.Calls(), "HTTP %d: the SDK's create called the model once", st)
	}
}
