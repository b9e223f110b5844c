package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

// watcher is an Observer that records every call, in order, as text, and
// the tool calls' payloads.
type watcher struct {
	mu    sync.Mutex
	log   []string
	calls map[string]ToolCall // by call id, as ended
	// attempts are the attempts as ended.
	attempts []Attempt
	ends     []ResponseEnd
	// hookErrors is what EndResponse adds to the response.
	hookErrors []string
}

type ctxKey struct{}

func (w *watcher) note(format string, a ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, fmt.Sprintf(format, a...))
}

func (w *watcher) entries() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

func (w *watcher) StartResponse(ctx context.Context, resp *api.Response) (context.Context, ResponseObserver) {
	w.note("response %s", resp.Model)
	return context.WithValue(ctx, ctxKey{}, "response"), w
}

// callKind names a model call in the watcher's log: "compaction" for a
// summarising call (ModelCall.Compaction), else "model".
func callKind(m *ModelCall) string {
	if m.Compaction {
		return "compaction"
	}
	return "model"
}

func (w *watcher) StartModelCall(ctx context.Context, m *ModelCall) context.Context {
	w.note("%s %d start (in %v)", callKind(m), m.Iteration, ctx.Value(ctxKey{}))
	return context.WithValue(ctx, ctxKey{}, fmt.Sprintf("%s %d", callKind(m), m.Iteration))
}

func (w *watcher) EndModelCall(ctx context.Context, m *ModelCall) {
	finish := ""
	if m.Result != nil {
		finish = m.Result.FinishReason
	}
	w.note("%s %d end %s err=%v (in %v)", callKind(m), m.Iteration, finish, m.Err != nil, ctx.Value(ctxKey{}))
}

func (w *watcher) StartToolCall(ctx context.Context, c *ToolCall) context.Context {
	w.note("tool %s start (in %v)", c.CallID, ctx.Value(ctxKey{}))
	return context.WithValue(ctx, ctxKey{}, "tool "+c.CallID)
}

func (w *watcher) EndToolCall(ctx context.Context, c *ToolCall) {
	w.note("tool %s end error=%v (in %v)", c.CallID, c.Result.IsError, ctx.Value(ctxKey{}))
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.calls == nil {
		w.calls = map[string]ToolCall{}
	}
	w.calls[c.CallID] = *c
}

func (w *watcher) StartAttempt(ctx context.Context, a *Attempt) {
	w.note("attempt %d start after %d model calls (in %v)", a.Number, a.Turns, ctx.Value(ctxKey{}))
}

func (w *watcher) EndAttempt(ctx context.Context, a *Attempt) {
	w.note("attempt %d end valid=%v code=%s iterations=%d (in %v)", a.Number, a.Valid, a.Code, a.Iterations, ctx.Value(ctxKey{}))
	w.mu.Lock()
	defer w.mu.Unlock()
	w.attempts = append(w.attempts, *a)
}

func (w *watcher) EndResponse(ctx context.Context, resp *api.Response, end *ResponseEnd) {
	w.note("response end %s (in %v)", end.Status, ctx.Value(ctxKey{}))
	w.mu.Lock()
	w.ends = append(w.ends, *end)
	w.mu.Unlock()
	resp.AddHookErrors(w.hookErrors...)
}

