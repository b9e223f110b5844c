// Package fakellm is a scripted fake OpenAI Chat Completions backend for
// tests and benchmarks.
//
// A [Server] is a real HTTP server (net/http/httptest) that speaks the wire
// protocol of POST /v1/chat/completions as OpenAI does: a JSON
// "chat.completion" object, or with "stream": true a text/event-stream of
// "chat.completion.chunk" objects ending with "data: [DONE]". Replies come
// from a script of [Turn] values, served one per request in order ([New]),
// or from a function computed per request ([NewHandler]). Every request is
// decoded, checked as strictly as the real provider checks it ([Rules]:
// OpenAI's by default, Mistral's on demand), and recorded for assertions
// ([Server.Requests]); a request the provider would refuse gets its 400.
//
// It does no per-request sleeping and writes each SSE chunk in one Write
// followed by a Flush, so a benchmark against it measures the client, not
// the fake.
package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/scripted"
	"github.com/lambent/lambent/internal/testing/textsplit"
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
	log     *scripted.Log[Request, Turn]
	closing chan struct{}
	closed  sync.Once
	ids     atomic.Uint64 // completion, tool call and request id counter
	idBase  string        // random per server, keeps ids distinct across servers
	rules   atomic.Pointer[Rules]
}

// New starts a fake whose replies are turns, served in order, one per
// request. A request beyond the script gets a 500 with an OpenAI error body
// saying the script is exhausted, so a test making an unexpected model call
// fails loudly.
func New(turns ...Turn) *Server {
	s := &Server{log: scripted.Turns[Request](turns)}
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
	s := &Server{log: scripted.Func(fn)}
	s.start()
	return s
}

