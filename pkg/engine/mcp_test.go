package engine

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

// mcpMode is the default item mode: server-executed calls as mcp_call.
func mcpMode(c *Config) { c.Loop.HostedToolItems = HostedItemsMCPCall }

// checkOpenAIStream asserts the stream invariants and that every event
// decodes as OpenAI's types (mcp_call events are not in OpenResponses), and
// returns the final response.
func (r *recorder) checkOpenAIStream(t *testing.T) *api.Response {
	t.Helper()
	evs := r.parsed(t)
	require.NoError(t, ssecheck.Check(nil, evs))
	require.NoError(t, ssecheck.CheckOpenAI(evs))
	var last struct {
		Response json.RawMessage `json:"response"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Data, &last))
	return decodeResponse(t, last.Response)
}

// A hosted tool call is one mcp_call item (server_label "lambent") with its
// output; the model still sees a function call and its result.
func TestMCPItems_HostedCallIsMCPCall(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	p := script(calls(1, 1, call("c1", "calc", `{"x":1}`)), text("42", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	require.NoError(t, ssecheck.CheckOpenAIResponse(rec.resp))
	r := decodeResponse(t, rec.resp)
	require.Equal(t, []string{"mcp_call", "message"}, types(r.Output))
	it := r.Output[0]
	assert.Equal(t, api.HostedServerLabel, it.ServerLabel)
	assert.Equal(t, "calc", it.Name)
	assert.JSONEq(t, `{"x":1}`, it.Arguments)
	assert.Equal(t, api.ItemCompleted, it.Status)
	assert.Contains(t, it.Output, `{"x":1}`)
	assert.Regexp(t, `^mcp_`, it.ID)

	// The second model call saw the call and its result as a function
	// call, with the call id the model issued.
	reqs := p.requests()
	require.Len(t, reqs, 2)
	items := reqs[1].Items
	require.Equal(t, []string{"message", "function_call:calc", "function_call_output"}, types(items))
	assert.Equal(t, "c1", items[1].CallID)
	assert.Equal(t, "c1", items[2].CallID)
	assert.Equal(t, it.Output, items[2].Output)
	assert.Equal(t, `{"x":1}`, m.calls()[0].Arguments)

	// The tools echo is OpenAI's MCP tool naming the hosted tools.
	var body struct{ Tools []json.RawMessage }
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	require.Len(t, body.Tools, 1)
	assert.JSONEq(t, `{"type":"mcp","server_label":"lambent","server_description":"Lambent's hosted tools, executed by the gateway.","allowed_tools":["calc"],"require_approval":"never"}`, string(body.Tools[0]))
}

// Streaming: the mcp_call item opens with the model's call, streams its
// arguments, and is done once the tool answered — the events OpenAI sends.
func TestMCPItems_StreamEvents(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	p := script(calls(1, 1, call("c1", "calc", `{"x":1}`)), text("42", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	require.Equal(t, []string{"mcp_call", "message"}, types(r.Output))
	var mcp []string
	for _, typ := range rec.types(t) {
		switch typ {
		case api.EventOutputItemAdded, api.EventOutputItemDone, api.EventMCPCallInProgress, api.EventMCPCallArgsDelta,
			api.EventMCPCallArgsDone, api.EventMCPCallCompleted, api.EventMCPCallFailed:
			if n := len(mcp); n > 0 && mcp[n-1] == typ && typ == api.EventMCPCallArgsDelta {
				continue // one or more deltas
			}
			mcp = append(mcp, typ)
		}
	}
	assert.Equal(t, []string{
		"response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta",
		"response.mcp_call_arguments.done", "response.mcp_call.completed", "response.output_item.done",
		"response.output_item.added", "response.output_item.done",
	}, mcp)
}

// A failed tool, an unknown tool and a disallowed tool are failed mcp_call
// items with OpenAI's error object; the model reads the error.
func TestMCPItems_FailuresAreFailedCalls(t *testing.T) {
	t.Parallel()
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: "division by zero", IsError: true}, nil
	}, "calc", "other")
	p := script(calls(1, 1, call("c1", "calc", `{}`), call("c2", "nope", `{}`), call("c3", "other", `{}`)), text("sorry", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"x","stream":true,"allowed_tools":["calc"],"tools":[{"type":"lambent:calc"},{"type":"lambent:other"}]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	require.Equal(t, []string{"mcp_call", "mcp_call", "mcp_call", "message"}, types(r.Output))
	for _, it := range r.Output[:3] {
		assert.Equal(t, api.ItemFailed, it.Status)
		assert.NotEmpty(t, it.Error)
		assert.Empty(t, it.Output)
	}
	assert.Equal(t, "division by zero", r.Output[0].Error)
	assert.Contains(t, r.Output[1].Error, "does not exist")
	assert.Contains(t, r.Output[2].Error, "not allowed")
	assert.Contains(t, rec.types(t), api.EventMCPCallFailed)
	var body struct {
		Output []map[string]json.RawMessage `json:"output"`
	}
	last := rec.parsed(t)
	require.NoError(t, json.Unmarshal(last[len(last)-1].Data, &struct {
		Response any `json:"response"`
	}{&body}))
	assert.JSONEq(t, `{"type":"mcp_tool_execution_error","content":[{"type":"text","text":"division by zero"}]}`, string(body.Output[0]["error"]))
	// The model sees its turn as it made it: the three calls, then their
	// results, each marked as an error.
	outs := p.requests()[1].Items
	assert.Equal(t, []string{"message", "function_call:calc", "function_call:nope", "function_call:other", "function_call_output", "function_call_output", "function_call_output"}, types(outs))
	assert.Equal(t, []string{"c1", "c2", "c3", "c1", "c2", "c3"}, callIDs(outs[1:]))
	for _, o := range outs[4:] {
		assert.True(t, o.IsError)
	}
	assert.Equal(t, "division by zero", outs[4].Output)
}

// Client functions stay function_call items; a mixed turn pauses with the
// hosted call's mcp_call open, and the continuation runs it: the new
// response holds the completed mcp_call (same id), and the model sees each
// call once, with both results.
func TestMCPItems_MixedTurnPausesAndContinues(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(1, 1, call("cs", "search", `{}`), call("cw", "get_weather", `{}`)), text("both done", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	tl := `"tools":[` + clientTool + `,{"type":"lambent:search"}]`
	rec, err := run1(t, e, `{"input":"x","stream":true,`+tl+`}`)
	require.NoError(t, err)
	first := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusRequiresAction, first.Status)
	require.Equal(t, []string{"mcp_call", "function_call:get_weather"}, types(first.Output))
	assert.Equal(t, api.ItemInProgress, first.Output[0].Status)
	assert.Empty(t, m.calls())

	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`","stream":true,"input":[{"type":"function_call_output","call_id":"cw","output":"rain"}],`+tl+`}`)
	require.NoError(t, err)
	r := rec2.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Equal(t, []string{"mcp_call", "message"}, types(r.Output))
	assert.Equal(t, first.Output[0].ID, r.Output[0].ID)
	assert.Equal(t, api.ItemCompleted, r.Output[0].Status)
	require.Len(t, m.calls(), 1)
	items := p.requests()[1].Items
	assert.Equal(t, []string{"message", "function_call:search", "function_call:get_weather", "function_call_output", "function_call_output"}, types(items))
	assert.Equal(t, []string{"cs", "cw", "cw", "cs"}, callIDs(items[1:]))
}

// callIDs returns the call ids of items.
func callIDs(items []api.Item) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].CallID
	}
	return out
}

