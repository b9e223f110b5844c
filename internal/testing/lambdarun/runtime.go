// Package lambdarun is a fake AWS Lambda Runtime API for tests and local
// runs, and a helper to build a function's bootstrap and run it as a
// process against the fake.
//
// A [Runtime] is a real HTTP server (net/http/httptest) speaking the
// Runtime API a custom runtime's bootstrap talks to
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html):
//
//	GET  /2018-06-01/runtime/invocation/next          the next event, with the
//	     Lambda-Runtime-Aws-Request-Id, -Deadline-Ms, -Invoked-Function-Arn and
//	     -Trace-Id headers (and -Client-Context, -Cognito-Identity when set)
//	POST /2018-06-01/runtime/invocation/{id}/response the reply, buffered or
//	     streamed (a chunked body, with Lambda-Runtime-Function-Response-Mode:
//	     streaming or, as aws-lambda-go does, without; a stream that failed
//	     midway ends with the Lambda-Runtime-Function-Error-Type and -Body
//	     trailers)
//	POST /2018-06-01/runtime/invocation/{id}/error    a function error
//	POST /2018-06-01/runtime/init/error               an initialization error
//
// [Runtime.Invoke] queues an event and returns its [Invocation]; the reply's
// body is exposed as the chunks the function sent, each available as soon as
// it arrives ([Invocation.NextChunk]), which lets a test see that a streamed
// reply really streams. A chunked body is read off the connection by hand so
// the chunks are the ones on the wire, not a reassembly. For a function URL
// or a streaming REST API the body is the JSON prelude, 8 zero bytes, then
// the response body ([SplitPrelude]).
//
// The fake enforces what Lambda enforces, so that a test catches a function
// that would fail there:
//
//   - the deadline: when an invocation's deadline passes before its reply is
//     complete, the function's process is killed (as Lambda ends the
//     execution environment) and the invocation is reported timed out
//     ([ErrorTypeTimeout], [Result.TimedOut]);
//   - the size of a buffered (RequestResponse) reply: one over
//     [MaxBufferedReply] bytes is refused with the Runtime API's 413 and
//     reported as Lambda reports it ([ErrorTypeResponseTooLarge]); a
//     streamed invocation ([InvokeOptions.Stream]) has no such limit;
//   - a client that goes away ([Invocation.Disconnect]) does not stop the
//     function: the runtime reads its reply to the end, up to the deadline.
package lambdarun

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Runtime API paths.
const (
	apiPrefix  = "/2018-06-01/runtime/"
	nextPath   = apiPrefix + "invocation/next"
	invPrefix  = apiPrefix + "invocation/"
	initErrors = apiPrefix + "init/error"
)

// Header names of the Runtime API.
const (
	HeaderRequestID       = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMS      = "Lambda-Runtime-Deadline-Ms"
	HeaderFunctionARN     = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID         = "Lambda-Runtime-Trace-Id"
	HeaderClientContext   = "Lambda-Runtime-Client-Context"
	HeaderCognitoIdentity = "Lambda-Runtime-Cognito-Identity"
	HeaderResponseMode    = "Lambda-Runtime-Function-Response-Mode"
	HeaderErrorType       = "Lambda-Runtime-Function-Error-Type"
	HeaderErrorBody       = "Lambda-Runtime-Function-Error-Body"
)

// MaxBufferedReply is the largest reply, in bytes, of a buffered
// (RequestResponse) invocation: Lambda's 6 MB invocation payload limit, as
// its Runtime API counts it.
const MaxBufferedReply = 6291556

// Error types of the invocation errors the fake reports itself, as Lambda
// reports them to the invoker.
const (
	// ErrorTypeTimeout is the error of an invocation whose deadline passed.
	ErrorTypeTimeout = "Sandbox.Timedout"
	// ErrorTypeResponseTooLarge is the error of a buffered invocation whose
	// reply was over MaxBufferedReply.
	ErrorTypeResponseTooLarge = "Function.ResponseSizeTooLarge"
)

