package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/wsapi"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

// keepAliveSender sends each message and then the API Gateway front
// door's keep-alive (apigw.KeepAliveMessage) with the last event's
// sequence number: every event of a turn is followed by one.
type keepAliveSender struct {
	c    *websocket.Conn
	mu   sync.Mutex
	sent int
}

func (s *keepAliveSender) Send(ctx context.Context, msg []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.c.Write(ctx, websocket.MessageText, msg); err != nil {
		return err
	}
	var ev struct {
		SequenceNumber int64 `json:"sequence_number"`
	}
	_ = json.Unmarshal(msg, &ev)
	s.sent++
	return s.c.Write(ctx, websocket.MessageText, apigw.KeepAliveMessage(ev.SequenceNumber, ""))
}

// The keep-alives the API Gateway front door sends while a turn is silent
// are skipped by the official clients: the npm openai SDK's ResponsesWS
// and the Agents SDK's Responses WebSocket transport complete a turn whose
// every event is followed by one, with the answer and no error.
func TestWebSocketKeepAlivesClientsIgnore(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, clientModel(), nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer func() { _ = c.CloseNow() }()
		sess := &wsapi.Session{Service: g.app.Engine, Cache: wsapi.NewMemoryCache(0), Sender: &keepAliveSender{c: c}}
		for {
			typ, data, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if sess.Handle(r.Context(), wsapi.Message{Binary: typ == websocket.MessageBinary, Data: data, Size: int64(len(data))}) != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	var got struct {
		Errors []string
		Npm    *struct {
			Text       string
			Keepalives int
			Errors     []string
			Terminal   string
		}
		Agents *struct {
			Text, Thrown, LastResponseID string
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "keepalive_ws.mjs"), srv.URL+"/v1", "sk-any")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node keepalive_ws.mjs: %s", stderr.String())
	require.NoError(t, json.Unmarshal(stdout, &got), "printed: %s (stderr %s)", stdout, stderr.String())
	require.Empty(t, got.Errors)
	require.NotNil(t, got.Npm)
	require.Equal(t, "Hello from Lambent.", got.Npm.Text)
	require.Equal(t, "response.completed", got.Npm.Terminal)
	require.Empty(t, got.Npm.Errors)
	require.Positive(t, got.Npm.Keepalives, "the keep-alives reached the client")
	require.NotNil(t, got.Agents)
	require.Equal(t, "Hello from Lambent.", got.Agents.Text)
	require.Empty(t, got.Agents.Thrown)
	require.NotEmpty(t, got.Agents.LastResponseID)
}