// Clients send history back with the mcp_call items, with the output
// (LangChain) or without it (the Agents SDK, which says "completed"): all
// are accepted, the stored output fills the gap (read from the response
// the item's id names when no previous_response_id brought it), and the
// model sees call and result.
func TestMCPItems_ReplayedInput(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	p := script(calls(1, 1, call("c1", "calc", `{"x":1}`)), text("42", 1, 1), text("again", 1, 1), text("third", 1, 1), text("fourth", 1, 1), text("fifth", 1, 1), text("sixth", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	first := decodeResponse(t, rec.resp)
	mcpItem := first.Output[0]
	full, err := json.Marshal(mcpItem)
	require.NoError(t, err)
	noOutput := `{"type":"mcp_call","id":"` + mcpItem.ID + `","server_label":"lambent","name":"calc","arguments":"{\"x\":1}"}`
	foreign := `{"type":"mcp_call","id":"mcp_foreign","server_label":"lambent","name":"calc","arguments":"{}","error":"boom"}`
	unknown := `{"type":"mcp_call","id":"mcp_unknown","server_label":"lambent","name":"calc","arguments":"{}"}`

	// The Agents SDK's replay of result.history: status, no output, no
	// previous_response_id.
	agents := `{"type":"mcp_call","id":"` + mcpItem.ID + `","server_label":"lambent","name":"calc","arguments":"{\"x\":1}","error":null,"approval_request_id":null,"status":"completed"}`

	for i, history := range []string{string(full), noOutput, foreign, unknown, agents} {
		body := `{"input":[{"role":"user","content":"x"},` + history + `,{"role":"user","content":"again"}],"tools":[{"type":"lambent:calc"}]`
		if i == 1 {
			body += `,"previous_response_id":"` + first.ID + `"`
		}
		_, err := run1(t, e, body+`}`)
		require.NoError(t, err, history)
		items := p.requests()[2+i].Items
		var fc, out *api.Item
		for j := range items {
			switch items[j].Type {
			case api.ItemFunctionCall:
				fc = &items[j]
			case api.ItemFunctionCallOutput:
				out = &items[j]
			}
		}
		require.NotNil(t, fc, history)
		require.NotNil(t, out, history)
		assert.Equal(t, fc.CallID, out.CallID)
		switch i {
		case 0:
			assert.Equal(t, mcpItem.Output, out.Output)
			assert.False(t, out.IsError)
		case 1, 4:
			assert.Equal(t, mcpItem.Output, out.Output, history)
			assert.Equal(t, "c1", out.CallID, "the stored item, with the model's own call id")
			assert.False(t, out.IsError)
		case 2:
			assert.Equal(t, "boom", out.Output)
			assert.True(t, out.IsError)
		case 3:
			assert.True(t, out.IsError)
		}
	}
	assert.Len(t, m.calls(), 1, "replayed calls never run again")
}

// LAMBENT_HOSTED_TOOL_ITEMS=function_call keeps function_call +
// function_call_output, and the tools echo then names the hosted tools as
// the functions the model sees (valid OpenResponses).
func TestMCPItems_FunctionCallMode(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	p := script(calls(1, 1, call("c1", "calc", `{}`)), text("42", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	r := rec.response(t) // validated against openapi.json
	assert.Equal(t, []string{"function_call:calc", "function_call_output", "message"}, types(r.Output))
	var body struct{ Tools []map[string]any }
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	require.Len(t, body.Tools, 1)
	assert.Equal(t, "function", body.Tools[0]["type"])
	assert.Equal(t, "calc", body.Tools[0]["name"])
}

func TestHostedToolItemsSetting(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Provider: script(), Loop: LoopConfig{HostedToolItems: "bogus"}})
	require.Error(t, err)
}

// A hosted call the deadline left unrun stays an open mcp_call of the
// incomplete response (its stream closes it); the continuation runs it and
// reports it completed under the same id.
func TestMCPItems_DeadlineLeavesCallForContinuation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testMCPItems_DeadlineLeavesCallForContinuation)
}

