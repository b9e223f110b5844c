// Package fakebedrock is a scripted fake Amazon Bedrock runtime for tests
// and benchmarks: the Converse, ConverseStream and CountTokens operations
// over real HTTP, driven by the real bedrockruntime client.
//
// A [Server] is an httptest server speaking Bedrock's wire protocol:
// POST /model/{modelId}/converse answers a JSON ConverseResponse, and POST
// /model/{modelId}/converse-stream answers an
// application/vnd.amazon.eventstream body of binary event-stream frames
// (messageStart, contentBlockStart/Delta/Stop, messageStop, metadata, or an
// exception frame), written with the SDK's own eventstream encoder; POST
// /model/{modelId}/count-tokens counts a Converse input's tokens for the
// Claude models Bedrock counts for (count.go). Errors
// are Bedrock's: the exception's HTTP status, an X-Amzn-ErrorType header
// and a {"message"} body.
//
// The fake checks requests the way Bedrock and its Anthropic models do and
// answers a ValidationException to what they refuse: a conversation that
// does not start with a user message or does not alternate roles, empty
// messages or blank text, toolUse/toolResult blocks without a toolConfig,
// a toolUse not answered by exactly one toolResult in the next message, a
// toolResult answering no toolUse, reasoning passed back altered or
// unsigned, cache points a model does not take (too many, in tools for
// Nova, after a reasoning block, on a model without prompt caching: an
// AccessDeniedException), and the features a model lacks (models.go:
// tool use, tool use in ConverseStream, system prompts, toolChoice any
// and tool), and with a context window (SetContextWindow) an input longer
// than it. It requires a SigV4 Authorization header for service "bedrock". Replies come from a script of [Turn] values ([New])
// or a function ([NewHandler]); every accepted request is recorded
// ([Server.Requests]).
//
// It caches prompts by cache point, as Bedrock does, and reports the
// input tokens it read from and wrote to its cache when a Turn scripts no
// input usage (cache.go): the figures of `make bench` come from it.
package fakebedrock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lambent/lambent/pkg/awsconf"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/lambent/lambent/internal/testing/scripted"
	"github.com/lambent/lambent/internal/testing/textsplit"
)

// Region is the region of the configuration AWSConfig returns.
const Region = "us-east-1"

// Server is a running fake Bedrock runtime. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the endpoint (http://127.0.0.1:port), for
	// AWS_ENDPOINT_URL_BEDROCK_RUNTIME or aws.Config.BaseEndpoint.
	URL string

	ts      *httptest.Server
	log     *scripted.Log[Request, Turn]
	closing chan struct{}
	closed  sync.Once
	ids     atomic.Uint64
	idBase  string
	// window is the models' context window in tokens (SetContextWindow);
	// 0: none.
	window atomic.Int64

	mu       sync.Mutex
	counted  []Request            // the CountTokens requests answered
	signed   map[string]string    // signature → the reasoning text it signs
	redacted map[string]bool      // redacted reasoning handed out
	cache    map[string]time.Time // cached prompt prefix → its expiry
	now      func() time.Time     // the cache's clock (nil: time.Now)
}

// New starts a fake whose replies are turns, one per request in order. A
// request beyond the script gets a 500 InternalServerException saying so.
func New(turns ...Turn) *Server {
	s := &Server{log: scripted.Turns[Request](turns)}
	s.start()
	return s
}

// NewHandler starts a fake that computes each reply with fn (called
// concurrently for concurrent requests; it must not modify the request).
func NewHandler(fn func(Request) Turn) *Server {
	if fn == nil {
		panic("fakebedrock: NewHandler with nil function")
	}
	s := &Server{log: scripted.Func(fn)}
	s.start()
	return s
}