// The observer sees the loop in order — model call, each tool call before
// and after it runs (the executor sees the tool call's context), the next
// model call, the end — with the tool calls' payloads: kind, name, call id,
// arguments, attempt, iteration, result (errors included), and EndResponse
// can add hook errors to the response.
func TestObserverSeesTheLoop(t *testing.T) {
	t.Parallel()
	w := &watcher{hookErrors: []string{"webhook hook: lambent.tool.call event for call c1: 500"}}
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		w.note("execute %s (in %v)", c.ID, ctx.Value(ctxKey{}))
		if c.Name == "broken" {
			return nil, errors.New("backend down")
		}
		return &tools.ToolResult{Output: "ok " + c.Arguments}, nil
	}, "t", "broken")
	p := script(
		calls(5, 1, call("c1", "t", `{"a":1}`)),
		calls(6, 1, call("c2", "broken", `{}`)),
		text("done", 7, 2),
	)
	e, _ := newEngine(t, p, m, func(c *Config) { c.Observer = w })
	rec, err := run1(t, e, `{"input":"go","parallel_tool_calls":false,"tools":[{"type":"lambent:t"},{"type":"lambent:broken"}]}`)
	require.NoError(t, err)
	resp := rec.response(t)
	assert.Equal(t, api.StatusCompleted, resp.Status)

	assert.Equal(t, []string{
		"response test-model",
		"model 1 start (in response)",
		"model 1 end tool_calls err=false (in model 1)",
		"tool c1 start (in response)",
		"execute c1 (in tool c1)",
		"tool c1 end error=false (in tool c1)",
		"model 2 start (in response)",
		"model 2 end tool_calls err=false (in model 2)",
		"tool c2 start (in response)",
		"execute c2 (in tool c2)",
		"tool c2 end error=true (in tool c2)",
		"model 3 start (in response)",
		"model 3 end stop err=false (in model 3)",
		"response end completed (in response)",
	}, w.entries())

	c1 := w.calls["c1"]
	assert.Equal(t, ToolKindHosted, c1.Kind)
	assert.Equal(t, "t", c1.Name)
	assert.Equal(t, `{"a":1}`, c1.Arguments)
	assert.Equal(t, resp.ID, c1.ResponseID)
	assert.Equal(t, 1, c1.Attempt)
	assert.Equal(t, 1, c1.Iteration)
	assert.Equal(t, `ok {"a":1}`, c1.Result.Output)
	assert.False(t, c1.Start.IsZero())
	c2 := w.calls["c2"]
	assert.Equal(t, 2, c2.Iteration)
	assert.True(t, c2.Result.IsError)
	assert.Equal(t, "Error: backend down", c2.Result.Output)

	require.Len(t, w.ends, 1)
	assert.Equal(t, 3, w.ends[0].Turns)
	assert.Equal(t, 1, w.ends[0].Attempts)

	var body struct {
		Lambent struct {
			HookErrors []string `json:"hook_errors"`
		} `json:"lambent"`
	}
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	assert.Equal(t, w.hookErrors, body.Lambent.HookErrors)
}

// Calls left pending by the previous response run before any model call:
// iteration 0. Calls the loop does not execute (unknown tools, client
// functions) are not observed.
func TestObserverPendingAndUnexecutedCalls(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	m := newMock(echoTool, "t")
	e, _ := newEngine(t, script(
		calls(5, 1, call("c1", "t", `{}`), call("c2", "client_fn", `{}`)),
		calls(5, 1, call("c3", "nope", `{}`)),
		text("done", 5, 1),
	), m, func(c *Config) { c.Observer = w })
	rec, err := run1(t, e, `{"input":"go","tools":[{"type":"lambent:t"},{"type":"function","name":"client_fn","parameters":{"type":"object"}}]}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusRequiresAction, first.Status)
	assert.Empty(t, w.calls, "a turn that pauses for the client runs nothing")

	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"function_call_output","call_id":"c2","output":"client says hi"}],"tools":[{"type":"lambent:t"},{"type":"function","name":"client_fn","parameters":{"type":"object"}}]}`)
	require.NoError(t, err)
	require.Contains(t, w.calls, "c1")
	assert.Equal(t, 0, w.calls["c1"].Iteration, "run before the continuation's first model call")
	assert.NotContains(t, w.calls, "c3", "an unknown tool's error result is no execution")
	assert.NotContains(t, w.calls, "c2")
}

// attemptLines are the watcher's attempt entries, in order.
func (w *watcher) attemptLines() []string {
	var out []string
	for _, l := range w.entries() {
		if strings.HasPrefix(l, "attempt ") {
			out = append(out, l)
		}
	}
	return out
}

// byKind returns the ended calls of kind, ordered by attempt.
func (w *watcher) byKind(kind string) []ToolCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []ToolCall
	for _, c := range w.calls {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Attempt < out[j].Attempt })
	return out
}

