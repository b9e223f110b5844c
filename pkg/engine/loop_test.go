package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) { os.Exit(dynamolocal.MainLeakChecked(m)) }

const clientTool = `{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}`

// US1.1: no executors (no hosted tool catalog) → tool calls returned as
// function_call items, completed.
func TestUS1_1_NoExecutorsSingleShot(t *testing.T) {
	t.Parallel()
	p := script(calls(5, 3, call("call_1", "get_weather", `{"city":"Oslo"}`)))
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"weather?","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:get_weather"}, types(r.Output))
	assert.Equal(t, `{"city":"Oslo"}`, r.Output[0].Arguments)
	assert.Len(t, p.requests(), 1)
}

// US1.2: tool_choice none → tools sent for context, loop not entered.
func TestUS1_2_ToolChoiceNoneSkipsLoop(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(1, 1, call("c1", "search", `{}`)))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:search"}],"tool_choice":"none"}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:search"}, types(r.Output))
	assert.Empty(t, m.calls())
	reqs := p.requests()
	require.Len(t, reqs, 1)
	assert.Len(t, reqs[0].Tools, 1)
	assert.Equal(t, "none", reqs[0].ToolChoice)
}

// US1.3: tool_choice required but no calls → returned as is.
func TestUS1_3_RequiredWithoutCallsIsRespected(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(text("no tools needed", 2, 3))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:search"}],"tool_choice":"required"}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, "no tools needed", r.Output[0].Text())
	assert.Equal(t, "required", p.requests()[0].ToolChoice)
}

// US2.1: a hosted call executes, its result is fed back, the answer follows.
func TestUS2_1_ExecutesToolAndFeedsBack(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(10, 2, call("c1", "search", `{"q":"go"}`)), text("The answer.", 20, 4))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"find go","tools":[{"type":"lambent:search"}],"tool_choice":"required"}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:search", "function_call_output", "message"}, types(r.Output))
	assert.Equal(t, "c1", r.Output[1].CallID)
	assert.Equal(t, `result of search {"q":"go"}`, r.Output[1].Output)
	assert.Equal(t, api.Usage{InputTokens: 30, OutputTokens: 6, TotalTokens: 36}, *r.Usage)
	reqs := p.requests()
	require.Len(t, reqs, 2)
	last := reqs[1].Items[len(reqs[1].Items)-1]
	assert.Equal(t, api.ItemFunctionCallOutput, last.Type)
	assert.Equal(t, "auto", reqs[1].ToolChoice, "required applies to the first call only")
}

