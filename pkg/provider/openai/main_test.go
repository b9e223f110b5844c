package openai_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider/openai"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// backend is a fake Chat Completions server: it records every request,
// refuses the ones OpenAI refuses (with the checks and error bodies of the
// fake model, fakellm.Rules; newSelfHostedBackend: none), and answers the
// others with handle.
type backend struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	hdrs   []http.Header
	paths  []string
	// lengths are the requests' Content-Length (-1: chunked).
	lengths []int64
}

func newBackend(t *testing.T, cfg openai.Config, handle http.HandlerFunc) (*openai.Provider, *backend) {
	t.Helper()
	return startBackend(t, cfg, true, handle)
}

// newSelfHostedBackend is newBackend for a server that refuses nothing
// OpenAI refuses (Ollama, LM Studio: max_tokens for any model name).
func newSelfHostedBackend(t *testing.T, cfg openai.Config, handle http.HandlerFunc) (*openai.Provider, *backend) {
	t.Helper()
	return startBackend(t, cfg, false, handle)
}

// startBackend starts a backend answering with handle, checking requests
// as OpenAI does when openAIChecks, and a Provider for it.
func startBackend(t *testing.T, cfg openai.Config, openAIChecks bool, handle http.HandlerFunc) (*openai.Provider, *backend) {
	t.Helper()
	b := &backend{t: t}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("backend: request body is not a JSON object: %v: %s", err, raw)
		}
		b.mu.Lock()
		b.bodies = append(b.bodies, body)
		b.hdrs = append(b.hdrs, r.Header.Clone())
		b.paths = append(b.paths, r.URL.Path)
		b.lengths = append(b.lengths, r.ContentLength)
		b.mu.Unlock()
		var req chatwire.Request
		if err := json.Unmarshal(raw, &req); err != nil {
			t.Errorf("backend: request body is not a Chat Completions request: %v: %s", err, raw)
		}
		if f := (fakellm.Rules{}).Check(&req); openAIChecks && f != nil {
			f.Write(w)
			return
		}
		handle(w, r)
	}))
	cfg.BaseURL = b.srv.URL + "/v1"
	p := openai.New(cfg)
	t.Cleanup(b.srv.Close)
	t.Cleanup(p.CloseIdleConnections)
	return p, b
}

func (b *backend) body(i int) map[string]any {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if i >= len(b.bodies) {
		b.t.Fatalf("backend got %d requests, want at least %d", len(b.bodies), i+1)
	}
	return b.bodies[i]
}

func (b *backend) length(i int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lengths[i]
}

func (b *backend) header(i int) http.Header {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hdrs[i]
}

// jsonReply answers with a JSON body.
func jsonReply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// writeSSE writes each chunk as one SSE event and flushes.
func writeSSE(w http.ResponseWriter, chunks ...string) {
	for _, c := range chunks {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", c)
	}
	w.(http.Flusher).Flush()
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
}

// sseReply streams chunks then [DONE].
func sseReply(chunks ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeSSE(w, chunks...)
		writeSSE(w, "[DONE]")
	}
}

// mustJSON decodes a JSON literal for comparisons.
func mustJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %q: %v", s, err)
	}
	return v
}

func assertJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	w := mustJSON(t, want)
	if !reflect.DeepEqual(got, w) {
		g, _ := json.MarshalIndent(got, "", "  ")
		ws, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("%s:\ngot  %s\nwant %s", what, g, ws)
	}
}

// apiErr asserts err is an *api.Error with the status, type and code.
func apiErr(t *testing.T, err error, status int, typ, code string) *api.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %d %s/%s", status, typ, code)
	}
	var e *api.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not an *api.Error", err, err)
	}
	if e.Status != status || e.Type != typ || e.Code != code {
		t.Fatalf("error = %d %s/%s (%q), want %d %s/%s", e.Status, e.Type, e.Code, e.Message, status, typ, code)
	}
	if e.Err == nil {
		t.Errorf("error %q wraps no cause", e.Message)
	}
	return e
}

func ptr[T any](v T) *T { return &v }

func contains(t *testing.T, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}
