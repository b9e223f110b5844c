package store_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
	"github.com/lambent/lambent/pkg/tenant"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.ResponseStore {
		return store.NewMemory(store.MemoryConfig{})
	})
}

func TestMemoryConversations(t *testing.T) {
	storetest.RunConversations(t, func(t *testing.T) store.ConversationStore {
		return store.NewMemory(store.MemoryConfig{})
	})
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

// TestMemoryTTL runs in a synctest bubble, whose clock time.Sleep advances.
func TestMemoryTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		start := time.Now()
		m := store.NewMemory(store.MemoryConfig{TTL: time.Hour})
		require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_a", api.StatusCompleted)))
		time.Sleep(30 * time.Minute)
		require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_b", api.StatusCompleted)))

		got, err := m.Get(ctx, "resp_a")
		require.NoError(t, err)
		require.Equal(t, start.Add(time.Hour), got.ExpiresAt)

		time.Sleep(31 * time.Minute) // a expired, b not
		_, err = m.Get(ctx, "resp_a")
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = m.Get(ctx, "resp_b")
		require.NoError(t, err)

		// Expired records are swept lazily by Create, from the oldest end.
		time.Sleep(time.Hour) // b expired too
		require.Equal(t, 1, m.Len(), "a was removed when read")
		require.NoError(t, m.Create(ctx, storetest.NewRecord("resp_c", api.StatusCompleted)))
		require.Equal(t, 1, m.Len(), "creating c sweeps b")
	})
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

// textRecord is a completed record whose input holds n bytes of text in a
// new allocation.
func textRecord(id string, n int) *store.Record {
	rec := storetest.NewRecord(id, api.StatusCompleted)
	rec.Input = append(rec.Input, api.Item{Type: api.ItemMessage, ID: "msg_big", Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: strings.Repeat("x", n)}}})
	return rec
}

// The byte bound evicts the oldest records first, counts every write
// (create, update, events) and refuses a record larger than the bound.
func TestMemoryByteBound(t *testing.T) {
	ctx := t.Context()
	const limit = 1 << 20
	m := store.NewMemory(store.MemoryConfig{MaxBytes: limit})
	for i := range 10 {
		require.NoError(t, m.Create(ctx, textRecord(fmt.Sprintf("resp_%d", i), 300<<10)))
		require.LessOrEqual(t, m.Bytes(), int64(limit))
	}
	require.Equal(t, 3, m.Len(), "three records of 300 KiB fit in 1 MiB")
	for i := range 10 {
		_, err := m.Get(ctx, fmt.Sprintf("resp_%d", i))
		if i < 7 {
			require.ErrorIs(t, err, store.ErrNotFound, "resp_%d is among the oldest", i)
		} else {
			require.NoError(t, err)
		}
	}

	// An update that grows the oldest record evicts the others, never the
	// record updated.
	m = store.NewMemory(store.MemoryConfig{MaxBytes: limit})
	run := textRecord("resp_run", 10)
	run.Response.Status = api.StatusInProgress
	require.NoError(t, m.Create(ctx, run))
	require.NoError(t, m.Create(ctx, textRecord("resp_a", 300<<10)))
	require.NoError(t, m.Create(ctx, textRecord("resp_b", 300<<10)))
	run.Input = textRecord("resp_run", 900<<10).Input
	require.NoError(t, m.Update(ctx, run, api.StatusInProgress))
	require.LessOrEqual(t, m.Bytes(), int64(limit))
	require.Equal(t, 1, m.Len(), "the grown record evicted all others")
	got, err := m.Get(ctx, "resp_run")
	require.NoError(t, err)
	require.Len(t, got.Input[len(got.Input)-1].Content[0].Text, 900<<10)

	// Events count too.
	require.NoError(t, m.AppendEvents(ctx, "resp_run", []store.Event{{Seq: 1, Type: "x", Data: make([]byte, 50<<10)}}))
	err = m.AppendEvents(ctx, "resp_run", []store.Event{{Seq: 2, Type: "x", Data: make([]byte, 200<<10)}})
	var tl *store.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, int64(limit), tl.Limit)

	// A record larger than the bound alone is refused, and nothing is evicted for it.
	big := textRecord("resp_big", limit)
	require.ErrorIs(t, m.CheckSize(big), store.ErrTooLarge)
	require.ErrorIs(t, m.Create(ctx, big), store.ErrTooLarge)
	require.Equal(t, 1, m.Len())
	require.NoError(t, m.CheckSize(textRecord("resp_small", 10)))
}