// US2.2: three turns, streamed as one continuous stream.
func TestUS2_2_StreamingThreeTurnsOneStream(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "a", "b")
	p := script(calls(1, 1, call("ca", "a", `{"x":1}`)), calls(1, 1, call("cb", "b", `{"y":2}`)), text("final answer here", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"go","stream":true,"tools":[{"type":"lambent:a"},{"type":"lambent:b"}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:a", "function_call_output", "function_call:b", "function_call_output", "message"}, types(r.Output))
	count := map[string]int{}
	for _, typ := range rec.types(t) {
		count[typ]++
	}
	assert.Equal(t, 1, count["response.created"])
	assert.Equal(t, 1, count["response.in_progress"])
	assert.Equal(t, 1, count["response.completed"])
	assert.Equal(t, 5, count["response.output_item.added"])
	assert.Equal(t, 5, count["response.output_item.done"])
	assert.Equal(t, 4, count["response.function_call_arguments.delta"])
	assert.Equal(t, 2, count["response.function_call_arguments.done"])
	assert.Equal(t, 3, count["response.output_text.delta"])
	assert.Equal(t, api.Usage{InputTokens: 3, OutputTokens: 3, TotalTokens: 6}, *r.Usage)
}

// US2.3: all calls of a turn run concurrently: each waits until all have
// started, which a sequential loop could never satisfy.
func TestUS2_3_ConcurrentCallsBarrier(t *testing.T) {
	t.Parallel()
	const n = 8
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		started.Done()
		select {
		case <-all:
			return &tools.ToolResult{Output: "done " + c.ID}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, "slow")
	var cs []api.Item
	for i := 0; i < n; i++ {
		cs = append(cs, call(fmt.Sprintf("c%d", i), "slow", `{}`))
	}
	p := script(calls(1, 1, cs...), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rec := &recorder{}
	done := make(chan error, 1)
	go func() {
		done <- e.CreateResponse(ctx, decodeReq(t, `{"input":"x","tools":[{"type":"lambent:slow"}]}`), rec)
	}()
	select {
	case <-all:
	case err := <-done:
		// Both may be ready when the select runs: only a response that
		// finished while some call was not yet in flight is a failure.
		select {
		case <-all:
			done <- err
		default:
			t.Fatalf("finished before all calls were in flight: %v", err)
		}
	}
	require.NoError(t, <-done)
	r := rec.response(t)
	require.Len(t, r.Output, 2*n+1)
	for i := 0; i < n; i++ {
		out := r.Output[n+i]
		assert.Equal(t, fmt.Sprintf("c%d", i), out.CallID, "results in call order")
		assert.Equal(t, "done "+out.CallID, out.Output)
		assert.False(t, out.IsError)
	}
}

// US2.4: a tool error is fed back with is_error and the loop goes on.
func TestUS2_4_ToolErrorFedBack(t *testing.T) {
	t.Parallel()
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return nil, errors.New("backend exploded")
	}, "search")
	p := script(calls(1, 1, call("c1", "search", `{}`)), text("sorry, search failed", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.True(t, r.Output[1].IsError)
	assert.Contains(t, r.Output[1].Output, "backend exploded")
	fed := p.requests()[1].Items
	assert.True(t, fed[len(fed)-1].IsError)
}

// US3.1: a client function call pauses with requires_action.
func TestUS3_1_RequiresAction(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(1, 1, call("cw", "get_weather", `{"city":"Oslo"}`)))
	e, st := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[`+clientTool+`,{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusRequiresAction, r.Status)
	assert.Equal(t, []string{"function_call:get_weather"}, types(r.Output))
	stored, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusRequiresAction, stored.Response.Status)
}

// US3.2: the continuation rebuilds the conversation with the stored calls.
func TestUS3_2_ContinuationRebuildsConversation(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("cw", "get_weather", `{"city":"Oslo"}`)), text("It is sunny.", 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"weather in Oslo?","instructions":"be brief","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusRequiresAction, first.Status)
	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"function_call_output","call_id":"cw","output":"sunny"}],"tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"message", "function_call:get_weather", "function_call_output"}, types(reqs[1].Items))
	assert.Equal(t, "", reqs[1].Instructions, "instructions do not carry over")
}

// US3.3: a streamed pause ends with response.completed carrying requires_action.
func TestUS3_3_StreamingRequiresActionTerminal(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("cw", "get_weather", `{"city":"Oslo"}`)))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	ts := rec.types(t)
	assert.Equal(t, "response.completed", ts[len(ts)-1])
	assert.Equal(t, api.StatusRequiresAction, r.Status)
}

func allowedToolsRun(t *testing.T, body string, called string) (*api.Response, *mockExec) {
	m := newMock(echoTool, "A", "B", "C")
	p := script(calls(1, 1, call("c1", called, `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, body)
	require.NoError(t, err)
	reqs := p.requests()
	assert.Len(t, reqs[0].Tools, 3, "every tool is sent for context")
	return rec.response(t), m
}

const abc = `"tools":[{"type":"lambent:A"},{"type":"lambent:B"},{"type":"lambent:C"}]`

// US4.1: an allowed tool runs.
func TestUS4_1_AllowedToolRuns(t *testing.T) {
	t.Parallel()
	r, m := allowedToolsRun(t, `{"input":"x",`+abc+`,"allowed_tools":["A"]}`, "A")
	assert.Len(t, m.calls(), 1)
	assert.False(t, r.Output[1].IsError)
	// The standard form behaves the same.
	r, m = allowedToolsRun(t, `{"input":"x",`+abc+`,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"A"}]}}`, "A")
	assert.Len(t, m.calls(), 1)
	assert.False(t, r.Output[1].IsError)
}

// US4.2: a disallowed tool is not executed; an error is fed back.
func TestUS4_2_DisallowedToolRefused(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"input":"x",` + abc + `,"allowed_tools":["A"]}`,
		`{"input":"x",` + abc + `,"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"lambent:A"}]}}`,
	} {
		r, m := allowedToolsRun(t, body, "B")
		assert.Empty(t, m.calls())
		assert.True(t, r.Output[1].IsError)
		assert.Contains(t, r.Output[1].Output, "not allowed")
		assert.Equal(t, api.StatusCompleted, r.Status)
	}
}

