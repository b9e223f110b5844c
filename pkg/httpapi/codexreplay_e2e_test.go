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
// results, the answer, a new question. Each item is its wire shape.
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

		msgs := g.fake.Requests()[i].Messages
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Role)
			assert.NotContains(t, m.Content.String(), "weather.example", "no search reaches the model")
		}
		require.Equal(t, []string{"system", "user", "assistant", "tool", "tool", "assistant", "user"}, roles)
		require.Len(t, msgs[2].ToolCalls, 2, "the turn's calls stay one assistant message")
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
		for j, raw := range list.Data {
			if !strings.Contains(string(thread[j]), `"web_search_call"`) {
				continue
			}
			var id struct {
				ID string `json:"id"`
			}
			require.NoError(t, json.Unmarshal(raw, &id))
			assert.True(t, strings.HasPrefix(id.ID, "ws_"), id.ID)
			assert.JSONEq(t, string(thread[j]), withoutID(t, raw))
		}
	}
}
