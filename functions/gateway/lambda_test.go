package main

// Every sample event under events/ (gateway-*.json) goes through the real
// Lambda handler (lambdaHandler: lambdaio over the app built by app.Build,
// memory store, a fake Chat Completions model speaking real HTTP), and the
// test checks status, headers and body of what Lambda would send on.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/lambdareply"
	"github.com/lambent/lambent/internal/testing/lambdarun"
	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/app"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambent-gateway-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gatewayBinary = lambdarun.BuildOnce(".", ".", filepath.Join(dir, "bootstrap"), nil)
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// answer is the fake model's reply, streamed word by word.
const answer = "Hello from Lambda, one word at a time."

// eventsDir holds the sample events, relative to this package.
const eventsDir = "../../events"

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// newApp builds the gateway as main does, in local configuration (memory
// store) against fake.
func newApp(t *testing.T, fake *fakellm.Server) *app.App {
	t.Helper()
	return newAppEnv(t, fake, nil)
}

// newAppEnv is newApp with more environment variables.
func newAppEnv(t *testing.T, fake *fakellm.Server, more map[string]string) *app.App {
	t.Helper()
	env := map[string]string{
		"LAMBENT_PROVIDER_URL": fake.URL,
		"LAMBENT_STORE":        "memory",
		"LAMBENT_LOG_LEVEL":    "error",
	}
	for k, v := range more {
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(testCtx(t), &cfg, getenv))
	a, err := app.Build(testCtx(t), cfg, app.Logger(cfg, io.Discard), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a
}

func readEvent(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, name))
	require.NoError(t, err)
	require.True(t, json.Valid(b), "%s is not JSON", name)
	return b
}

type handler = func(context.Context, json.RawMessage) (any, error)

