// Package fakellm is a scripted fake OpenAI Chat Completions backend for
// tests and benchmarks.
//
// A [Server] is a real HTTP server (net/http/httptest) that speaks the wire
// protocol of POST /v1/chat/completions as OpenAI does: a JSON
// "chat.completion" object, or with "stream": true a text/event-stream of
// "chat.completion.chunk" objects ending with "data: [DONE]". Replies come
// from a script of [Turn] values, served one per request in order ([New]),
// or from a function computed per request ([NewHandler]). Every request is
// decoded and recorded for assertions ([Server.Requests]).
//
// It does no per-request sleeping and writes each SSE chunk in one Write
// followed by a Flush, so a benchmark against it measures the client, not
// the fake.
package fakellm

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Path is the route the fake serves, relative to the server root.
const Path = "/v1/chat/completions"

// SystemFingerprint is the system_fingerprint of every reply.
const SystemFingerprint = "fp_fakellm"

// Server is a running fake Chat Completions backend. Create it with [New]
// or [NewHandler] and release it with [Server.Close]. Its methods are safe
// for concurrent use.
type Server struct {
	// URL is the base URL of the API including "/v1", as OpenAI clients
	// expect it (for example "http://127.0.0.1:40123/v1").
	URL string

	ts      *httptest.Server
	script  func(Request) Turn // NewHandler; nil for a fixed script
	turns   []Turn
	closing chan struct{}
	closed  sync.Once
	noRec   atomic.Bool
	ids     atomic.Uint64 // completion, tool call and request id counter
	idBase  string        // random per server, keeps ids distinct across servers

	mu    sync.Mutex
	calls int
	reqs  []Request
}

// New starts a fake whose replies are turns, served in order, one per
// request. A request beyond the script gets a 500 with an OpenAI error body
// saying the script is exhausted, so a test making an unexpected model call
// fails loudly.
func New(turns ...Turn) *Server {
	s := &Server{turns: slices.Clone(turns)}
	s.start()
	return s
}

// NewHandler starts a fake that computes each reply with fn, called once per
// request with the decoded request. fn runs concurrently for concurrent
// requests and must not modify the request's slices.
func NewHandler(fn func(req Request) Turn) *Server {
	if fn == nil {
		panic("fakellm: NewHandler with nil function")
	}
	s := &Server{script: fn}
	s.start()
	return s
}

func (s *Server) start() {
	s.closing = make(chan struct{})
	s.idBase = strconv.FormatUint(rand.Uint64()|1<<63, 36)[:8]
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	s.URL = s.ts.URL + "/v1"
}

// Close releases requests held by [Turn.Block] (they get a 503), then shuts
// the server down, waiting for outstanding requests to finish.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.closing) })
	s.ts.Close()
}

// Client returns an HTTP client for the server whose idle connections are
// closed by [Server.Close]. Using it keeps goroutine-leak checks quiet.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Requests returns every accepted Chat Completions request so far, decoded,
// in arrival order (requests rejected with a 4xx before decoding are not
// included). The slice is a copy; the requests share memory with the ones
// the script saw and must not be modified.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Calls returns the number of accepted Chat Completions requests so far,
// including those that exhausted the script; it keeps counting when
// recording is off.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// SetRecording turns recording of requests for [Server.Requests] on (the
// default) or off. Benchmarks making many calls turn it off so memory stays
// flat.
func (s *Server) SetRecording(on bool) { s.noRec.Store(!on) }