// ContentTypeHTTPIntegration is the content type of a streamed function URL
// or REST API reply: a JSON prelude, 8 zero bytes, then the body.
const ContentTypeHTTPIntegration = "application/vnd.awslambda.http-integration-response"

// Options configures a [Runtime]. The zero value is usable.
type Options struct {
	// FunctionName is the function's name (default "function").
	FunctionName string
	// Region is the AWS region of the function ARN (default "us-east-1").
	Region string
	// AccountID is the account of the function ARN (default "123456789012").
	AccountID string
}

// Runtime is a running fake Runtime API. Create it with [New] and release it
// with [Runtime.Close]. Its methods are safe for concurrent use.
type Runtime struct {
	// Addr is the server's host:port, the value of AWS_LAMBDA_RUNTIME_API.
	Addr string
	// FunctionName, Region and AccountID are the Options with defaults.
	FunctionName, Region, AccountID string

	srv     *httptest.Server
	queue   chan *Invocation
	closing chan struct{}
	once    sync.Once
	wg      sync.WaitGroup // handlers of hijacked connections

	mu       sync.Mutex
	invs     map[string]*Invocation
	conns    map[net.Conn]struct{} // hijacked, still being read
	procs    map[*Process]struct{} // started, not stopped
	closed   bool
	initErrs []FunctionError
	initCh   chan struct{} // closed and replaced when an init error arrives
}

// New starts a fake Runtime API on a loopback port.
func New(opts Options) *Runtime {
	rt := &Runtime{
		FunctionName: or(opts.FunctionName, "function"),
		Region:       or(opts.Region, "us-east-1"),
		AccountID:    or(opts.AccountID, "123456789012"),
		queue:        make(chan *Invocation, 64),
		closing:      make(chan struct{}),
		invs:         make(map[string]*Invocation),
		conns:        make(map[net.Conn]struct{}),
		procs:        make(map[*Process]struct{}),
		initCh:       make(chan struct{}),
	}
	rt.srv = httptest.NewServer(rt.handler(nil))
	rt.Addr = strings.TrimPrefix(rt.srv.URL, "http://")
	return rt
}

// FunctionARN is the ARN sent as Lambda-Runtime-Invoked-Function-Arn.
func (rt *Runtime) FunctionARN() string {
	return "arn:aws:lambda:" + rt.Region + ":" + rt.AccountID + ":function:" + rt.FunctionName
}

// Errors an invocation's reply can end with ([Result.Err], [Invocation.NextChunk]).
var (
	// ErrClosed is the error of an invocation the function had not answered
	// when the Runtime was closed.
	ErrClosed = errors.New("lambdarun: runtime closed before the invocation was answered")
	// ErrTimedOut is the error of an invocation whose deadline passed before
	// its reply was complete.
	ErrTimedOut = errors.New("lambdarun: the invocation's deadline passed before its reply was complete")
	// ErrDisconnected is what NextChunk returns after Disconnect.
	ErrDisconnected = errors.New("lambdarun: the client disconnected")
)

// Close ends pending /next requests (they get a 500, as the runtime is going
// away), stops the processes started with [Runtime.Start], cuts replies
// still being streamed, shuts the server down, waiting for its handlers, and
// ends unanswered invocations with [ErrClosed].
func (rt *Runtime) Close() {
	rt.once.Do(func() {
		close(rt.closing)
		rt.mu.Lock()
		procs := make([]*Process, 0, len(rt.procs))
		for p := range rt.procs {
			procs = append(procs, p)
		}
		rt.mu.Unlock()
		for _, p := range procs {
			p.Stop()
		}
		rt.srv.Close()
		rt.mu.Lock()
		rt.closed = true
		for c := range rt.conns {
			_ = c.Close()
		}
		rt.mu.Unlock()
		rt.wg.Wait()
		rt.mu.Lock()
		invs := make([]*Invocation, 0, len(rt.invs))
		for _, inv := range rt.invs {
			invs = append(invs, inv)
		}
		rt.mu.Unlock()
		for _, inv := range invs {
			inv.finish(nil, nil, ErrClosed)
		}
	})
}

