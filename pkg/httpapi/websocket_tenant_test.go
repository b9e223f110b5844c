package httpapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// A tenant may hold LAMBENT_LIMIT_TENANT_WEBSOCKETS connections open on a
// gateway instance: its next upgrade is refused with a 429
// rate_limit_exceeded and Retry-After, another tenant still connects, and
// a slot frees when one of the tenant's connections ends.
func TestWebSocketTenantConnectionLimit(t *testing.T) {
	t.Parallel()
	g := newGateway(t, wsModel(nil), map[string]string{
		"LAMBENT_API_KEYS":                "acme=" + wsKeyA + ",globex=" + wsKeyB,
		"LAMBENT_LIMIT_TENANT_WEBSOCKETS": "2",
	})
	first := dialWS(t, g.srv, wsKeyA)
	second := dialWS(t, g.srv, wsKeyA)

	dial := func(key string) (*websocket.Conn, *http.Response, error) {
		c, res, err := websocket.Dial(t.Context(), wsURL(g.srv), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
		if c != nil {
			t.Cleanup(func() { _ = c.CloseNow() })
		}
		return c, res, err
	}
	_, res, err := dial(wsKeyA)
	require.Error(t, err, "a third connection of the tenant was accepted")
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Equal(t, "2", res.Header.Get("Retry-After"))
	var body struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
	require.Equal(t, "rate_limit_exceeded", body.Error.Code)
	require.Equal(t, "rate_limit_error", body.Error.Type)
	require.Contains(t, body.Error.Message, "LAMBENT_LIMIT_TENANT_WEBSOCKETS")

	// Another tenant is not affected, and the tenant's open connections
	// still work.
	dialWS(t, g.srv, wsKeyB).create(`{"type":"response.create","store":false,"input":"Hi"}`)
	second.create(`{"type":"response.create","store":false,"input":"Hi"}`)

	// Once one of them has ended, the tenant connects again. The server
	// frees the slot after its side of the connection has ended, which
	// the client's close does not wait for: dial until it is accepted.
	require.NoError(t, first.c.Close(websocket.StatusNormalClosure, ""))
	deadline := time.Now().Add(30 * time.Second)
	for ; ; time.Sleep(5 * time.Millisecond) {
		c, res, err := dial(wsKeyA)
		if err == nil {
			(&wsConn{t: t, c: c}).create(`{"type":"response.create","store":false,"input":"Hi"}`)
			break
		}
		require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
		require.True(t, time.Now().Before(deadline), "the closed connection's slot was never freed")
	}
}