// Validated output without reflection: each output call is observed as an
// execution (kind output) whose result is the verdict, the validator calls
// it runs (kind validator) inside it; each attempt is observed when it
// starts and when its output was judged, with its errors, iterations and
// usage.
func TestObserverSeesOutputCallsValidatorsAndAttempts(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		w.note("validate (in %v)", ctx.Value(ctxKey{}))
		if strings.Contains(c.Arguments, `"score":2`) {
			return &tools.ToolResult{Output: `{"valid":false,"errors":["too low"]}`}, nil
		}
		return &tools.ToolResult{Output: `{"valid":true}`}, nil
	}, "check_report")
	p := script(
		calls(3, 1, call("c1", "report", `{"score":2,"summary":"low"}`)),
		calls(4, 2, call("c2", "report", validReport)),
	)
	e, _ := newEngine(t, p, m, func(c *Config) { c.Observer = w })
	rec, err := run1(t, e, `{"input":"assess","tools":[`+outputTool(`"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, rec.response(t).Status)

	assert.Equal(t, []string{
		"attempt 1 start after 0 model calls (in response)",
		"attempt 1 end valid=false code=validation_failed iterations=1 (in response)",
		"attempt 2 start after 1 model calls (in response)",
		"attempt 2 end valid=true code= iterations=1 (in response)",
	}, w.attemptLines())
	require.Len(t, w.attempts, 2)
	assert.Equal(t, []string{"check_report: too low"}, w.attempts[0].Errors)
	assert.Equal(t, api.Usage{InputTokens: 3, OutputTokens: 1, TotalTokens: 4}, w.attempts[0].Usage)
	assert.Equal(t, 2, w.attempts[1].Number)
	assert.Empty(t, w.attempts[1].Errors)
	require.Len(t, w.ends, 1)
	assert.Equal(t, 2, w.ends[0].Attempts, "the response's attempts (EMF and Prometheus count them)")

	outs := w.byKind(ToolKindOutput)
	require.Len(t, outs, 2)
	assert.Equal(t, "c1", outs[0].CallID)
	assert.Equal(t, "report", outs[0].Name)
	assert.Equal(t, 1, outs[0].Iteration)
	assert.True(t, outs[0].Result.IsError)
	assert.Contains(t, outs[0].Result.Output, "check_report: too low")
	assert.Equal(t, "c2", outs[1].CallID)
	assert.Equal(t, 2, outs[1].Attempt)
	assert.Equal(t, "Output accepted.", outs[1].Result.Output)
	vals := w.byKind(ToolKindValidator)
	require.Len(t, vals, 2)
	assert.Equal(t, "check_report", vals[0].Name)
	assert.JSONEq(t, `{"output":{"score":2,"summary":"low"}}`, vals[0].Arguments)
	assert.Equal(t, 1, vals[0].Attempt)
	assert.Equal(t, 2, vals[1].Attempt)
	// The validator runs inside the output call's execution.
	entries := w.entries()
	i := slices.Index(entries, "tool c1 start (in response)")
	require.GreaterOrEqual(t, i, 0, "%q", entries)
	assert.Equal(t, "validate (in tool "+vals[0].CallID+")", entries[i+2])
	assert.Equal(t, "tool c1 end error=true (in tool c1)", entries[i+4])
}

// With reflection, each output call (kind reflection) and each submit
// call (kind submit, whose result is the verdict) is observed; a submit
// before any output, an answer without an output call and an attempt out
// of iterations end their attempts with their codes.
func TestObserverSeesReflectionSubmitAndFailedAttempts(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	p := script(
		calls(1, 1, call("c1", "submit", `{}`)),
		text("no call", 1, 1),
		calls(1, 1, call("c2", "report", validReport)),
		calls(1, 1, call("c3", "report", validReport)),
	)
	e, _ := newEngine(t, p, newMock(echoTool), func(c *Config) { c.Observer = w })
	rec, err := run1(t, e, `{"input":"assess","lambent":{"max_iterations_per_attempt":2},"tools":[`+outputTool(`"reflection":true`)+`]}`)
	require.NoError(t, err)
	require.Equal(t, api.StatusFailed, rec.response(t).Status)
	assert.Equal(t, []string{
		"attempt 1 start after 0 model calls (in response)",
		"attempt 1 end valid=false code=submit_before_output iterations=1 (in response)",
		"attempt 2 start after 1 model calls (in response)",
		"attempt 2 end valid=false code=invalid_response iterations=1 (in response)",
		"attempt 3 start after 2 model calls (in response)",
		"attempt 3 end valid=false code=max_iterations iterations=2 (in response)",
	}, w.attemptLines())
	require.Len(t, w.ends, 1)
	assert.Equal(t, 3, w.ends[0].Attempts)
	submits := w.byKind(ToolKindSubmit)
	require.Len(t, submits, 1)
	assert.Equal(t, "c1", submits[0].CallID)
	assert.True(t, submits[0].Result.IsError)
	assert.Contains(t, submits[0].Result.Output, "submit was called before report")
	refl := w.byKind(ToolKindReflection)
	require.Len(t, refl, 2)
	assert.Contains(t, refl[0].Result.Output, `"summary": "fine"`)
	assert.Equal(t, 3, refl[0].Attempt)
}

// A validator call is placed at the model call whose output call it
// checks (ToolCall.Iteration, the hooks' "iteration"): the same iteration
// as that output call, not the one before it (0 would be a call left
// pending by the previous response).
func TestObserverValidatorCallsHaveTheirOutputCallsIteration(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "check_report" {
			return &tools.ToolResult{Output: `{"valid":true}`}, nil
		}
		return echoTool(context.Background(), c)
	}, "check_report", "lookup")
	p := script(
		calls(1, 1, call("c1", "lookup", `{}`)),
		calls(1, 1, call("c2", "report", validReport)),
	)
	e, _ := newEngine(t, p, m, func(c *Config) { c.Observer = w })
	rec, err := run1(t, e, `{"input":"assess","tools":[{"type":"lambent:lookup"},`+outputTool(`"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, rec.response(t).Status)
	outs, vals := w.byKind(ToolKindOutput), w.byKind(ToolKindValidator)
	require.Len(t, outs, 1)
	require.Len(t, vals, 1)
	assert.Equal(t, 2, outs[0].Iteration)
	assert.Equal(t, 2, vals[0].Iteration, "the validator checks the output call of model call 2")
}

// The attempt events of a background response place the attempt among
// the response's model calls over every invocation (Attempt.Turns, the
// hooks' "iteration"), and the calls an invocation runs for its
// predecessor at the model call that asked for them: an output call left
// pending by a hand-off is judged in the next invocation, before its first
// model call.
func TestObserverAttemptAfterHandOff(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	// Invocations have 40 minutes: a model call takes 12, the lookup 10,
	// so the validation of the second model call's output does not fit.
	slow := clock.taking(12 * time.Minute)
	w := &watcher{}
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "lookup" {
			clock.advance(10 * time.Minute)
			return &tools.ToolResult{Output: "found"}, nil
		}
		return &tools.ToolResult{Output: `{"valid":true}`}, nil
	}, "lookup", "check_report")
	p := script(
		slow(calls(1, 1, call("c1", "lookup", `{}`))),
		slow(calls(1, 1, call("c2", "report", validReport))),
	)
	mem := func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }
	e, _, q := bgEngine(t, mem, p, m, func(c *Config) { c.Now = clock.Now; c.Observer = w })
	rec, err := runBackground(t, e, `{"input":"assess","background":true,"tools":[{"type":"lambent:lookup"},`+outputTool(`"validators":["lambent:check_report"]`)+`]}`)
	require.NoError(t, err)
	require.Equal(t, 2, runInvocations(t, e, q, clock), "handed off with the output call pending")
	require.Equal(t, api.StatusCompleted, e.mustGet(t, rec.response(t).ID).Status)
	require.Len(t, w.attempts, 1)
	assert.True(t, w.attempts[0].Valid)
	assert.Equal(t, 2, w.attempts[0].Turns, "judged after the response's second model call")
	outs := w.byKind(ToolKindOutput)
	require.Len(t, outs, 1)
	assert.Equal(t, 2, outs[0].Iteration, "asked for by model call 2")
	assert.Equal(t, 1, w.byKind(ToolKindHosted)[0].Iteration)
}
