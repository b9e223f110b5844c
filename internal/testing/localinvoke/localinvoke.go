// Package localinvoke serves Lambda functions on a local endpoint that
// speaks the AWS Lambda Invoke API, the way `sam local start-lambda` does
// but in-process and without Docker: the real aws-sdk-go-v2 Lambda client
// (AWS_ENDPOINT_URL_LAMBDA or BaseEndpoint pointed at it) invokes hosted
// tools through it exactly as it would invoke them in AWS.
//
// Only POST /2015-03-31/functions/{FunctionName}/invocations is served,
// answered as the Lambda service answers:
//
//   - 200 with the function's payload and X-Amz-Executed-Version;
//   - 200 with X-Amz-Function-Error: Unhandled and
//     {"errorMessage","errorType"} when the function fails (it returns an
//     error, panics, times out or answers more than 6 MB);
//   - AWS JSON errors (X-Amzn-ErrorType header, {"Type","message"} body) for
//     an unknown function (404 ResourceNotFoundException), a request body
//     that is not JSON (400 InvalidRequestContentException), one over 6 MB
//     (413 RequestTooLargeException) and injected throttles (429
//     TooManyRequestsException).
//
// FunctionName may be a name, a "name:qualifier", a partial ARN
// ("123456789012:function:name") or a full ARN; the qualifier (also
// ?Qualifier=) is accepted and echoed, as one local version serves them all.
// The options inject throttles, held invocations and function errors for
// tests.
package localinvoke

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
	"github.com/lambent/lambent/pkg/tools/lambdatool"
)

// Function is one Lambda function's handler: the invocation payload in,
// the response payload out. A returned error is an unhandled function
// error; errorType is the error's type name, or FunctionError.Type.
type Function func(ctx context.Context, payload []byte) ([]byte, error)

// FunctionError is an error a Function may return to choose the errorType
// and errorMessage of its function error.
type FunctionError struct {
	// Type is the errorType ("Runtime.ExitError", "Sandbox.Timedout", ...).
	Type string
	// Message is the errorMessage.
	Message string
}

// Error implements error.
func (e *FunctionError) Error() string { return e.Type + ": " + e.Message }

// Stats counts what a Server answered.
type Stats struct {
	// Requests is every Invoke request received.
	Requests int64
	// Throttled is the requests answered 429 TooManyRequestsException.
	Throttled int64
	// Invocations is the functions started (after throttling and holds).
	Invocations int64
	// FunctionErrors is the invocations answered with X-Amz-Function-Error.
	FunctionErrors int64
}

// Server is an http.Handler implementing the Lambda Invoke API for a set of
// functions. Create it with New; it is safe for concurrent use.
type Server struct {
	funcs    map[string]Function
	mux      *http.ServeMux
	log      *slog.Logger
	region   string
	account  string
	timeout  time.Duration
	hold     <-chan struct{}
	fault    *FunctionError
	throttle atomic.Int64

	requests, throttled, invocations, functionErrors atomic.Int64
}

// Option configures a Server.
type Option func(*Server)

// WithFunction serves f under name, next to the hosted tools.
func WithFunction(name string, f Function) Option {
	return func(s *Server) { s.funcs[name] = f }
}

// WithThrottle answers the first n Invoke requests (of any function) with
// 429 TooManyRequestsException, as Lambda does when a function's
// concurrency is exhausted.
func WithThrottle(n int) Option {
	return func(s *Server) { s.throttle.Store(int64(n)) }
}

// WithHold holds every invocation, before its function runs, until release
// is closed (or a value is received from it, releasing one invocation) or
// the caller goes away.
func WithHold(release <-chan struct{}) Option {
	return func(s *Server) { s.hold = release }
}

// WithFunctionError makes every invocation fail with an unhandled function
// error of this errorType and errorMessage, without running the function.
func WithFunctionError(errorType, message string) Option {
	return func(s *Server) { s.fault = &FunctionError{Type: errorType, Message: message} }
}

// WithFunctionTimeout gives every invocation this deadline, like a Lambda
// function's Timeout setting; a function still running then is answered
// with the Sandbox.Timedout function error. Zero (the default) means none.
func WithFunctionTimeout(d time.Duration) Option {
	return func(s *Server) { s.timeout = d }
}

// WithLogger logs each invocation at debug level and failures at warn.
func WithLogger(l *slog.Logger) Option {
	return func(s *Server) { s.log = l }
}

// WithARN sets the region and account of the ARNs in error messages
// (default us-east-1 and 000000000000).
func WithARN(region, account string) Option {
	return func(s *Server) { s.region, s.account = region, account }
}

// New returns a Server serving each hosted tool, under its map key, as a
// tool function (lambdatool.Handle), plus the functions of the options.
func New(hosted map[string]tools.Hosted, opts ...Option) *Server {
	s := &Server{
		funcs:   make(map[string]Function, len(hosted)),
		log:     slog.New(slog.DiscardHandler),
		region:  "us-east-1",
		account: "000000000000",
	}
	for name, h := range hosted {
		s.funcs[name] = func(ctx context.Context, payload []byte) ([]byte, error) {
			return lambdatool.Handle(ctx, h, payload)
		}
	}
	for _, o := range opts {
		o(s)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", s.invoke)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.awsError(w, http.StatusNotFound, "UnknownOperationException", fmt.Sprintf("Unknown operation %s %s", r.Method, r.URL.Path))
	})
	return s
}

