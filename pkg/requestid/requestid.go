// Package requestid gives every request a request id, as the OpenAI API
// does: "req_" and 32 hexadecimal digits, sent back in the x-request-id
// header (the OpenAI SDKs surface it: request_id, _request_id) and
// repeated by every log line of the request, so that a tenant reporting a
// failure can point the operator at its log lines.
//
// The id travels in the request's context (With, From). A front door gives
// each request (each WebSocket message, each background job) its own; the
// log handler (NewHandler) adds it, and the front door's own ids (the
// Lambda and API Gateway request ids, WithAttrs), to every record logged
// with that context.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/lambent/lambent/pkg/tenant"
)

// Header is the response header that carries the request id.
const Header = "X-Request-Id"

// Prefix starts every request id.
const Prefix = "req_"

// LogKey is the attribute of the request id in log records.
const LogKey = "request_id"

// New returns a new request id: Prefix and 32 random hexadecimal digits.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	var s [len(Prefix) + 32]byte
	copy(s[:], Prefix)
	hex.Encode(s[len(Prefix):], b[:])
	return string(s[:])
}

type key struct{}

// info is what a context carries: the request id and the front door's
// attributes; lambda marks that those include the Lambda invocation's.
type info struct {
	id     string
	attrs  []slog.Attr
	lambda bool
}

func get(ctx context.Context) *info {
	i, _ := ctx.Value(key{}).(*info)
	return i
}

// With returns ctx carrying the request id id (and the attributes an
// outer WithAttrs gave).
func With(ctx context.Context, id string) context.Context {
	i := &info{id: id}
	if old := get(ctx); old != nil {
		i.attrs, i.lambda = old.attrs, old.lambda
	}
	return context.WithValue(ctx, key{}, i)
}

// WithAttrs returns ctx whose log records also carry attrs: a front
// door's own request ids (the Lambda invocation's, API Gateway's).
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	i := &info{}
	if old := get(ctx); old != nil {
		i.id, i.lambda = old.id, old.lambda
		i.attrs = append(i.attrs, old.attrs...)
	}
	i.attrs = append(i.attrs, attrs...)
	return context.WithValue(ctx, key{}, i)
}

// From returns the request id ctx carries, "" when none.
func From(ctx context.Context) string {
	if i := get(ctx); i != nil {
		return i.id
	}
	return ""
}

// Ensure returns ctx with a request id: the one it carries, else a new one.
func Ensure(ctx context.Context) (context.Context, string) {
	if id := From(ctx); id != "" {
		return ctx, id
	}
	id := New()
	return With(ctx, id), id
}

// Serve gives r a request id (the one its context carries, else a new
// one), sets the x-request-id header of w, and returns r with the id in
// its context.
func Serve(w http.ResponseWriter, r *http.Request) (*http.Request, string) {
	ctx, id := Ensure(r.Context())
	// A request served through Middleware comes to the handler's Serve
	// with its header set.
	if h := w.Header(); len(h[Header]) != 1 || h[Header][0] != id {
		h[Header] = []string{id}
	}
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	return r, id
}

// Middleware serves every request of next with a request id (Serve).
func Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, _ = Serve(w, r)
		next.ServeHTTP(w, r)
	})
}

// handler adds the request id of a record's context to the record.
type handler struct {
	slog.Handler
}

// NewHandler wraps h: every record logged with a context that carries a
// request id gets the attribute request_id (and the front door's
// attributes, WithAttrs, and the tenant the context names, TenantKey)
// before h handles it. Records logged without a
// context (Info rather than InfoContext) get nothing. On a logger with a
// group (WithGroup) the attributes land in the group.
func NewHandler(h slog.Handler) slog.Handler {
	return handler{h}
}

// Handle implements slog.Handler.
func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if i := get(ctx); i != nil {
		r = r.Clone()
		if i.id != "" {
			r.AddAttrs(slog.String(LogKey, i.id))
		}
		r.AddAttrs(i.attrs...)
		if t, ok := tenant.Named(ctx); ok {
			r.AddAttrs(slog.String(TenantKey, t))
		}
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return handler{h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h handler) WithGroup(name string) slog.Handler {
	return handler{h.Handler.WithGroup(name)}
}

// TenantKey is the log attribute of the tenant a request's context names.
const TenantKey = "tenant"

// Log attributes of a Lambda invocation, under the names AWS Lambda
// Powertools gives them, so that log queries written for Powertools work.
const (
	// LambdaKey: the Lambda invocation's request id.
	LambdaKey = "function_request_id"
	// FunctionNameKey: the function's name.
	FunctionNameKey = "function_name"
	// ColdStartKey: whether the invocation is its process's first (Invocations).
	ColdStartKey = "cold_start"
	// TraceKey: the X-Ray trace id (the Root of the trace header) when the
	// invocation has one.
	TraceKey = "xray_trace_id"
)

// Invocations tells the first Lambda invocation of a process (its cold
// start) from the ones after. A function's handler holds one; its zero
// value is ready.
type Invocations struct{ started atomic.Bool }

// Start returns ctx whose log records carry the Lambda invocation's fields
// (WithLambda) and cold_start: true for the first call of i, false after.
func (i *Invocations) Start(ctx context.Context) context.Context {
	cold := !i.started.Swap(true)
	return withLambda(ctx, slog.Bool(ColdStartKey, cold))
}

// WithLambda returns ctx whose log records also carry the fields of the
// Lambda invocation ctx belongs to (function_request_id, function_name,
// xray_trace_id), when it belongs to one and does not carry them yet (an
// outer Invocations.Start gave them, with cold_start).
func WithLambda(ctx context.Context) context.Context {
	return withLambda(ctx)
}

func withLambda(ctx context.Context, extra ...slog.Attr) context.Context {
	if i := get(ctx); i != nil && i.lambda {
		return ctx
	}
	lc, ok := lambdacontext.FromContext(ctx)
	if !ok || lc.AwsRequestID == "" {
		return ctx
	}
	attrs := append([]slog.Attr{slog.String(LambdaKey, lc.AwsRequestID)}, extra...)
	if lambdacontext.FunctionName != "" {
		attrs = append(attrs, slog.String(FunctionNameKey, lambdacontext.FunctionName))
	}
	// aws-lambda-go keeps the invocation's trace header under this string key.
	if h, _ := ctx.Value("x-amzn-trace-id").(string); h != "" {
		if root := traceRoot(h); root != "" {
			attrs = append(attrs, slog.String(TraceKey, root))
		}
	}
	ctx = WithAttrs(ctx, attrs...)
	get(ctx).lambda = true
	return ctx
}

// traceRoot is the Root of an X-Ray trace header
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=...;Sampled=1").
func traceRoot(header string) string {
	for part := range strings.SplitSeq(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return ""
}
