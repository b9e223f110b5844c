package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.ResponseStore {
		return store.NewMemory(store.MemoryConfig{})
	})
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestMemoryEvictsOldestWhenFull(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory(store.MemoryConfig{MaxEntries: 3})
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("resp_%d", i)
		ids = append(ids, id)
		require.NoError(t, m.Create(ctx, storetest.NewRecord(id, api.StatusCompleted)))
		require.LessOrEqual(t, m.Len(), 3)
	}
	for i, id := range ids {
		_, err := m.Get(ctx, id)
		if i < 2 {
			require.ErrorIs(t, err, store.ErrNotFound, "%s should have been evicted", id)
		} else {
			require.NoError(t, err, id)
		}
	}
}

func TestMemoryTTL(t *testing.T) {
	ctx := t.Context()
	clk := &clock{now: time.Unix(1_000_000, 0)}
	m := store.NewMemory(store.MemoryConfig{TTL: time.Hour, Now: clk.Now})
	require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_a", api.StatusCompleted)))
	clk.Advance(30 * time.Minute)
	require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_b", api.StatusCompleted)))

	got, err := m.Get(ctx, "resp_a")
	require.NoError(t, err)
	require.Equal(t, time.Unix(1_000_000, 0).Add(time.Hour), got.ExpiresAt)

	clk.Advance(31 * time.Minute) // a expired, b not
	_, err = m.Get(ctx, "resp_a")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = m.Get(ctx, "resp_b")
	require.NoError(t, err)

	// Expired records are swept lazily by Create, from the oldest end.
	clk.Advance(time.Hour) // b expired too
	require.Equal(t, 1, m.Len(), "a was removed when read")
	require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_c", api.StatusCompleted)))
	require.Equal(t, 1, m.Len(), "creating c sweeps b")
}

func TestMemoryConcurrentUse(t *testing.T) {
	ctx := t.Context()
	m := store.NewMemory(store.MemoryConfig{MaxEntries: 50})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 200 {
				id := fmt.Sprintf("resp_%d_%d", w, i)
				rec := storetest.NewRecord(id, api.StatusInProgress)
				if err := m.Create(ctx, rec); err != nil {
					t.Error(err)
					return
				}
				_, _ = m.Get(ctx, id)
				_ = m.Update(ctx, storetest.NewRecord(id, api.StatusCompleted), api.StatusInProgress)
				_, _ = m.ListInputItems(ctx, id, api.ListOptions{Limit: 1})
				if i%3 == 0 {
					_ = m.Delete(ctx, id)
				}
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, m.Len(), 50)
}
