package engine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// remoteStore is a ResponseStore that is not store.InProcess (its
// embedded store's InProcess is hidden), or says it is not; it notes
// whether Create's context had a deadline.
type remoteStore struct {
	store.ResponseStore
	inProcess   *bool // nil: no InProcess method
	hadDeadline bool
	creates     int
}

func (s *remoteStore) Create(ctx context.Context, rec *store.Record) error {
	_, s.hadDeadline = ctx.Deadline()
	s.creates++
	return s.ResponseStore.Create(ctx, rec)
}

// saidInProcess is a remoteStore with an InProcess method.
type saidInProcess struct{ *remoteStore }

func (s saidInProcess) InProcess() bool { return *s.inProcess }

func TestWriteContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(tenant.With(t.Context(), "alice"))
	cancelParent()
	mem := store.NewMemory(store.MemoryConfig{})
	no := false
	var noStore store.ResponseStore
	var noCache ConnectionCache
	for _, c := range []struct {
		name     string
		stores   []any
		deadline bool
	}{
		{"memory", []any{mem}, false},
		{"nothing", nil, false},
		{"nil stores and memory", []any{noCache, noStore, mem}, false},
		{"remote", []any{&remoteStore{ResponseStore: mem}}, true},
		{"says it is not in process", []any{saidInProcess{&remoteStore{ResponseStore: mem, inProcess: &no}}}, true},
		{"memory and remote", []any{mem, &remoteStore{ResponseStore: mem}}, true},
		{"remote and memory", []any{&remoteStore{ResponseStore: mem}, mem}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := writeContext(parent, c.stores...)
			defer cancel()
			require.NoError(t, ctx.Err(), "the write outlives its request")
			require.Equal(t, "alice", tenant.From(ctx))
			d, ok := ctx.Deadline()
			require.Equal(t, c.deadline, ok)
			if ok {
				require.WithinDuration(t, time.Now().Add(storeTimeout), d, time.Minute)
			}
		})
	}
}

// TestSaveDeadline: the final write has storeTimeout's deadline with a
// store that is not in process, none with the memory store, and is made
// after the request's context is cancelled either way.
func TestSaveDeadline(t *testing.T) {
	yes := true
	for _, inProcess := range []*bool{nil, &yes} {
		rs := &remoteStore{inProcess: inProcess}
		var st store.ResponseStore = rs
		if inProcess != nil {
			st = saidInProcess{rs}
		}
		rs.ResponseStore = store.NewMemory(store.MemoryConfig{})
		e, _ := newEngineB(t, textProvider{text: "hi"}, nil, func(c *Config) { c.Store = st })
		w := &lastResponse{}
		require.NoError(t, e.CreateResponse(t.Context(), decodeReq(t, `{"input":"Say hello"}`), w))
		require.Equal(t, 1, rs.creates)
		require.Equal(t, inProcess == nil, rs.hadDeadline)
		_, err := rs.Get(t.Context(), w.resp.ID)
		require.NoError(t, err)

		// A cancelled request's response is stored all the same.
		r := &run{req: decodeReq(t, `{"input":"Say hello"}`), resp: w.resp.Clone()}
		r.resp.ID += "_2"
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.NoError(t, e.save(ctx, r, nil))
		_, err = rs.Get(t.Context(), r.resp.ID)
		require.NoError(t, err)
	}
}
