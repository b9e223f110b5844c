package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// A continuation (previous_response_id) with truncation "auto" starts
// from the cut its previous response made: its first model call is not
// refused. One with "disabled" sends every item.
func TestTruncationContinuationStartsFromStoredCut(t *testing.T) {
	forStores(t, testTruncationContinuationStartsFromStoredCut)
}

func testTruncationContinuationStartsFromStoredCut(t *testing.T, mk storeMaker) {
	st := mk(t)
	p := &windowed{scripted: script(text("ok", 1, 1), text("fine", 1, 1), text("all", 1, 1)), limit: 3200}
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
	rec, err := run1(t, e, `{"truncation":"auto","input":`+chatInput(2)+`}`)
	require.NoError(t, err)
	first := rec.response(t).ID
	require.Len(t, p.refusals(), 1)

	rec, err = run1(t, e, `{"truncation":"auto","previous_response_id":"`+first+`","input":"next"}`)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, rec.response(t).Status)
	assert.Len(t, p.refusals(), 1, "the continuation's first call is not refused")
	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"developer:be brief", "user:q1", "assistant:a1", "user:latest", "assistant:ok", "user:next"}, texts(reqs[1].Items))

	p.limit = 1 << 30
	_, err = run1(t, e, `{"truncation":"disabled","previous_response_id":"`+rec.response(t).ID+`","input":"all"}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"developer:be brief", "user:q0", "assistant:a0", "user:q1", "assistant:a1", "user:latest", "assistant:ok", "user:next", "assistant:fine", "user:all"},
		texts(reqs[2].Items), "disabled: every item")
}

// In a conversation, a response with truncation "auto" starts from the
// cut the conversation's last response made, and so does a count of one;
// one with "disabled" sends every item. A cut whose item was deleted from
// the conversation is not applied: the call is refused and cut again, the
// response completes.
func TestTruncationConversationStartsFromStoredCut(t *testing.T) {
	forStores(t, testTruncationConversationStartsFromStoredCut)
}

func testTruncationConversationStartsFromStoredCut(t *testing.T, mk storeMaker) {
	st := mk(t)
	big := strings.Repeat("x", 1000)
	p := &windowedCounter{windowed: &windowed{scripted: script(text("a0"+big, 1, 1), text("a1"+big, 1, 1), text("a2", 1, 1), text("a3", 1, 1), text("a4", 1, 1), text("a5", 1, 1)), limit: 1 << 30}}
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
	ctx := context.Background()
	conv, err := e.CreateConversation(ctx, &api.ConversationCreateRequest{})
	require.NoError(t, err)
	in := func(trunc, q string) string {
		return `{"conversation":"` + conv.ID + `","truncation":"` + trunc + `","input":"` + q + `"}`
	}
	for _, q := range []string{"q0", "q1"} {
		_, err := run1(t, e, in("disabled", q+big))
		require.NoError(t, err)
	}
	p.limit = 4000
	_, err = run1(t, e, in("auto", "latest"))
	require.NoError(t, err)
	require.Len(t, p.refusals(), 1)

	_, err = run1(t, e, in("auto", "again"))
	require.NoError(t, err)
	assert.Len(t, p.refusals(), 1, "the next response's first call is not refused")
	reqs := p.requests()
	last := reqs[len(reqs)-1]
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:latest", "assistant:a2", "user:again"}, texts(last.Items))
	_, err = e.CountInputTokens(ctx, decodeCount(t, `{"conversation":"`+conv.ID+`","truncation":"auto","input":"count"}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"user:q1", "assistant:a1", "user:latest", "assistant:a2", "user:again", "assistant:a3", "user:count"}, texts(p.counted[0].Items))

	p.limit = 1 << 30
	_, err = run1(t, e, in("disabled", "all"))
	require.NoError(t, err)
	reqs = p.requests()
	assert.Equal(t, []string{"user:q0", "assistant:a0", "user:q1", "assistant:a1", "user:latest", "assistant:a2", "user:again", "assistant:a3", "user:all"},
		texts(reqs[len(reqs)-1].Items), "disabled: every item")

	// The cut item deleted: nothing is cut at first.
	_, err = e.DeleteConversationItem(ctx, conv.ID, last.Items[0].ID)
	require.NoError(t, err)
	p.limit = 3000
	_, err = run1(t, e, in("auto", "more"))
	require.NoError(t, err)
	assert.Len(t, p.refusals(), 2, "refused and cut again")
	reqs = p.requests()
	assert.Equal(t, "user:more", texts(reqs[len(reqs)-1].Items)[len(reqs[len(reqs)-1].Items)-1])
}

// A background response's later invocations (after a hand-off) keep the
// cut of the earlier ones: only the first model call is refused.
func TestTruncationBackgroundResumeKeepsCut(t *testing.T) {
	forStores(t, testTruncationBackgroundResumeKeepsCut)
}

func testTruncationBackgroundResumeKeepsCut(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	p := &windowed{scripted: fiveTurns(clock), limit: 6500}
	q := newJobQueue()
	st := mk(t)
	e, _ := newEngine(t, p, newMock(echoTool, "t"), func(c *Config) {
		c.Store = st
		c.Background.Queue = q
		c.Background.PollInterval = time.Millisecond
		c.Now = clock.Now
	})
	rec, err := runBackground(t, e, `{"truncation":"auto","background":true,"tools":[{"type":"lambent:t"}],"input":`+chatInput(4)+`}`)
	require.NoError(t, err)
	require.Greater(t, runInvocations(t, e, q, clock), 1, "the run was handed off")
	got := e.mustGet(t, rec.response(t).ID)
	require.Equal(t, api.StatusCompleted, got.Status)
	assert.Len(t, p.refusals(), 1, "the later invocations start from the cut")
	reqs := p.requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, texts(reqs[0].Items)[:4], texts(reqs[4].Items)[:4], "the last call is cut where the first was")
}