// ListenHandler is NewHandler on addr (host:port; port 0 picks one), for
// a fake that runs as a process (cmd/fakebedrock).
func ListenHandler(addr string, fn func(Request) Turn) (*Server, error) {
	if fn == nil {
		return nil, errors.New("fakebedrock: ListenHandler with nil function")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("fakebedrock: %w", err)
	}
	s := &Server{log: scripted.Func(fn)}
	s.startOn(ln)
	return s, nil
}

func (s *Server) start() { s.startOn(nil) }

// startOn starts the server on ln, or on a loopback port when ln is nil.
func (s *Server) startOn(ln net.Listener) {
	s.closing = make(chan struct{})
	s.signed = map[string]string{}
	s.redacted = map[string]bool{}
	s.cache = map[string]time.Time{}
	s.idBase = strconv.FormatUint(rand.Uint64()|1<<63, 36)[:8]
	s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	if ln != nil {
		_ = s.ts.Listener.Close()
		s.ts.Listener = ln
	}
	s.ts.Start()
	s.URL = s.ts.URL
}

// Close releases blocked requests (503), then shuts the server down.
func (s *Server) Close() {
	s.closed.Do(func() { close(s.closing) })
	s.ts.Close()
}

// Client returns an HTTP client whose idle connections Close closes.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// AWSConfig returns an SDK configuration for the fake: Region, static
// credentials, the fake's endpoint and HTTP client, and the standard
// retryer with millisecond backoff and no retry quota (so retry tests do
// not wait).
func (s *Server) AWSConfig() aws.Config {
	return aws.Config{
		Region:       Region,
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDFAKEBEDROCK", "fake-secret", ""),
		BaseEndpoint: aws.String(s.URL),
		HTTPClient:   awsconf.ReadOnlyBodies(s.ts.Client()),
		Retryer:      FastRetryer,
	}
}

// FastRetryer is the SDK's standard retryer (3 attempts, the same
// retryable errors) with a 1 ms backoff and no retry quota.
func FastRetryer() aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return time.Millisecond, nil })
		o.RateLimiter = ratelimit.None
	})
}

// Requests returns the accepted requests so far, in arrival order.
func (s *Server) Requests() []Request {
	return s.log.Requests()
}

// Calls returns the number of accepted requests so far (recorded or not).
func (s *Server) Calls() int {
	return s.log.Calls()
}

// SetContextWindow makes every model's context window n tokens (0: no
// window): a Converse or ConverseStream call whose input comes to more
// (what CountTokens counts for it) is refused as Bedrock refuses one, a
// ValidationException "Input is too long for requested model.". Call it
// before the first request.
func (s *Server) SetContextWindow(n int) { s.window.Store(int64(n)) }

// msgTooLong is Bedrock's refusal of an input over the model's context
// window.
const msgTooLong = "Input is too long for requested model."

// SetRecording turns request recording on (the default) or off.
func (s *Server) SetRecording(on bool) { s.log.SetRecording(on) }

func (s *Server) next(req *Request) (Turn, bool) {
	return s.log.Next(req, func(r *Request, seq int) { r.Seq = seq })
}

