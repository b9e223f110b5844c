package engine

import (
	"context"
	"errors"

	"github.com/lambent/lambent/pkg/store"
)

// ConnectionCache is the connection-local state of a transport that keeps
// a connection open across responses (WebSocket mode): the latest
// responses of that connection, store: false ones included, so that a
// continuation on the same connection needs no store read and store: false
// responses can be continued without being persisted.
type ConnectionCache interface {
	// Get returns the record of response id if the connection keeps it,
	// else an error wrapping store.ErrNotFound.
	Get(ctx context.Context, id string) (*store.Record, error)
	// Put keeps rec, a terminal response of the connection.
	Put(ctx context.Context, rec *store.Record) error
}

type connCacheKey struct{}

// WithConnectionCache returns ctx carrying c. CreateResponse then resolves
// previous_response_id in c before the store (the store remains the
// fallback, which never holds store: false responses) and puts every
// terminal response into c, whether it is stored or not.
func WithConnectionCache(ctx context.Context, c ConnectionCache) context.Context {
	return context.WithValue(ctx, connCacheKey{}, c)
}

func connectionCache(ctx context.Context) ConnectionCache {
	c, _ := ctx.Value(connCacheKey{}).(ConnectionCache)
	return c
}

// previous returns the record of previous_response_id: from the
// connection's cache when it keeps it, else from the store.
func (e *Engine) previous(ctx context.Context, id string) (*store.Record, error) {
	if c := connectionCache(ctx); c != nil {
		rec, err := c.Get(ctx, id)
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, e.storeErr(err, id, "previous_response_id")
		}
	}
	return e.get(ctx, id, "previous_response_id")
}

// keep puts rec into the connection's cache, if the request has one.
func keep(ctx context.Context, rec *store.Record) error {
	if c := connectionCache(ctx); c != nil {
		return c.Put(ctx, rec)
	}
	return nil
}