// next records req and picks its turn.
func (s *Server) next(req *Request) (Turn, bool) {
	s.mu.Lock()
	req.Seq = s.calls
	s.calls++
	if !s.noRec.Load() {
		s.reqs = append(s.reqs, *req)
	}
	s.mu.Unlock()
	if s.script != nil {
		return s.script(*req), true
	}
	if req.Seq < len(s.turns) {
		return s.turns[req.Seq], true
	}
	return Turn{}, false
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 1<<20 {
		return
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != Path {
		writeError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", "", "")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed for "+Path, "invalid_request_error", "", "")
		return
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Unsupported content type: %q. This API method only accepts 'application/json' requests.", ct), "invalid_request_error", "", "")
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Could not read the request body: "+err.Error(), "invalid_request_error", "", "")
		return
	}
	var req Request
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error(), "invalid_request_error", "", "")
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", "model", "")
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "[] is too short - 'messages'", "invalid_request_error", "messages", "")
		return
	}
	req.Body = body
	req.Authorization = r.Header.Get("Authorization")

	turn, ok := s.next(&req)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakellm: script exhausted: request #%d received but only %d turns were scripted", req.Seq+1, len(s.turns)), "server_error", "", "")
		return
	}
	if turn.Block != nil {
		select {
		case <-turn.Block:
		case <-r.Context().Done():
			return
		case <-s.closing:
			writeError(w, http.StatusServiceUnavailable, "fakellm: server closed while the request was blocked", "server_error", "", "")
			return
		}
	}
	if turn.Status != 0 && turn.Status != http.StatusOK {
		typ, code := errorKind(turn.Status)
		if turn.ErrorType != "" {
			typ = turn.ErrorType
		}
		if turn.ErrorCode != "" {
			code = turn.ErrorCode
		}
		msg := turn.ErrorMessage
		if msg == "" {
			msg = fmt.Sprintf("fakellm: scripted error %d %s", turn.Status, http.StatusText(turn.Status))
		}
		writeError(w, turn.Status, msg, typ, "", code)
		return
	}

	n := s.ids.Add(1)
	r2 := reply{
		turn:    &turn,
		req:     &req,
		id:      "chatcmpl-" + s.idBase + strconv.FormatUint(n, 36),
		created: time.Now().Unix(),
		server:  s,
	}
	w.Header().Set("X-Request-Id", "req_"+s.idBase+strconv.FormatUint(n, 36))
	if req.Stream {
		r2.stream(w)
	} else {
		r2.complete(w)
	}
}

func isJSON(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/json")
}

func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > 0 && r.ContentLength < 64<<20 {
		b := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(r.Body)
}

func writeError(w http.ResponseWriter, status int, message, typ, param, code string) {
	bp := getBuf()
	b := appendError(*bp, message, typ, param, code)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
	*bp = b
	putBuf(bp)
}

// reply writes one successful answer.
type reply struct {
	turn    *Turn
	req     *Request
	id      string
	created int64
	server  *Server
}

func (r *reply) finishReason() string {
	switch {
	case r.turn.FinishReason != "":
		return r.turn.FinishReason
	case len(r.turn.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func (r *reply) callID(i int) string {
	if id := r.turn.ToolCalls[i].ID; id != "" {
		return id
	}
	return "call_" + r.server.idBase + strconv.FormatUint(r.server.ids.Add(1), 36)
}

// head appends the fields every object starts with, up to `"choices":[`.
func (r *reply) head(b []byte, object string) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, r.id)
	b = append(b, `,"object":"`...)
	b = append(b, object...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, r.created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, r.req.Model)
	b = append(b, `,"service_tier":"default","system_fingerprint":"`+SystemFingerprint+`","choices":[`...)
	return b
}

// complete writes a non-streaming chat.completion.
func (r *reply) complete(w http.ResponseWriter) {
	t := r.turn
	bp := getBuf()
	defer putBuf(bp)
	b := r.head(*bp, "chat.completion")
	b = append(b, `{"index":0,"message":{"role":"assistant","content":`...)
	if t.Text == "" && (len(t.ToolCalls) > 0 || t.Refusal != "") {
		b = append(b, "null"...)
	} else {
		b = appendString(b, t.Text)
	}
	b = append(b, `,"refusal":`...)
	b = appendNullableString(b, t.Refusal)
	if t.Reasoning != "" {
		b = append(b, `,"reasoning_content":`...)
		b = appendString(b, t.Reasoning)
	}
	if len(t.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range t.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = appendString(b, r.callID(i))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, c.Name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, c.Arguments)
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `,"annotations":[]},"logprobs":null,"finish_reason":`...)
	b = appendString(b, r.finishReason())
	b = append(b, `}],"usage":`...)
	b = appendUsage(b, t.Usage)
	b = append(b, "}\n"...)
	*bp = b

	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// sse writes the chunks of one stream.
type sse struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       []byte
	prefix    []byte // "data: " and the chunk head up to `"choices":[`
	usageNull bool   // include_usage: every chunk but the last has "usage":null
	n         int    // chunks written
	cut       int
	failed    bool
}

// begin starts a chunk with one choice, up to its `"delta":`.
func (e *sse) begin() []byte {
	b := append(e.buf[:0], e.prefix...)
	return append(b, `{"index":0,"delta":`...)
}

// end closes a chunk begun with begin and writes it.
func (e *sse) end(b []byte, finish string) bool {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	b = appendNullableString(b, finish)
	b = append(b, "}]"...)
	if e.usageNull {
		b = append(b, `,"usage":null`...)
	}
	b = append(b, "}\n\n"...)
	return e.write(b)
}