// Functions returns the names of the served functions, sorted.
func (s *Server) Functions() []string {
	out := make([]string, 0, len(s.funcs))
	for n := range s.funcs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Stats returns the counters so far.
func (s *Server) Stats() Stats {
	return Stats{
		Requests:       s.requests.Load(),
		Throttled:      s.throttled.Load(),
		Invocations:    s.invocations.Load(),
		FunctionErrors: s.functionErrors.Load(),
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-RequestId", requestID())
	s.mux.ServeHTTP(w, r)
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	name, qualifier := ParseFunctionName(r.PathValue("name"))
	if q := r.URL.Query().Get("Qualifier"); q != "" {
		qualifier = q
	}
	f, ok := s.funcs[name]
	if !ok {
		s.awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+s.arn(name, qualifier))
		return
	}
	if s.throttle.Load() > 0 && s.throttle.Add(-1) >= 0 {
		s.throttled.Add(1)
		s.awsError(w, http.StatusTooManyRequests, "TooManyRequestsException", "Rate Exceeded.", "Reason", "ReservedFunctionConcurrentInvocationLimitExceeded")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lambdaexec.MaxPayloadBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.awsError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", fmt.Sprintf("Request must be smaller than %d bytes for the InvokeFunction operation", lambdaexec.MaxPayloadBytes))
			return
		}
		s.awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not read request body: "+err.Error())
		return
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		body = []byte("{}")
	}
	if !json.Valid(body) {
		s.awsError(w, http.StatusBadRequest, "InvalidRequestContentException", "Could not parse request body into json: the payload is not valid JSON")
		return
	}
	switch typ := r.Header.Get("X-Amz-Invocation-Type"); typ {
	case "", "RequestResponse", "Event":
	case "DryRun":
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		s.awsError(w, http.StatusBadRequest, "InvalidParameterValueException", "Unsupported invocation type "+typ)
		return
	}
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-r.Context().Done():
			return // the caller is gone; nobody reads an answer
		}
	}
	s.invocations.Add(1)
	s.log.Debug("invoke", "function", name, "qualifier", qualifier)
	out, ferr := s.run(r.Context(), f, body)
	if ferr == nil && len(out) > lambdaexec.MaxPayloadBytes {
		ferr = &FunctionError{Type: "Function.ResponseSizeTooLarge", Message: fmt.Sprintf("Response payload size exceeded maximum allowed payload size (%d bytes).", lambdaexec.MaxPayloadBytes)}
	}
	version := "$LATEST"
	if isVersion(qualifier) {
		version = qualifier
	}
	w.Header().Set("X-Amz-Executed-Version", version)
	if r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		// No queue here: an Event invocation has run by the time it is accepted.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if ferr != nil {
		s.functionErrors.Add(1)
		s.log.Warn("function error", "function", name, "error_type", ferr.Type, "error", ferr.Message)
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(map[string]string{"errorMessage": ferr.Message, "errorType": ferr.Type})
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// run runs one function with the configured fault, timeout and panic
// recovery; a failure is the function error to answer.
func (s *Server) run(ctx context.Context, f Function, payload []byte) (out []byte, ferr *FunctionError) {
	if s.fault != nil {
		return nil, s.fault
	}
	var start time.Time
	if s.timeout > 0 {
		start = time.Now()
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			out, ferr = nil, &FunctionError{Type: typeName(p), Message: fmt.Sprint(p)}
		}
	}()
	out, err := f(ctx, payload)
	if s.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, &FunctionError{Type: "Sandbox.Timedout", Message: fmt.Sprintf("%s Task timed out after %.2f seconds", time.Now().UTC().Format(time.RFC3339), time.Since(start).Seconds())}
	}
	if err != nil {
		var fe *FunctionError
		if errors.As(err, &fe) {
			return nil, fe
		}
		return nil, &FunctionError{Type: typeName(err), Message: err.Error()}
	}
	return out, nil
}

// awsError writes an AWS JSON protocol error; kv adds body fields.
func (s *Server) awsError(w http.ResponseWriter, status int, code, msg string, kv ...string) {
	body := map[string]string{"Type": "User", "message": msg}
	for i := 0; i+1 < len(kv); i += 2 {
		body[kv[i]] = kv[i+1]
	}
	if status >= 500 {
		body["Type"] = "Service"
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (s *Server) arn(name, qualifier string) string {
	a := fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.region, s.account, name)
	if qualifier != "" {
		a += ":" + qualifier
	}
	return a
}

// ParseFunctionName splits an Invoke FunctionName into the function name
// and qualifier: "name", "name:qualifier", "123456789012:function:name[:q]"
// and "arn:aws:lambda:region:123456789012:function:name[:q]" are accepted.
func ParseFunctionName(s string) (name, qualifier string) {
	parts := strings.Split(s, ":")
	switch {
	case len(parts) >= 7 && parts[0] == "arn" && parts[5] == "function":
		name = parts[6]
		if len(parts) > 7 {
			qualifier = parts[7]
		}
	case len(parts) >= 3 && parts[1] == "function":
		name = parts[2]
		if len(parts) > 3 {
			qualifier = parts[3]
		}
	case len(parts) == 2:
		name, qualifier = parts[0], parts[1]
	default:
		name = s
	}
	return name, qualifier
}

func isVersion(q string) bool {
	if q == "" {
		return false
	}
	for _, r := range q {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// typeName is the errorType aws-lambda-go reports: the value's type name
// without package or pointer.
func typeName(v any) string {
	t := reflect.TypeOf(v)
	if t == nil {
		return "Runtime.Unknown"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	return t.Name()
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
