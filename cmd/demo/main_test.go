package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gateway starts the demo as run does (the scripted model, demoConfig,
// app.Build), behind an httptest server.
func gateway(t *testing.T) (*httptest.Server, *fakellm.Server) {
	t.Helper()
	model := fakellm.NewHandler(script)
	t.Cleanup(model.Close)
	cfg, err := demoConfig(func(k string) string {
		return map[string]string{"LAMBENT_LOG_LEVEL": "error", "LAMBENT_PROVIDER_URL": "http://elsewhere", "LAMBENT_STORE": "dynamodb"}[k]
	}, model.URL)
	require.NoError(t, err)
	require.Equal(t, model.URL, cfg.Provider.URL)
	require.Equal(t, "memory", cfg.Store.Kind)
	require.Equal(t, "127.0.0.1:8080", cfg.Server.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	a, err := app.Build(ctx, cfg, app.Logger(cfg, io.Discard), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.Client().CloseIdleConnections)
	return srv, model
}

// response is the part of a response object the test reads.
type response struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output []struct {
		Type      string `json:"type"`
		Name      string `json:"name"`
		CallID    string `json:"call_id"`
		Arguments string `json:"arguments"`
		Output    string `json:"output"`
		Content   []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
}

func (r *response) text() string {
	var b strings.Builder
	for _, o := range r.Output {
		for _, c := range o.Content {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func post(t *testing.T, srv *httptest.Server, body string) *http.Response {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/v1/responses", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func create(t *testing.T, srv *httptest.Server, body string) *response {
	t.Helper()
	resp := post(t, srv, body)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	var r response
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return &r
}

// TestDemoRequests runs the three demos through the real handler.
func TestDemoRequests(t *testing.T) {
	srv, model := gateway(t)

	t.Run("hosted tool loop", func(t *testing.T) {
		r := create(t, srv, hostedRequest)
		require.Equal(t, "completed", r.Status)
		var types []string
		for _, o := range r.Output {
			types = append(types, o.Type)
		}
		require.Equal(t, []string{"mcp_call", "message"}, types, "the hosted call is one server-executed mcp_call item")
		require.Equal(t, calculatorTool, r.Output[0].Name)
		require.JSONEq(t, `{"expression":"17 * 23"}`, r.Output[0].Arguments)
		require.Equal(t, "391", r.Output[0].Output)
		require.Equal(t, "17 * 23 = 391 (worked out with the calculator tool).", r.text())
	})

	t.Run("client tool pause and continuation", func(t *testing.T) {
		paused := create(t, srv, pauseRequest)
		require.Equal(t, "requires_action", paused.Status)
		require.Len(t, paused.Output, 1)
		call := paused.Output[0]
		require.Equal(t, "function_call", call.Type)
		require.Equal(t, weatherTool, call.Name)
		require.JSONEq(t, `{"city":"Paris"}`, call.Arguments)

		// What continuationJQ builds from the paused response.
		cont, err := json.Marshal(map[string]any{
			"model":                "demo",
			"previous_response_id": paused.ID,
			"input":                []map[string]string{{"type": "function_call_output", "call_id": call.CallID, "output": weatherOutput}},
		})
		require.NoError(t, err)
		r := create(t, srv, string(cont))
		require.Equal(t, "completed", r.Status)
		require.Equal(t, "In Paris it is 18 °C and sunny.", r.text())
	})

	t.Run("stream", func(t *testing.T) {
		resp := post(t, srv, streamRequest)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.True(t, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
		evs, done, err := ssecheck.Parse(resp.Body)
		require.NoError(t, err)
		require.True(t, done, "the stream ends with [DONE]")
		v, err := schema.Shared()
		require.NoError(t, err)
		require.NoError(t, ssecheck.Check(v, evs))
		require.Equal(t, "response.completed", evs[len(evs)-1].Type)
		text, err := ssecheck.OutputText(evs)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(text, "Hello from Lambent's demo model!"), text)
	})
	require.Equal(t, 5, model.Calls(), "calculator: 2 model calls, weather: 2, stream: 1")
}

// TestPrintedCommands runs the printed commands with sh, curl and jq, as a
// user pastes them.
func TestPrintedCommands(t *testing.T) {
	for _, tool := range []string{"sh", "curl", "jq"} {
		_, err := exec.LookPath(tool)
		require.NoError(t, err, "the demo's printed commands need %s", tool)
	}
	srv, _ := gateway(t)
	var script bytes.Buffer
	printCommands(&script, srv.URL)
	require.Contains(t, script.String(), "on "+srv.URL)
	out, err := exec.Command("sh", "-e", "-c", script.String()).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, want := range []string{
		"17 * 23 = 391",
		`"status":"requires_action"`,
		"In Paris it is 18 °C and sunny.",
		"event: response.completed",
		"data: [DONE]",
	} {
		require.Contains(t, string(out), want)
	}
}
