package lambdaio

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// serveV1 answers a buffered REST API or HTTP API payload 1.0 request with
// one events.APIGatewayProxyResponse.
func (h *Handler) serveV1(ctx context.Context, ev *events.APIGatewayProxyRequest) (any, error) {
	var perr error
	resp, err := httpadapter.New(h.buffered(&perr)).ProxyWithContext(ctx, *ev)
	if perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// serveV2 answers an HTTP API payload 2.0 request with one
// events.APIGatewayV2HTTPResponse.
func (h *Handler) serveV2(ctx context.Context, ev *events.APIGatewayV2HTTPRequest) (any, error) {
	var perr error
	resp, err := httpadapter.NewV2(h.buffered(&perr)).ProxyWithContext(ctx, *ev)
	if perr != nil {
		return nil, perr
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// buffered wraps the handler for the api-proxy adapters: its writer gains a
// Flush that does nothing (the proxy's v2 writer has none, and a handler
// that streams would take the failed flush for a gone client), a handler
// that writes nothing answers 200 as under net/http (the proxy calls that an
// error), and a panic becomes *perr instead of crashing the runtime.
func (h *Handler) buffered(perr *error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &bufferedWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				*perr = h.panicError(p, r)
			}
		}()
		h.h.ServeHTTP(bw, r)
		if !bw.wrote {
			w.WriteHeader(http.StatusOK)
		}
	})
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
