package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// codexOpenAIThread is a thread Codex started on OpenAI, as Codex replays
// it (store: false, no item ids; pkg/api/testdata/codex_openai_thread.json):
// OpenAI's hosted web searches between the calls of one turn, the turn's
// results, the answer; a client-executed tool search loading an MCP
// server's tool, the call of that tool, the answer; a new question. Each
// item is its wire shape.
func codexOpenAIThread(t *testing.T) []json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../api/testdata/codex_openai_thread.json")
	require.NoError(t, err)
	var items []json.RawMessage
	require.NoError(t, json.Unmarshal(b, &items))
	return items
}

// codexTools are the tools Codex declares: its exec_command function and
// OpenAI's web_search, which Lambent does not run (the response echoes
// it, which the OpenResponses schema does not know).
const codexTools = `[{"type":"function","name":"exec_command","description":"Runs a command.","parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},` +
	`{"type":"web_search","external_web_access":true}]`

// A Codex thread started on OpenAI resumes through Lambent: the hosted
// items OpenAI made are accepted, the model (the strict fake: a turn's
// tool calls then their results) gets a valid history without them, and
// with store: true they are kept and listed back as they came, with ids of
// their own.
func TestE2ECodexOpenAIThreadResumed(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "Nothing else."}, fakellm.Turn{Text: "Nothing else."}), nil)
	thread := codexOpenAIThread(t)
	input := mustJSON(t, thread)
	for i, store := range []bool{false, true} {
		status, _, body := g.postJSON(fmt.Sprintf(`{"model":"m","store":%t,"input":%s,"tools":%s}`, store, input, codexTools))
		require.Equal(t, http.StatusOK, status, "%s", body)
		var resp struct{ ID, Status string }
		require.NoError(t, json.Unmarshal(body, &resp))
		require.Equal(t, "completed", resp.Status)

		req := g.fake.Requests()[i]
		var roles []string
		for _, m := range req.Messages {
			roles = append(roles, m.Role)
			assert.NotContains(t, m.Content.String(), "weather.example", "no web search reaches the model")
			assert.NotContains(t, m.Content.String(), "calendar create event", "no tool search reaches the model")
		}
		require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "assistant", "user", "assistant", "tool", "assistant", "user"}, roles)
		require.Len(t, req.Messages[2].ToolCalls, 2, "the turn's calls stay one assistant message")
		require.Len(t, req.Tools, 1, "the model is offered the request's tools, not those a search loaded")
		if !store {
			continue
		}
		status, _, body = g.do(http.MethodGet, "/v1/responses/"+resp.ID+"/input_items?order=asc&limit=100", "", "")
		require.Equal(t, http.StatusOK, status, "%s", body)
		var list struct {
			Data []json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal(body, &list))
		require.Len(t, list.Data, len(thread))
		prefixes := map[string]string{"web_search_call": "ws_", "tool_search_call": "tsc_", "tool_search_output": "tso_"}
		hosted := 0
		for j, raw := range list.Data {
			var it struct{ Type, ID string }
			require.NoError(t, json.Unmarshal(raw, &it))
			prefix, ok := prefixes[it.Type]
			if !ok {
				continue
			}
			hosted++
			assert.True(t, strings.HasPrefix(it.ID, prefix), it.ID)
			assert.JSONEq(t, string(thread[j]), withoutID(t, raw))
		}
		require.Equal(t, 5, hosted)
	}
}
