package engine

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
)

// deltaModel streams each step's deltas, then ends it with its result or
// error: a model call cut in the middle. Not streamed, a step answers with
// its result or error alone.
type deltaModel struct{ steps []deltaStep }

type deltaStep struct {
	deltas []provider.Delta
	// hook, when set, runs after the deltas, before the end (a clock
	// advanced past the deadline).
	hook func()
	res  provider.Result
	err  error
}

// next takes the next step.
func (s *deltaModel) next() deltaStep {
	st := s.steps[0]
	s.steps = s.steps[1:]
	return st
}

// end is how a step ends: its result or its error.
func (st *deltaStep) end() (*provider.Result, error) {
	if st.hook != nil {
		st.hook()
	}
	if st.err != nil {
		return nil, st.err
	}
	return &st.res, nil
}

func (s *deltaModel) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	st := s.next()
	return st.end()
}

func (s *deltaModel) Stream(_ context.Context, _ *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	st := s.next()
	for _, d := range st.deltas {
		if err := fn(d); err != nil {
			return nil, err
		}
	}
	return st.end()
}

// An incomplete item is the last one emitted, in an incomplete response
// (OpenResponses, "Items"): a model call that fails after it streamed
// text leaves a failed response whose message is completed, not
// incomplete.
func TestFailedResponseHasNoIncompleteItem(t *testing.T) {
	p := &deltaModel{steps: []deltaStep{{deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "abc"}},
		err: &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "boom", Message: "boom"}}}}
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"model":"m","input":"hi","stream":true}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	require.Equal(t, api.StatusFailed, r.Status)
	require.NotEmpty(t, r.Output)
	for i, it := range r.Output {
		require.NotEqual(t, api.ItemIncomplete, it.Status, "output[%d]: an incomplete item needs an incomplete response", i)
	}
}

// A model call that fails mid-stream leaves what it had sent of the items
// still open in_progress, with no output_item.done: a client that acts on
// every item done (Codex runs the call, keeps the text as an answer and
// replays both when it retries the turn) sees none of the cut turn's. An
// item the model had finished before (its reasoning, once the text
// began) stays done.
func TestFailedModelCallLeavesItsOpenItemsInProgress(t *testing.T) {
	p := &deltaModel{steps: []deltaStep{{
		deltas: []provider.Delta{{Kind: provider.DeltaReasoning, Text: "think"}, {Kind: provider.DeltaText, Text: "Hello "},
			{Kind: provider.DeltaText, Text: "from"}, {Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "c1", ToolName: "f", Text: `{"a":`}},
		err: &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "upstream_stream_cut", Message: "cut"}}}}
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"model":"m","input":"hi","stream":true,"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	require.Equal(t, api.StatusFailed, r.Status)
	require.Len(t, r.Output, 3)
	require.Equal(t, api.ItemCompleted, r.Output[0].Status, "the reasoning, done when the text began")
	require.Equal(t, api.ItemCompleted, r.Output[1].Status, "the message, done when the call began")
	require.Equal(t, "Hello from", r.Output[1].Content[0].Text)
	require.Equal(t, api.ItemInProgress, r.Output[2].Status, "the cut call")
	require.Equal(t, `{"a":`, r.Output[2].Arguments)
	var done []string
	for _, ev := range rec.parsed(t) {
		if ev.Type == api.EventOutputItemDone {
			done = append(done, ev.Item.Type)
		}
		require.NotEqual(t, api.EventFunctionCallArgsDone, ev.Type)
	}
	require.Equal(t, []string{api.ItemReasoning, api.ItemMessage}, done)

	// Cut inside the text: the message is not done either.
	p = &deltaModel{steps: []deltaStep{{deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "Hello "}, {Kind: provider.DeltaText, Text: "from"}},
		err: &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "upstream_stream_cut", Message: "cut"}}}}
	e, _ = newEngine(t, p, nil)
	rec, err = run1(t, e, `{"model":"m","input":"hi","stream":true}`)
	require.NoError(t, err)
	r = rec.checkStream(t)
	require.Len(t, r.Output, 1)
	require.Equal(t, api.ItemInProgress, r.Output[0].Status)
	require.Equal(t, "Hello from", r.Output[0].Content[0].Text)
	for _, ev := range rec.parsed(t) {
		require.NotContains(t, []string{api.EventOutputItemDone, api.EventOutputTextDone, api.EventContentPartDone}, ev.Type)
	}
}

