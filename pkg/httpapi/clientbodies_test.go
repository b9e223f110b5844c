package httpapi_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// capturedBody is one body an official client sent to POST /v1/responses,
// captured by pkg/api/testdata/capture_client_bodies.mjs.
type capturedBody struct {
	Name string                     `json:"name"`
	Body map[string]json.RawMessage `json:"body"`
}

// The exact bodies LangChain, the AI SDK and the Agents SDK send are
// answered over HTTP as OpenAI answers them, with what they ask for reaching
// the model. The captured previous_response_id and item_reference ids are
// replaced by ones this gateway stored.
func TestClientBodies(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../api/testdata/client_bodies.json")
	require.NoError(t, err)
	var bodies []capturedBody
	require.NoError(t, json.Unmarshal(raw, &bodies))
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: `{"answer":"ok"}`}
	}), nil)

	status, _, seedRaw := g.postJSON(`{"input":"Say hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", seedRaw)
	seed := validResponse(t, seedRaw)
	require.Len(t, seed.Output, 1)

	names := map[string]bool{}
	for _, c := range bodies {
		names[strings.Split(c.Name, "_")[0]] = true
		t.Run(c.Name, func(t *testing.T) {
			if _, ok := c.Body["previous_response_id"]; ok {
				c.Body["previous_response_id"] = mustJSON(t, seed.ID)
			}
			var in []map[string]json.RawMessage
			if json.Unmarshal(c.Body["input"], &in) == nil {
				for _, it := range in {
					if string(it["type"]) == `"item_reference"` {
						it["id"] = mustJSON(t, seed.Output[0].ID)
					}
				}
				c.Body["input"] = mustJSON(t, in)
			}
			calls := g.fake.Calls()
			status, _, body := g.postJSON(string(mustJSON(t, c.Body)))
			require.Equal(t, http.StatusOK, status, "%s", body)
			var resp []byte
			if string(c.Body["stream"]) == "true" {
				frames, _ := sseFrames(t, body)
				last := frames[len(frames)-1]
				require.Equal(t, "response.completed", last.event)
				var ev struct {
					Response json.RawMessage `json:"response"`
				}
				require.NoError(t, json.Unmarshal(last.data, &ev))
				resp = ev.Response
			} else {
				resp = body
			}
			w := validResponse(t, resp)
			require.Equal(t, "completed", w.Status)
			require.Equal(t, calls+1, g.fake.Calls())
			wantForwarded(t, c.Body, g.fake.Requests()[calls])
		})
	}
	require.Equal(t, map[string]bool{"langchain": true, "aisdk": true, "agents": true}, names)
}

// wantForwarded checks that the model request carries what the client
// asked for: the output format, reasoning effort, sampling and limits.
func wantForwarded(t *testing.T, body map[string]json.RawMessage, got fakellm.Request) {
	t.Helper()
	var text struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
		Verbosity string `json:"verbosity"`
	}
	if raw, ok := body["text"]; ok {
		require.NoError(t, json.Unmarshal(raw, &text))
	}
	if text.Format == nil || text.Format.Type == "text" {
		require.Nil(t, got.ResponseFormat, "no format asked for, none forwarded")
	} else {
		require.NotNil(t, got.ResponseFormat)
		require.Equal(t, text.Format.Type, got.ResponseFormat.Type)
	}
	require.Equal(t, text.Verbosity, got.Verbosity)
	var reasoning struct {
		Effort string `json:"effort"`
	}
	if raw, ok := body["reasoning"]; ok {
		require.NoError(t, json.Unmarshal(raw, &reasoning))
	}
	require.Equal(t, reasoning.Effort, got.ReasoningEffort)
	for k, v := range map[string]*float64{"temperature": got.Temperature, "top_p": got.TopP} {
		if raw, ok := body[k]; ok {
			var want float64
			require.NoError(t, json.Unmarshal(raw, &want))
			require.NotNil(t, v, k)
			require.Equal(t, want, *v, k)
		}
	}
	if raw, ok := body["max_output_tokens"]; ok {
		var want int
		require.NoError(t, json.Unmarshal(raw, &want))
		limit := got.MaxCompletionTokens
		if limit == nil {
			limit = got.MaxTokens
		}
		require.NotNil(t, limit)
		require.Equal(t, want, *limit)
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// What OpenAI refuses is a 400 in the OpenAI error shape naming the
// parameter, and never reaches the model; unsupported OpenAI item types are
// a 400, never a 500.
func TestOpenAIRejectionsOverHTTP(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(), nil)
	cases := []struct{ body, param, code string }{
		{`{"input":"hi","text":{"format":{}}}`, "text.format.type", "missing_required_parameter"},
		{`{"input":"hi","temperature":2.5}`, "temperature", "decimal_above_max_value"},
		{`{"input":"hi","top_p":-0.5}`, "top_p", "decimal_below_min_value"},
		{`{"input":"hi","presence_penalty":3}`, "presence_penalty", "decimal_above_max_value"},
		{`{"input":"hi","max_output_tokens":8}`, "max_output_tokens", "integer_below_min_value"},
		{`{"input":"hi","top_logprobs":25}`, "top_logprobs", "integer_above_max_value"},
		{`{"input":"hi","prompt_cache_key":"` + strings.Repeat("k", 65) + `"}`, "prompt_cache_key", "string_above_max_length"},
		{`{"input":"hi","reasoning":{"effort":"extreme"}}`, "reasoning.effort", "invalid_value"},
		{`{"input":"hi","reasoning":{"budget_tokens":100}}`, "reasoning.budget_tokens", "unknown_parameter"},
		{`{"input":"hi","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation", "mutually_exclusive_parameters"},
		{`{"input":"hi","prompt":{"id":"pmpt_1"}}`, "prompt", "unsupported_parameter"},
		{`{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"mcp","server_label":"s"}}`, "tool_choice.server_label", "-"},
		{`{"input":[{"type":"computer_call_output","call_id":"c","output":{}}]}`, "input[0].call_id", "-"},
		{`{"input":[{"type":"image_generation_call","id":"ig_1","status":"completed"}]}`, "input[0].type", "-"},
	}
	for _, c := range cases {
		t.Run(c.body, func(t *testing.T) {
			status, _, body := g.postJSON(c.body)
			wantError(t, status, body, http.StatusBadRequest, c.param, c.code)
		})
	}
	require.Equal(t, 0, g.fake.Calls(), "refused requests never reach the model")
}
