package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestServe(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, "127.0.0.1:0", h, func(a net.Addr) { ready <- a }) }()
	addr := <-ready

	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://" + addr.String() + "/")
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, "ok", string(b))

	// The address is taken now: a second server fails at once.
	require.ErrorContains(t, Serve(ctx, addr.String(), h, nil), "listen on "+addr.String())

	cancel()
	require.NoError(t, <-done)
}

// A client that sends its body too slowly is answered (here: the handler's
// 400 for the failed read) instead of holding the connection; a stream
// that outlasts the body timeout after its body was read is not cut.
func TestServeBodyTimeout(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const headerTimeout, bodyTimeout = 200 * time.Millisecond, 100 * time.Millisecond
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow body: "+err.Error(), http.StatusBadRequest)
			return
		}
		// Stream for longer than both timeouts: neither the writes nor the
		// request's context may be cut by the read deadline.
		rc := http.NewResponseController(w)
		for i := range 8 {
			if r.Context().Err() != nil {
				return
			}
			_, _ = fmt.Fprintf(w, "chunk %d\n", i)
			_ = rc.Flush()
			time.Sleep(bodyTimeout)
		}
		_, _ = io.WriteString(w, "end\n")
	})
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, "127.0.0.1:0", h, func(a net.Addr) { ready <- a }, headerTimeout, bodyTimeout)
	}()
	addr := (<-ready).String()

	// 1 byte of a 100-byte body, then nothing.
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "POST /v1/responses HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "the server answers a stalled body")
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", b)
	require.Contains(t, string(b), "timeout")

	// A whole body, then a stream longer than the body timeout.
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err = hc.Post("http://"+addr+"/", "application/json", strings.NewReader(`{"input":"x"}`))
	require.NoError(t, err)
	b, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasSuffix(string(b), "chunk 7\nend\n"), "%s", b)

	cancel()
	require.NoError(t, <-done)
}