// The budgets are fair per tenant: one tenant's writes never evict another
// tenant's records while that tenant holds no more than its fair share
// (MaxBytes, or MaxEntries, divided by the tenants holding records).
// Eviction takes the oldest record of the tenant holding the most.
func TestMemoryFairPerTenant(t *testing.T) {
	ctx := t.Context()
	a, b := tenant.With(ctx, "tenant-a"), tenant.With(ctx, "tenant-b")
	const limit = 1 << 20
	m := store.NewMemory(store.MemoryConfig{MaxBytes: limit})
	require.NoError(t, m.Create(a, textRecord("resp_a", 1<<10)))
	// B writes 20 times the budget, 100 KiB at a time.
	const chunk = 100 << 10
	n := 20 * limit / chunk
	for i := range n {
		require.NoError(t, m.Create(b, textRecord(fmt.Sprintf("resp_b%d", i), chunk)))
		require.LessOrEqual(t, m.Bytes(), int64(limit))
	}
	_, err := m.Get(a, "resp_a")
	require.NoError(t, err, "A's small response survives B writing 20 x the budget")
	_, err = m.Get(b, fmt.Sprintf("resp_b%d", n-1))
	require.NoError(t, err, "B's newest is kept")
	_, err = m.Get(b, "resp_b0")
	require.ErrorIs(t, err, store.ErrNotFound, "B's oldest made room")
	t.Logf("A's 1 KiB response survived B writing %d x %d KiB (%.1f x the %d KiB budget); %d records, %d KiB held",
		n, chunk>>10, float64(n*chunk)/limit, limit>>10, m.Len(), m.Bytes()>>10)

	// The tenant over its share is the one evicted, whoever writes: A
	// grows past half the budget, and B's next write evicts A's oldest.
	m = store.NewMemory(store.MemoryConfig{MaxBytes: limit})
	require.NoError(t, m.Create(a, textRecord("resp_a1", 400<<10)))
	require.NoError(t, m.Create(a, textRecord("resp_a2", 400<<10)))
	require.NoError(t, m.Create(b, textRecord("resp_b1", 400<<10)))
	require.LessOrEqual(t, m.Bytes(), int64(limit))
	_, err = m.Get(a, "resp_a1")
	require.ErrorIs(t, err, store.ErrNotFound, "A held the most: its oldest went")
	for ctx, id := range map[context.Context]string{a: "resp_a2", b: "resp_b1"} {
		_, err = m.Get(ctx, id)
		require.NoError(t, err, id)
	}

	// Entries too: A's two records survive B creating many.
	m = store.NewMemory(store.MemoryConfig{MaxEntries: 10})
	for _, id := range []string{"resp_a1", "resp_a2"} {
		require.NoError(t, m.Create(a, storetest.NewRecord(id, api.StatusCompleted)))
	}
	for i := range 100 {
		require.NoError(t, m.Create(b, storetest.NewRecord(fmt.Sprintf("resp_b%d", i), api.StatusCompleted)))
		require.LessOrEqual(t, m.Len(), 10)
	}
	for _, id := range []string{"resp_a1", "resp_a2"} {
		_, err = m.Get(a, id)
		require.NoError(t, err, id)
	}
	_, err = m.Get(b, "resp_b99")
	require.NoError(t, err)
}

// fillMaxBytes is the bound TestMemoryByteBoundUnderFill fills past; `go
// test -run UnderFill -fill.maxbytes=268435456 ./pkg/store` measures the
// default bound.
var fillMaxBytes = flag.Int64("fill.maxbytes", 64<<20, "MaxBytes of the memory store TestMemoryByteBoundUnderFill fills")

// A 1 GiB attempted fill (1024 records of 1 MiB, each its own allocation)
// leaves the store at its bound, keeps the newest records, and the live
// heap after a collection stays within the bound and a margin for the
// Go values around the text.
func TestMemoryByteBoundUnderFill(t *testing.T) {
	ctx := t.Context()
	limit := *fillMaxBytes
	const recSize, total = 1 << 20, 1 << 30
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	m := store.NewMemory(store.MemoryConfig{MaxBytes: limit, MaxEntries: 1 << 20})
	n := total / recSize
	for i := range n {
		require.NoError(t, m.Create(ctx, textRecord(fmt.Sprintf("resp_%d", i), recSize)))
		require.LessOrEqual(t, m.Bytes(), limit)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	kept := m.Len()
	t.Logf("filled %d MiB into a %d MiB bound: %d records kept, %d MiB accounted, live heap grew %d MiB",
		total>>20, limit>>20, kept, m.Bytes()>>20, live>>20)
	require.Greater(t, kept, int(limit/recSize)*9/10, "the bound is used, not undercut")
	require.LessOrEqual(t, live, limit+limit/8, "the heap stays within the bound")
	_, err := m.Get(ctx, "resp_0")
	require.ErrorIs(t, err, store.ErrNotFound, "the oldest went first")
	_, err = m.Get(ctx, fmt.Sprintf("resp_%d", n-1))
	require.NoError(t, err, "the newest is kept")
	runtime.KeepAlive(m)
}

// BenchmarkMemoryCreateFull is a Create into a store at its entry bound
// (every Create evicts), with the records spread over 1, 100 or 1000
// tenants: the cost of choosing whom to evict.
func BenchmarkMemoryCreateFull(b *testing.B) {
	for _, tenants := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("tenants=%d", tenants), func(b *testing.B) {
			m := store.NewMemory(store.MemoryConfig{MaxEntries: 10000})
			ctxs := make([]context.Context, tenants)
			for i := range ctxs {
				ctxs[i] = tenant.With(b.Context(), fmt.Sprintf("tenant-%d", i))
			}
			rec := storetest.NewRecord("resp_x", api.StatusCompleted)
			for i := range 10000 {
				rec.Response.ID = fmt.Sprintf("resp_fill_%d", i)
				require.NoError(b, m.Create(ctxs[i%tenants], rec))
			}
			b.ResetTimer()
			for i := range b.N {
				rec.Response.ID = fmt.Sprintf("resp_%d", i)
				if err := m.Create(ctxs[i%tenants], rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMemoryConversation measures a conversation in the memory store
// at 10 and 100 turns (append a turn, list a page of 20, load the
// context). Run: make bench-conversations.
func BenchmarkMemoryConversation(b *testing.B) {
	storetest.BenchConversation(b, store.NewMemory(store.MemoryConfig{}), nil)
}