func (s *Server) start() {
	s.closing = make(chan struct{})
	s.rules.Store(&Rules{})
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
// in arrival order (requests refused with a 4xx, malformed or breaking
// the [Rules], are not included). The slice is a copy; the requests share memory with the ones
// the script saw and must not be modified.
func (s *Server) Requests() []Request {
	return s.log.Requests()
}

// Calls returns the number of accepted Chat Completions requests so far,
// including those that exhausted the script; it keeps counting when
// recording is off.
func (s *Server) Calls() int {
	return s.log.Calls()
}

// SetRules replaces the rules every request is checked against (the
// default, zero, Rules are OpenAI's). Call it before the first request.
func (s *Server) SetRules(r Rules) { s.rules.Store(&r) }

// SetRecording turns recording of requests for [Server.Requests] on (the
// default) or off. Benchmarks making many calls turn it off so memory stays
// flat.
func (s *Server) SetRecording(on bool) { s.log.SetRecording(on) }

// next records req and picks its turn.
func (s *Server) next(req *Request) (Turn, bool) {
	return s.log.Next(req, func(r *Request, seq int) { r.Seq = seq })
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
	if f := s.rules.Load().Check(&req.Request); f != nil {
		f.Write(w)
		return
	}
	req.Body = body
	req.Authorization = r.Header.Get("Authorization")

	turn, ok := s.next(&req)
	if !ok {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("fakellm: script exhausted: request #%d received but only %d turns were scripted", req.Seq+1, s.log.Len()), "server_error", "", "")
		return
	}
	if turn.HoldAfterChunks == 0 {
		if err := s.wait(r.Context(), &turn); err != nil {
			if errors.Is(err, errClosed) {
				writeError(w, http.StatusServiceUnavailable, "fakellm: server closed while the request was blocked", "server_error", "", "")
			}
			return
		}
	}
	for k, v := range turn.Header {
		w.Header()[http.CanonicalHeaderKey(k)] = v
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
		r2.stream(r.Context(), w)
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

// writeError writes an OpenAI error body; empty param and code are null.
func writeError(w http.ResponseWriter, status int, message, typ, param, code string) {
	e := chatwire.Error{Message: message, Type: typ}
	if param != "" {
		e.Param = param
	}
	if code != "" {
		e.Code = code
	}
	writeJSON(w, status, chatwire.ErrorBody{Error: e})
}

// errorKind returns the error type and code OpenAI uses for an HTTP status.
func errorKind(status int) (typ, code string) {
	switch {
	case status == http.StatusUnauthorized:
		return "invalid_request_error", "invalid_api_key"
	case status == http.StatusForbidden:
		return "permission_error", ""
	case status == http.StatusNotFound:
		return "invalid_request_error", "model_not_found"
	case status == http.StatusTooManyRequests:
		return "requests", "rate_limit_exceeded"
	case status >= 500:
		return "server_error", ""
	default:
		return "invalid_request_error", ""
	}
}

// writeJSON writes v as a JSON body with a trailing newline.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "fakellm: encoding the reply: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b = append(b, '\n')
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// optional is s, or nil (null) when s is empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
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

// head is a reply's envelope, without choices.
func (r *reply) head(object string) chatwire.Completion {
	return chatwire.Completion{
		ID:                r.id,
		Object:            object,
		Created:           r.created,
		Model:             r.req.Model,
		ServiceTier:       "default",
		SystemFingerprint: SystemFingerprint,
	}
}

// contentNull reports whether the message content is null rather than a
// string: an empty text next to tool calls or a refusal.
func (r *reply) contentNull() bool {
	t := r.turn
	return t.Text == "" && (len(t.ToolCalls) > 0 || t.Refusal != "")
}

// toolCall is the i-th call of the turn with its id; args is its arguments
// (in a stream, the first, empty, fragment).
func (r *reply) toolCall(i int, args string) chatwire.ToolCall {
	return chatwire.ToolCall{ID: r.callID(i), Type: "function",
		Function: chatwire.FunctionCall{Name: r.turn.ToolCalls[i].Name, Arguments: chatwire.Arguments(args)}}
}

// complete writes a non-streaming chat.completion.
func (r *reply) complete(w http.ResponseWriter) {
	t := r.turn
	msg := &chatwire.ResponseMessage{
		Role:             "assistant",
		Refusal:          optional(t.Refusal),
		ReasoningContent: t.Reasoning,
		Annotations:      []json.RawMessage{},
	}
	if !r.contentNull() {
		msg.Content = &chatwire.Answer{Text: t.Text}
	}
	for i, c := range t.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, r.toolCall(i, c.Arguments))
	}
	c := r.head("chat.completion")
	c.Choices = []chatwire.Choice{{Message: msg, FinishReason: optional(r.finishReason())}}
	c.Usage = t.Usage.wire()
	writeJSON(w, http.StatusOK, &c)
}

// sse writes the chunks of one stream.
type sse struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	buf       bytes.Buffer
	enc       *json.Encoder // writes to buf
	head      chatwire.Completion
	usageNull bool // include_usage: every chunk but the last has "usage":null
	n         int  // chunks written
	cut       int
	// hold, when set, holds the stream after holdAt chunks
	// (Turn.HoldAfterChunks); false ends it (written nothing more).
	hold   func() bool
	holdAt int
	failed bool
}

// nullUsage is a chunk with "usage":null, as OpenAI sends every chunk but
// the last when stream_options.include_usage is set.
type nullUsage struct {
	*chatwire.Completion
	Usage *chatwire.Usage `json:"usage"`
}

// delta writes a chunk with one choice.
func (e *sse) delta(d *chatwire.Delta, finish string) bool {
	c := e.head
	c.Choices = []chatwire.Choice{{Delta: d, FinishReason: optional(finish)}}
	return e.write(&c)
}

