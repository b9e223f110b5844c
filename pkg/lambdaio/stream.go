package lambdaio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// bufSize is the write buffer between the handler and the pipe. Writes
// collect in it until the handler flushes (or it fills up, or the handler
// returns), so each Flush becomes one chunk of the response stream. It
// matches the 32 KiB buffer the runtime client's io.Copy reads with.
const bufSize = 32 << 10

// serveFunctionURL streams the reply to a function URL request.
func (h *Handler) serveFunctionURL(ctx context.Context, ev *events.LambdaFunctionURLRequest) (any, error) {
	body, hd, err := h.stream(ctx, func(ctx context.Context) (*http.Request, error) {
		return functionURLRequest(ctx, ev)
	})
	if err != nil {
		return nil, err
	}
	resp := &events.LambdaFunctionURLStreamingResponse{StatusCode: hd.status, Body: body}
	for k, v := range hd.header {
		switch {
		case k == "Set-Cookie":
			resp.Cookies = v
		case len(v) > 0:
			if resp.Headers == nil {
				resp.Headers = make(map[string]string, len(hd.header))
			}
			resp.Headers[k] = strings.Join(v, ",")
		}
	}
	return resp, nil
}

// serveRESTStream streams the reply to a REST API request whose integration
// streams (ResponseTransferMode STREAM).
func (h *Handler) serveRESTStream(ctx context.Context, ev *events.APIGatewayProxyRequest) (any, error) {
	body, hd, err := h.stream(ctx, func(ctx context.Context) (*http.Request, error) {
		var ra core.RequestAccessor
		r, err := ra.EventToRequestWithContext(ctx, *ev)
		if err != nil {
			return nil, err
		}
		if host := r.Header.Get("Host"); host != "" {
			r.Host = host
			r.Header.Del("Host")
		}
		return r, nil
	})
	if err != nil {
		return nil, err
	}
	resp := &events.APIGatewayProxyStreamingResponse{StatusCode: hd.status, Body: body}
	for k, v := range hd.header {
		switch {
		case len(v) == 1 && k != "Set-Cookie":
			if resp.Headers == nil {
				resp.Headers = make(map[string]string, len(hd.header))
			}
			resp.Headers[k] = v[0]
		case len(v) > 0:
			if resp.MultiValueHeaders == nil {
				resp.MultiValueHeaders = make(map[string][]string)
			}
			resp.MultiValueHeaders[k] = v
		}
	}
	return resp, nil
}

// functionURLRequest builds the http.Request of a function URL event.
func functionURLRequest(ctx context.Context, ev *events.LambdaFunctionURLRequest) (*http.Request, error) {
	hc := &ev.RequestContext.HTTP
	if hc.Method == "" {
		return nil, fmt.Errorf("lambdaio: function URL event without requestContext.http.method")
	}
	body, err := decodeBody(ev.Body, ev.IsBase64Encoded)
	if err != nil {
		return nil, err
	}
	path := ev.RawPath
	if path == "" {
		path = hc.Path
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := "https://" + ev.RequestContext.DomainName + parsablePath(path)
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	r, err := http.NewRequestWithContext(ctx, hc.Method, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("lambdaio: function URL event: %w", err)
	}
	if major, minor, ok := http.ParseHTTPVersion(hc.Protocol); ok {
		r.Proto, r.ProtoMajor, r.ProtoMinor = hc.Protocol, major, minor
	}
	r.RemoteAddr = hc.SourceIP
	r.RequestURI = r.URL.RequestURI()
	for k, v := range ev.Headers {
		r.Header.Add(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	if host := r.Header.Get("Host"); host != "" {
		r.Host = host
		r.Header.Del("Host")
	}
	return r, nil
}

func decodeBody(body string, isBase64 bool) ([]byte, error) {
	if !isBase64 {
		return []byte(body), nil
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("lambdaio: decoding the base64 request body: %w", err)
	}
	return b, nil
}

// head is what the handler has sent before its body: status and headers,
// or the error of a handler that panicked before writing anything.
type head struct {
	status int
	header http.Header
	err    error
}

// stream runs the handler on the request that build makes (or answers an
// unreadable event, Handler.request), in a goroutine writing into a pipe,
// and returns the pipe's reading end once the handler has sent its status
// and headers.
func (h *Handler) stream(ctx context.Context, build func(context.Context) (*http.Request, error)) (*streamBody, head, error) {
	ctx, cancel := context.WithCancel(ctx)
	next, r := h.request(ctx, build)
	pr, pw := io.Pipe()
	w := &streamWriter{header: make(http.Header), ready: make(chan head, 1), bw: bufio.NewWriterSize(pw, bufSize)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				err := h.panicError(p, r)
				if !w.started {
					w.started = true
					w.ready <- head{err: err}
				}
				_ = pw.CloseWithError(err)
				return
			}
			w.start(nil)
			_ = w.bw.Flush()
			_ = pw.Close()
		}()
		next.ServeHTTP(w, r)
	}()
	body := &streamBody{pr: pr, cancel: cancel, done: done}
	hd := <-w.ready
	if hd.err != nil {
		_ = body.Close()
		return nil, head{}, hd.err
	}
	return body, hd, nil
}

// streamBody is the body of a streamed reply: the reading end of the pipe
// the handler writes into.
type streamBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
	done   <-chan struct{}
}

