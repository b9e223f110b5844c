package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// windowed is a model with a context window: a call whose items (their
// JSON, in bytes) are over limit is refused, as a model server refuses
// one, with context_length_exceeded — the message naming the window and
// the call's size when numbers is set (OpenAI's words), else not
// (Bedrock's). Accepted calls go to the script.
type windowed struct {
	*scripted
	limit   int
	numbers bool

	mu      sync.Mutex
	refused []*provider.Request
}

// itemsSize is the size windowed measures a call by.
func itemsSize(req *provider.Request) int {
	n := 0
	for i := range req.Items {
		b, _ := json.Marshal(&req.Items[i])
		n += len(b)
	}
	return n
}

func (w *windowed) check(req *provider.Request) error {
	n := itemsSize(req)
	if n <= w.limit {
		return nil
	}
	w.mu.Lock()
	w.refused = append(w.refused, req)
	w.mu.Unlock()
	msg := "Input is too long for requested model."
	if w.numbers {
		msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", w.limit, n)
	}
	return &api.Error{Status: http.StatusBadRequest, Type: api.ErrTypeInvalidRequest, Code: provider.CodeContextLengthExceeded, Message: "model provider rejected the request: " + msg}
}

func (w *windowed) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	if err := w.check(req); err != nil {
		return nil, err
	}
	return w.scripted.Complete(ctx, req)
}

func (w *windowed) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	if err := w.check(req); err != nil {
		return nil, err
	}
	return w.scripted.Stream(ctx, req, fn)
}

func (w *windowed) refusals() []*provider.Request {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*provider.Request(nil), w.refused...)
}

// texts is each item's text, or its type when it has none (calls and
// their outputs: type and call_id).
func texts(items []api.Item) []string {
	return fieldOf(items, func(it *api.Item) string {
		if it.Type == api.ItemMessage {
			return it.Role + ":" + strings.TrimRight(it.Text(), "x")
		}
		return it.Type + ":" + it.CallID
	})
}

// chatInput is a conversation a stateless client sends whole: a developer
// prompt, turns old exchanges of big messages, then its latest question.
func chatInput(turns int) string {
	big := strings.Repeat("x", 1000)
	items := []string{`{"role":"developer","content":"be brief"}`}
	for i := range turns {
		items = append(items, fmt.Sprintf(`{"role":"user","content":"q%d%s"}`, i, big), fmt.Sprintf(`{"role":"assistant","content":"a%d%s"}`, i, big))
	}
	items = append(items, `{"role":"user","content":"latest"}`)
	return "[" + strings.Join(items, ",") + "]"
}

// With truncation "auto", a model call refused for its size is made again
// without the oldest exchanges, before anything reached the client: the
// instructions, the developer prompt and the latest question stay; the
// stored response keeps its whole input and counts the usage of the call
// that answered only. Streamed, the client sees one response.
func TestTruncationDropsOldestItems(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			t.Parallel()
			p := &windowed{scripted: script(text("ok", 10, 2)), limit: 2800}
			e, st := newEngine(t, p, nil)
			rec, err := run1(t, e, fmt.Sprintf(`{"instructions":"sys","truncation":"auto","stream":%t,"input":%s}`, stream, chatInput(2)))
			require.NoError(t, err)
			var resp *api.Response
			if stream {
				resp = rec.checkStream(t)
				assert.Equal(t, 1, strings.Count(strings.Join(rec.types(t), " "), api.EventResponseCreated))
			} else {
				resp = rec.response(t)
			}
			require.Equal(t, api.StatusCompleted, resp.Status)
			require.Len(t, p.refusals(), 1)
			assert.Equal(t, []string{"developer:be brief", "user:q0", "assistant:a0", "user:q1", "assistant:a1", "user:latest"}, texts(p.refusals()[0].Items))
			reqs := p.requests()
			require.Len(t, reqs, 1)
			assert.Equal(t, "sys", reqs[0].Instructions)
			assert.Equal(t, []string{"developer:be brief", "user:q1", "assistant:a1", "user:latest"}, texts(reqs[0].Items), "half of the droppable items dropped, oldest first")
			assert.Equal(t, 10, resp.Usage.InputTokens)
			assert.Equal(t, 12, resp.Usage.TotalTokens)

			page, err := st.ListInputItems(context.Background(), resp.ID, api.ListOptions{Order: "asc", Limit: 100})
			require.NoError(t, err)
			assert.Len(t, page.Items, 6, "the stored input is whole")
		})
	}
}

