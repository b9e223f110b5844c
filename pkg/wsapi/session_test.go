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

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/store"
)

// TestMemoryCacheInProcess: the connection's cache is in process, so the
// engine's write of a response to it needs no deadline (and no timer).
func TestMemoryCacheInProcess(t *testing.T) {
	var c any = NewMemoryCache()
	p, ok := c.(store.InProcess)
	if !ok || !p.InProcess() {
		t.Fatal("MemoryCache is not store.InProcess")
	}
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
		s := &Session{Service: svc, Cache: NewMemoryCache(), Sender: out, OpeningHold: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		require.NoError(t, s.Handle(context.Background(), msg))
		assert.True(t, svc.took, "refused within the hold: taken back")
		require.Len(t, out.all(), 1)
		assert.Contains(t, out.all()[0], `"type":"error"`)
	})
	synctest.Test(t, func(t *testing.T) {
		svc, out := &holdingService{wait: 2 * time.Second, retract: true}, &sent{}
		s := &Session{Service: svc, Cache: NewMemoryCache(), Sender: out, OpeningHold: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
		require.NoError(t, s.Handle(context.Background(), msg))
		assert.False(t, svc.took, "the hold ended: the opening went out")
		msgs := out.all()
		require.Len(t, msgs, 2)
		assert.Contains(t, msgs[0], `"type":"response.created"`)
	})
}