// A max_output_tokens cut inside the turn's second call leaves that call
// incomplete, and the first, which the model had finished, completed.
func TestCutLeavesOnlyTheLastItemIncomplete(t *testing.T) {
	p := &deltaModel{steps: []deltaStep{{
		deltas: []provider.Delta{{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "c1", ToolName: "f", Text: `{"a":1}`},
			{Kind: provider.DeltaToolCall, ToolIndex: 1, ToolCallID: "c2", ToolName: "f", Text: `{"b"`}},
		res: provider.Result{FinishReason: provider.FinishLength}}}}
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"model":"m","input":"hi","stream":true,"max_output_tokens":16,"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	require.Equal(t, api.StatusIncomplete, r.Status)
	require.Len(t, r.Output, 2)
	require.Equal(t, api.ItemCompleted, r.Output[0].Status, "the finished call")
	require.Equal(t, api.ItemIncomplete, r.Output[1].Status, "the cut call")
}

// A max_output_tokens cut while the model reasons (a reasoning model that
// spends its budget thinking) leaves the reasoning item incomplete, in its
// output_item.done event and in the response: it is the item the model
// was emitting when the budget ran out (OpenResponses, "Items").
func TestCutWhileReasoningLeavesTheReasoningIncomplete(t *testing.T) {
	p := &deltaModel{steps: []deltaStep{{
		deltas: []provider.Delta{{Kind: provider.DeltaReasoning, Text: "Let me think about"}},
		res:    provider.Result{Reasoning: "Let me think about", FinishReason: provider.FinishLength}}}}
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"model":"m","input":"hi","stream":true,"max_output_tokens":16}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	require.Equal(t, api.StatusIncomplete, r.Status)
	require.Len(t, r.Output, 1)
	require.Equal(t, api.ItemReasoning, r.Output[0].Type)
	require.Equal(t, api.ItemIncomplete, r.Output[0].Status, "the cut reasoning")
	var done []string
	for _, ev := range rec.parsed(t) {
		if ev.Type == api.EventOutputItemDone {
			done = append(done, ev.Item.Status)
		}
	}
	require.Equal(t, []string{api.ItemIncomplete}, done)
}

// recordingModel is a deltaModel that keeps the items of each request.
type recordingModel struct {
	deltaModel
	seen [][]api.Item
}

func (s *recordingModel) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	s.seen = append(s.seen, slices.Clone(req.Items))
	return s.deltaModel.Complete(ctx, req)
}

func (s *recordingModel) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	s.seen = append(s.seen, slices.Clone(req.Items))
	return s.deltaModel.Stream(ctx, req, fn)
}

// cutTools are the tools of the cut-call tests: a client function and a
// hosted search.
const cutTools = `"tools":[` + clientTool + `,{"type":"lambent:search"}]`

