package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/lambdareply"
	"github.com/lambent/lambent/pkg/lambdaio"
)

// streamedCreates are a streamed create (stream: true) through each front
// door: the function URL and the REST API (response streaming), the HTTP
// API and a buffered REST API stage (API Gateway's proxy).
func streamedCreates(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	body := func(m map[string]any) {
		m["body"] = `{"model":"gpt-4.1-mini","input":"Say hello","stream":true}`
		if h, ok := m["headers"].(map[string]any); ok {
			delete(h, "content-length")
		}
		if h, ok := m["multiValueHeaders"].(map[string]any); ok {
			delete(h, "content-length")
		}
	}
	return map[string]json.RawMessage{
		"url":     edit(t, readEvent(t, "gateway-url-create-stream.json"), body),
		"rest":    edit(t, readEvent(t, "gateway-rest-create-stream.json"), body),
		"httpapi": edit(t, readEvent(t, "gateway-httpapi-create.json"), body),
		"rest-buffered": edit(t, readEvent(t, "gateway-rest-create-stream.json"), func(m map[string]any) {
			body(m)
			m["stageVariables"] = map[string]any{lambdaio.TransferModeStageVariable: "BUFFERED"}
		}),
	}
}

// A streamed create the model provider refuses reaches the client through
// every Lambda front door as the HTTP error of the refusal (docs/api.md,
// "A stream refused before it began is an HTTP error"): its status, the
// OpenAI error body as JSON, its Retry-After; one that runs keeps its SSE
// status and headers.
func TestStreamRefusedOnEveryFrontDoor(t *testing.T) {
	t.Parallel()
	for door, ev := range streamedCreates(t) {
		t.Run(door, func(t *testing.T) {
			t.Parallel()
			fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
				return fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"7"}}}
			})
			defer fake.Close()
			h := lambdaHandler(newApp(t, fake))
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			status, hd, body := lambdareply.Reply(t, out)
			require.Equal(t, http.StatusTooManyRequests, status, "%s", body)
			require.Equal(t, "application/json", hd.Get("Content-Type"))
			require.Equal(t, "7", hd.Get("Retry-After"))
			var e struct {
				Error struct {
					Type string `json:"type"`
					Code string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			require.Equal(t, "rate_limit_exceeded", e.Error.Code)
			require.Equal(t, 1, fake.Calls())
		})
		t.Run(door+"/runs", func(t *testing.T) {
			t.Parallel()
			fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: answer} })
			defer fake.Close()
			h := lambdaHandler(newApp(t, fake))
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			status, hd, body := lambdareply.Reply(t, out)
			require.Equal(t, http.StatusOK, status, "%s", body)
			require.Equal(t, "text/event-stream; charset=utf-8", hd.Get("Content-Type"))
			require.Equal(t, "no-cache", hd.Get("Cache-Control"))
			require.Contains(t, string(body), "event: response.created\n")
			require.Contains(t, string(body), "data: [DONE]\n\n")
		})
	}
}