// exceptionStatus is the HTTP status Bedrock answers an exception with.
func exceptionStatus(typ string) int {
	switch typ {
	case "AccessDeniedException", "UnrecognizedClientException":
		return http.StatusForbidden
	case "ResourceNotFoundException", "UnknownOperationException":
		return http.StatusNotFound
	case "ModelTimeoutException":
		return http.StatusRequestTimeout
	case "ModelErrorException":
		return http.StatusFailedDependency
	case "ThrottlingException", "ModelNotReadyException":
		return http.StatusTooManyRequests
	case "InternalServerException":
		return http.StatusInternalServerError
	case "ServiceUnavailableException":
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest // ValidationException, ServiceQuotaExceededException, ...
}

// writeException writes a Bedrock error response with a {"message"}
// body.
func writeException(w http.ResponseWriter, typ, msg string) {
	writeExceptionBody(w, typ, exceptionBody(typ, msg, &Turn{}))
}

// writeExceptionBody writes a Bedrock error response with body.
func writeExceptionBody(w http.ResponseWriter, typ string, b []byte) {
	status := exceptionStatus(typ)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-ErrorType", typ+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-Requestid", "fake-"+s.idBase+strconv.FormatUint(s.ids.Add(1), 36))
	model, op, ok := route(r.URL)
	if !ok || r.Method != http.MethodPost {
		writeException(w, "UnknownOperationException", "fakebedrock: no operation at "+r.Method+" "+r.URL.Path)
		return
	}
	if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 ") || !strings.Contains(a, "/"+Region+"/bedrock/aws4_request") {
		writeException(w, "UnrecognizedClientException", "The security token included in the request is invalid.")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeException(w, "ValidationException", "fakebedrock: reading the body: "+err.Error())
		return
	}
	req := Request{Operation: op, ModelID: model, Body: body, Authorization: r.Header.Get("Authorization")}
	if op == opCountTokens {
		s.countTokens(w, &req)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req.Input); err != nil {
		writeException(w, "ValidationException", "fakebedrock: malformed request body: "+err.Error())
		return
	}
	if msg := s.validate(&req.Input, op); msg != "" {
		writeException(w, "ValidationException", msg)
		return
	}
	if msg := validateModel(model, op, &req.Input); msg != "" {
		writeException(w, "ValidationException", msg)
		return
	}
	if typ, msg := validateCache(model, &req.Input); msg != "" {
		writeException(w, typ, msg)
		return
	}
	if n := s.window.Load(); n > 0 && int64(tokens(measure(model, &req.Input).bytes)) > n {
		writeException(w, "ValidationException", msgTooLong)
		return
	}
	req.Metered = s.meter(model, &req.Input)
	turn, ok := s.next(&req)
	if !ok {
		writeException(w, "InternalServerException", fmt.Sprintf("fakebedrock: script exhausted: request #%d received but only %d turns were scripted", req.Seq+1, s.log.Len()))
		return
	}
	if turn.Block != nil {
		select {
		case <-turn.Block:
		case <-r.Context().Done():
			return
		case <-s.closing:
			writeException(w, "ServiceUnavailableException", "fakebedrock: server closed while the request was blocked")
			return
		}
	}
	if turn.Error != "" {
		writeExceptionBody(w, turn.Error, exceptionBody(turn.Error, turn.ErrorMessage, &turn))
		return
	}
	if u := turn.Usage; u.InputTokens == 0 && u.CacheReadInputTokens == 0 && u.CacheWriteInputTokens == 0 {
		turn.Usage = req.Metered
		turn.Usage.OutputTokens = u.OutputTokens
	}
	rp := &reply{s: s, turn: &turn}
	if op == "Converse" {
		rp.converse(w)
	} else {
		rp.stream(w)
	}
}

// route parses /model/{modelId}/converse, converse-stream or count-tokens.
func route(u *url.URL) (model, op string, ok bool) {
	rest, ok := strings.CutPrefix(u.EscapedPath(), "/model/")
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return "", "", false
	}
	switch rest[i+1:] {
	case "converse":
		op = "Converse"
	case "converse-stream":
		op = "ConverseStream"
	case "count-tokens":
		op = opCountTokens
	default:
		return "", "", false
	}
	model, err := url.PathUnescape(rest[:i])
	if err != nil || model == "" {
		return "", "", false
	}
	return model, op, true
}

// reply writes one scripted answer.
type reply struct {
	s    *Server
	turn *Turn
}

func (rp *reply) id(prefix string) string {
	return prefix + rp.s.idBase + strconv.FormatUint(rp.s.ids.Add(1), 36)
}

func (rp *reply) stopReason() string {
	switch {
	case rp.turn.StopReason != "":
		return rp.turn.StopReason
	case len(rp.turn.ToolUses) > 0:
		return "tool_use"
	}
	return "end_turn"
}

