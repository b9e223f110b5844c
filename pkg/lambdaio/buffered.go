package lambdaio

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
)

// Bounds of a buffered reply. API Gateway ends a buffered integration after
// 29 s (a REST API's default; an HTTP API's maximum is 30 s) with a 504 that
// tells the client nothing, and Lambda refuses a synchronous reply over 6 MB.
const (
	// DefaultBufferedTimeout is Config.BufferedTimeout's default: API
	// Gateway's 29 s, less a second for the reply to reach it.
	DefaultBufferedTimeout = 28 * time.Second
	// MaxBufferedReply is the largest reply Lambda returns from a
	// synchronous invocation (6 MB), the event's JSON encoding included.
	MaxBufferedReply = 6 << 20
)

// bufferedCheckFrom is the body size from which a buffered reply's JSON
// encoding is measured against MaxBufferedReply (escaping makes it larger
// than the body).
const bufferedCheckFrom = MaxBufferedReply / 2

// bounded returns ctx ending h.bufferedTimeout from now (or at its own
// deadline, when sooner).
func (h *Handler) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if h.bufferedTimeout < 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, h.bufferedTimeout)
}

// serveV1 answers a buffered REST API or HTTP API payload 1.0 request with
// one events.APIGatewayProxyResponse.
func (h *Handler) serveV1(ctx context.Context, ev *events.APIGatewayProxyRequest) (any, error) {
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	next, r := h.request(ctx, func(ctx context.Context) (*http.Request, error) {
		var ra core.RequestAccessor
		return ra.EventToRequestWithContext(ctx, *ev)
	})
	w := core.NewProxyResponseWriter()
	if err := h.serveBuffered(next, w, r); err != nil {
		return nil, err
	}
	resp, err := w.GetProxyResponse()
	if err != nil {
		return nil, fmt.Errorf("lambdaio: building the buffered reply: %w", err)
	}
	if tooLarge(len(resp.Body), resp) {
		resp.StatusCode, resp.Body, resp.IsBase64Encoded = replyTooLarge(resp.Body, firstHeader(resp.Headers, resp.MultiValueHeaders, requestid.Header))
		resp.Headers, resp.MultiValueHeaders = errorHeaders(resp.Headers, resp.MultiValueHeaders)
	}
	return resp, nil
}

// serveV2 answers an HTTP API payload 2.0 request with one
// events.APIGatewayV2HTTPResponse.
func (h *Handler) serveV2(ctx context.Context, ev *events.APIGatewayV2HTTPRequest) (any, error) {
	ctx, cancel := h.bounded(ctx)
	defer cancel()
	next, r := h.request(ctx, func(ctx context.Context) (*http.Request, error) {
		var ra core.RequestAccessorV2
		return ra.EventToRequestWithContext(ctx, *ev)
	})
	w := core.NewProxyResponseWriterV2()
	if err := h.serveBuffered(next, w, r); err != nil {
		return nil, err
	}
	resp, err := w.GetProxyResponse()
	if err != nil {
		return nil, fmt.Errorf("lambdaio: building the buffered reply: %w", err)
	}
	if tooLarge(len(resp.Body), resp) {
		resp.StatusCode, resp.Body, resp.IsBase64Encoded = replyTooLarge(resp.Body, firstHeader(resp.Headers, resp.MultiValueHeaders, requestid.Header))
		resp.Headers, resp.MultiValueHeaders = errorHeaders(resp.Headers, resp.MultiValueHeaders)
		resp.Cookies = nil
	}
	return resp, nil
}

// tooLarge reports whether reply (whose body has n bytes) would encode over
// MaxBufferedReply.
func tooLarge(n int, reply any) bool {
	if n < bufferedCheckFrom {
		return false
	}
	b, err := json.Marshal(reply)
	return err != nil || len(b) > MaxBufferedReply
}

// replyTooLarge is the status and body that replace a buffered reply over
// MaxBufferedReply: a 400 in the OpenAI error shape saying how to get it
// (stream it, or run it in the background and read it from a streaming
// front door), naming the response when the body was one.
func replyTooLarge(body, requestID string) (int, string, bool) {
	var r struct {
		ID     string `json:"id"`
		Object string `json:"object"`
	}
	_ = json.NewDecoder(strings.NewReader(body)).Decode(&r)
	what := "The reply"
	if r.Object == "response" && r.ID != "" {
		what = "The response " + r.ID
	}
	e := api.InvalidRequestCode("stream", "response_too_large",
		"%s is larger than the %d MB a buffered API Gateway reply can carry. Ask for it with \"stream\": true, or with \"background\": true and read it from a streaming front door (the function URL or the REST API).",
		what, MaxBufferedReply>>20)
	return e.Status, string(e.Body(requestID)), false
}

// errorHeaders keeps the request id of a reply's headers and makes it JSON.
func errorHeaders(single map[string]string, multi map[string][]string) (map[string]string, map[string][]string) {
	id := firstHeader(single, multi, requestid.Header)
	out := map[string]string{"Content-Type": "application/json"}
	if id != "" {
		out[requestid.Header] = id
	}
	return out, nil
}

// firstHeader is the first value of header name in a reply's headers.
func firstHeader(single map[string]string, multi map[string][]string, name string) string {
	for k, v := range single {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	for k, v := range multi {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// serveBuffered serves r with next into the api-proxy's writer w, whose
// reply is collected whole: the handler's writer gains a Flush that does
// nothing (the proxy's v2 writer has none, and a handler that streams would
// take the failed flush for a gone client), a handler that writes nothing
// answers 200 as under net/http (the proxy calls that an error), and a
// panic is returned as an error instead of crashing the runtime.
func (h *Handler) serveBuffered(next http.Handler, w http.ResponseWriter, r *http.Request) (err error) {
	bw := &bufferedWriter{ResponseWriter: w}
	defer func() {
		if p := recover(); p != nil {
			err = h.panicError(p, r)
		}
	}()
	next.ServeHTTP(bw, r)
	if !bw.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return nil
}

// bufferedWriter is the http.ResponseWriter handed to the handler for a
// buffered reply.
type bufferedWriter struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader passes the first final status on; later ones are ignored, as
// under net/http.
func (w *bufferedWriter) WriteHeader(code int) {
	if code >= 200 && !w.wrote {
		w.wrote = true
		w.ResponseWriter.WriteHeader(code)
	}
}

// Write appends p to the buffered body.
func (w *bufferedWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush does nothing: the reply is sent whole when the handler returns.
func (w *bufferedWriter) Flush() {}

// Unwrap returns the proxy's writer, for http.ResponseController.
func (w *bufferedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