// continueCut runs a response on e (under ctx) whose model call is cut,
// checks it ends with status, then continues it, by previous_response_id
// or in a conversation of st (conv), and checks the continuation
// completes. It returns the cut response and the recorder of its run.
func continueCut(t *testing.T, ctx context.Context, e *Engine, st store.ResponseStore, stream, conv bool, status api.Status) (*api.Response, *recorder) {
	t.Helper()
	s := strconv.FormatBool(stream)
	first, cont := `{"stream":`+s+`,"input":"hi",`+cutTools+`}`, `{"stream":`+s+`,"input":"again",`+cutTools+`,`
	if conv {
		_, c := newConversation(t, st)
		first, cont = `{"conversation":"`+c.ID+`",`+first[1:], cont+`"conversation":"`+c.ID+`"}`
	}
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, first), rec))
	r := rec.openAIFinal(t, stream)
	require.Equal(t, status, r.Status)
	if !conv {
		cont += `"previous_response_id":"` + r.ID + `"}`
	}
	cut := rec
	rec = &recorder{}
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, cont), rec))
	require.Equal(t, api.StatusCompleted, rec.openAIFinal(t, stream).Status, "conversation %v", conv)
	return r, cut
}

// openAIFinal is the response a run wrote: its stream's last or, not
// streamed, its body (checked against OpenAI's types).
func (r *recorder) openAIFinal(t *testing.T, stream bool) *api.Response {
	t.Helper()
	if stream {
		return r.checkOpenAIStream(t)
	}
	return r.openAIResponse(t)
}

// requireCutCallNotDone checks that the stream rec recorded has no done
// event for the cut turn's calls: neither its client function call (a
// client would run it) nor its server-side mcp_call, which never ran.
func requireCutCallNotDone(t *testing.T, rec *recorder) {
	t.Helper()
	for _, ev := range rec.parsed(t) {
		require.NotContains(t, []string{api.EventFunctionCallArgsDone, api.EventMCPCallArgsDone}, ev.Type)
		if ev.Type == api.EventOutputItemDone {
			require.NotContains(t, []string{api.ItemFunctionCall, api.ItemMCPCall}, ev.Item.Type, "the cut call is not done")
		}
	}
}

// requireContinuedWithText checks that the model's second call got the
// question, the text of its cut turn and the new question: no cut call,
// nor a result for one.
func requireContinuedWithText(t *testing.T, p *recordingModel) {
	t.Helper()
	require.Len(t, p.seen, 2)
	seen := p.seen[1]
	require.Equal(t, []string{"message", "message", "message"}, types(seen))
	require.Equal(t, "Hello from", seen[1].Content[0].Text)
}

// A continuation of a response whose model call failed mid-stream, by
// previous_response_id or in its conversation, gives the model the text
// it had sent (a partial message, as OpenAI keeps one) but not its cut
// calls: half their arguments are no JSON (Bedrock refuses such a
// toolUse), no result of theirs was made up ("no output was provided"),
// and a cut call of a hosted tool does not run.
func TestContinuationLeavesOutCutCalls(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		for _, conv := range []bool{false, true} {
			m := newMock(echoTool, "search")
			cut := &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "upstream_stream_cut", Message: "cut"}
			p := &recordingModel{deltaModel: deltaModel{steps: []deltaStep{{
				deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "Hello "}, {Kind: provider.DeltaText, Text: "from"},
					{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "c1", ToolName: "get_weather", Text: `{"city":`},
					{Kind: provider.DeltaToolCall, ToolIndex: 1, ToolCallID: "c2", ToolName: "search", Text: `{"q":`}},
				err: cut}, {deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "done"}}, res: provider.Result{Text: "done", FinishReason: provider.FinishStop}}}}}
			st := mk(t)
			e, _ := newEngine(t, p, m, mcpMode, func(c *Config) { c.Store = st })
			r, rec := continueCut(t, context.Background(), e, st, true, conv, api.StatusFailed)
			require.Equal(t, []string{"message", "function_call:get_weather", "mcp_call"}, types(r.Output))
			requireCutCallNotDone(t, rec)
			require.Empty(t, m.calls(), "the cut search does not run")
			requireContinuedWithText(t, p)
		}
	})
}

