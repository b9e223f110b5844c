package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/pacing"
)

// panickingService starts a stream, then panics.
type panickingService struct{ routedService }

func (panickingService) CreateResponse(_ context.Context, _ *api.CreateResponseRequest, w engine.ResponseWriter) error {
	d := "hi"
	if err := w.WriteEvent(&api.StreamEvent{Type: "response.output_text.delta", Delta: &d}); err != nil {
		return err
	}
	panic("boom")
}

func (panickingService) StreamResponse(_ context.Context, _ string, _ int64, w engine.ResponseWriter) error {
	d := "hi"
	if err := w.WriteEvent(&api.StreamEvent{Type: "response.output_text.delta", Delta: &d}); err != nil {
		return err
	}
	panic("boom")
}

// lateWriter is a ResponseWriter that records what is written to it once
// the handler has returned (done).
type lateWriter struct {
	mu     sync.Mutex
	header http.Header
	done   bool
	late   []string
}

func (w *lateWriter) Header() http.Header { return w.header }
func (w *lateWriter) WriteHeader(int)     {}
func (w *lateWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		w.late = append(w.late, string(p))
	}
	return len(p), nil
}
func (w *lateWriter) FlushError() error { return nil }

// A handler that panics in the middle of a stream stops its pacing: no
// keep-alive (nor flush) reaches the ResponseWriter after ServeHTTP has
// returned, when net/http may have reused it.
func TestPanicStopsPacing(t *testing.T) {
	const keepAlive = 10 * time.Millisecond
	h := httpapi.New(httpapi.Config{Service: panickingService{}, Logger: slog.New(slog.DiscardHandler),
		Pacing: pacing.Config{KeepAlive: keepAlive}})
	for _, tc := range []struct{ method, target, body string }{
		{"POST", "/v1/responses", `{"model":"m","input":"hi","stream":true}`},
		{"GET", "/v1/responses/resp_1?stream=true", ""},
	} {
		req, err := http.NewRequest(tc.method, "http://localhost"+tc.target, strings.NewReader(tc.body))
		require.NoError(t, err)
		if tc.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := &lateWriter{header: http.Header{}}
		h.ServeHTTP(w, req)
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
		time.Sleep(10 * keepAlive)
		w.mu.Lock()
		late := w.late
		w.mu.Unlock()
		require.Empty(t, late, "%s %s: written after the handler returned", tc.method, tc.target)
	}
}
