package wsapi

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/store"
)

// TestMemoryCacheInProcess: the connection's cache is in process, so the
// engine's write of a response to it needs no deadline (and no timer).
func TestMemoryCacheInProcess(t *testing.T) {
	var c any = NewMemoryCache(0)
	p, ok := c.(store.InProcess)
	if !ok || !p.InProcess() {
		t.Fatal("MemoryCache is not store.InProcess")
	}
}

// The cache's bytes are bounded: a response that does not fit beside the
// others evicts the least recently kept, whose lane then has no latest
// response; one larger than the bound by itself is not kept; a stored one
// is left to the store and takes no room.
func TestMemoryCacheBytes(t *testing.T) {
	ctx := t.Context()
	rec := func(id string, size int, stored bool) *store.Record {
		return &store.Record{Response: &api.Response{ID: id, Status: api.StatusCompleted, Store: stored},
			Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: string(make([]byte, size))}}}}}
	}
	c := NewMemoryCache(100 << 10)
	require.NoError(t, c.PutLatest(ctx, "a", rec("resp_a", 40<<10, false)))
	require.NoError(t, c.PutLatest(ctx, "b", rec("resp_b", 40<<10, false)))
	require.NoError(t, c.PutLatest(ctx, "s", rec("resp_s", 400<<10, true)))
	require.NoError(t, c.PutLatest(ctx, "c", rec("resp_c", 40<<10, false)))
	lanes, err := c.Lanes(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"b": "resp_b", "c": "resp_c", "s": "resp_s"}, lanes, "a, the oldest, made room for c")
	_, err = c.Get(ctx, "resp_a")
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.LessOrEqual(t, c.m.Bytes(), int64(100<<10))

	require.NoError(t, c.PutLatest(ctx, "b", rec("resp_b2", 200<<10, false)), "too large to keep is not an error")
	lanes, err = c.Lanes(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"c": "resp_c", "s": "resp_s"}, lanes, "b's new response is not kept, its old one replaced")
	_, err = c.Get(ctx, "resp_c")
	require.NoError(t, err, "a response too large to keep evicts nothing")
}

// holdingService writes a held opening and waits: for the hold's timer when
// retract is false, else it takes the opening back.
type holdingService struct {
	wait    time.Duration
	retract bool
	took    bool
}

func (s *holdingService) CreateResponse(_ context.Context, _ *api.CreateResponseRequest, w engine.ResponseWriter) error {
	h := w.(interface {
		HoldOpening()
		Retract() bool
	})
	h.HoldOpening()
	if err := w.WriteEvent(&api.StreamEvent{Type: api.EventResponseCreated, Response: &api.Response{ID: "resp_1", Object: "response"}}); err != nil {
		return err
	}
	time.Sleep(s.wait)
	synctest.Wait()
	if s.retract {
		s.took = h.Retract()
		return api.InvalidRequest("temperature", "refused")
	}
	return nil
}

// sent records the messages a session sends.
type sent struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sent) Send(_ context.Context, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, string(msg))
	return nil
}

func (s *sent) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// The opening of a response is held at most OpeningHold: a provider that
// has not accepted the call by then no longer delays response.created,
// and its refusal after that is no longer taken back.
func TestOpeningHeldAtMostOpeningHold(t *testing.T) {
	data := []byte(`{"type":"response.create","model":"m","input":"x"}`)
	msg := Message{Data: data, Size: int64(len(data))}
	synctest.Test(t, func(t *testing.T) {
		svc, out := &holdingService{wait: time.Second, retract: true}, &sent{}
		s := &Session{Service: svc, Cache: NewMemoryCache(0), Sender: out, OpeningHold: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		require.NoError(t, s.Handle(context.Background(), msg))
		assert.True(t, svc.took, "refused within the hold: taken back")
		require.Len(t, out.all(), 1)
		assert.Contains(t, out.all()[0], `"type":"error"`)
	})
	synctest.Test(t, func(t *testing.T) {
		svc, out := &holdingService{wait: 2 * time.Second, retract: true}, &sent{}
		s := &Session{Service: svc, Cache: NewMemoryCache(0), Sender: out, OpeningHold: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		require.NoError(t, s.Handle(context.Background(), msg))
		assert.False(t, svc.took, "the hold ended: the opening went out")
		msgs := out.all()
		require.Len(t, msgs, 2)
		assert.Contains(t, msgs[0], `"type":"response.created"`)
	})
}

// The hold's timer races the engine's writes and its Retract (real time,
// under -race): whatever the order, a retracted opening was never sent, one
// not retracted went out first, in order, each message once, and once the
// turn ended (Open) no timer sends or runs.
func TestOpeningHoldInterleavings(t *testing.T) {
	defer goleak.VerifyNone(t)
	types := []string{api.EventResponseCreated, api.EventResponseInProgress, api.EventOutputTextDelta, api.EventResponseCompleted}
	for i := range 300 {
		out := &sent{}
		w := &eventWriter{ctx: context.Background(), send: out, cache: laneCache{c: NewMemoryCache(0)}, hold: time.Duration(i%7) * 30 * time.Microsecond}
		w.HoldOpening()
		write := func(typ string) {
			ev := &api.StreamEvent{Type: typ, Response: &api.Response{ID: "resp_1", Object: "response"}}
			require.NoError(t, w.WriteEvent(ev))
		}
		write(types[0])
		write(types[1])
		time.Sleep(time.Duration(i%11) * 20 * time.Microsecond)
		retracted := i%2 == 0 && w.Retract()
		if !retracted {
			w.Open()
			write(types[2])
			write(types[3])
		}
		w.Open()
		got := out.all()
		time.Sleep(200 * time.Microsecond)
		require.Equal(t, got, out.all(), "iteration %d: sent after the turn", i)
		if retracted {
			require.Empty(t, got, "iteration %d", i)
			continue
		}
		require.Len(t, got, len(types), "iteration %d", i)
		for j, typ := range types {
			assert.Contains(t, got[j], `"type":"`+typ+`"`, "iteration %d", i)
		}
	}
}