// A call an incomplete response's last model call was cut inside — by
// max_output_tokens, streamed or not, or by the deadline — is incomplete,
// with half its arguments; a continuation, by previous_response_id or in
// its conversation, leaves it out as it leaves out a failed response's
// cut calls: the model gets the text it had written, not the call nor a
// made-up result, and a cut hosted call (mcp_call) does not run.
func TestContinuationLeavesOutIncompleteCalls(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		st := mk(t)
		for _, tc := range []struct {
			name             string
			stream, deadline bool
		}{{"max_output_tokens streamed", true, false}, {"max_output_tokens", false, false}, {"deadline streamed", true, true}} {
			for _, tool := range []string{"get_weather", "search"} {
				for _, conv := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/conversation=%v", tc.name, tool, conv), func(t *testing.T) {
						clock := &fakeClock{t: time.Now()}
						ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(time.Hour))
						defer cancel()
						c := call("c1", tool, `{"q":`)
						cut := deltaStep{deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "Hello "}, {Kind: provider.DeltaText, Text: "from"},
							{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments}},
							res: provider.Result{Text: "Hello from", ToolCalls: []api.Item{c}, FinishReason: provider.FinishLength}}
						if tc.deadline {
							cut.hook, cut.err = func() { clock.advance(2 * time.Hour) }, context.DeadlineExceeded
						}
						p := &recordingModel{deltaModel: deltaModel{steps: []deltaStep{cut, {deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "done"}},
							res: provider.Result{Text: "done", FinishReason: provider.FinishStop}}}}}
						m := newMock(echoTool, "search")
						e, _ := newEngine(t, p, m, mcpMode, func(c *Config) { c.Store, c.Now = st, clock.Now })
						r, _ := continueCut(t, ctx, e, st, tc.stream, conv, api.StatusIncomplete)
						require.Len(t, r.Output, 2)
						require.Equal(t, api.ItemIncomplete, r.Output[1].Status, "the cut call")
						require.Equal(t, `{"q":`, r.Output[1].Arguments)
						require.Empty(t, m.calls(), "the cut search does not run")
						requireContinuedWithText(t, p)
					})
				}
			}
		}
	})
}

// A model call cancelled mid-stream (the client went away, or a cancel
// request stopped the background run) cuts its calls as a failed one
// does: they stay in_progress with the arguments the model had sent, with
// no done events, and a continuation by previous_response_id gives the
// model the text it had written but not the cut calls, nor a made-up
// result, and a cut hosted call (mcp_call) does not run. (A cancelled
// response appends nothing to its conversation.)
func TestContinuationLeavesOutCancelledCalls(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		m := newMock(echoTool, "search")
		p := &recordingModel{deltaModel: deltaModel{steps: []deltaStep{{
			deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "Hello "}, {Kind: provider.DeltaText, Text: "from"},
				{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "c1", ToolName: "get_weather", Text: `{"city":`},
				{Kind: provider.DeltaToolCall, ToolIndex: 1, ToolCallID: "c2", ToolName: "search", Text: `{"q":`}},
			hook: cancel, err: context.Canceled}, {deltas: []provider.Delta{{Kind: provider.DeltaText, Text: "done"}}, res: provider.Result{Text: "done", FinishReason: provider.FinishStop}}}}}
		st := mk(t)
		e, _ := newEngine(t, p, m, mcpMode, func(c *Config) { c.Store = st })
		r, rec := continueCut(t, ctx, e, st, true, false, api.StatusCancelled)
		require.Equal(t, []string{"message", "function_call:get_weather", "mcp_call"}, types(r.Output))
		for _, it := range r.Output[1:] {
			require.Equal(t, api.ItemInProgress, it.Status, "the cut %s", it.Type)
		}
		require.Equal(t, `{"city":`, r.Output[1].Arguments)
		requireCutCallNotDone(t, rec)
		stored, err := st.Get(context.Background(), r.ID)
		require.NoError(t, err)
		for _, it := range stored.Response.Output[1:] {
			require.True(t, it.Hidden.Cut, "the stored %s is cut", it.Type)
		}
		require.Empty(t, m.calls(), "the cut search does not run")
		requireContinuedWithText(t, p)
	})
}