// US4.3: no allowed_tools → everything allowed.
func TestUS4_3_NoRestriction(t *testing.T) {
	t.Parallel()
	r, m := allowedToolsRun(t, `{"input":"x",`+abc+`}`, "C")
	assert.Len(t, m.calls(), 1)
	assert.False(t, r.Output[1].IsError)
}

// US5.1: the turn limit ends a runaway loop as incomplete/max_turns.
func TestUS5_1_MaxTurns(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "loop")
	p := script(calls(1, 1, call("c1", "loop", `{}`)), calls(1, 1, call("c2", "loop", `{}`)), calls(1, 1, call("c3", "loop", `{}`)))
	e, st := newEngine(t, p, m, func(c *Config) { c.Loop.MaxTurns = 2 })
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:loop"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusIncomplete, r.Status)
	assert.Equal(t, "max_turns", r.IncompleteDetails.Reason)
	assert.Equal(t, []string{"function_call:loop", "function_call_output", "function_call:loop", "function_call_output"}, types(r.Output))
	assert.Len(t, p.requests(), 2)
	_, err = st.Get(context.Background(), r.ID)
	require.NoError(t, err, "incomplete responses are stored")
}

// US5.2: cancelling mid-turn emits response.cancelled and stops; the
// cancelled response is stored.
func TestUS5_2_CancelMidTurnStreaming(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		cancel()
		<-ctx.Done()
		return nil, ctx.Err()
	}, "slow")
	p := script(calls(1, 1, call("c1", "slow", `{}`)), text("never", 1, 1))
	e, st := newEngine(t, p, m)
	rec := &recorder{}
	err := e.CreateResponse(ctx, decodeReq(t, `{"input":"x","stream":true,"tools":[{"type":"lambent:slow"}]}`), rec)
	require.NoError(t, err)
	r := rec.checkStream(t)
	ts := rec.types(t)
	assert.Equal(t, "response.cancelled", ts[len(ts)-1])
	assert.Equal(t, api.StatusCancelled, r.Status)
	assert.Len(t, p.requests(), 1, "the loop stopped")
	stored, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, stored.Response.Status)
}

// US5.3: a provider error in a later turn fails the response with details.
func TestUS5_3_ProviderErrorMidLoop(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	upstream := &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "upstream_error", Message: "model provider returned 500"}
	p := script(calls(1, 1, call("c1", "search", `{}`)), step{err: upstream})
	e, st := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	ts := rec.types(t)
	assert.Equal(t, "response.failed", ts[len(ts)-1])
	require.NotNil(t, r.Error)
	assert.Equal(t, "upstream_error", r.Error.Code)
	assert.Contains(t, r.Error.Message, "500")
	stored, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusFailed, stored.Response.Status)
	assert.Len(t, stored.Response.Output, 2, "items so far are kept")

	// Non-streaming: the client gets the upstream error; the failed response is stored.
	p = script(step{err: upstream})
	e, _ = newEngine(t, p, m)
	_, err = run1(t, e, `{"input":"x"}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 502, ae.Status)
}

// Edge: the request's definition decides who executes a tool: a function
// tool is client-executed even when a hosted tool of the same name exists.
func TestEdge_FunctionToolIsClientExecuted(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "get_weather")
	p := script(calls(1, 1, call("c1", "get_weather", `{}`)))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusRequiresAction, rec.response(t).Status)
	assert.Empty(t, m.calls())
}

// Edge: a call to a tool not in the request → error fed back.
func TestEdge_UnknownToolFedBack(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(1, 1, call("c1", "nope", `{}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.True(t, r.Output[1].IsError)
	assert.Contains(t, r.Output[1].Output, `"nope" does not exist`)
	assert.Equal(t, api.StatusCompleted, r.Status)
}