// Read reads what the handler wrote, up to one flush at a time; io.EOF after
// the handler returned, or the handler's panic as an error.
func (b *streamBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close cancels the request's context, makes the handler's further writes
// fail, and waits for the handler to return.
func (b *streamBody) Close() error {
	b.cancel()
	_ = b.pr.Close()
	<-b.done
	return nil
}

// streamWriter is the http.ResponseWriter of a streamed reply. Like every
// ResponseWriter it is used by the handler's goroutine only.
type streamWriter struct {
	header  http.Header
	snap    http.Header // the header as of WriteHeader
	status  int
	started bool // the head went to ready
	ready   chan head
	bw      *bufio.Writer
}

func (w *streamWriter) Header() http.Header { return w.header }

// WriteHeader records the status code and a snapshot of the header (later
// changes are ignored, as under net/http); the head is sent with the first
// Write or Flush. Informational (1xx) codes cannot be sent through Lambda and
// are dropped.
func (w *streamWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("lambdaio: invalid WriteHeader code %v", code))
	}
	if w.started || w.status != 0 || code < 200 {
		return
	}
	w.status = code
	w.snap = w.header.Clone()
}

// Write buffers p until the next Flush; a full buffer is passed on at once.
func (w *streamWriter) Write(p []byte) (int, error) {
	w.start(p)
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	return w.bw.Write(p)
}

// FlushError sends what was written so far as one chunk, waiting until the
// runtime has taken it. It fails once the response was closed.
func (w *streamWriter) FlushError() error {
	w.start(nil)
	return w.bw.Flush()
}

// Flush is FlushError without the error, for http.Flusher.
func (w *streamWriter) Flush() { _ = w.FlushError() }

// start sends the head, once: the status (200 unless set) and a copy of the
// headers, with a sniffed Content-Type when the handler set none.
func (w *streamWriter) start(p []byte) {
	if w.started {
		return
	}
	w.started = true
	if w.status == 0 {
		w.status = http.StatusOK
	}
	src := w.snap
	if src == nil {
		src = w.header
	}
	hd := make(http.Header, len(src)+1)
	for k, v := range src {
		if len(v) > 0 && !dropHeader(k) {
			hd[k] = append([]string(nil), v...)
		}
	}
	if _, set := src["Content-Type"]; !set && len(p) > 0 && bodyAllowed(w.status) {
		hd.Set("Content-Type", http.DetectContentType(p))
	}
	w.ready <- head{status: w.status, header: hd}
}

func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}

// dropHeader reports headers that must not reach a streamed reply's
// prelude: hop-by-hop headers, and Content-Length, which Lambda replaces
// with chunked transfer (it would remap it to x-amzn-Remapped-Content-Length).
func dropHeader(k string) bool {
	switch k {
	case "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive", "Te", "Trailer", "Upgrade", "Proxy-Connection":
		return true
	}
	return false
}
