// Package conncount is an HTTP server for tests that counts the
// connections its clients open, so that a test can prove a client reuses
// its connections (each new one costs a TCP handshake, and over the
// internet a TLS one) rather than measure time.
package conncount

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Server is an httptest.Server that counts the connections accepted.
type Server struct {
	*httptest.Server
	opened atomic.Int64
}

// Start starts a plain HTTP server running h, closed when the test ends.
func Start(t testing.TB, h http.Handler) *Server {
	t.Helper()
	s := &Server{Server: httptest.NewUnstartedServer(h)}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.opened.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// Opened is how many connections the server has accepted.
func (s *Server) Opened() int { return int(s.opened.Load()) }

// Barrier holds each request until n are in flight at once (or until a
// generous bound passed, so a failing client cannot hang the test), so
// that n concurrent calls really need n connections over HTTP/1.1.
type Barrier struct {
	n       int
	mu      sync.Mutex
	arrived int
	open    chan struct{}
}

// NewBarrier returns a barrier for rounds of n concurrent requests.
func NewBarrier(n int) *Barrier {
	return &Barrier{n: n, open: make(chan struct{})}
}

// Wait blocks the calling request until its round of n has arrived; the
// next n requests make the next round.
func (b *Barrier) Wait() {
	b.mu.Lock()
	open := b.open
	b.arrived++
	if b.arrived == b.n {
		close(b.open)
		b.arrived, b.open = 0, make(chan struct{})
	}
	b.mu.Unlock()
	select {
	case <-open:
	case <-time.After(10 * time.Second):
	}
}

// Rounds runs rounds of n concurrent calls of fn (each waits for the
// others), one round after the other, and reports the first error.
func Rounds(rounds, n int, fn func() error) error {
	var first error
	var mu sync.Mutex
	for range rounds {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				if err := fn(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	return first
}
