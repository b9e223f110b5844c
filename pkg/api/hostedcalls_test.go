package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayItems decodes and validates a request whose input is items, and
// returns each input item as MarshalJSON writes it.
func replayItems(t *testing.T, items ...string) []string {
	t.Helper()
	r, err := DecodeCreateRequest([]byte(`{"input":[` + strings.Join(items, ",") + `]}`))
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	out := make([]string, len(r.Input))
	for i := range r.Input {
		b, err := json.Marshal(r.Input[i])
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// The web_search_call items a Codex thread started on OpenAI replays (no
// id, as Codex sends them; find_in_page, Codex's name of find; the "other"
// of an action Codex does not know) and OpenAI's own shapes (id, sources,
// queries, searching) are accepted and written back as they came.
func TestWebSearchCallReplayed(t *testing.T) {
	items := []string{
		`{"type":"web_search_call","status":"completed","action":{"type":"search","query":"weather: San Francisco, CA"}}`,
		`{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q","queries":["q","r"]}}`,
		`{"type":"web_search_call","status":"completed","action":{"type":"open_page","url":"https://example.com/a"}}`,
		`{"type":"web_search_call","status":"completed","action":{"type":"find_in_page","url":"https://example.com/a","pattern":"forecast"}}`,
		`{"type":"web_search_call","status":"completed","action":{"type":"other"}}`,
		`{"type":"web_search_call","status":"completed"}`,
		`{"type":"web_search_call","id":"ws_1","status":"searching","action":{"type":"search","query":"q","sources":[{"type":"url","url":"https://example.com"}]}}`,
		`{"type":"web_search_call","id":"ws_2","status":"failed","action":{"type":"find","url":"https://example.com","pattern":"p"}}`,
	}
	requireWrittenBack(t, items)
}

// requireWrittenBack requires that items decode and are written back as
// they came (with an empty id when they had none, which the engine then
// gives them), and that what is written decodes to the same items, as the
// stores keep them.
func requireWrittenBack(t *testing.T, items []string) {
	t.Helper()
	got := replayItems(t, items...)
	for i, in := range items {
		want := in
		if !strings.Contains(in, `"id"`) {
			want = `{"id":"",` + in[1:]
		}
		assert.JSONEq(t, want, got[i])
	}
	assert.Equal(t, got, replayItems(t, got...))
}

// A malformed web_search_call is a 400 naming its field; an action nested
// deeper than MaxItemValueDepth is refused before anything is built from it.
func TestWebSearchCallMalformed(t *testing.T) {
	in := func(item string) string { return `{"input":[{"role":"user","content":"hi"},` + item + `]}` }
	deep := strings.Repeat("[", MaxItemValueDepth) + strings.Repeat("]", MaxItemValueDepth)
	runBad(t, []badCase{
		{in(`{"type":"web_search_call","action":"search"}`), "input[1].action", "invalid_type", ""},
		{in(`{"type":"web_search_call","action":{"query":"q"}}`), "input[1].action.type", "missing_required_parameter", ""},
		{in(`{"type":"web_search_call","action":{"type":7}}`), "input[1].action.type", "", "string"},
		{in(`{"type":"web_search_call","action":{"type":"search","query":["q"]}}`), "input[1].action.query", "", "string"},
		{in(`{"type":"web_search_call","action":{"type":"search","queries":"q"}}`), "input[1].action.queries", "", "array"},
		{in(`{"type":"web_search_call","action":{"type":"search","sources":[{"url":7}]}}`), "input[1].action.sources.url", "", "string"},
		{in(`{"type":"web_search_call","action":{"type":"open_page","url":{}}}`), "input[1].action.url", "", "string"},
		{in(`{"type":"web_search_call","status":"done"}`), "input[1].status", "invalid_value", "done"},
		{in(`{"type":"web_search_call","action":{"type":"search","x":` + deep + `}}`), "input[1].action", "limit_exceeded", "64"},
	})
	// At the limit it passes.
	replayItems(t, `{"type":"web_search_call","action":{"type":"search","x":`+strings.Repeat("[", MaxItemValueDepth-1)+strings.Repeat("]", MaxItemValueDepth-1)+`}}`)
}

func TestDeeperThan(t *testing.T) {
	for in, want := range map[string]int{
		`1`: 0, `"[[["`: 0, `[]`: 1, `{"a":[1,{"b":"]}"}]}`: 3, `["\"[",[[]]]`: 3, `[[],[],[]]`: 2,
	} {
		assert.False(t, deeperThan([]byte(in), want), in)
		assert.True(t, want == 0 || deeperThan([]byte(in), want-1), in)
	}
}

// The tool search items a Codex thread started on OpenAI replays (a
// client-executed search: its call_id, {"query","limit"} arguments, the
// loaded tools; a server-executed one: call_id null, {"paths"}) and
// OpenAI's own shapes (id, no execution) are accepted and written back as
// they came.
func TestToolSearchItemsReplayed(t *testing.T) {
	loaded := `[{"type":"namespace","name":"mcp__calendar__","description":"Calendar tools.","tools":[{"type":"function","name":"create_event",` +
		`"description":"Creates an event.","strict":false,"defer_loading":true,"parameters":{"type":"object","properties":{"title":{"type":"string"}}}}]}]`
	items := []string{
		`{"type":"tool_search_call","call_id":"search_1","status":"completed","execution":"client","arguments":{"query":"calendar","limit":1}}`,
		`{"type":"tool_search_output","call_id":"search_1","status":"completed","execution":"client","tools":` + loaded + `}`,
		`{"type":"tool_search_call","call_id":null,"status":"completed","execution":"server","arguments":{"paths":["mcp__calendar__"]}}`,
		`{"type":"tool_search_output","call_id":null,"status":"completed","execution":"server","tools":[]}`,
		`{"type":"tool_search_call","id":"tsc_1","call_id":"c","status":"in_progress","arguments":"calendar"}`,
		`{"type":"tool_search_output","id":"tso_1","call_id":"c","status":"incomplete","tools":[{"type":"function","name":"f"}]}`,
	}
	requireWrittenBack(t, items)
}

// A malformed tool search item is a 400 naming its field; arguments or
// tools nested deeper than MaxItemValueDepth are refused.
func TestToolSearchItemsMalformed(t *testing.T) {
	in := func(item string) string { return `{"input":[{"role":"user","content":"hi"},` + item + `]}` }
	deep := strings.Repeat("[", MaxItemValueDepth) + strings.Repeat("]", MaxItemValueDepth)
	runBad(t, []badCase{
		{in(`{"type":"tool_search_call","call_id":"c"}`), "input[1].arguments", "missing_required_parameter", ""},
		{in(`{"type":"tool_search_call","call_id":"c","arguments":null}`), "input[1].arguments", "missing_required_parameter", ""},
		{in(`{"type":"tool_search_call","call_id":"c","arguments":{"q":` + deep + `}}`), "input[1].arguments", "limit_exceeded", "64"},
		{in(`{"type":"tool_search_call","call_id":"c","arguments":{},"execution":"both"}`), "input[1].execution", "invalid_value", "both"},
		{in(`{"type":"tool_search_call","call_id":"c","arguments":{},"status":"searching"}`), "input[1].status", "invalid_value", "searching"},
		{in(`{"type":"tool_search_call","call_id":7,"arguments":{}}`), "input[1]", "", "call_id"},
		{in(`{"type":"tool_search_output","call_id":"c"}`), "input[1].tools", "missing_required_parameter", ""},
		{in(`{"type":"tool_search_output","call_id":"c","tools":{}}`), "input[1].tools", "", "array"},
		{in(`{"type":"tool_search_output","call_id":"c","tools":[{"type":"function"},{"name":"f"}]}`), "input[1].tools[1].type", "missing_required_parameter", ""},
		{in(`{"type":"tool_search_output","call_id":"c","tools":[{"type":"function","parameters":{"x":` + deep + `}}]}`), "input[1].tools", "limit_exceeded", "64"},
		{in(`{"type":"tool_search_output","call_id":"c","tools":[],"execution":"local"}`), "input[1].execution", "invalid_value", "local"},
		// Other items' arguments are strings, as before.
		{in(`{"type":"function_call","call_id":"c","name":"f","arguments":{}}`), "input[1].arguments", "", "string"},
	})
}

// Every JSON value an input item carries as it is has the same depth
// bound: the actions of computer, shell, local shell and apply_patch calls,
// their safety checks and the outputs kept as they came. A computer_call
// action nested 20,000 levels deep was accepted, stored and replayed.
func TestItemValuesDepthBounded(t *testing.T) {
	in := func(item string) string { return `{"input":[{"role":"user","content":"hi"},` + item + `]}` }
	deep := strings.Repeat("[", MaxItemValueDepth) + strings.Repeat("]", MaxItemValueDepth)
	runBad(t, []badCase{
		{in(`{"type":"computer_call","call_id":"c","action":{"type":"click","x":` + deep + `}}`), "input[1].action", "limit_exceeded", "64"},
		{in(`{"type":"computer_call","call_id":"c","action":{"type":"click"},"pending_safety_checks":[` + deep + `]}`), "input[1].pending_safety_checks", "limit_exceeded", "64"},
		{in(`{"type":"local_shell_call","call_id":"c","action":{"type":"exec","command":` + deep + `}}`), "input[1].action", "limit_exceeded", "64"},
		{in(`{"type":"shell_call","call_id":"c","action":{"commands":` + deep + `}}`), "input[1].action", "limit_exceeded", "64"},
		{in(`{"type":"apply_patch_call","call_id":"c","operation":{"type":"create_file","x":` + deep + `}}`), "input[1].operation", "limit_exceeded", "64"},
		{in(`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot","x":` + deep + `}}`), "input[1].output", "limit_exceeded", "64"},
		{in(`{"type":"computer_call_output","call_id":"c","output":{"type":"computer_screenshot"},"acknowledged_safety_checks":[` + deep + `]}`), "input[1].acknowledged_safety_checks", "limit_exceeded", "64"},
		{in(`{"type":"shell_call_output","call_id":"c","output":[` + deep + `]}`), "input[1].output", "limit_exceeded", "64"},
	})
}

// The other JSON values a request carries as they are have the same bound:
// the annotations and logprobs of a message's (or a tool output's) parts,
// the input schema and annotations of a replayed mcp_list_tools item's
// tools, and the declaration of a built-in tool (echoed as given). Nested
// 20,000 levels deep they were accepted and stored, and the stored
// response could not be read back from DynamoDB (every GET a 500), or the
// response echoing the declaration could not be parsed by a client.
func TestCarriedValuesDepthBounded(t *testing.T) {
	in := func(item string) string { return `{"input":[{"role":"user","content":"hi"},` + item + `]}` }
	deep := strings.Repeat("[", MaxItemValueDepth) + strings.Repeat("]", MaxItemValueDepth)
	runBad(t, []badCase{
		{in(`{"role":"assistant","content":[{"type":"output_text","text":"a","annotations":[{"x":` + deep + `}]}]}`), "input[1].content[0].annotations", "limit_exceeded", "64"},
		{in(`{"role":"assistant","content":[{"type":"output_text","text":"a","logprobs":[{"x":` + deep + `}]}]}`), "input[1].content[0].logprobs", "limit_exceeded", "64"},
		{in(`{"type":"function_call_output","call_id":"c","output":[{"type":"output_text","text":"a","annotations":[{"x":` + deep + `}]}]}`), "input[1].output[0].annotations", "limit_exceeded", "64"},
		{in(`{"type":"mcp_list_tools","server_label":"s","tools":[{"name":"a","input_schema":{"x":` + deep + `}}]}`), "input[1].tools[0].input_schema", "limit_exceeded", "64"},
		{in(`{"type":"mcp_list_tools","server_label":"s","tools":[{"name":"a","input_schema":{},"annotations":{"x":` + deep + `}}]}`), "input[1].tools[0].annotations", "limit_exceeded", "64"},
		{`{"input":"hi","tools":[{"type":"web_search","x":` + deep + `}]}`, "tools[0]", "limit_exceeded", "64"},
	})
}
