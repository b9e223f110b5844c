package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// wsCacheLimit is the connection cache bound of the cache tests: 1 MiB.
const wsCacheLimit = 1 << 20

// newWSCacheGateway is newWSGateway with LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES
// set to wsCacheLimit.
func newWSCacheGateway(t *testing.T) *gateway {
	t.Helper()
	return newGateway(t, wsModel(nil), map[string]string{
		"LAMBENT_API_KEYS":                    "acme=" + wsKeyA,
		"LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES": fmt.Sprint(wsCacheLimit),
	})
}

// wsChunk is the input of a turn: size bytes of text.
func wsChunk(size int) string { return strings.Repeat("a", size) }

// A store:false chain on one connection grows the connection's cache by
// its input every turn: the latest response holds the whole conversation.
// The cache holds at most LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES: the
// response that would take it past the limit by itself is not kept, and
// continuing from it is previous_response_not_found, as from a response
// OpenAI's connection-local cache evicted.
func TestWebSocketCacheBytesChain(t *testing.T) {
	t.Parallel()
	g := newWSCacheGateway(t)
	ws := dialWS(t, g.srv, wsKeyA)
	const chunk = 200 << 10
	prev, sent := "", 0
	for turn := 1; turn <= 12; turn++ {
		body := fmt.Sprintf(`{"type":"response.create","store":false,"input":%q}`, wsChunk(chunk))
		if prev != "" {
			body = fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":%q}`, prev, wsChunk(chunk))
		}
		ws.send(body)
		evs, e := ws.turn()
		if e != nil {
			require.Equal(t, http.StatusNotFound, e.Status, "%+v", e)
			require.Equal(t, "previous_response_not_found", *e.Error.Code)
			require.Equal(t, "previous_response_id", *e.Error.Param)
			require.Greater(t, sent, wsCacheLimit/2, "a chain well under the limit was evicted")
			// The connection still works: a new chain starts.
			ws.create(`{"type":"response.create","store":false,"input":"Hi"}`)
			return
		}
		checkEvents(t, evs)
		prev, sent = last(evs).Response.ID, sent+chunk
	}
	t.Fatalf("the connection's cache kept a store:false chain of %d bytes of input, over its limit of %d bytes", sent, wsCacheLimit)
}

// The cache keeps the most recent responses: when a lane's new response
// does not fit beside another lane's older one, the older one is evicted
// (continuing from it is previous_response_not_found) and the new one
// continues.
func TestWebSocketCacheBytesEvictsOldest(t *testing.T) {
	t.Parallel()
	g := newWSCacheGateway(t)
	ws := dialWS(t, g.srv, wsKeyA)
	const chunk = 400 << 10
	create := func(lane string) string {
		evs := ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":%q,"input":%q}`, lane, wsChunk(chunk)))
		return last(evs).Response.ID
	}
	a := create("a")
	b := create("b")
	c := create("c") // a, b and c do not fit together: a, the oldest, goes.
	// The oldest response is not kept beside two newer ones over the limit.
	ws.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":"a","previous_response_id":%q,"input":"more"}`, a), http.StatusNotFound, "previous_response_not_found")
	for lane, id := range map[string]string{"b": b, "c": c} {
		ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":%q,"previous_response_id":%q,"input":"more"}`, lane, id))
	}
}

// A tenant's connections together keep at most
// LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES: a response that takes the
// tenant past it evicts the tenant's least recently kept one, on another
// of its connections too, while another tenant's, older still, is kept:
// tenants never share that budget.
func TestWebSocketTenantCacheBytes(t *testing.T) {
	t.Parallel()
	g := newGateway(t, wsModel(nil), map[string]string{
		"LAMBENT_API_KEYS":                           "acme=" + wsKeyA + ",globex=" + wsKeyB,
		"LAMBENT_LIMIT_WEBSOCKET_CACHE_BYTES":        fmt.Sprint(wsCacheLimit),
		"LAMBENT_LIMIT_TENANT_WEBSOCKET_CACHE_BYTES": fmt.Sprint(wsCacheLimit),
	})
	const chunk = 400 << 10
	create := func(ws *wsConn, lane string) string {
		evs := ws.create(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":%q,"input":%q}`, lane, wsChunk(chunk)))
		return last(evs).Response.ID
	}
	other := dialWS(t, g.srv, wsKeyB)
	first, second := dialWS(t, g.srv, wsKeyA), dialWS(t, g.srv, wsKeyA)
	o := create(other, "o")
	a := create(first, "a")
	b := create(second, "b")
	c := create(second, "c") // a, b and c do not fit in acme's budget together: a, its oldest, goes.
	// The tenant's oldest response is not kept beside two newer ones over the tenant's limit.
	first.createErr(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":"a","previous_response_id":%q,"input":"more"}`, a), http.StatusNotFound, "previous_response_not_found")
	for lane, id := range map[string]string{"b": b, "c": c} {
		second.create(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":%q,"previous_response_id":%q,"input":"more"}`, lane, id))
	}
	other.create(fmt.Sprintf(`{"type":"response.create","store":false,"stream_id":"o","previous_response_id":%q,"input":"more"}`, o))
}
