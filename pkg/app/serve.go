package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Local server limits.
const (
	// shutdownGrace is how long Serve lets running requests finish.
	shutdownGrace = 30 * time.Second
	// headerTimeout bounds reading a request's header.
	headerTimeout = 10 * time.Second
	// bodyTimeout bounds reading a request's body (after its header): a
	// client that sends its body slower than this (a byte a second) gets an
	// error instead of holding a connection forever.
	bodyTimeout = 60 * time.Second
	// idleTimeout closes keep-alive connections idle this long.
	idleTimeout = 120 * time.Second
)

// Serve runs the local HTTP server: h on addr until ctx ends, then a
// graceful shutdown (a handler with a Shutdown method, such as
// httpapi.Handler's WebSocket connections, is shut down with it). ready, when not nil, is called with the bound address
// once the server accepts connections (LAMBENT_ADDR may name port 0).
//
// Reading a request's header is bounded by 10 s, and reading the whole
// request, body included, by 70 s. Writes are not bounded: a stream lasts
// as long as its response.
func Serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	return serve(ctx, addr, h, ready, headerTimeout, bodyTimeout)
}

func serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr), header, body time.Duration) error {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	// ReadTimeout bounds the header and the body. It does not cut long
	// streams: net/http clears the connection's read deadline once the
	// body has been read (or when there is none), before it watches the
	// connection for a client that goes away (TestServeBodyTimeout).
	srv := &http.Server{Handler: h, ReadHeaderTimeout: header, ReadTimeout: header + body, IdleTimeout: idleTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready(ln.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// http.Server.Shutdown does not see hijacked (WebSocket) connections:
	// a handler that holds some closes them at the same time.
	connsDone := make(chan error, 1)
	go func() {
		if s, ok := h.(interface{ Shutdown(context.Context) error }); ok {
			connsDone <- s.Shutdown(sctx)
			return
		}
		connsDone <- nil
	}()
	err = srv.Shutdown(sctx)
	if cerr := <-connsDone; err == nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