// With truncation "disabled" (the default) a call over the window fails
// the response with the provider's context_length_exceeded, after that
// one call.
func TestTruncationDisabledFails(t *testing.T) {
	t.Parallel()
	for _, trunc := range []string{"", `"truncation":"disabled",`} {
		p := &windowed{scripted: script(text("ok", 10, 2)), limit: 2800}
		e, _ := newEngine(t, p, nil)
		_, err := run1(t, e, `{`+trunc+`"input":`+chatInput(2)+`}`)
		var ae *api.Error
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, provider.CodeContextLengthExceeded, ae.Code)
		assert.Len(t, p.refusals(), 1)
		assert.Empty(t, p.requests())
	}
}

// A window nothing fits in fails as without truncation, after a bounded
// number of calls, the last of them without anything droppable.
func TestTruncationBounded(t *testing.T) {
	t.Parallel()
	p := &windowed{scripted: script(text("ok", 10, 2)), limit: 100}
	e, _ := newEngine(t, p, nil)
	_, err := run1(t, e, `{"truncation":"auto","input":`+chatInput(8)+`}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, provider.CodeContextLengthExceeded, ae.Code)
	refused := p.refusals()
	assert.LessOrEqual(t, len(refused), 1+maxTruncations)
	assert.Equal(t, []string{"developer:be brief", "user:latest"}, texts(refused[len(refused)-1].Items))
}

// When the provider names its window and the call's size, the call is
// cut by what is over (and a margin), not by half.
func TestTruncationByTheNumbers(t *testing.T) {
	t.Parallel()
	input := chatInput(8)
	full := 0
	{
		p := &windowed{scripted: script(text("ok", 1, 1)), limit: 1 << 30}
		e, _ := newEngine(t, p, nil)
		_, err := run1(t, e, `{"input":`+input+`}`)
		require.NoError(t, err)
		full = itemsSize(p.requests()[0])
	}
	p := &windowed{scripted: script(text("ok", 1, 1)), limit: full - 500, numbers: true}
	e, _ := newEngine(t, p, nil)
	_, err := run1(t, e, `{"truncation":"auto","input":`+input+`}`)
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1)
	sent := texts(p.requests()[0].Items)
	assert.Greater(t, len(sent), 10, "less than half of the 16 old items dropped: %v", sent)
	assert.Equal(t, "user:q", sent[1][:6], "an exchange starts with its question")
}

// sizedCalc is a hosted tool "calc" whose result is N bytes, N its
// arguments' number.
func sizedCalc() *mockExec {
	return newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		var a struct{ N int }
		_ = json.Unmarshal([]byte(c.Arguments), &a)
		return &tools.ToolResult{Output: strings.Repeat("y", a.N)}, nil
	}, "calc")
}

// In a response's own loop the oldest turns go first, each call with its
// output (a reasoning item with the call after it), and later model calls
// keep the cut: the dropped turns are not sent again. The stored output
// keeps every item.
func TestTruncationLoopKeepsCut(t *testing.T) {
	t.Parallel()
	m := sizedCalc()
	withReasoning := calls(1, 1, call("c2", "calc", `{"N":1000}`))
	withReasoning.res.Reasoning = "think"
	p := &windowed{scripted: script(
		calls(1, 1, call("c1", "calc", `{"N":1000}`)),
		withReasoning,
		calls(1, 1, call("c3", "calc", `{"N":10}`)),
		text("done", 1, 1),
	), limit: 2200}
	e, st := newEngine(t, p, m)
	rec, err := run1(t, e, `{"truncation":"auto","input":"task","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	resp := rec.response(t)
	require.Equal(t, api.StatusCompleted, resp.Status)
	require.Len(t, p.refusals(), 1, "the cut holds for the later calls")
	reqs := p.requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, []string{"user:task", "reasoning:", "function_call:c2", "function_call_output:c2"}, texts(reqs[2].Items))
	assert.Equal(t, []string{"user:task", "reasoning:", "function_call:c2", "function_call_output:c2", "function_call:c3", "function_call_output:c3"}, texts(reqs[3].Items))
	assert.Equal(t, 4, resp.Usage.InputTokens, "one count per call that answered")

	got, err := st.Get(context.Background(), resp.ID)
	require.NoError(t, err)
	assert.Len(t, got.Response.Output, 8, "the stored output keeps every item")
}

// A continuation of a response that cut its own tool loop starts where
// that loop was cut, not at its own question: the model keeps the loop's
// last turns and its answer (what it just did), and its first call is not
// refused.
func TestTruncationContinuationKeepsCutLoop(t *testing.T) {
	t.Parallel()
	m := sizedCalc()
	p := &windowed{scripted: script(
		calls(1, 1, call("c1", "calc", `{"N":1000}`)),
		calls(1, 1, call("c2", "calc", `{"N":1000}`)),
		text("done", 1, 1),
		text("next answer", 1, 1),
	), limit: 2200}
	e, _ := newEngine(t, p, m)
	rec, err := run1(t, e, `{"truncation":"auto","input":"task","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1)
	_, err = run1(t, e, `{"truncation":"auto","previous_response_id":"`+rec.response(t).ID+`","input":"and then?","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1, "the continuation's first call is not refused")
	reqs := p.requests()
	assert.Equal(t, []string{"function_call:c2", "function_call_output:c2", "assistant:done", "user:and then?"}, texts(reqs[len(reqs)-1].Items))
}

// A cut never splits a turn: a call from its output, one of a turn's
// calls from another, a reasoning item from what follows it. A history
// of calls only is cut before a whole turn.
func TestCutPoints(t *testing.T) {
	t.Parallel()
	msg := func(role string) api.Item { return api.Item{Type: api.ItemMessage, Role: role} }
	fc := api.Item{Type: api.ItemFunctionCall}
	out := api.Item{Type: api.ItemFunctionCallOutput}
	rs := api.Item{Type: api.ItemReasoning}
	aside := func(it api.Item) api.Item { it.Hidden.Aside = true; return it }
	for name, c := range map[string]struct {
		items []api.Item
		want  []int
	}{
		"exchanges": {[]api.Item{msg(api.RoleDeveloper), msg(api.RoleUser), msg(api.RoleAssistant), msg(api.RoleUser), msg(api.RoleAssistant), msg(api.RoleUser)}, []int{3, 5}},
		"turns":     {[]api.Item{msg(api.RoleUser), rs, fc, fc, out, out, msg(api.RoleAssistant), fc, out, rs, fc, out}, []int{6, 9}},
		// Before the latest question a cut falls at a question, or inside
		// an earlier answer's tool loop at the start of a turn: a
		// continuation of a response that cut its own loop keeps that
		// loop's last turns and its answer, never an answer without its
		// question only.
		"history": {[]api.Item{msg(api.RoleUser), fc, out, msg(api.RoleAssistant), msg(api.RoleUser), fc, out, fc, out},
			[]int{3, 4, 7}},
		"loop before the question": {[]api.Item{msg(api.RoleUser), rs, fc, out, fc, out, msg(api.RoleAssistant), msg(api.RoleUser)},
			[]int{4, 6, 7}},
		"nothing": {[]api.Item{msg(api.RoleSystem), msg(api.RoleUser)}, nil},
		// Validated output's feedback (set aside) goes with the failed
		// answer it is about: the model never gets one without the other.
		"feedback": {[]api.Item{msg(api.RoleUser), rs, aside(msg(api.RoleAssistant)), aside(msg(api.RoleUser)), rs, msg(api.RoleAssistant)}, []int{4}},
	} {
		assert.Equal(t, c.want, cutPoints(c.items), name)
	}
}

// The provider's numbers are read from the messages of the servers that
// give them.
func TestContextNumbers(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]float64{
		"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.":                                                          197.0 / 4294,
		"This model's maximum context length is 4097 tokens. However, your messages resulted in 4238 tokens (4143 in the messages, 95 in the functions). Please reduce the length of the messages or functions.": 141.0 / 4238,
		"This model's maximum context length is 4097 tokens. However, you requested 4203 tokens (3703 in the messages, 500 in the completion). Please reduce the length of the messages or completion.":          106.0 / 3703,
		"This model's maximum context length is 4096 tokens. However, your request has 5000 input tokens. Please reduce the length of the input messages.":                                                       904.0 / 5000,
		"prompt is too long: 210000 tokens > 200000 maximum":                                                                                                                          10000.0 / 210000,
		"request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it":                                                                                   904.0 / 5000,
		"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that `max_model_len` is no smaller than the number of text tokens.":              904.0 / 5000,
		"'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).": 404.0 / 3500,
		"Input is too long for requested model.":                                                       0,
		"Your input exceeds the context window of this model. Please adjust your input and try again.": 0,
	} {
		assert.InDelta(t, want, overShare(msg), 1e-9, msg)
	}
}

// In a conversation the cut is the model's view only: the conversation
// keeps every item, the cut response's input and output appended; the
// model got the latest question with the newest exchange.
func TestTruncationConversationKeepsItems(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1000)
	p := &windowed{scripted: script(text("a0"+big, 1, 1), text("a1"+big, 1, 1), text("a2", 1, 1)), limit: 1 << 30}
	e, _ := newEngine(t, p, nil)
	ctx := context.Background()
	conv, err := e.CreateConversation(ctx, &api.ConversationCreateRequest{})
	require.NoError(t, err)
	for _, q := range []string{"q0", "q1"} {
		_, err := run1(t, e, `{"conversation":"`+conv.ID+`","input":"`+q+big+`"}`)
		require.NoError(t, err)
	}
	p.limit = 4000
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","truncation":"auto","input":"latest"}`)
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1)
	reqs := p.requests()
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:latest"}, texts(reqs[len(reqs)-1].Items))
	list, err := e.ListConversationItems(ctx, conv.ID, api.ListOptions{Limit: 100, Order: "asc"})
	require.NoError(t, err)
	assert.Equal(t, []string{"user:q0", "assistant:a0", "user:q1", "assistant:a1", "user:latest", "assistant:a2"}, texts(list.Data))
}