// write sends one chunk in one Write, flushes it, and cuts the connection
// when the turn says so.
func (e *sse) write(c *chatwire.Completion) bool {
	if e.failed {
		return false
	}
	var v any = c
	if e.usageNull && c.Usage == nil {
		v = nullUsage{Completion: c}
	}
	e.buf.Reset()
	e.buf.WriteString("data: ")
	if err := e.enc.Encode(v); err != nil { // JSON and a newline
		e.failed = true
		return false
	}
	e.buf.WriteByte('\n')
	if _, err := e.w.Write(e.buf.Bytes()); err != nil {
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
	if e.hold != nil && e.n == e.holdAt && !e.hold() {
		e.failed = true
		return false
	}
	return true
}

// text streams the deltas of one text field, each made by delta.
func (e *sse) text(s string, n int, delta func(string) *chatwire.Delta) bool {
	for p := range textsplit.Split(s, n) {
		if !e.delta(delta(p), "") {
			return false
		}
	}
	return true
}

// errClosed is wait's error when the Server is closed.
var errClosed = errors.New("fakellm: server closed")

// wait holds a request until turn.Block (none: no wait) is closed (or
// receives). It returns ctx's error when ctx (the request's) ends first
// (the client went away) and errClosed when the Server is closed.
func (s *Server) wait(ctx context.Context, turn *Turn) error {
	if turn.Block == nil {
		return nil
	}
	select {
	case <-turn.Block:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return errClosed
	}
}

// stream writes a text/event-stream of chat.completion.chunk objects; ctx
// is the request's.
func (r *reply) stream(ctx context.Context, w http.ResponseWriter) {
	t := r.turn
	e := &sse{
		w:         w,
		rc:        http.NewResponseController(w),
		head:      r.head("chat.completion.chunk"),
		usageNull: r.req.IncludeUsage(),
		cut:       t.CutAfterChunks,
	}
	if t.HoldAfterChunks > 0 {
		e.hold = func() bool { return r.server.wait(ctx, t) == nil }
		e.holdAt = t.HoldAfterChunks
	}
	e.enc = json.NewEncoder(&e.buf)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	// The first chunk carries the role. When the reply is only tool calls it
	// also carries the first call's first delta, as OpenAI does.
	first := &chatwire.Delta{Role: "assistant"}
	if !r.contentNull() {
		first.Content = &chatwire.Answer{}
	}
	firstCall := 0
	if t.Text == "" && t.Reasoning == "" && t.Refusal == "" && len(t.ToolCalls) > 0 {
		first.ToolCalls = []chatwire.ToolCall{r.toolCall(0, "")}
		first.ToolCalls[0].Index = new(int)
		firstCall = 1
	}
	if !e.delta(first, "") {
		return
	}

	if !e.text(t.Reasoning, t.Chunks, func(p string) *chatwire.Delta { return &chatwire.Delta{ReasoningContent: p} }) ||
		!e.text(t.Refusal, t.Chunks, func(p string) *chatwire.Delta { return &chatwire.Delta{Refusal: p} }) ||
		!e.text(t.Text, t.Chunks, func(p string) *chatwire.Delta { return &chatwire.Delta{Content: &chatwire.Answer{Text: p}} }) {
		return
	}
	for i, c := range t.ToolCalls {
		if i >= firstCall {
			tc := r.toolCall(i, "")
			tc.Index = &i
			if !e.delta(&chatwire.Delta{ToolCalls: []chatwire.ToolCall{tc}}, "") {
				return
			}
		}
		for p := range textsplit.Arguments(c.Arguments, t.Chunks) {
			tc := chatwire.ToolCall{Index: &i, Function: chatwire.FunctionCall{Arguments: chatwire.Arguments(p)}}
			if !e.delta(&chatwire.Delta{ToolCalls: []chatwire.ToolCall{tc}}, "") {
				return
			}
		}
	}
	if !e.delta(&chatwire.Delta{}, r.finishReason()) {
		return
	}
	if e.usageNull {
		c := e.head
		c.Choices = []chatwire.Choice{}
		c.Usage = t.Usage.wire()
		if !e.write(&c) {
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
