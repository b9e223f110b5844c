package engine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the model sees (docs/architecture.md): the calls of one model turn
// come back to it as they came from it — all the turn's calls, then their
// results —, with the call ids it issued, in both item modes, and so do
// they in a continuation read back from either store. Two turns that made
// only calls (nothing between them in output) stay two turns. A model that
// reuses an id in a later turn (call ids numbered per turn) is sent it as
// it made it: the provider edge keeps ids unique (provider.Rules.Map).
func TestModelSeesItsTurns(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) store.ResponseStore{
		"memory":   func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) },
		"dynamodb": func(t *testing.T) store.ResponseStore { return dynamotest.NewStore(t, "") },
	}
	want := []string{
		"message",
		"function_call:calc", "function_call:calc", "function_call_output", "function_call_output",
		"function_call:calc", "function_call_output",
	}
	wantIDs := []string{"c1", "c2", "c1", "c2", "c1", "c1"}
	for _, mode := range []string{HostedItemsMCPCall, HostedItemsFunctionCall} {
		for name, newStore := range stores {
			t.Run(mode+"/"+name, func(t *testing.T) {
				t.Parallel()
				m := newMock(echoTool, "calc")
				p := script(
					calls(1, 1, call("c1", "calc", `{"x":1}`), call("c2", "calc", `{"x":2}`)),
					calls(1, 1, call("c1", "calc", `{"x":3}`)),
					text("done", 1, 1),
					text("again", 1, 1),
				)
				e, _ := newEngine(t, p, m, func(c *Config) { c.Loop.HostedToolItems = mode; c.Store = newStore(t) })
				rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
				require.NoError(t, err)
				first := decodeResponse(t, rec.resp)
				require.Equal(t, api.StatusCompleted, first.Status)

				reqs := p.requests()
				require.Len(t, reqs, 3)
				third := reqs[2].Items
				assert.Equal(t, want, types(third))
				assert.Equal(t, wantIDs, callIDs(third[1:]))
				assert.Equal(t, []string{`result of calc {"x":1}`, `result of calc {"x":2}`}, []string{third[3].Output, third[4].Output}, "results in call order")

				// A continuation, read back from the store, sees the same.
				_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":"more","tools":[{"type":"lambent:calc"}]}`)
				require.NoError(t, err)
				next := p.requests()[3].Items
				assert.Equal(t, append(want, "message", "message"), types(next))
				assert.Equal(t, wantIDs, callIDs(next[1:7]))
			})
		}
	}
}

// Where no model call id is known — a store:false client replaying the
// mcp_call items of a response — the model sees ids derived from the item
// ids, the same on every call and within every provider's bounds, and the
// replayed calls, consecutive, as one turn.
func TestReplayedCallsGetDerivedIDs(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	p := script(
		calls(1, 1, call("c1", "calc", `{"x":1}`), call("c2", "calc", `{"x":2}`)),
		text("done", 1, 1), text("again", 1, 1), text("third", 1, 1),
	)
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"x","store":false,"tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	var body struct{ Output []json.RawMessage }
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	require.Len(t, body.Output, 3)

	replay := func() []api.Item {
		in, _ := json.Marshal(append([]json.RawMessage{json.RawMessage(`{"role":"user","content":"x"}`)}, append(body.Output, json.RawMessage(`{"role":"user","content":"and?"}`))...))
		_, err := run1(t, e, `{"store":false,"input":`+string(in)+`,"tools":[{"type":"lambent:calc"}]}`)
		require.NoError(t, err)
		reqs := p.requests()
		return reqs[len(reqs)-1].Items
	}
	a, b := replay(), replay()
	assert.Equal(t, []string{"message", "function_call:calc", "function_call:calc", "function_call_output", "function_call_output", "message", "message"}, types(a))
	ids := callIDs(a[1:5])
	assert.Equal(t, ids, callIDs(b[1:5]), "derived ids are deterministic")
	assert.Equal(t, ids[0], ids[2])
	assert.Equal(t, ids[1], ids[3])
	assert.NotEqual(t, ids[0], ids[1])
	for _, id := range ids {
		assert.Regexp(t, `^call_[0-9A-Za-z]{24}$`, id)
	}
}

// A turn that mixes a hosted call, an MCP approval request and a client
// call pauses; the continuation runs the hosted call, and the model sees
// the turn's three calls together, then the client's result and the
// hosted call's.
func TestPausedTurnStaysOneTurn(t *testing.T) {
	t.Parallel()
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: "found"}, nil
	}, "search")
	p := script(calls(1, 1, call("cs", "search", `{}`), call("cw", "get_weather", `{}`)), text("done", 1, 1))
	for _, mode := range []string{HostedItemsMCPCall, HostedItemsFunctionCall} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := script(p.steps...)
			e, _ := newEngine(t, p, m, func(c *Config) { c.Loop.HostedToolItems = mode })
			tl := `"tools":[` + clientTool + `,{"type":"lambent:search"}]`
			rec, err := run1(t, e, `{"input":"x",`+tl+`}`)
			require.NoError(t, err)
			first := decodeResponse(t, rec.resp)
			require.Equal(t, api.StatusRequiresAction, first.Status)
			_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"function_call_output","call_id":"cw","output":"rain"}],`+tl+`}`)
			require.NoError(t, err)
			items := p.requests()[1].Items
			require.Equal(t, []string{"message", "function_call:search", "function_call:get_weather", "function_call_output", "function_call_output"}, types(items))
			assert.ElementsMatch(t, []string{"cs", "cw"}, callIDs(items[3:]))
			assert.Equal(t, []string{"cs", "cw"}, callIDs(items[1:3]))
		})
	}
}

// The items of OpenAI's hosted tools a client replays from a thread OpenAI
// ran (web_search_call, tool_search_call, tool_search_output) are left out
// of what the model sees wherever they stand: the calls of one turn around
// them stay one turn, then their results.
func TestOpenAIHostedItemsLeftOut(t *testing.T) {
	t.Parallel()
	p := script(text("done", 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool, "calc"), mcpMode)
	ws := `{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q"}}`
	call := func(id, out string) string {
		return `{"type":"mcp_call","id":"` + id + `","server_label":"lambent","name":"calc","arguments":"{}","output":"` + out + `","status":"completed"}`
	}
	ts := `{"type":"tool_search_call","call_id":"s1","execution":"client","arguments":{"query":"q"}},` +
		`{"type":"tool_search_output","call_id":"s1","execution":"client","tools":[{"type":"function","name":"f"}]}`
	in := `[{"role":"user","content":"x"},` + ws + `,` + call("mcp_a", "1") + `,` + ts + `,` + call("mcp_b", "2") + `,` + ws + `,{"role":"user","content":"and?"}]`
	_, err := run1(t, e, `{"store":false,"input":`+in+`,"tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	items := p.requests()[0].Items
	assert.Equal(t, []string{"message", "function_call:calc", "function_call:calc", "function_call_output", "function_call_output", "message"}, types(items))
}