// The error of a call to an unknown tool lists the tools, within
// maxToolNamesBytes: a request's tools and its MCP servers' (8 × 256) make
// a list of up to 130 KB, fed back (and stored) once per such call, and a
// model turn of a thousand of them held 130 MB.
func TestEdge_UnknownToolErrorBounded(t *testing.T) {
	t.Parallel()
	var names, decl []string
	for i := 0; i < 120; i++ {
		n := fmt.Sprintf("tool_%03d_%s", i, strings.Repeat("x", 50))
		names = append(names, n)
		decl = append(decl, `{"type":"lambent:`+n+`"}`)
	}
	m := newMock(echoTool, names...)
	p := script(calls(1, 1, call("c1", "nope", `{}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[`+strings.Join(decl, ",")+`]}`)
	require.NoError(t, err)
	out := rec.response(t).Output[1].Output
	assert.LessOrEqual(t, len(out), maxToolNamesBytes+200)
	assert.Contains(t, out, `"nope" does not exist. Available tools: tool_000_`)
	assert.Regexp(t, `, and \d+ more\.$`, out)
}

// Edge: every call of a turn fails → errors fed back, the loop goes on.
func TestEdge_AllToolsFailLoopContinues(t *testing.T) {
	t.Parallel()
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: "bad input", IsError: true}, nil
	}, "search")
	p := script(calls(1, 1, call("c1", "search", `{}`), call("c2", "search", `{}`)), calls(1, 1, call("c3", "search", `{}`)), text("gave up", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Len(t, m.calls(), 3)
}

// Edge: text and tool calls in one answer → both kept, the loop runs.
func TestEdge_TextAndToolCalls(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	st := calls(1, 1, call("c1", "search", `{}`))
	st.res.Text = "Let me look that up."
	p := script(st, text("Found it.", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[{"type":"lambent:search"}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, []string{"message", "function_call:search", "function_call_output", "message"}, types(r.Output))
}

// Edge: a requires_action continuation without outputs → the model gets the
// conversation (unanswered calls get an error result) and answers.
func TestEdge_ContinuationWithoutOutputs(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("cw", "get_weather", `{}`)), text("Let me answer without it.", 1, 1))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"x","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	first := rec.response(t)
	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`","input":"never mind","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	r := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call_output", "message"}, types(r.Output))
	assert.True(t, r.Output[0].IsError)
}

// Mixed hosted and client calls pause the whole turn; the hosted call runs
// on continuation, together with the client's outputs.
func TestMixedTurnPausesAndHostedRunsOnContinuation(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "search")
	p := script(calls(1, 1, call("cs", "search", `{}`), call("cw", "get_weather", `{}`)), text("both done", 1, 1))
	e, _ := newEngine(t, p, m)
	tl := `"tools":[` + clientTool + `,{"type":"lambent:search"}]`
	rec, err := run1(t, e, `{"input":"x",`+tl+`}`)
	require.NoError(t, err)
	first := rec.response(t)
	assert.Equal(t, api.StatusRequiresAction, first.Status)
	assert.Empty(t, m.calls(), "no partial execution")
	rec2, err := run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"function_call_output","call_id":"cw","output":"rain"}],`+tl+`}`)
	require.NoError(t, err)
	r := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Len(t, m.calls(), 1)
	assert.Equal(t, []string{"function_call_output", "message"}, types(r.Output))
	assert.Equal(t, "cs", r.Output[0].CallID)
}