// responseBody is the part of a Response object the tests read.
type responseBody struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Status string `json:"status"`
	Model  string `json:"model"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
}

func decodeResponse(t *testing.T, b []byte) responseBody {
	t.Helper()
	var r responseBody
	require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	return r
}

func (r responseBody) text() string {
	var sb strings.Builder
	for _, it := range r.Output {
		for _, c := range it.Content {
			if c.Type == "output_text" {
				sb.WriteString(c.Text)
			}
		}
	}
	return sb.String()
}

// requireCompleted checks a non-streamed Response body.
func requireCompleted(t *testing.T, b []byte) responseBody {
	t.Helper()
	r := decodeResponse(t, b)
	require.Equal(t, "response", r.Object)
	require.Equal(t, "completed", r.Status)
	require.True(t, strings.HasPrefix(r.ID, "resp_"), r.ID)
	require.Equal(t, "gpt-4.1-mini", r.Model)
	require.Equal(t, answer, r.text())
	return r
}

// requireSSE checks a streamed Responses API body: every chunk holds only
// whole SSE events, valid against the schema and the stream invariants, the
// text deltas making up the answer, a completed response, then [DONE] at the
// end of the last chunk.
func requireSSE(t *testing.T, s *lambdareply.Streamed) {
	t.Helper()
	inChunks := 0
	for i, c := range s.Chunks {
		require.True(t, bytes.HasSuffix(c, []byte("\n\n")), "chunk %d is not whole SSE events: %q", i, c)
		evs, done, err := ssecheck.Parse(bytes.NewReader(c))
		require.NoError(t, err, "chunk %d is not whole SSE events: %q", i, c)
		require.Equal(t, i == len(s.Chunks)-1, done, "chunk %d: only the last chunk, and it always, ends with [DONE]", i)
		inChunks += len(evs)
	}
	require.True(t, bytes.HasSuffix(s.Chunks[len(s.Chunks)-1], []byte("data: [DONE]\n\n")))
	evs, done, err := ssecheck.Parse(bytes.NewReader(s.Body()))
	require.NoError(t, err)
	require.True(t, done, "the stream ends with [DONE]")
	v, err := schema.Shared()
	require.NoError(t, err)
	require.NoError(t, ssecheck.Check(v, evs))
	require.Equal(t, len(evs), inChunks, "every event is whole in one chunk")
	text, err := ssecheck.OutputText(evs)
	require.NoError(t, err)
	require.Equal(t, answer, text)
	last := evs[len(evs)-1]
	require.Equal(t, "response.completed", last.Type)
	require.Equal(t, "completed", last.Response.Status)
}

// requireCompacted checks a POST /v1/responses/compact reply to the
// compact samples (valid CompactResource: the user message kept, then one
// compaction item; usage of the one model call, whose last message asks
// for the summary) and returns its output items.
func requireCompacted(t *testing.T, b []byte, fake *fakellm.Server) []json.RawMessage {
	t.Helper()
	v, err := schema.Shared()
	require.NoError(t, err)
	require.NoError(t, v.Validate("CompactResource", b), "%s", b)
	var c struct {
		Object string            `json:"object"`
		Output []json.RawMessage `json:"output"`
		Usage  struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(b, &c))
	require.Equal(t, "response.compaction", c.Object)
	require.Equal(t, 21, c.Usage.TotalTokens)
	require.Len(t, c.Output, 2, "%s", b)
	require.Contains(t, string(c.Output[0]), `"role":"user"`)
	require.Contains(t, string(c.Output[1]), `"type":"compaction"`)
	require.NotContains(t, string(b), answer, "the summary is sealed")
	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	msgs := reqs[0].Messages
	require.Len(t, msgs, 3)
	require.Equal(t, "Nice to meet you, Ada.", msgs[1].Content.String())
	require.Contains(t, msgs[2].Content.String(), "summary")
	return c.Output
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func requireSSEHeaders(t *testing.T, h map[string]string) {
	t.Helper()
	require.Equal(t, "text/event-stream; charset=utf-8", h["Content-Type"])
	require.Equal(t, "no-cache", h["Cache-Control"])
	require.NotContains(t, h, "Content-Length")
}

// eventCases maps each sample event to its check.
func eventCases() map[string]func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
	cases := map[string]func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage){
		"gateway-url-create.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(*events.LambdaFunctionURLStreamingResponse)
			require.True(t, ok, "a function URL gets a streaming response, got %T", out)
			require.Equal(t, 200, resp.StatusCode)
			s := lambdareply.ReadStreamed(t, resp)
			require.Equal(t, 200, s.Prelude.StatusCode)
			require.Equal(t, "application/json", s.Prelude.Headers["Content-Type"])
			require.NotContains(t, s.Prelude.Headers, "Content-Length")
			requireCompleted(t, s.Body())
			reqs := fake.Requests()
			require.Len(t, reqs, 1)
			require.Equal(t, "gpt-4.1-mini", reqs[0].Model)
			require.Equal(t, "Say hello from Lambda in one short sentence.", reqs[0].Messages[len(reqs[0].Messages)-1].Content.Text)
		},
		"gateway-url-create-stream.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(*events.LambdaFunctionURLStreamingResponse)
			require.True(t, ok, "got %T", out)
			require.Equal(t, "application/vnd.awslambda.http-integration-response", resp.ContentType())
			s := lambdareply.ReadStreamed(t, resp)
			require.Equal(t, 200, s.Prelude.StatusCode)
			requireSSEHeaders(t, s.Prelude.Headers)
			requireSSE(t, s)
			require.True(t, fake.Requests()[0].Stream, "the model is streamed too")
		},
		"gateway-rest-create-stream.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(*events.APIGatewayProxyStreamingResponse)
			require.True(t, ok, "a REST API request gets a streaming response by default, got %T", out)
			require.Equal(t, "application/vnd.awslambda.http-integration-response", resp.ContentType())
			s := lambdareply.ReadStreamed(t, resp)
			require.Equal(t, 200, s.Prelude.StatusCode)
			requireSSEHeaders(t, s.Prelude.Headers)
			requireSSE(t, s)
		},
		"gateway-httpapi-create.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(events.APIGatewayV2HTTPResponse)
			require.True(t, ok, "an HTTP API gets a buffered payload 2.0 response, got %T", out)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, "application/json", resp.Headers["Content-Type"])
			require.False(t, resp.IsBase64Encoded)
			requireCompleted(t, []byte(resp.Body))
		},
		"gateway-url-get.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			// The sample's id is not stored here: the error body.
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			s := lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse))
			require.Equal(t, 404, s.Prelude.StatusCode)
			require.Equal(t, "application/json", s.Prelude.Headers["Content-Type"])
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(s.Body(), &e), "%s", s.Body())
			require.Equal(t, "invalid_request_error", e.Error.Type)
			require.NotEmpty(t, e.Error.Message)

			// Create one through the function URL, then get it by the
			// sample's path with the new id.
			out, err = h(testCtx(t), readEvent(t, "gateway-url-create.json"))
			require.NoError(t, err)
			created := requireCompleted(t, lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse)).Body())
			var sample struct {
				RawPath string `json:"rawPath"`
			}
			require.NoError(t, json.Unmarshal(ev, &sample))
			oldID := strings.TrimPrefix(sample.RawPath, "/v1/responses/")
			require.True(t, strings.HasPrefix(oldID, "resp_"), sample.RawPath)
			out, err = h(testCtx(t), json.RawMessage(strings.ReplaceAll(string(ev), oldID, created.ID)))
			require.NoError(t, err)
			s = lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse))
			require.Equal(t, 200, s.Prelude.StatusCode)
			require.Equal(t, "application/json", s.Prelude.Headers["Content-Type"])
			got := requireCompleted(t, s.Body())
			require.Equal(t, created.ID, got.ID)
		},
		"gateway-url-compact.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			s := lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse))
			require.Equal(t, 200, s.Prelude.StatusCode)
			require.Equal(t, "application/json", s.Prelude.Headers["Content-Type"])
			window := requireCompacted(t, s.Body(), fake)

			// The compacted window as the next request's input, through the
			// function URL: the model sees the summary.
			var create map[string]any
			require.NoError(t, json.Unmarshal(readEvent(t, "gateway-url-create.json"), &create))
			body, err := json.Marshal(map[string]any{"model": "gpt-4.1-mini", "input": append(window, json.RawMessage(`{"role":"user","content":"Who am I?"}`))})
			require.NoError(t, err)
			create["body"] = string(body)
			out, err = h(testCtx(t), mustJSON(t, create))
			require.NoError(t, err)
			requireCompleted(t, lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse)).Body())
			reqs := fake.Requests()
			require.Len(t, reqs, 2)
			var seen []string
			for _, m := range reqs[1].Messages {
				seen = append(seen, m.Role+": "+m.Content.String())
			}
			require.Equal(t, []string{"user: My name is Ada and I like tea.", "system: Summary of the earlier conversation:\n\n" + answer, "user: Who am I?"}, seen)
		},
		"gateway-rest-compact.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(*events.APIGatewayProxyStreamingResponse)
			require.True(t, ok, "got %T", out)
			s := lambdareply.ReadStreamed(t, resp)
			require.Equal(t, 200, s.Prelude.StatusCode)
			requireCompacted(t, s.Body(), fake)
		},
		"gateway-httpapi-compact.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			resp, ok := out.(events.APIGatewayV2HTTPResponse)
			require.True(t, ok, "got %T", out)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, "application/json", resp.Headers["Content-Type"])
			requireCompacted(t, []byte(resp.Body), fake)
		},
		"gateway-url-healthz.json": func(t *testing.T, h handler, fake *fakellm.Server, ev json.RawMessage) {
			out, err := h(testCtx(t), ev)
			require.NoError(t, err)
			s := lambdareply.ReadStreamed(t, out.(*events.LambdaFunctionURLStreamingResponse))
			require.Equal(t, 200, s.Prelude.StatusCode)
			require.Equal(t, "application/json", s.Prelude.Headers["Content-Type"])
			require.JSONEq(t, `{"status":"ok"}`, string(s.Body()))
			require.Zero(t, fake.Calls(), "healthz does not call the model")
		},
	}
	// The SigV4-signed requests of AWS_IAM front doors answer as their
	// NONE-auth twins.
	cases["gateway-rest-create-iam.json"] = cases["gateway-rest-create-stream.json"]
	cases["gateway-httpapi-create-iam.json"] = cases["gateway-httpapi-create.json"]
	return cases
}

// TestSampleEvents pushes every events/gateway-*.json through the Lambda
// handler; a sample without a check here fails.
func TestSampleEvents(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(eventsDir, "gateway-*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	cases := eventCases()
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	sort.Strings(names)
	for name := range cases {
		require.Contains(t, names, name, "a checked sample event is missing")
	}
	for _, name := range names {
		t.Run(strings.TrimSuffix(name, ".json"), func(t *testing.T) {
			check, ok := cases[name]
			require.True(t, ok, "sample event %s has no test", name)
			fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
				return fakellm.Turn{Text: answer, Usage: fakellm.Usage{PromptTokens: 12, CompletionTokens: 9}}
			})
			defer fake.Close()
			check(t, lambdaHandler(newApp(t, fake)), fake, readEvent(t, name))
		})
	}
}

// POST /v1/responses/input_tokens through each front door (the compact
// samples with the path changed: function URL, REST API, HTTP API) is the
// gateway's 501 input_tokens_unsupported, not a 405.
func TestInputTokensUnsupportedOnEveryFrontDoor(t *testing.T) {
	t.Parallel()
	fake := fakellm.New()
	defer fake.Close()
	h := lambdaHandler(newApp(t, fake))
	for _, name := range []string{"gateway-url-compact.json", "gateway-rest-compact.json", "gateway-httpapi-compact.json"} {
		ev := strings.ReplaceAll(string(readEvent(t, name)), "/v1/responses/compact", "/v1/responses/input_tokens")
		out, err := h(testCtx(t), json.RawMessage(ev))
		require.NoError(t, err, name)
		var status int
		var body []byte
		switch r := out.(type) {
		case *events.LambdaFunctionURLStreamingResponse:
			s := lambdareply.ReadStreamed(t, r)
			status, body = s.Prelude.StatusCode, s.Body()
		case *events.APIGatewayProxyStreamingResponse:
			s := lambdareply.ReadStreamed(t, r)
			status, body = s.Prelude.StatusCode, s.Body()
		case events.APIGatewayV2HTTPResponse:
			status, body = r.StatusCode, []byte(r.Body)
		default:
			t.Fatalf("%s: reply %T", name, out)
		}
		require.Equal(t, 501, status, "%s: %s", name, body)
		require.Contains(t, string(body), `"code":"input_tokens_unsupported"`, name)
	}
	require.Zero(t, fake.Calls())
}
