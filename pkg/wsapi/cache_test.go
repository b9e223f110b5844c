package wsapi

// The tenant's budget of its connections' caches together, over a real
// WebSocket and a fake Service that keeps each response in the
// connection's cache.

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// keptBytes is the text of each response keepingService keeps: with
// budgetBytes, two fit in a budget, three do not.
const (
	keptBytes   = 40 << 10
	budgetBytes = 100 << 10
)

// keepingService answers a response.create of input x with response
// resp_x, kept in the connection's cache (keptBytes of input), after
// reading its previous_response_id there (previous_response_not_found
// when the cache has it not).
type keepingService struct{}

func (keepingService) CreateResponse(ctx context.Context, req *api.CreateResponseRequest, w engine.ResponseWriter) error {
	cache := w.(engine.ConnectionWriter).ConnectionCache()
	if id := req.PreviousResponseID; id != "" {
		if _, err := cache.Get(ctx, id); err != nil {
			return api.NotFound("previous_response_id", "previous_response_not_found", "Previous response with id '%s' not found.", id)
		}
	}
	resp := &api.Response{ID: "resp_" + req.Input[0].Content[0].Text, Object: "response", Status: api.StatusCompleted}
	rec := &store.Record{Response: resp, Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: strings.Repeat("a", keptBytes)}}}}}
	if err := cache.Put(ctx, rec); err != nil {
		return err
	}
	return w.WriteEvent(&api.StreamEvent{Type: api.EventResponseCompleted, Response: resp})
}

// tenantServer serves keepingService with budgetBytes per connection and
// per tenant, the tenant of a connection being its URL's tenant
// parameter; ended receives a value each time a connection's handler has
// returned.
func tenantServer(t *testing.T) (url string, ended <-chan struct{}) {
	t.Helper()
	s := NewServer(Config{Service: keepingService{}, PingInterval: -1, Logger: slog.New(slog.DiscardHandler),
		CacheBytes: budgetBytes, TenantCacheBytes: budgetBytes})
	done := make(chan struct{}, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		s.ServeHTTP(w, r.WithContext(tenant.With(r.Context(), r.URL.Query().Get("tenant"))))
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), done
}

// keep sends a response.create of input on lane, continuing prev ("":
// none), and returns the type of the message answering it:
// response.completed, or error.
func (l *laneClient) keep(lane, input, prev string) string {
	l.t.Helper()
	body := `{"type":"response.create","model":"m","store":false,"stream_id":"` + lane + `","input":"` + input + `"`
	if prev != "" {
		body += `,"previous_response_id":"` + prev + `"`
	}
	l.send(body + "}")
	return l.read().Type
}

// Two connections of a tenant keep at most its budget together: a
// response that passes it evicts the tenant's least recently kept one, on
// the other connection, while another tenant's, older still, is kept.
func TestServerTenantCacheBudget(t *testing.T) {
	url, _ := tenantServer(t)
	other := dialLanes(t, url+"?tenant=globex")
	first, second := dialLanes(t, url+"?tenant=acme"), dialLanes(t, url+"?tenant=acme")
	require.Equal(t, api.EventResponseCompleted, other.keep("o", "o", ""))
	require.Equal(t, api.EventResponseCompleted, first.keep("a", "a", ""))
	require.Equal(t, api.EventResponseCompleted, second.keep("b", "b", ""))
	require.Equal(t, api.EventResponseCompleted, second.keep("c", "c", ""))
	require.Equal(t, "error", first.keep("a", "a2", "resp_a"), "acme's oldest response was kept beside two newer ones over its budget")
	require.Equal(t, api.EventResponseCompleted, second.keep("b", "b2", "resp_b"))
	require.Equal(t, api.EventResponseCompleted, second.keep("c", "c2", "resp_c"))
	require.Equal(t, api.EventResponseCompleted, other.keep("o", "o2", "resp_o"), "acme's responses evicted globex's")
}

// A connection that ends gives its cache's bytes back to its tenant's
// budget: the tenant's other connection then keeps two responses, the
// older one too, and nothing is left running.
func TestServerTenantCacheBudgetReleased(t *testing.T) {
	// Registered first, so run last: after the test server closed.
	t.Cleanup(func() { goleak.VerifyNone(t, goleak.IgnoreCurrent()) })
	url, ended := tenantServer(t)
	first, second := dialLanes(t, url+"?tenant=acme"), dialLanes(t, url+"?tenant=acme")
	require.Equal(t, api.EventResponseCompleted, second.keep("b", "b", ""))
	require.Equal(t, api.EventResponseCompleted, first.keep("a", "a", ""))
	require.NoError(t, first.c.CloseNow())
	select {
	case <-ended:
	case <-time.After(guard):
		t.Fatal("the connection's handler did not return")
	}
	require.Equal(t, api.EventResponseCompleted, second.keep("c", "c", ""))
	require.Equal(t, api.EventResponseCompleted, second.keep("b", "b2", "resp_b"), "the closed connection's response still took room in the tenant's budget")
}