func testMCPItems_DeadlineLeavesCallForContinuation(t *testing.T) {
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		time.Sleep(30 * time.Minute)
		return &tools.ToolResult{Output: "ok"}, nil
	}, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), calls(1, 1, call("c2", "t", `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	tl := `"tools":[{"type":"lambent:t"}]`
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(45*time.Minute))
	defer cancel()
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"x","stream":true,`+tl+`}`), rec))
	first := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusIncomplete, first.Status)
	require.Equal(t, []string{"mcp_call", "mcp_call"}, types(first.Output))
	assert.Equal(t, api.ItemCompleted, first.Output[0].Status)
	assert.Equal(t, api.ItemInProgress, first.Output[1].Status)

	ctx2, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(2*time.Hour))
	defer cancel2()
	rec2 := &recorder{}
	require.NoError(t, e.CreateResponse(ctx2, decodeReq(t, `{"previous_response_id":"`+first.ID+`","stream":true,`+tl+`}`), rec2))
	second := rec2.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	require.Equal(t, []string{"mcp_call", "message"}, types(second.Output))
	assert.Equal(t, first.Output[1].ID, second.Output[0].ID)
	assert.Equal(t, "ok", second.Output[0].Output)
	assert.Len(t, m.calls(), 2)
}

// notingRecorder is a recorder that closes seen when an event of type typ
// is written.
type notingRecorder struct {
	recorder
	typ  string
	once sync.Once
	seen chan struct{}
}