// parallel_tool_calls=false runs calls one at a time.
func TestParallelToolCallsFalseIsSequential(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int32
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return &tools.ToolResult{Output: "ok"}, nil
	}, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`), call("c2", "t", `{}`), call("c3", "t", `{}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	_, err := run1(t, e, `{"input":"x","parallel_tool_calls":false,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	assert.Equal(t, int32(1), peak.Load())
	assert.Len(t, m.calls(), 3)
	assert.False(t, *p.requests()[0].ParallelToolCalls)
}

// A turn of many calls (a model asked to fetch 200 pages at once) runs at
// most maxConcurrentCalls of them at a time, every one in the end, results
// in call order.
func TestManyCallsOfATurnRunBounded(t *testing.T) {
	t.Parallel()
	const n = 200
	var inFlight, peak atomic.Int32
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		cur := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // in flight a while, as a fetch is
		return &tools.ToolResult{Output: "done " + c.ID}, nil
	}, "fetch")
	var cs []api.Item
	for i := 0; i < n; i++ {
		cs = append(cs, call(fmt.Sprintf("c%d", i), "fetch", `{}`))
	}
	p := script(calls(1, 1, cs...), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:fetch"}]}`)
	require.NoError(t, err)
	assert.LessOrEqual(t, peak.Load(), int32(maxConcurrentCalls), "calls in flight at once")
	assert.Greater(t, peak.Load(), int32(1), "still concurrent")
	r := rec.response(t)
	require.Len(t, r.Output, 2*n+1)
	for i := 0; i < n; i++ {
		assert.Equal(t, fmt.Sprintf("done c%d", i), r.Output[n+i].Output)
	}
}

// max_tool_calls caps hosted calls; further calls are fed back as errors.
func TestMaxToolCalls(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`), call("c2", "t", `{}`)), calls(1, 1, call("c3", "t", `{}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","max_tool_calls":2,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Len(t, m.calls(), 2)
	last := r.Output[len(r.Output)-2]
	assert.Equal(t, "c3", last.CallID)
	assert.True(t, last.IsError)
	assert.Contains(t, last.Output, "limit of 2 tool calls")
}

// A continuation naming a call_id the previous response never produced is a 400.
func TestContinuationUnknownCallIDIs400(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("cw", "get_weather", `{}`)))
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"x","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	first := rec.response(t)
	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"function_call_output","call_id":"bogus","output":"x"}]}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 400, ae.Status)
	assert.Equal(t, "input[0].call_id", ae.Param)
}

// An unknown previous_response_id is a 404 previous_response_not_found.
func TestPreviousResponseNotFound(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t, script(), nil)
	_, err := run1(t, e, `{"previous_response_id":"resp_nope","input":"x"}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 404, ae.Status)
	assert.Equal(t, "previous_response_not_found", ae.Code)
}

// OpenAI compatibility reports client pauses as completed.
func TestOpenAICompatPause(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("cw", "get_weather", `{}`)))
	e, _ := newEngine(t, p, newMock(echoTool), func(c *Config) { c.Loop.OpenAICompat = true })
	rec, err := run1(t, e, `{"input":"x","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, rec.response(t).Status)
}

// finish_reason length → incomplete/max_output_tokens with the item incomplete.
func TestLengthIsIncomplete(t *testing.T) {
	t.Parallel()
	p := script(step{res: provider.Result{Text: "cut off", FinishReason: provider.FinishLength}})
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"x","stream":true}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusIncomplete, r.Status)
	assert.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	assert.Equal(t, api.ItemIncomplete, r.Output[0].Status)
}

// store=false responses are not stored; stored ones can be fetched, listed and deleted.
func TestStoreFlagAndAccessors(t *testing.T) {
	t.Parallel()
	p := script(text("a", 1, 1), text("b", 1, 1))
	e, st := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"input":"x","store":false}`)
	require.NoError(t, err)
	_, err = st.Get(context.Background(), rec.response(t).ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	rec, err = run1(t, e, `{"input":[{"role":"user","content":"one"},{"role":"user","content":"two"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, id, got.ID)
	list, err := e.ListInputItems(context.Background(), id, api.ListOptions{Order: "asc", Limit: 20})
	require.NoError(t, err)
	require.Len(t, list.Data, 2)
	assert.Equal(t, "one", list.Data[0].Text())
	_, err = e.CancelResponse(context.Background(), id)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 400, ae.Status)
	del, err := e.DeleteResponse(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, del.Deleted)
	_, err = e.GetResponse(context.Background(), id)
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 404, ae.Status)
}

