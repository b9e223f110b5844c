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

// ConnectionWriter is implemented by the ResponseWriters of a transport
// that keeps a connection open across responses (WebSocket mode), as
// http.Flusher is by an http.ResponseWriter that can flush: CreateResponse
// then resolves previous_response_id in the connection's cache before the
// store (the store remains the fallback, which never holds store: false
// responses) and puts every terminal response into it, whether it is
// stored or not. A writer that wraps one must implement it too.
type ConnectionWriter interface {
	ResponseWriter
	// ConnectionCache returns the connection's cache; nil is none.
	ConnectionCache() ConnectionCache
}

// IdentifiedWriter is implemented by a ResponseWriter whose transport
// chose the id of the response it is written (WebSocket mode on API
// Gateway, whose turn notes the id of its response on the connection
// before the response begins): CreateResponse gives the response that id,
// a new one when it is "". The id must be a new one, from
// api.NewID(api.PrefixResponse). A writer that wraps one must implement it
// too.
type IdentifiedWriter interface {
	ResponseWriter
	// ResponseID returns the id of the response written.
	ResponseID() string
}

// chosenID returns the response id w's transport chose ("": none).
func chosenID(w ResponseWriter) string {
	if iw, ok := w.(IdentifiedWriter); ok {
		return iw.ResponseID()
	}
	return ""
}

// connectionCache returns the cache of w's connection, nil when w keeps
// no connection open.
func connectionCache(w ResponseWriter) ConnectionCache {
	if cw, ok := w.(ConnectionWriter); ok {
		return cw.ConnectionCache()
	}
	return nil
}

// previous returns the record of previous_response_id: from the
// connection's cache c (nil: none) when it keeps it, else from the store.
func (e *Engine) previous(ctx context.Context, c ConnectionCache, id string) (*store.Record, error) {
	if c != nil {
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
