package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long Serve lets running requests finish.
const shutdownGrace = 30 * time.Second

// Serve runs the local HTTP server: h on addr until ctx ends, then a
// graceful shutdown (a handler with a Shutdown method, such as
// httpapi.Handler's WebSocket connections, is shut down with it). ready, when not nil, is called with the bound address
// once the server accepts connections (LAMBENT_ADDR may name port 0).
func Serve(ctx context.Context, addr string, h http.Handler, ready func(net.Addr)) error {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}
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