func (r *notingRecorder) WriteEvent(ev *api.StreamEvent) error {
	if ev.Type == r.typ {
		r.once.Do(func() { close(r.seen) })
	}
	return r.recorder.WriteEvent(ev)
}

// Each call of a turn is completed in the stream as it ends: a fast call's
// response.mcp_call.completed and output_item.done go out while a slow
// call of its turn still runs (the slow one waits for them: a barrier).
// They used to wait for the turn's slowest call.
func TestMCPItems_CallsCompleteAsTheyEnd(t *testing.T) {
	t.Parallel()
	rec := &notingRecorder{typ: api.EventMCPCallCompleted, seen: make(chan struct{})}
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "slow" {
			select {
			case <-rec.seen:
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(10 * time.Second):
				return &tools.ToolResult{Output: "the fast call's completion was held back", IsError: true}, nil
			}
		}
		return &tools.ToolResult{Output: "done " + c.Name}, nil
	}, "fast", "slow")
	p := script(calls(1, 1, call("c1", "slow", `{}`), call("c2", "fast", `{}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, m, mcpMode)
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true,"tools":[{"type":"lambent:fast"},{"type":"lambent:slow"}]}`), rec))
	r := rec.checkOpenAIStream(t)
	require.Len(t, r.Output, 3)
	assert.Equal(t, "done slow", r.Output[0].Output, r.Output[0].Error)
	assert.Equal(t, "done fast", r.Output[1].Output)
}

// A background run that hands off with its turn's calls pending (they did
// not fit the invocation) leaves their mcp_call items open: its next
// invocation runs them, and the one stream across invocations completes
// each item once (it ended them in_progress at the hand-off, then
// completed them again: mcp_call.completed for an item already done).
func TestMCPItems_HandOffKeepsPendingCallsOpen(t *testing.T) {
	forStores(t, testMCPItemsHandOffKeepsPendingCallsOpen)
}

func testMCPItemsHandOffKeepsPendingCallsOpen(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	// Invocations have 40 minutes: a model call takes 12, a tool call 10,
	// so the second turn's call does not fit the first invocation.
	slow := clock.taking(12 * time.Minute)
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		clock.advance(10 * time.Minute)
		return &tools.ToolResult{Output: "found"}, nil
	}, "lookup")
	p := script(slow(calls(1, 1, call("c1", "lookup", `{}`))), slow(calls(1, 1, call("c2", "lookup", `{}`))), slow(text("done", 1, 1)))
	e, _, q := bgEngine(t, mk, p, m, func(c *Config) { c.Now = clock.Now; mcpMode(c) })
	rec, err := runBackground(t, e, `{"input":"go","background":true,"tools":[{"type":"lambent:lookup"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	require.Equal(t, 2, runInvocations(t, e, q, clock), "handed off with the second call pending")
	raw := &rawRecorder{}
	require.NoError(t, e.StreamResponse(context.Background(), id, -1, raw))
	final := raw.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, final.Status)
	assert.Equal(t, []string{api.ItemMCPCall, api.ItemMCPCall, api.ItemMessage}, types(final.Output))
	for _, it := range final.Output[:2] {
		assert.Equal(t, api.ItemCompleted, it.Status)
		assert.Equal(t, "found", it.Output)
	}
}