// InvokeOptions configures one invocation. The zero value is usable.
type InvokeOptions struct {
	// Timeout sets the deadline sent with the event (default 60 s from when
	// the function takes the event). When it passes before the reply is
	// complete, the process that took the event is killed and the
	// invocation ends timed out.
	Timeout time.Duration
	// Stream makes the invocation a streamed one (InvokeWithResponseStream,
	// as a function URL with InvokeMode RESPONSE_STREAM or a REST API
	// integration with ResponseTransferMode STREAM invoke); otherwise it is
	// buffered (RequestResponse) and its reply is limited to
	// MaxBufferedReply bytes.
	Stream bool
	// ClientContext and CognitoIdentity, when set, are sent as the
	// Lambda-Runtime-Client-Context and -Cognito-Identity headers (JSON).
	ClientContext, CognitoIdentity string
}

// Invoke queues an invocation with event payload; the function gets it at
// its next GET /next.
func (rt *Runtime) Invoke(payload []byte, opts InvokeOptions) *Invocation {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	inv := &Invocation{
		ID:      newUUID(),
		Payload: payload,
		TraceID: newTraceID(),
		opts:    opts,
		taken:   make(chan struct{}),
		done:    make(chan struct{}),
		arrival: make(chan struct{}),
	}
	rt.mu.Lock()
	rt.invs[inv.ID] = inv
	rt.mu.Unlock()
	rt.queue <- inv
	return inv
}

// InitErrors returns the initialization errors posted so far.
func (rt *Runtime) InitErrors() []FunctionError {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]FunctionError(nil), rt.initErrs...)
}

// WaitInitError waits for an initialization error to be posted.
func (rt *Runtime) WaitInitError(ctx context.Context) (FunctionError, error) {
	for {
		rt.mu.Lock()
		if len(rt.initErrs) > 0 {
			e := rt.initErrs[0]
			rt.mu.Unlock()
			return e, nil
		}
		ch := rt.initCh
		rt.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return FunctionError{}, ctx.Err()
		}
	}
}

// FunctionError is an error a function reported: to /error, to /init/error,
// or in the trailers of a failed stream.
type FunctionError struct {
	// Type is the Lambda-Runtime-Function-Error-Type (header or trailer),
	// else the body's errorType.
	Type string
	// Message is the body's errorMessage.
	Message string
	// Body is the raw error document ({"errorMessage","errorType",...}).
	Body []byte
}

// handler serves the Runtime API to the process p (nil: any client of
// Runtime.Addr).
func (rt *Runtime) handler(p *Process) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { rt.serveHTTP(w, r, p) })
}

func (rt *Runtime) serveHTTP(w http.ResponseWriter, r *http.Request, p *Process) {
	switch {
	case r.URL.Path == nextPath && r.Method == http.MethodGet:
		rt.next(w, r, p)
	case r.URL.Path == initErrors && r.Method == http.MethodPost:
		fe := readFunctionError(r)
		rt.mu.Lock()
		rt.initErrs = append(rt.initErrs, fe)
		close(rt.initCh)
		rt.initCh = make(chan struct{})
		rt.mu.Unlock()
		accepted(w)
	case strings.HasPrefix(r.URL.Path, invPrefix) && r.Method == http.MethodPost:
		id, action, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, invPrefix), "/")
		rt.mu.Lock()
		inv := rt.invs[id]
		rt.mu.Unlock()
		if inv == nil {
			apiError(w, http.StatusBadRequest, "InvalidRequestID", "unknown request id "+strconv.Quote(id))
			return
		}
		switch action {
		case "response":
			rt.serveResponse(w, r, inv)
		case "error":
			inv.serveError(w, r)
		default:
			apiError(w, http.StatusNotFound, "NotFound", "unknown path "+r.URL.Path)
		}
	default:
		apiError(w, http.StatusNotFound, "NotFound", "unknown path "+r.Method+" "+r.URL.Path)
	}
}

