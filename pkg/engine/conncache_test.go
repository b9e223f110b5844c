package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/store"
)

// connRecorder is the writer of a connection that keeps its responses
// (an engine.ConnectionWriter), as WebSocket mode's.
type connRecorder struct {
	recorder
	cache *store.Memory
}

func (c *connRecorder) ConnectionCache() ConnectionCache { return connCache{c.cache} }

type connCache struct{ m *store.Memory }

func (c connCache) Get(ctx context.Context, id string) (*store.Record, error) {
	return c.m.Get(ctx, id)
}
func (c connCache) Put(ctx context.Context, rec *store.Record) error { return c.m.Create(ctx, rec) }

// A writer that keeps its connection's responses gets every terminal
// response, store: false ones included, and a continuation on it finds
// its previous response there; without the connection it is not found.
func TestConnectionWriterKeepsResponses(t *testing.T) {
	e, st := newEngine(t, script(text("one", 1, 1), text("two", 1, 1)), nil)
	conn := store.NewMemory(store.MemoryConfig{})
	w := &connRecorder{cache: conn}
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","store":false}`), w))
	first := w.response(t)
	_, err := st.Get(context.Background(), first.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "store: false is not stored")
	_, err = conn.Get(context.Background(), first.ID)
	require.NoError(t, err, "the connection keeps it")

	next := `{"input":"y","store":false,"previous_response_id":"` + first.ID + `"}`
	_, err = run1(t, e, next)
	assert.ErrorContains(t, err, "not found", "another writer has no connection")
	w2 := &connRecorder{cache: conn}
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, next), w2))
	assert.Equal(t, "two", w2.response(t).Output[0].Content[0].Text)
}