// block is one content block of the answer, ready to send.
type block struct {
	text      *string
	reasoning *ReasoningText
	redacted  []byte
	toolUse   *ToolUseBlock
	input     string // toolUse input as JSON text
}

// blocks makes the answer's content blocks, remembering the reasoning it
// hands out so that it can check what comes back.
func (rp *reply) blocks() []block {
	t := rp.turn
	var out []block
	if t.Reasoning != "" {
		sig := t.Signature
		if sig == "" {
			sig = rp.id("sig_")
		}
		rp.s.mu.Lock()
		rp.s.signed[sig] = t.Reasoning
		rp.s.mu.Unlock()
		out = append(out, block{reasoning: &ReasoningText{Text: t.Reasoning, Signature: sig}})
	}
	if len(t.Redacted) > 0 {
		rp.s.mu.Lock()
		rp.s.redacted[string(t.Redacted)] = true
		rp.s.mu.Unlock()
		out = append(out, block{redacted: t.Redacted})
	}
	if t.Text != "" {
		out = append(out, block{text: &t.Text})
	}
	for _, tu := range t.ToolUses {
		id := tu.ID
		if id == "" {
			id = rp.id("tooluse_")
		}
		in := tu.Input
		if in == "" {
			in = "{}"
		}
		out = append(out, block{toolUse: &ToolUseBlock{ToolUseID: id, Name: tu.Name, Input: json.RawMessage(in)}, input: in})
	}
	return out
}

// converseResponse is the body of a Converse reply.
type converseResponse struct {
	Output     *converseOutput `json:"output,omitempty"`
	StopReason string          `json:"stopReason"`
	Usage      wireUsage       `json:"usage"`
	Metrics    metrics         `json:"metrics"`
}

type converseOutput struct {
	Message Message `json:"message"`
}

type metrics struct {
	LatencyMs int `json:"latencyMs"`
}