// write sends one chunk in one Write, flushes it, and cuts the connection
// when the turn says so.
func (e *sse) write(b []byte) bool {
	e.buf = b
	if e.failed {
		return false
	}
	if _, err := e.w.Write(b); err != nil {
		e.failed = true
		return false
	}
	if err := e.rc.Flush(); err != nil {
		e.failed = true
		return false
	}
	e.n++
	if e.cut > 0 && e.n >= e.cut {
		// Abort: net/http closes the connection without ending the chunked
		// body, so the client reads an unexpected EOF mid-stream.
		panic(http.ErrAbortHandler)
	}
	return true
}

// text streams the deltas of one text field ("content", "refusal",
// "reasoning_content").
func (e *sse) text(field, s string, n int) bool {
	for p := range split(s, n) {
		b := e.begin()
		b = append(b, `{"`...)
		b = append(b, field...)
		b = append(b, `":`...)
		b = appendString(b, p)
		b = append(b, '}')
		if !e.end(b, "") {
			return false
		}
	}
	return true
}

// appendToolStart appends the first delta of a tool call: index, id, type,
// name and empty arguments.
func appendToolStart(b []byte, index int, id, name string) []byte {
	b = append(b, `[{"index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(b, `,"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendString(b, name)
	return append(b, `,"arguments":""}}]`...)
}

// stream writes a text/event-stream of chat.completion.chunk objects.
func (r *reply) stream(w http.ResponseWriter) {
	t := r.turn
	bp := getBuf()
	pp := getBuf()
	defer func() { putBuf(bp); putBuf(pp) }()
	prefix := append((*pp)[:0], "data: "...)
	prefix = r.head(prefix, "chat.completion.chunk")
	*pp = prefix
	e := &sse{
		w:         w,
		rc:        http.NewResponseController(w),
		buf:       *bp,
		prefix:    prefix,
		usageNull: r.req.IncludeUsage(),
		cut:       t.CutAfterChunks,
	}
	defer func() { *bp = e.buf }()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	// The first chunk carries the role. When the reply is only tool calls it
	// also carries the first call's first delta, as OpenAI does.
	toolsOnly := t.Text == "" && t.Reasoning == "" && t.Refusal == "" && len(t.ToolCalls) > 0
	b := e.begin()
	b = append(b, `{"role":"assistant","content":`...)
	if t.Text == "" && (len(t.ToolCalls) > 0 || t.Refusal != "") {
		b = append(b, "null"...)
	} else {
		b = append(b, `""`...)
	}
	firstCall := 0
	if toolsOnly {
		b = append(b, `,"tool_calls":`...)
		b = appendToolStart(b, 0, r.callID(0), t.ToolCalls[0].Name)
		firstCall = 1
	}
	b = append(b, `,"refusal":null}`...)
	if !e.end(b, "") {
		return
	}

	if !e.text("reasoning_content", t.Reasoning, t.Chunks) ||
		!e.text("refusal", t.Refusal, t.Chunks) ||
		!e.text("content", t.Text, t.Chunks) {
		return
	}
	for i, c := range t.ToolCalls {
		if i >= firstCall {
			b := e.begin()
			b = append(b, `{"tool_calls":`...)
			b = appendToolStart(b, i, r.callID(i), c.Name)
			b = append(b, '}')
			if !e.end(b, "") {
				return
			}
		}
		for p := range splitArguments(c.Arguments, t.Chunks) {
			b := e.begin()
			b = append(b, `{"tool_calls":[{"index":`...)
			b = strconv.AppendInt(b, int64(i), 10)
			b = append(b, `,"function":{"arguments":`...)
			b = appendString(b, p)
			b = append(b, "}}]}"...)
			if !e.end(b, "") {
				return
			}
		}
	}
	b = e.begin()
	b = append(b, "{}"...)
	if !e.end(b, r.finishReason()) {
		return
	}
	if e.usageNull {
		b = append(e.buf[:0], e.prefix...)
		b = append(b, `],"usage":`...)
		b = appendUsage(b, t.Usage)
		b = append(b, "}\n\n"...)
		if !e.write(b) {
			return
		}
	}
	if e.cut > 0 {
		panic(http.ErrAbortHandler) // fewer chunks than CutAfterChunks: cut before [DONE]
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err == nil {
		_ = e.rc.Flush()
	}
}
