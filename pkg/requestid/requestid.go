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

	"github.com/aws/aws-lambda-go/lambdacontext"
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
// attributes.
type info struct {
	id    string
	attrs []slog.Attr
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
		i.attrs = old.attrs
	}
	return context.WithValue(ctx, key{}, i)
}

// WithAttrs returns ctx whose log records also carry attrs: a front
// door's own request ids (the Lambda invocation's, API Gateway's).
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	i := &info{}
	if old := get(ctx); old != nil {
		i.id = old.id
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
	w.Header().Set(Header, id)
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
// attributes, WithAttrs) before h handles it. Records logged without a
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

// LambdaKey is the log attribute of the Lambda invocation's request id.
const LambdaKey = "aws_request_id"

// WithLambda returns ctx whose log records also carry the request id of
// the Lambda invocation ctx belongs to (aws_request_id), when it belongs
// to one.
func WithLambda(ctx context.Context) context.Context {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return WithAttrs(ctx, slog.String(LambdaKey, lc.AwsRequestID))
	}
	return ctx
}
