package wsapi

import (
	"context"
	"errors"
	"maps"
	"sync"

	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/store"
)

// CacheBudget bounds the bytes of the store: false responses that the
// caches it makes (NewCache), the connections of one tenant, keep
// together (LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES): a response that
// takes them past it evicts the least recently kept others, on any of
// those connections. Each tenant has a budget of its own, so one tenant's
// responses never evict another's. Its caches share its lock.
type CacheBudget struct {
	mu       sync.Mutex
	maxBytes int64
	// seq numbers the responses kept, in the order kept.
	seq uint64
	// caches are the open caches it made.
	caches map[*MemoryCache]struct{}
}

// NewCacheBudget returns a budget of maxBytes (0:
// limits.DefaultTenantWebSocketCacheBytes).
func NewCacheBudget(maxBytes int64) *CacheBudget {
	if maxBytes <= 0 {
		maxBytes = limits.DefaultTenantWebSocketCacheBytes
	}
	return &CacheBudget{maxBytes: maxBytes, caches: map[*MemoryCache]struct{}{}}
}

// NewCache returns an empty cache of a connection, holding at most
// maxBytes by itself (0: limits.DefaultWebSocketCacheBytes; never more
// than the budget) and sharing the budget with b's other caches until it
// is closed (MemoryCache.Close).
func (b *CacheBudget) NewCache(maxBytes int64) *MemoryCache {
	if maxBytes <= 0 {
		maxBytes = limits.DefaultWebSocketCacheBytes
	}
	c := &MemoryCache{budget: b, latest: map[string]string{}, held: map[string]uint64{},
		m: store.NewMemory(store.MemoryConfig{MaxEntries: MaxLanes + 1, MaxBytes: min(maxBytes, b.maxBytes)})}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.caches[c] = struct{}{}
	return c
}

// bytes returns what b's caches hold (b.mu held).
func (b *CacheBudget) bytes() int64 {
	var n int64
	for c := range b.caches {
		n += c.m.Bytes()
	}
	return n
}

// shrink evicts the least recently kept responses of b's caches but
// lane's of keep, the one just kept, while they hold more than the
// budget (b.mu held). That one fits by itself: no cache holds more than
// the budget.
func (b *CacheBudget) shrink(ctx context.Context, keep *MemoryCache, lane string) error {
	for b.bytes() > b.maxBytes {
		var (
			victim     *MemoryCache
			victimLane string
			oldest     uint64
		)
		for c := range b.caches {
			for l, seq := range c.held {
				if (c != keep || l != lane) && (victim == nil || seq < oldest) {
					victim, victimLane, oldest = c, l, seq
				}
			}
		}
		if victim == nil {
			return nil
		}
		if err := victim.drop(ctx, victimLane); err != nil {
			return err
		}
	}
	return nil
}

// MemoryCache is the Cache of a connection served in this process: the
// latest response of each of its lanes, in memory, gone with the
// connection, when it is not stored (store: false). A stored response is
// read from the engine's store (as on AWS, apigw's shared cache), so that
// one deleted over HTTP is gone on its socket too. The responses kept
// hold at most its maxBytes together (as store.Memory measures records),
// and the caches of its budget (the tenant's connections) at most the
// budget's: one that would pass either evicts the least recently kept
// others first, as OpenAI's connection-local cache keeps the most recent
// response, and one larger by itself is not kept; a lane whose response
// is evicted has no latest response. It is safe for concurrent use.
type MemoryCache struct {
	// budget is shared with the tenant's other connections; its lock
	// guards the fields below.
	budget *CacheBudget
	// latest is the id of each lane's latest response; m holds those not
	// stored, of the lanes in held, each with the budget's seq when kept.
	latest map[string]string
	held   map[string]uint64
	m      *store.Memory
	// closed is set by Close: nothing is kept any more.
	closed bool
}

// NewMemoryCache returns an empty cache holding at most maxBytes (0:
// limits.DefaultWebSocketCacheBytes), with a budget of its own.
func NewMemoryCache(maxBytes int64) *MemoryCache {
	if maxBytes <= 0 {
		maxBytes = limits.DefaultWebSocketCacheBytes
	}
	return NewCacheBudget(maxBytes).NewCache(maxBytes)
}

// Get returns the record of id when it is the latest response of a lane.
func (c *MemoryCache) Get(ctx context.Context, id string) (*store.Record, error) {
	return c.m.Get(ctx, id)
}

// InProcess reports true (store.InProcess): the cache is in memory, and
// the engine writes to it without a deadline.
func (c *MemoryCache) InProcess() bool { return c.m.InProcess() }

// PutLatest makes rec the latest response of lane, replacing the one
// before: kept when it is not stored, else left to the store. A record
// over the cache's bytes by itself is not kept (the lane then has no
// latest response); another evicts the least recently kept ones while
// they do not fit with it, in this cache, then in the budget's caches.
// A closed cache keeps nothing.
func (c *MemoryCache) PutLatest(ctx context.Context, lane string, rec *store.Record) error {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	if err := c.drop(ctx, lane); err != nil {
		return err
	}
	if c.closed {
		return nil
	}
	c.latest[lane] = rec.Response.ID
	if rec.Response.Store {
		return nil
	}
	err := c.m.Create(ctx, rec)
	if errors.Is(err, store.ErrTooLarge) {
		delete(c.latest, lane)
		return nil
	}
	if err != nil {
		return err
	}
	c.budget.seq++
	c.held[lane] = c.budget.seq
	// The lanes whose responses made room for it have none.
	for l := range c.held {
		if !c.m.Holds(ctx, c.latest[l]) {
			delete(c.latest, l)
			delete(c.held, l)
		}
	}
	return c.budget.shrink(ctx, c, lane)
}

// Evict forgets id, and the lane it is the latest of.
func (c *MemoryCache) Evict(ctx context.Context, id string) error {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	for lane, latest := range c.latest {
		if latest == id {
			delete(c.latest, lane)
			delete(c.held, lane)
		}
	}
	return c.forget(ctx, id)
}

// Lanes returns the latest response of each lane.
func (c *MemoryCache) Lanes(context.Context) (map[string]string, error) {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	return maps.Clone(c.latest), nil
}

// Close forgets every response, gives the cache's bytes back to its
// budget and leaves it: the connection has ended. ctx carries the
// tenant (it may have ended).
func (c *MemoryCache) Close(ctx context.Context) error {
	c.budget.mu.Lock()
	defer c.budget.mu.Unlock()
	c.closed = true
	delete(c.budget.caches, c)
	var errs []error
	for lane := range c.latest {
		errs = append(errs, c.drop(ctx, lane))
	}
	return errors.Join(errs...)
}

// drop forgets the latest response of lane, which then has none
// (budget.mu held).
func (c *MemoryCache) drop(ctx context.Context, lane string) error {
	id := c.latest[lane]
	delete(c.latest, lane)
	delete(c.held, lane)
	return c.forget(ctx, id)
}

// forget deletes the record of id ("": none), if kept (budget.mu held).
func (c *MemoryCache) forget(ctx context.Context, id string) error {
	if id == "" {
		return nil
	}
	if err := c.m.Delete(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}