// Each model call is observed, the refused one too: the observer (the
// chat span, the model call metrics) sees the call refused for its size
// end with its error, then the cut call of the same iteration, each with
// its own duration.
func TestTruncationObservesRefusedCall(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	p := &windowed{scripted: script(text("ok", 10, 2)), limit: 2800}
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Observer = w })
	_, err := run1(t, e, `{"truncation":"auto","input":`+chatInput(2)+`}`)
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1)
	assert.Equal(t, []string{
		"response test-model",
		"model 1 start (in response)",
		"model 1 end  err=true (in model 1)",
		"model 1 start (in response)",
		"model 1 end stop err=false (in model 1)",
		"response end completed (in response)",
	}, w.entries())
}

// A client call left unanswered gets its error result in the
// continuation that sends a message instead, after that message: a cut
// at the message drops the call, and its result with it, never sending
// a result without its call (Chat Completions refuses a tool message
// that answers no call before it).
func TestTruncationDropsResultWithItsCall(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 1000)
	p := &windowed{scripted: script(calls(1, 1, call("cw", "get_weather", `{}`)), text("ok", 1, 1)), limit: 1 << 30}
	e, _ := newEngine(t, p, newMock(echoTool))
	rec, err := run1(t, e, `{"input":"q0`+big+`","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusRequiresAction, first.Status)

	p.limit = 800
	rec, err = run1(t, e, `{"truncation":"auto","previous_response_id":"`+first.ID+`","input":"never mind","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	r := rec.response(t)
	require.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call_output", "message"}, types(r.Output), "the stored output keeps the result")
	require.Len(t, p.refusals(), 1)
	assert.Equal(t, []string{"user:q0", "function_call:cw", "user:never mind", "function_call_output:cw"}, texts(p.refusals()[0].Items))
	reqs := p.requests()
	assert.Equal(t, []string{"user:never mind"}, texts(reqs[len(reqs)-1].Items))
}

// An output answers the latest call of its call_id before it: a cut drops
// the outputs of the calls it drops only, not those of a later call that
// reuses the call_id.
func TestKeptItemsReusedCallID(t *testing.T) {
	t.Parallel()
	user := func(text string) api.Item {
		return api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: text}}}
	}
	fc := api.Item{Type: api.ItemFunctionCall, CallID: "call_0"}
	out := api.Item{Type: api.ItemFunctionCallOutput, CallID: "call_0"}
	items := []api.Item{user("q0"), fc, user("q1"), out, fc, out}
	assert.Equal(t, []string{"user:q1", "function_call:call_0", "function_call_output:call_0"}, texts(keptItems(items, 2)))
}