func (rp *reply) converse(w http.ResponseWriter) {
	resp := converseResponse{StopReason: rp.stopReason(), Usage: rp.turn.Usage.wire(), Metrics: metrics{LatencyMs: 1}}
	if !rp.turn.OmitOutput {
		msg := Message{Role: "assistant", Content: []ContentBlock{}}
		for _, b := range rp.blocks() {
			var cb ContentBlock
			switch {
			case b.reasoning != nil:
				cb.ReasoningContent = &ReasoningContent{ReasoningText: b.reasoning}
			case b.redacted != nil:
				cb.ReasoningContent = &ReasoningContent{RedactedContent: b.redacted}
			case b.text != nil:
				cb.Text = b.text
			default:
				cb.ToolUse = b.toolUse
			}
			msg.Content = append(msg.Content, cb)
		}
		resp.Output = &converseOutput{Message: msg}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		writeException(w, "InternalServerException", "fakebedrock: encoding the reply: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

// events makes the ConverseStream events of the answer (without a final
// exception).
func (rp *reply) events() []Event {
	t := rp.turn
	if t.Events != nil {
		return t.Events
	}
	evs := []Event{{"messageStart", map[string]any{"role": "assistant"}}}
	delta := func(i int, d any) Event {
		return Event{"contentBlockDelta", map[string]any{"contentBlockIndex": i, "delta": d}}
	}
	stop := func(i int) Event { return Event{"contentBlockStop", map[string]any{"contentBlockIndex": i}} }
	var tools []int // indexes of the toolUse blocks
	blocks := rp.blocks()
	for i, b := range blocks {
		switch {
		case b.reasoning != nil:
			for p := range textsplit.Split(b.reasoning.Text, t.Chunks) {
				evs = append(evs, delta(i, map[string]any{"reasoningContent": map[string]any{"text": p}}))
			}
			evs = append(evs, delta(i, map[string]any{"reasoningContent": map[string]any{"signature": b.reasoning.Signature}}), stop(i))
		case b.redacted != nil:
			evs = append(evs, delta(i, map[string]any{"reasoningContent": map[string]any{"redactedContent": b.redacted}}), stop(i))
		case b.text != nil:
			for p := range textsplit.Split(*b.text, t.Chunks) {
				evs = append(evs, delta(i, map[string]any{"text": p}))
			}
			evs = append(evs, stop(i))
		default:
			tools = append(tools, i)
		}
	}
	// toolUse blocks: a start with id and name, the input as partial JSON.
	pieces := make([][]string, len(tools))
	for k, i := range tools {
		evs = append(evs, Event{"contentBlockStart", map[string]any{"contentBlockIndex": i,
			"start": map[string]any{"toolUse": map[string]any{"toolUseId": blocks[i].toolUse.ToolUseID, "name": blocks[i].toolUse.Name}}}})
		pieces[k] = slices.Collect(textsplit.Arguments(blocks[i].input, t.Chunks))
		if !t.Interleave {
			for _, p := range pieces[k] {
				evs = append(evs, delta(i, map[string]any{"toolUse": map[string]any{"input": p}}))
			}
			evs = append(evs, stop(i))
		}
	}
	if t.Interleave {
		for more := true; more; {
			more = false
			for k, i := range tools {
				if len(pieces[k]) > 0 {
					evs = append(evs, delta(i, map[string]any{"toolUse": map[string]any{"input": pieces[k][0]}}))
					pieces[k] = pieces[k][1:]
					more = true
				}
			}
		}
		for _, i := range tools {
			evs = append(evs, stop(i))
		}
	}
	if t.StreamError != "" {
		return evs
	}
	return append(evs,
		Event{"messageStop", map[string]any{"stopReason": rp.stopReason()}},
		Event{"metadata", map[string]any{"usage": t.Usage.wire(), "metrics": metrics{LatencyMs: 1}}})
}

func header(name, value string) eventstream.Header {
	return eventstream.Header{Name: name, Value: eventstream.StringValue(value)}
}

func (rp *reply) stream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	var buf bytes.Buffer
	write := func(msg eventstream.Message) bool {
		buf.Reset()
		if err := enc.Encode(&buf, msg); err != nil {
			panic(fmt.Sprintf("fakebedrock: encoding a frame: %v", err))
		}
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	for n, ev := range rp.events() {
		if rp.turn.CutAfterEvents > 0 && n == rp.turn.CutAfterEvents {
			panic(http.ErrAbortHandler)
		}
		payload, err := json.Marshal(ev.Payload)
		if err != nil {
			panic(fmt.Sprintf("fakebedrock: encoding event %s: %v", ev.Type, err))
		}
		if !write(eventstream.Message{Headers: eventstream.Headers{
			header(":message-type", "event"), header(":event-type", ev.Type), header(":content-type", "application/json"),
		}, Payload: payload}) {
			return
		}
	}
	if rp.turn.CutAfterEvents > 0 {
		panic(http.ErrAbortHandler)
	}
	if t := rp.turn; t.StreamError != "" {
		write(eventstream.Message{Headers: eventstream.Headers{
			header(":message-type", "exception"), header(":exception-type", t.StreamError), header(":content-type", "application/json"),
		}, Payload: exceptionBody(t.StreamError, t.ErrorMessage, t)})
	}
}

// exceptionBody is the JSON body of the exception typ, a reply's or a
// stream's exception event's: its message (default: one naming typ) and,
// when t scripts them, the model's own status and message and the
// resource that failed, as Bedrock relays them.
func exceptionBody(typ, msg string, t *Turn) []byte {
	if msg == "" {
		msg = "fakebedrock: scripted " + typ
	}
	body := map[string]any{"message": msg}
	if t.OriginalStatusCode != 0 {
		body["originalStatusCode"] = t.OriginalStatusCode
	}
	if t.OriginalMessage != "" {
		body["originalMessage"] = t.OriginalMessage
	}
	if t.ResourceName != "" {
		body["resourceName"] = t.ResourceName
	}
	b, _ := json.Marshal(body)
	return b
}
