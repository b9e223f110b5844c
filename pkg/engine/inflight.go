package engine

import (
	"context"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// TenantRetryAfter is the Retry-After of the 429 that refuses a response
// over a tenant's in-flight cap: a slot frees when one of the tenant's
// running responses ends, which nothing here can predict, so it is a short
// fixed pause that the official SDKs honour before they retry.
const TenantRetryAfter = 2 * time.Second

// inflight counts the responses each tenant has running on this engine
// (Limits.TenantInFlight): foreground creates, streamed or not, background
// runs, compactions and the followed streams of background responses. The count is per engine, that is per gateway
// process or Lambda instance.
type inflight struct {
	limit int
	mu    sync.Mutex
	n     map[string]int // tenants with responses running; never 0
}

func newInflight(limit int) *inflight { return &inflight{limit: limit, n: make(map[string]int)} }

// enter takes a slot of ctx's tenant and returns the tenant, for leave;
// or the 429 when the tenant already has limit responses running.
func (f *inflight) enter(ctx context.Context) (string, error) {
	t := tenant.From(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[t] >= f.limit {
		return "", api.RateLimited(api.RetryAfterSeconds(TenantRetryAfter), nil,
			"Too many responses in flight: this tenant already has %d running on this gateway instance, its limit. Retry after %s, when one of them has ended.",
			f.n[t], TenantRetryAfter)
	}
	f.n[t]++
	return t, nil
}

// hold takes a slot of ctx's tenant even past the limit, for work that was
// admitted elsewhere (a background run: its create was admitted), and
// returns the tenant, for leave; it makes the tenant's next creates wait.
func (f *inflight) hold(ctx context.Context) string {
	t := tenant.From(ctx)
	f.mu.Lock()
	f.n[t]++
	f.mu.Unlock()
	return t
}

// leave frees a slot of tenant t that enter or hold took.
func (f *inflight) leave(t string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[t]--; f.n[t] <= 0 {
		delete(f.n, t)
	}
}

// tenants is the number of tenants with responses running.
func (f *inflight) tenants() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.n)
}