// windowedCounter is a windowed model that counts tokens: it records the
// calls it counts.
type windowedCounter struct {
	*windowed
	mu      sync.Mutex
	counted []*provider.Request
}

func (w *windowedCounter) CountTokens(_ context.Context, req *provider.Request) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counted = append(w.counted, req)
	return itemsSize(req), nil
}

// A count with truncation "auto" counts what the create would send
// first: the stored cut applied. With "disabled" it counts every item.
func TestCountInputTokensAppliesStoredCut(t *testing.T) {
	t.Parallel()
	p := &windowedCounter{windowed: &windowed{scripted: script(text("ok", 1, 1)), limit: 3200}}
	e, _ := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"truncation":"auto","input":`+chatInput(2)+`}`)
	require.NoError(t, err)
	first := rec.response(t).ID
	for trunc, want := range map[string][]string{
		"auto":     {"developer:be brief", "user:q1", "assistant:a1", "user:latest", "assistant:ok", "user:next"},
		"disabled": {"developer:be brief", "user:q0", "assistant:a0", "user:q1", "assistant:a1", "user:latest", "assistant:ok", "user:next"},
	} {
		_, err := e.CountInputTokens(context.Background(), decodeCount(t, fmt.Sprintf(`{"truncation":%q,"previous_response_id":%q,"input":"next"}`, trunc, first)))
		require.NoError(t, err)
		p.mu.Lock()
		counted := p.counted[len(p.counted)-1]
		p.mu.Unlock()
		assert.Equal(t, want, texts(counted.Items), trunc)
	}
}

// The record of a response whose model view was cut names the cut's
// first item (store.Record.Cut); one that cut nothing names none.
func TestTruncationRecordNamesCut(t *testing.T) {
	t.Parallel()
	p := &windowed{scripted: script(text("ok", 1, 1), text("ok", 1, 1)), limit: 3000}
	e, st := newEngine(t, p, nil)
	rec, err := run1(t, e, `{"truncation":"auto","input":`+chatInput(2)+`}`)
	require.NoError(t, err)
	got, err := st.Get(context.Background(), rec.response(t).ID)
	require.NoError(t, err)
	assert.Equal(t, p.requests()[0].Items[1].ID, got.Cut, "the id of q1")
	assert.Equal(t, "q1", strings.TrimRight(itemByID(got.Conversation(), got.Cut).Text(), "x"))

	rec, err = run1(t, e, `{"truncation":"auto","input":"short"}`)
	require.NoError(t, err)
	got, err = st.Get(context.Background(), rec.response(t).ID)
	require.NoError(t, err)
	assert.Empty(t, got.Cut)
}

// itemByID is the item of items with id (a zero item when none).
func itemByID(items []api.Item, id string) *api.Item {
	for i := range items {
		if items[i].ID == id {
			return &items[i]
		}
	}
	return &api.Item{}
}

// A cut that fell on an item validated output set aside (the failed
// answer, its feedback), which a continuation does not carry on with, is
// stored as the first item after it that the continuation has: the
// continuation starts from it (the valid answer), its first call not
// refused.
func TestTruncationStoredCutSkipsSetAside(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 2000)
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: big}, nil
	}, "t")
	newRun := func(limit int) (*windowed, *Engine) {
		p := &windowed{scripted: script(calls(1, 1, call("c1", "t", `{}`)), text(invalidReport, 1, 1), text(validReport, 1, 1), text("ok", 1, 1)), limit: limit}
		e, _ := newEngine(t, p, m)
		return p, e
	}
	body := `{"truncation":"auto","input":"assess","tools":[{"type":"lambent:t"}],` + jsonSchemaFormat + `}`
	// Unlimited, to measure the calls: the tool's result, then the failed
	// answer and its feedback.
	p, e := newRun(1 << 30)
	_, err := run1(t, e, body)
	require.NoError(t, err)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	limit := itemsSize(reqs[1])
	require.Greater(t, itemsSize(reqs[2]), limit)

	p, e = newRun(limit)
	rec, err := run1(t, e, body)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, api.StatusCompleted, first.Status)
	require.Len(t, p.refusals(), 1)
	reqs = p.requests()
	assert.Equal(t, []string{"user:assess", "assistant:" + invalidReport, "user"}, fieldOf(reqs[len(reqs)-1].Items, func(it *api.Item) string {
		if it.Role == api.RoleUser && it.Hidden.Aside {
			return "user"
		}
		return texts([]api.Item{*it})[0]
	}), "cut at the failed answer, which is set aside")

	rec, err = run1(t, e, `{"truncation":"auto","previous_response_id":"`+first.ID+`","input":"thanks","tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, rec.response(t).Status)
	assert.Len(t, p.refusals(), 1, "the continuation starts from the cut: not refused")
	reqs = p.requests()
	assert.Equal(t, []string{"assistant:" + validReport, "user:thanks"}, texts(reqs[len(reqs)-1].Items), "the answer it gave kept")
}