// next hands the next queued invocation to the function (the process p,
// when it is one Start started) and arms its deadline.
func (rt *Runtime) next(w http.ResponseWriter, r *http.Request, p *Process) {
	var inv *Invocation
	select {
	case inv = <-rt.queue:
	case <-r.Context().Done():
		return
	case <-rt.closing:
		apiError(w, http.StatusInternalServerError, "ServiceShutdown", "the fake Runtime API is shutting down")
		return
	}
	if r.Context().Err() != nil {
		// The caller went away (its process was stopped) as the event
		// came: keep it for the next caller.
		select {
		case rt.queue <- inv:
		case <-rt.closing:
		}
		return
	}
	now := time.Now()
	deadline := now.Add(inv.opts.Timeout)
	inv.mu.Lock()
	inv.res.Taken = now
	inv.res.Deadline = deadline
	inv.proc = p
	inv.timer = time.AfterFunc(inv.opts.Timeout, inv.expire)
	inv.mu.Unlock()
	h := w.Header()
	h.Set(HeaderRequestID, inv.ID)
	h.Set(HeaderDeadlineMS, strconv.FormatInt(deadline.UnixMilli(), 10))
	h.Set(HeaderFunctionARN, rt.FunctionARN())
	h.Set(HeaderTraceID, inv.TraceID)
	if inv.opts.ClientContext != "" {
		h.Set(HeaderClientContext, inv.opts.ClientContext)
	}
	if inv.opts.CognitoIdentity != "" {
		h.Set(HeaderCognitoIdentity, inv.opts.CognitoIdentity)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(inv.Payload)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.Payload)
	close(inv.taken)
}

// Invocation is one queued event and, once the function answers, its reply.
type Invocation struct {
	// ID is the request id (Lambda-Runtime-Aws-Request-Id).
	ID string
	// Payload is the event.
	Payload []byte
	// TraceID is the Lambda-Runtime-Trace-Id sent with the event.
	TraceID string

	opts  InvokeOptions
	taken chan struct{} // the function has the event
	done  chan struct{} // the reply is complete (or broke off)

	mu       sync.Mutex
	answered bool          // a reply started
	arrival  chan struct{} // closed and replaced on each chunk and at the end
	res      Result
	read     int         // chunks returned by NextChunk
	proc     *Process    // the process that took the event, if Start started it
	conn     net.Conn    // the hijacked connection of a chunked reply
	timer    *time.Timer // fires at the deadline
}

// Result is an invocation's outcome.
type Result struct {
	// Kind is "response" or "error" (the endpoint the function posted to).
	Kind string
	// ContentType is the Content-Type of the function's POST.
	ContentType string
	// Header is the header of the function's POST.
	Header http.Header
	// ResponseMode is the Lambda-Runtime-Function-Response-Mode header
	// ("streaming" for a streamed reply; aws-lambda-go does not send it).
	ResponseMode string
	// Chunked reports a body sent with chunked transfer encoding, as
	// streamed replies are (aws-lambda-go sends every reply so).
	Chunked bool
	// Chunks are the body's chunks in arrival order (one, for a body sent
	// with a Content-Length).
	Chunks [][]byte
	// Trailer holds the chunked body's trailers.
	Trailer http.Header
	// Error is the function error: the /error document, or the
	// Lambda-Runtime-Function-Error-Type and -Body trailers of a stream that
	// failed midway.
	Error *FunctionError
	// Err is set when the reply broke off (the connection ended mid-body),
	// the deadline passed first (ErrTimedOut) or the runtime shut down
	// before the reply (ErrClosed).
	Err error
	// TimedOut reports that the deadline passed before the reply was
	// complete: the process was killed, Error is the ErrorTypeTimeout error
	// and Kind is "error" unless a reply had started (its chunks so far are
	// kept).
	TimedOut bool
	// Disconnected reports that the client disconnected (Disconnect) before
	// the reply was complete; the runtime kept reading it.
	Disconnected bool
	// Taken is when the function received the event, Deadline the deadline
	// it was given, Finished when its reply was complete.
	Taken, Deadline, Finished time.Time
}

