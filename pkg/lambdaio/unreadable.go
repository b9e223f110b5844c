package lambdaio

import (
	"context"
	"net/http"
	"net/url"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
)

// request is the http.Request that build makes of an event, with the
// handler that serves it. When the event's fields make none (an
// undecodable base64 body, a method or URL net/http refuses), it is a
// stand-in request (GET /, ctx) served by unreadable instead: the client
// gets a 400 in the OpenAI error shape, where a failed invocation would
// reach it as its front door's bare 502.
func (h *Handler) request(ctx context.Context, build func(context.Context) (*http.Request, error)) (http.Handler, *http.Request) {
	r, err := build(ctx)
	if err == nil {
		return h.h, r
	}
	h.log.WarnContext(ctx, "lambdaio: an event no request can be made of", "err", err)
	r = &http.Request{
		Method: http.MethodGet, URL: &url.URL{Path: "/"}, RequestURI: "/",
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: make(http.Header), Body: http.NoBody,
	}
	return http.HandlerFunc(unreadable), r.WithContext(ctx)
}

// unreadable answers a request its event could not describe.
func unreadable(w http.ResponseWriter, r *http.Request) {
	_, id := requestid.Serve(w, r)
	api.InvalidRequest("", "The request's method, URL or body could not be read.").WriteHTTP(w, id)
}