// Concurrent responses share nothing: sequence numbers stay per response
// (run under -race).
func TestConcurrentResponses(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "t")
	var steps []step
	for i := 0; i < 20; i++ {
		steps = append(steps, calls(1, 1, call("c", "t", `{}`)), text("ok", 1, 1))
	}
	e, _ := newEngine(t, &alternating{}, m)
	_ = steps
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := &recorder{}
			err := e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true,"tools":[{"type":"lambent:t"}]}`), rec)
			assert.NoError(t, err)
			evs := rec.parsed(t)
			for j, ev := range evs {
				assert.Equal(t, int64(j), ev.Seq)
			}
		}()
	}
	wg.Wait()
}

// alternating answers a tool call when the conversation ends in a user
// message and text after a tool output: a stateless script for concurrency.
type alternating struct{}

func (alternating) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	last := req.Items[len(req.Items)-1]
	if last.Type == api.ItemFunctionCallOutput {
		return &provider.Result{Text: "done", FinishReason: provider.FinishStop}, nil
	}
	return &provider.Result{ToolCalls: []api.Item{call("c", "t", `{}`)}, FinishReason: provider.FinishToolCalls}, nil
}

func (a alternating) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := a.Complete(ctx, req)
	if res.Text != "" {
		_ = fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
	}
	for i, c := range res.ToolCalls {
		_ = fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments})
	}
	return res, nil
}

// FR-015: without LAMBENT_MAX_TURNS the loop makes at most 10 model calls,
// then ends incomplete/max_turns.
func TestFR015_DefaultTurnLimit(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "loop")
	var steps []step
	for i := range 12 {
		steps = append(steps, calls(1, 1, call(fmt.Sprint("c", i), "loop", `{}`)))
	}
	p := script(steps...)
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:loop"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusIncomplete, r.Status)
	assert.Equal(t, api.ReasonMaxTurns, r.IncompleteDetails.Reason)
	assert.Len(t, p.requests(), 10)
	assert.Len(t, m.calls(), 10)
}

// FR-031: an executor's error is logged with its details (tool, call id,
// response id, the error) and fed back to the model, and the loop goes on;
// a tool's own error result is logged too.
func TestFR031_ExecutorErrorsAreLoggedAndTheLoopContinues(t *testing.T) {
	t.Parallel()
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "down" {
			return nil, errors.New("backend unreachable: dial tcp 10.0.0.1:443: i/o timeout")
		}
		return &tools.ToolResult{Output: "no such city", IsError: true}, nil
	}, "down", "picky")
	p := script(calls(1, 1, call("c1", "down", `{}`), call("c2", "picky", `{}`)), text("recovered", 1, 1))
	logs := &logbuf.Buffer{}
	e, _ := newEngine(t, p, m, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:down"},{"type":"lambent:picky"}]}`)
	require.NoError(t, err)
	r := rec.response(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, "recovered", r.Output[len(r.Output)-1].Text())
	res := toolResult(t, p.requests()[1], "c1")
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: backend unreachable: dial tcp 10.0.0.1:443: i/o timeout", res.Output)

	recs, err := logs.Records()
	require.NoError(t, err)
	byMsg := map[string]map[string]any{}
	for _, rec := range recs {
		byMsg[rec["msg"].(string)] = rec
	}
	failed := byMsg["tool call failed"]
	require.NotNil(t, failed, "%v", recs)
	assert.Equal(t, "WARN", failed["level"])
	assert.Equal(t, "down", failed["tool"])
	assert.Equal(t, "c1", failed["call_id"])
	assert.Equal(t, r.ID, failed["response_id"])
	assert.Equal(t, "backend unreachable: dial tcp 10.0.0.1:443: i/o timeout", failed["err"])
	returned := byMsg["tool returned an error"]
	require.NotNil(t, returned, "%v", recs)
	assert.Equal(t, "INFO", returned["level"])
	assert.Equal(t, "picky", returned["tool"])
	assert.Equal(t, "c2", returned["call_id"])
	assert.Equal(t, r.ID, returned["response_id"])
	assert.Equal(t, "no such city", returned["output"])
}
