package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
)

// cannedService answers every create with the same completed response.
type cannedService struct {
	Service
	resp *api.Response
}

func (s cannedService) CreateResponse(_ context.Context, _ *api.CreateResponseRequest, w engine.ResponseWriter) error {
	return w.WriteResponse(s.resp)
}

// discardWriter is a ResponseWriter that keeps nothing but its header.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }

// The cost of the request id on a normal request (a non-streaming create
// answered by a canned response, no model): the handler with it
// (ServeHTTP) beside the handler without it.
func BenchmarkRequestID(b *testing.B) {
	now := int64(1)
	svc := cannedService{resp: &api.Response{ID: "resp_1", Object: "response", CreatedAt: now, Status: api.StatusCompleted, Model: "test-model",
		Output: []api.Item{{Type: api.ItemMessage, ID: "msg_1", Role: api.RoleAssistant, Status: api.ItemCompleted,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: "Hello there!"}}}}}}
	h := New(Config{Service: svc, Logger: slog.New(slog.DiscardHandler)})
	body := `{"model":"test-model","input":"Say hello"}`
	for _, c := range []struct {
		name  string
		serve func(http.ResponseWriter, *http.Request)
	}{
		{"without", func(w http.ResponseWriter, r *http.Request) {
			defer h.recoverPanic(w, r)
			h.fail(w, r, h.serve(w, r))
		}},
		{"with", h.ServeHTTP},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				c.serve(&discardWriter{h: http.Header{}}, r)
			}
		})
	}
}