// Body returns the whole reply body.
func (r *Result) Body() []byte { return bytes.Join(r.Chunks, nil) }

// Taken is closed when the function has received the event.
func (inv *Invocation) Taken() <-chan struct{} { return inv.taken }

// Done is closed when the reply is complete (or broke off).
func (inv *Invocation) Done() <-chan struct{} { return inv.done }

// Wait waits for the reply to be complete and returns it.
func (inv *Invocation) Wait(ctx context.Context) (*Result, error) {
	select {
	case <-inv.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	res := inv.Snapshot()
	return &res, nil
}

// Snapshot returns the reply as received so far: once a chunk has arrived,
// its Kind, ContentType and Header are set.
func (inv *Invocation) Snapshot() Result {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	res := inv.res
	res.Chunks = append([][]byte(nil), res.Chunks...)
	return res
}

// Disconnect is the client going away, as a function URL or API Gateway
// client that closes its connection: NextChunk returns ErrDisconnected from
// now on, while the runtime goes on reading the function's reply to its end
// (the function notices nothing, as on Lambda) and its deadline still
// applies. The Result, once Done, records the whole reply.
func (inv *Invocation) Disconnect() {
	inv.mu.Lock()
	if !isClosed(inv.done) {
		inv.res.Disconnected = true
	}
	close(inv.arrival)
	inv.arrival = make(chan struct{})
	inv.mu.Unlock()
}

// NextChunk returns the reply's next body chunk, waiting for it to arrive.
// After the last one it returns io.EOF, or the error the reply broke off
// with (ErrDisconnected after Disconnect); an /error reply has no chunks.
func (inv *Invocation) NextChunk(ctx context.Context) ([]byte, error) {
	for {
		inv.mu.Lock()
		if inv.res.Disconnected {
			inv.mu.Unlock()
			return nil, ErrDisconnected
		}
		if inv.read < len(inv.res.Chunks) {
			c := inv.res.Chunks[inv.read]
			inv.read++
			inv.mu.Unlock()
			return c, nil
		}
		ch := inv.arrival
		finished := isClosed(inv.done)
		err := inv.res.Err
		inv.mu.Unlock()
		if finished {
			if err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// begin marks the reply as started; false when one already was or the
// invocation has ended (timed out).
func (inv *Invocation) begin(kind string, r *http.Request, chunked bool) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.answered || isClosed(inv.done) {
		return false
	}
	inv.answered = true
	inv.res.Kind = kind
	inv.res.ContentType = r.Header.Get("Content-Type")
	inv.res.Header = r.Header.Clone()
	inv.res.ResponseMode = r.Header.Get(HeaderResponseMode)
	inv.res.Chunked = chunked
	return true
}

func (inv *Invocation) addChunk(b []byte) {
	inv.mu.Lock()
	inv.res.Chunks = append(inv.res.Chunks, b)
	close(inv.arrival)
	inv.arrival = make(chan struct{})
	inv.mu.Unlock()
}

// finish completes the reply, once.
func (inv *Invocation) finish(fe *FunctionError, trailer http.Header, err error) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if isClosed(inv.done) {
		return
	}
	inv.res.Error = fe
	inv.res.Trailer = trailer
	inv.res.Err = err
	inv.finishLocked()
}

// finishLocked closes the invocation; inv.mu is held.
func (inv *Invocation) finishLocked() {
	if inv.timer != nil {
		inv.timer.Stop()
	}
	inv.res.Finished = time.Now()
	close(inv.done)
	close(inv.arrival)
	inv.arrival = make(chan struct{})
}

// expire ends an invocation whose deadline passed before its reply was
// complete, as Lambda does: the invocation fails with a timeout error, the
// process that had the event is killed and a reply being streamed is cut.
func (inv *Invocation) expire() {
	inv.mu.Lock()
	if isClosed(inv.done) {
		inv.mu.Unlock()
		return
	}
	timeout := inv.res.Deadline.Sub(inv.res.Taken)
	msg := fmt.Sprintf("%s %s Task timed out after %.2f seconds",
		inv.res.Deadline.UTC().Format("2006-01-02T15:04:05.000Z"), inv.ID, timeout.Seconds())
	body, _ := json.Marshal(errorDoc{Message: msg, Type: ErrorTypeTimeout})
	if !inv.answered {
		inv.answered = true
		inv.res.Kind = "error"
	}
	inv.res.Error = &FunctionError{Type: ErrorTypeTimeout, Message: msg, Body: body}
	inv.res.Err = ErrTimedOut
	inv.res.TimedOut = true
	inv.finishLocked()
	p, conn := inv.proc, inv.conn
	inv.mu.Unlock()
	if p != nil {
		p.kill()
	}
	if conn != nil {
		_ = conn.Close()
	}
}

// tooLarge ends a buffered invocation whose reply was over
// MaxBufferedReply, as Lambda reports it to the invoker.
func (inv *Invocation) tooLarge() {
	msg := fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", MaxBufferedReply)
	body, _ := json.Marshal(errorDoc{Message: msg, Type: ErrorTypeResponseTooLarge})
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if isClosed(inv.done) {
		return
	}
	inv.res.Kind = "error"
	inv.res.Chunks = nil
	inv.res.Error = &FunctionError{Type: ErrorTypeResponseTooLarge, Message: msg, Body: body}
	inv.finishLocked()
}

// limit returns the reply size limit of the invocation (0: none).
func (inv *Invocation) limit() int {
	if inv.opts.Stream {
		return 0
	}
	return MaxBufferedReply
}

func (inv *Invocation) serveError(w http.ResponseWriter, r *http.Request) {
	if !inv.begin("error", r, false) {
		apiError(w, http.StatusBadRequest, "InvalidStateTransition", "invocation "+inv.ID+" was already answered")
		return
	}
	fe := readFunctionError(r)
	inv.finish(&fe, nil, nil)
	accepted(w)
}

func (rt *Runtime) serveResponse(w http.ResponseWriter, r *http.Request, inv *Invocation) {
	chunked := len(r.TransferEncoding) > 0 && r.TransferEncoding[0] == "chunked"
	if !inv.begin("response", r, chunked) {
		apiError(w, http.StatusBadRequest, "InvalidStateTransition", "invocation "+inv.ID+" was already answered or has timed out")
		return
	}
	limit := inv.limit()
	if !chunked {
		var (
			b   []byte
			err error
		)
		if limit > 0 {
			b, err = io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
		} else {
			b, err = io.ReadAll(r.Body)
		}
		if err == nil && limit > 0 && len(b) > limit {
			_, _ = io.Copy(io.Discard, r.Body)
			inv.tooLarge()
			apiError(w, http.StatusRequestEntityTooLarge, payloadTooLarge.Type, payloadTooLarge.Message)
			return
		}
		if len(b) > 0 {
			inv.addChunk(b)
		}
		inv.finish(nil, nil, err)
		accepted(w)
		return
	}
	// Read the chunks off the connection: the server's chunked reader would
	// merge chunks that arrive together.
	rt.wg.Add(1)
	defer rt.wg.Done()
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		inv.finish(nil, nil, fmt.Errorf("lambdarun: hijacking the response connection: %w", err))
		apiError(w, http.StatusInternalServerError, "ServiceException", err.Error())
		return
	}
	rt.mu.Lock()
	if rt.closed {
		_ = conn.Close()
	}
	rt.conns[conn] = struct{}{}
	rt.mu.Unlock()
	inv.mu.Lock()
	inv.conn = conn
	if isClosed(inv.done) { // timed out while the reply was starting
		_ = conn.Close()
	}
	inv.mu.Unlock()
	defer func() {
		rt.mu.Lock()
		delete(rt.conns, conn)
		rt.mu.Unlock()
		_ = conn.Close()
	}()
	// A buffered reply over the limit is read on to its end (discarded),
	// then refused, as the Runtime API does.
	var total int
	over := false
	trailer, err := readChunks(brw.Reader, func(b []byte) {
		total += len(b)
		if over = over || (limit > 0 && total > limit); !over {
			inv.addChunk(b)
		}
	})
	if over && err == nil {
		inv.tooLarge()
		body, _ := json.Marshal(payloadTooLarge)
		_, _ = brw.WriteString("HTTP/1.1 413 Request Entity Too Large\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + string(body))
		_ = brw.Flush()
		return
	}
	var fe *FunctionError
	if typ := trailer.Get(HeaderErrorType); typ != "" {
		fe = &FunctionError{Type: typ}
		if b, derr := base64.StdEncoding.DecodeString(trailer.Get(HeaderErrorBody)); derr == nil {
			fe.Body = b
			fe.Message = decodeErrorDoc(b).Message
		}
	}
	inv.finish(fe, trailer, err)
	if err == nil {
		const body = `{"status":"OK"}` + "\n"
		_, _ = brw.WriteString("HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body)
		_ = brw.Flush()
	}
}

// payloadTooLarge is the Runtime API's answer to a buffered reply over
// MaxBufferedReply.
var payloadTooLarge = errorDoc{
	Message: fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", MaxBufferedReply),
	Type:    "RequestEntityTooLarge",
}

// readChunks reads a chunked body (RFC 9112 section 7.1), passing each
// chunk's data to add as it arrives, and returns the trailers.
func readChunks(br *bufio.Reader, add func([]byte)) (http.Header, error) {
	tp := textproto.NewReader(br)
	for {
		line, err := tp.ReadLine()
		if err != nil {
			return nil, unexpected(err)
		}
		sz, _, _ := strings.Cut(line, ";")
		n, err := strconv.ParseUint(strings.TrimSpace(sz), 16, 63)
		if err != nil {
			return nil, fmt.Errorf("lambdarun: bad chunk size line %q", line)
		}
		if n == 0 {
			mh, err := tp.ReadMIMEHeader()
			if err != nil {
				return nil, unexpected(err)
			}
			return http.Header(mh), nil
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, unexpected(err)
		}
		if crlf, err := tp.ReadLine(); err != nil || crlf != "" {
			return nil, fmt.Errorf("lambdarun: chunk of %d bytes not followed by CRLF", n)
		}
		add(b)
	}
}

func unexpected(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

type errorDoc struct {
	Message string `json:"errorMessage"`
	Type    string `json:"errorType"`
}

func decodeErrorDoc(b []byte) errorDoc {
	var d errorDoc
	_ = json.Unmarshal(b, &d)
	return d
}

func readFunctionError(r *http.Request) FunctionError {
	b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	d := decodeErrorDoc(b)
	return FunctionError{Type: or(r.Header.Get(HeaderErrorType), d.Type), Message: d.Message, Body: b}
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`+"\n")
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	b, _ := json.Marshal(errorDoc{Message: msg, Type: typ})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// newUUID returns a random version 4 UUID, the shape of Lambda request ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newTraceID returns an X-Ray trace header value as Lambda sends it.
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0;Lineage=1:%s:0",
		uint32(time.Now().Unix()), hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]), hex.EncodeToString(b[16:]))
}

// SplitPrelude splits a streamed function URL or REST API reply body into
// its JSON prelude and the response body after the 8 zero bytes.
func SplitPrelude(body []byte) (prelude, rest []byte, err error) {
	i := bytes.Index(body, make([]byte, 8))
	if i < 0 {
		return nil, nil, errors.New("lambdarun: no 8-zero-byte prelude delimiter in the body")
	}
	return body[:i], body[i+8:], nil
}
