package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withCompaction is a create body's context_management asking for
// server-side compaction past n tokens.
func withCompaction(n string) string {
	return `"context_management":[{"type":"compaction","compact_threshold":` + n + `}]`
}

// A first model call whose view is over the threshold (estimated: no
// model call counted it yet) is preceded by the summarising call: the
// compaction item comes first in the output, streamed as any item, and
// the model sees the user's message and the summary in its place; the
// summarising call's usage is the response's too.
func TestServerCompactionBeforeFirstCall(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1100, 20), text("Hello Ada.", 40, 3))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	big := "I am Ada. " + strings.Repeat("x", 5000)
	rec := &recorder{}
	err := e.CreateResponse(context.Background(), decodeReq(t, `{"stream":true,"instructions":"be kind",`+withCompaction("1000")+`,"input":[{"role":"user","content":"`+big+`"},{"role":"developer","content":"dev note"}]}`), rec)
	require.NoError(t, err)
	resp := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, resp.Status)
	require.Equal(t, []string{"compaction", "message"}, types(resp.Output))
	cmp := resp.Output[0]
	assert.True(t, strings.HasPrefix(cmp.ID, api.PrefixCompaction), cmp.ID)
	assert.True(t, strings.HasPrefix(cmp.EncryptedContent, "k1."))
	assert.Equal(t, api.Usage{InputTokens: 1140, OutputTokens: 23, TotalTokens: 1163}, *resp.Usage)
	assert.Contains(t, rec.types(t), "response.output_item.added")

	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "be kind", reqs[0].Instructions)
	assert.Equal(t, "message/user: "+big+"\nmessage/developer: dev note\nmessage/user: "+compactPrompt+"\n", modelText(reqs[0].Items))
	assert.Equal(t, "be kind", reqs[1].Instructions, "the instructions are never dropped")
	assert.Equal(t, "message/user: "+big[:2000]+"\nmessage/developer: "+summaryIntro+theSummary+"\n", modelText(reqs[1].Items),
		"the user's message carried as half the threshold (500 tokens) holds")
}

// Mid-loop, between tool turns: the provider's count of the last model
// call (its input and output tokens) plus the estimate of the tool's
// result crosses the threshold, so the next model call is preceded by a
// compaction, after the call's output (never between a call and its
// output). A continuation with previous_response_id sees the compaction
// item and what follows it only; so does a client that sends the whole
// history back in input, the items before the compaction item included.
func TestServerCompactionBetweenToolTurns(t *testing.T) {
	t.Parallel()
	p := script(calls(990, 5, call("c1", "calc", `{"N":100}`)), text(theSummary, 1, 1), text("It is 42.", 5, 3),
		text("Still 42.", 5, 3), text("Yes, 42.", 5, 3))
	e, _ := newEngine(t, p, sizedCalc(), withKeys(testKeyring(t, "k1")))
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":"What is 6*7?","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	resp := rec.response(t)
	require.Equal(t, []string{"function_call:calc", "function_call_output", "compaction", "message"}, types(resp.Output))
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: What is 6*7?\nfunction_call/: \nfunction_call_output/: "+strings.Repeat("y", 100)+"\nmessage/user: "+compactPrompt+"\n", modelText(reqs[1].Items))
	afterCompaction := "message/user: What is 6*7?\nmessage/developer: " + summaryIntro + theSummary + "\n"
	assert.Equal(t, afterCompaction, modelText(reqs[2].Items))

	// previous_response_id: only the item and what follows.
	rec, err = run1(t, e, `{"previous_response_id":"`+resp.ID+`","input":"Sure?"}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, afterCompaction+"message/assistant: It is 42.\nmessage/user: Sure?\n", modelText(reqs[3].Items))
	_ = rec

	// Input-array chaining, every item sent back.
	out, err := json.Marshal(resp.Output)
	require.NoError(t, err)
	input := `[{"role":"user","content":"What is 6*7?"},` + strings.TrimPrefix(string(out), "[")
	input = strings.TrimSuffix(input, "]") + `,{"role":"user","content":"Really?"}]`
	_, err = run1(t, e, `{"store":false,"input":`+input+`}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, afterCompaction+"message/assistant: It is 42.\nmessage/user: Really?\n", modelText(reqs[4].Items))
}

// The first call of a continuation counts from the previous response's
// last model call (kept with its record): a conversation the provider
// counted at 1,500 tokens is compacted before the continuation's first
// call, though its items' estimate is far below the threshold.
func TestServerCompactionCountsFromThePreviousResponse(t *testing.T) {
	forStores(t, testServerCompactionCountsFromThePreviousResponse)
}

func testServerCompactionCountsFromThePreviousResponse(t *testing.T, mk storeMaker) {
	p := script(text("Noted.", 1490, 10), text(theSummary, 1, 1), text("Done.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")), func(c *Config) { c.Store = mk(t) })
	rec, err := run1(t, e, `{"input":"Remember 7."}`)
	require.NoError(t, err)
	first := rec.response(t)
	rec, err = run1(t, e, `{`+withCompaction("1000")+`,"previous_response_id":"`+first.ID+`","input":"And 8."}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"compaction", "message"}, types(rec.response(t).Output))
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: Remember 7.\nmessage/user: And 8.\nmessage/developer: "+summaryIntro+theSummary+"\n", modelText(reqs[2].Items))
}

// Below the threshold nothing is compacted; without compaction keys the
// request is a 501 before any model call.
func TestServerCompactionThresholdAndKeys(t *testing.T) {
	t.Parallel()
	p := script(text("Hi.", 900, 5))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":"hi"}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"message"}, types(rec.response(t).Output))
	assert.Len(t, p.requests(), 1)

	p = script()
	e, _ = newEngine(t, p, nil)
	_, err = run1(t, e, `{`+withCompaction("1000")+`,"input":"hi"}`)
	ae := api.AsError(err)
	require.NotNil(t, ae)
	assert.Equal(t, 501, ae.Status)
	assert.Equal(t, "compaction_unavailable", ae.Code)
	assert.Equal(t, "context_management", ae.Param)
	assert.Empty(t, p.requests())
}

// A /compact window sent back keeps working as before when a server-side
// compaction follows it: the window's summary and user messages are what
// the server-side summary folds in, and the model then sees from the
// latest (server-side) compaction item only.
func TestServerCompactionAfterCompactWindow(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Second summary.", 1, 1), text("ok", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	out, err := e.Compact(context.Background(), compactReq(t, `{"input":"I am Ada."}`))
	require.NoError(t, err)
	big := strings.Repeat("z", 5000)
	_, err = run1(t, e, `{`+withCompaction("1000")+`,"input":`+compactedInput(t, out, `{"role":"user","content":"`+big+`"}`)+`}`)
	require.NoError(t, err)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: I am Ada.\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: "+big+"\nmessage/user: "+compactPrompt+"\n", modelText(reqs[1].Items))
	assert.Equal(t, "message/user: "+big[:2000]+"\nmessage/developer: "+summaryIntro+"Second summary.\n", modelText(reqs[2].Items),
		"the newest user message fills the half of the threshold the item carries")
}

// In a conversation the compaction item is appended with the response's
// other output items, and the conversation's next response sees from it.
func TestServerCompactionInConversation(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Hello Ada.", 1, 1), text("You are Ada.", 1, 1))
	e, st := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	cs, conv := newConversation(t, st)
	big := "I am Ada. " + strings.Repeat("x", 5000)
	_, err := run1(t, e, `{`+withCompaction("1000")+`,"conversation":"`+conv.ID+`","input":"`+big+`"}`)
	require.NoError(t, err)
	page, err := cs.ListConversationItems(context.Background(), conv.ID, api.ListOptions{Order: "asc", Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []string{"message", "compaction", "message"}, types(page.Items))
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":"Who am I?"}`)
	require.NoError(t, err)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: "+big[:2000]+"\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/assistant: Hello Ada.\nmessage/user: Who am I?\n", modelText(reqs[2].Items))
}

// A background run handed off after a compaction resumes with the
// compaction item in its output: its next invocation's model sees from
// it.
func TestServerCompactionBackgroundResumes(t *testing.T) {
	forStores(t, testServerCompactionBackgroundResumes)
}

func testServerCompactionBackgroundResumes(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	slow := clock.taking(15 * time.Minute)
	p := script(slow(calls(990, 5, call("c1", "t", `{}`))), text(theSummary, 1, 1), slow(calls(1, 1, call("c2", "t", `{}`))), text("done", 1, 1))
	e, _, q := bgEngine(t, mk, p, newMock(echoTool, "t"), withKeys(testKeyring(t, "k1")), func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"background":true,`+withCompaction("1000")+`,"input":"go","tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	assert.Equal(t, 2, runInvocations(t, e, q, clock), "handed off after the second model call")
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, []string{"function_call:t", "function_call_output", "compaction", "function_call:t", "function_call_output", "message"}, types(got.Output))
	reqs := p.requests()
	require.Len(t, reqs, 4)
	assert.Equal(t, "message/user: go\nmessage/developer: "+summaryIntro+theSummary+"\nfunction_call/: \nfunction_call_output/: result of t {}\n", modelText(reqs[3].Items))
}

// store: false on a connection (WebSocket mode): the compaction item comes
// back to the client, the connection's cache keeps it with the
// provider's count, and the next turn on the connection sees from it
// without compacting again.
func TestServerCompactionOnConnection(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Hello Ada.", 1, 1), text("You are Ada.", 1, 1))
	e, st := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	w := &connRecorder{cache: store.NewMemory(store.MemoryConfig{})}
	big := "I am Ada. " + strings.Repeat("x", 5000)
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"store":false,`+withCompaction("1000")+`,"input":[{"role":"user","content":"hi"},{"role":"developer","content":"`+big+`"}]}`), w))
	first := w.response(t)
	assert.Equal(t, []string{"compaction", "message"}, types(first.Output))
	_, err := st.Get(context.Background(), first.ID)
	assert.ErrorIs(t, err, store.ErrNotFound)
	w2 := &connRecorder{cache: w.cache}
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"store":false,`+withCompaction("1000")+`,"previous_response_id":"`+first.ID+`","input":"Who am I?"}`), w2))
	assert.Equal(t, []string{"message"}, types(w2.response(t).Output))
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: hi\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/assistant: Hello Ada.\nmessage/user: Who am I?\n", modelText(reqs[2].Items))
}

// The user messages a compaction item carries are bounded: the newest
// first, 20,000 tokens (80,000 bytes) of their text at most (past a
// threshold of 40,000), the one
// crossing the bound cut, older ones left out (Codex keeps as much of
// them when it compacts), so neither the sealed item nor what the model
// sees after it grows with every compaction of a long conversation.
func TestServerCompactionBoundsTheCarriedMessages(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("ok", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	old, mid, last := strings.Repeat("a", 30_000), strings.Repeat("b", 30_000), strings.Repeat("c", 30_000)
	rec, err := run1(t, e, `{`+withCompaction("40000")+`,"input":[{"role":"user","content":"`+strings.Repeat("o", 100_000)+`"},{"role":"user","content":"`+old+`"},{"role":"user","content":"`+mid+`"},{"role":"user","content":"`+last+`"}]}`)
	require.NoError(t, err)
	require.Equal(t, []string{"compaction", "message"}, types(rec.response(t).Output))
	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"user a×20000", "user b×30000", "user c×30000", "developer S×84"}, textShapes(reqs[1].Items))
	assert.Less(t, len(rec.response(t).Output[0].EncryptedContent), 120_000)
}

// textShapes are the roles of items and the first letter and length of
// their texts, to compare long texts.
func textShapes(items []api.Item) []string {
	out := make([]string, len(items))
	for i := range items {
		t := items[i].Text() + items[i].OutputText()
		out[i] = fmt.Sprintf("%s %c×%d", items[i].Role, t[0], len(t))
	}
	return out
}

// A summarising call the deadline cuts ends the response incomplete for
// its deadline, as a model call the deadline cuts does, not failed; a
// summarising call that leaves no time for the model call it precedes
// ends it so too, before the model call, its compaction item kept.
func TestServerCompactionWithinTheDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		taking := func(d time.Duration, s step) step {
			s.hook = func(context.Context) { time.Sleep(d) }
			return s
		}
		// The summarising call the budget cuts (2 minutes before the
		// request's deadline) answers when its context ends.
		cut := text(theSummary, 1, 1)
		cut.hook = func(ctx context.Context) { <-ctx.Done() }
		big := "I am Ada. " + strings.Repeat("x", 5000)
		body := `{` + withCompaction("1000") + `,"input":"` + big + `"}`
		for _, tc := range []struct {
			name  string
			steps []step
			types []string
		}{
			{"cut", []step{cut}, []string{}},
			{"no time left", []step{taking(6*time.Minute, text(theSummary, 1, 1)), text("late", 1, 1)}, []string{"compaction"}},
		} {
			p := script(tc.steps...)
			e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")), func(c *Config) { c.Loop.DeadlineReserve = 2 * time.Minute })
			ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(10*time.Minute))
			rec := &recorder{}
			require.NoError(t, e.CreateResponse(ctx, decodeReq(t, body), rec), tc.name)
			cancel()
			resp := rec.response(t)
			assert.Equal(t, api.StatusIncomplete, resp.Status, tc.name)
			if assert.NotNil(t, resp.IncompleteDetails, tc.name) {
				assert.Equal(t, api.ReasonDeadline, resp.IncompleteDetails.Reason, tc.name)
			}
			assert.Equal(t, tc.types, append([]string{}, types(resp.Output)...), tc.name)
			assert.Len(t, p.requests(), 1, tc.name)
		}
	})
}

// A summarising call the provider refuses before the stream began (its
// opening held) is the request's HTTP error, as a refused model call is:
// the failed response stored, the stream taken back.
func TestServerCompactionRefusedBeforeTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newFlushRecorder()
		p := script(step{err: &api.Error{Status: 429, Type: api.ErrTypeRateLimit, Code: "rate_limit_exceeded", Message: "Slow down."}})
		e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
		w := paced(t, rec, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: time.Minute})
		big := strings.Repeat("x", 5000)
		err := e.CreateResponse(context.Background(), decodeReq(t, `{"stream":true,`+withCompaction("1000")+`,"input":"`+big+`"}`), w)
		w.Close()
		ae := api.AsError(err)
		require.NotNil(t, ae, "%v", err)
		assert.Equal(t, 429, ae.Status)
		batches, buffered := rec.rest()
		assert.Empty(t, batches)
		assert.Empty(t, buffered, "the opening is taken back")
	})
}

// The summarising call is a model call the observer sees (traces and
// metrics count its time and tokens, which the response's usage holds),
// marked as compaction, before the model call it precedes.
func TestServerCompactionObserved(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	p := script(text(theSummary, 1100, 20), text("Hello Ada.", 40, 3))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")), func(c *Config) { c.Observer = w })
	big := "I am Ada. " + strings.Repeat("x", 5000)
	_, err := run1(t, e, `{`+withCompaction("1000")+`,"input":"`+big+`"}`)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"response test-model",
		"compaction 1 start (in response)",
		"compaction 1 end stop err=false (in compaction 1)",
		"model 1 start (in response)",
		"model 1 end stop err=false (in model 1)",
		"response end completed (in response)",
	}, w.entries())
}

// The user messages a compaction item carries fit in half the threshold,
// so that what the model sees right after a compaction is under it: a
// history sent back whole, the item in it, is not compacted again for
// the messages the item carries (a summarising call on every request).
func TestServerCompactionCarriesHalfTheThreshold(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Hello Ada.", 1, 1), text("You are Ada.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	big := "I am Ada. " + strings.Repeat("x", 5000)
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":"`+big+`"}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, []string{"compaction", "message"}, types(first.Output))
	out, err := json.Marshal(first.Output)
	require.NoError(t, err)
	input := `[{"role":"user","content":"` + big + `"},` + strings.TrimPrefix(strings.TrimSuffix(string(out), "]"), "[") + `,{"role":"user","content":"Who am I?"}]`
	rec, err = run1(t, e, `{"store":false,`+withCompaction("1000")+`,"input":`+input+`}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"message"}, types(rec.response(t).Output))
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"user I×2000", "developer S×84", "assistant H×10", "user W×9"}, textShapes(reqs[2].Items))
}

// With truncation "auto", a summarising call the provider refuses for its
// size is made again without the oldest exchanges, as a model call is:
// the response compacts and completes instead of failing.
func TestServerCompactionTruncatesTheSummarisingCall(t *testing.T) {
	t.Parallel()
	p := &windowed{scripted: script(text(theSummary, 900, 20), text("ok", 10, 2)), limit: 3000}
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	rec, err := run1(t, e, `{"truncation":"auto",`+withCompaction("1000")+`,"input":`+chatInput(2)+`}`)
	require.NoError(t, err)
	resp := rec.response(t)
	assert.Equal(t, api.StatusCompleted, resp.Status)
	require.Equal(t, []string{"compaction", "message"}, types(resp.Output))
	require.NotEmpty(t, p.refusals(), "the whole view was refused")
	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.NotContains(t, texts(reqs[0].Items), "user:q0", "the summarised view is cut")
	assert.Contains(t, texts(reqs[0].Items), "user:"+compactPrompt)
}

// The summarising call of server-side compaction is a model call of the
// response like the others: it reaches the provider's account, which every
// tenant shares, with the same tenant-scoped safety identifier (user) and
// prompt_cache_key as the model call after it, so that what a tenant's
// end user sends is never summarised unattributed.
func TestServerCompactionSummarisingCallCarriesTheSafetyIdentifier(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1100, 20), text("Hello Ada.", 40, 3))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	big := "I am Ada. " + strings.Repeat("x", 5000)
	ctx := tenant.With(context.Background(), "acme")
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"safety_identifier":"user-42","prompt_cache_key":"bot",`+withCompaction("1000")+`,"input":"`+big+`"}`), rec))
	reqs := p.requests()
	require.Len(t, reqs, 2)
	require.NotEmpty(t, reqs[1].User)
	assert.Equal(t, reqs[1].User, reqs[0].User, "the summarising call")
	assert.Equal(t, reqs[1].PromptCacheKey, reqs[0].PromptCacheKey)
}

// A compaction_trigger ending the input (Codex's remote compaction) makes
// the response one summarising call and its compaction item, whatever the
// size, without a model turn. The item works as a /compact window's: sent
// back, the model sees what the client kept before it (Codex's
// instructions, the user's messages) and the summary in its place.
// Without compaction keys the trigger is a 501 naming input.
func TestCompactionTrigger(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 30, 10), text("Hello Ada.", 40, 3))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	rec := &recorder{}
	err := e.CreateResponse(context.Background(), decodeReq(t, `{"stream":true,"store":false,"input":[{"role":"developer","content":"be kind"},
		{"role":"user","content":"I am Ada."},{"role":"assistant","content":"Hi."},{"type":"compaction_trigger"}]}`), rec)
	require.NoError(t, err)
	resp := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, resp.Status)
	require.Equal(t, []string{"compaction"}, types(resp.Output))
	assert.Equal(t, api.Usage{InputTokens: 30, OutputTokens: 10, TotalTokens: 40}, *resp.Usage)
	reqs := p.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "message/developer: be kind\nmessage/user: I am Ada.\nmessage/assistant: Hi.\nmessage/user: "+compactPrompt+"\n", modelText(reqs[0].Items))

	out, err := json.Marshal(resp.Output[0])
	require.NoError(t, err)
	_, err = run1(t, e, `{"store":false,"input":[{"role":"developer","content":"be kind"},{"role":"user","content":"I am Ada."},`+string(out)+`,{"role":"user","content":"Who am I?"}]}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, "message/developer: be kind\nmessage/user: I am Ada.\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: Who am I?\n", modelText(reqs[1].Items))

	p = script()
	e, _ = newEngine(t, p, nil)
	_, err = run1(t, e, `{"input":[{"role":"user","content":"hi"},{"type":"compaction_trigger"}]}`)
	ae := api.AsError(err)
	require.NotNil(t, ae)
	assert.Equal(t, 501, ae.Status)
	assert.Equal(t, "input", ae.Param)
	assert.Empty(t, p.requests())
}

// A compaction item in the history a request continues stands alone
// whatever made it: a previous_response_id continuation of a
// compaction_trigger response, and the next response of a conversation
// that holds one, see, in place of everything before the item, the user
// messages before it (as a server-side item carries them) and the
// summary, as a continuation of a server-side compaction does; not the
// whole conversation the item replaced.
func TestCompactionTriggerContinued(t *testing.T) {
	t.Parallel()
	p := script(text("Hi.", 5, 2), text(theSummary, 30, 10), text("You are Ada.", 5, 3),
		text(theSummary, 30, 10), text("Still Ada.", 5, 3))
	e, st := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	rec, err := run1(t, e, `{"input":[{"role":"developer","content":"be kind"},{"role":"user","content":"I am Ada."}]}`)
	require.NoError(t, err)
	first := rec.response(t)
	rec, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"role":"user","content":"Note 7."},{"type":"compaction_trigger"}]}`)
	require.NoError(t, err)
	trigger := rec.response(t)
	require.Equal(t, []string{"compaction"}, types(trigger.Output))
	_, err = run1(t, e, `{"previous_response_id":"`+trigger.ID+`","input":"Who am I?"}`)
	require.NoError(t, err)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: I am Ada.\nmessage/user: Note 7.\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: Who am I?\n",
		modelText(reqs[2].Items), "the continuation sees the item and what it carries, not the conversation before it")

	// A conversation: the trigger's item is appended to its items.
	_, conv := newConversation(t, st)
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":[{"role":"user","content":"I am Ada."},{"role":"assistant","content":"Hi."},{"type":"compaction_trigger"}]}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":"Who am I?"}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 5)
	assert.Equal(t, "message/user: I am Ada.\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: Who am I?\n", modelText(reqs[4].Items))
}

// A background run handed off between a model call and the next one
// resumes counting from the provider's count it checkpointed
// (store.Record.Rendered), not from the estimate alone: the count of the
// first call (995 tokens) and its tool's result cross the threshold, so
// the resumed invocation compacts before its model call.
func TestServerCompactionResumeCountsFromTheCheckpoint(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		clock := &fakeClock{t: time.Now()}
		slow := clock.taking(40 * time.Minute)
		p := script(slow(calls(990, 5, call("c1", "t", `{}`))), text(theSummary, 1, 1), text("done", 1, 1))
		e, _, q := bgEngine(t, mk, p, newMock(echoTool, "t"), withKeys(testKeyring(t, "k1")), func(c *Config) { c.Now = clock.Now })
		rec, err := runBackground(t, e, `{"background":true,`+withCompaction("1000")+`,"input":"go","tools":[{"type":"lambent:t"}]}`)
		require.NoError(t, err)
		id := rec.response(t).ID
		assert.Equal(t, 2, runInvocations(t, e, q, clock), "handed off after the first model call's tool")
		got, err := e.GetResponse(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, []string{"function_call:t", "function_call_output", "compaction", "message"}, types(got.Output))
	})
}

// partShapes are the content parts of the messages of items: each part's
// type and its text, image URL or file name (a data URL by its length).
func partShapes(items []api.Item) []string {
	var out []string
	for _, it := range items {
		for _, p := range it.Content {
			s := p.Text + p.ImageURL + p.Filename
			if strings.HasPrefix(s, "data:") || len(s) > 40 {
				s = fmt.Sprintf("%c×%d", s[0], len(s))
			}
			out = append(out, it.Role+" "+p.Type+" "+s)
		}
	}
	return out
}

// The images and files of the user messages a standalone compaction item
// carries are carried with their text, counted against the same bound by
// their size: an image URL is small and is kept, inline base64 data over
// what is left of the bound is dropped, older messages' first. After the
// compaction the model still sees the image the user sent, in that
// response's next call and in a continuation.
func TestServerCompactionCarriesImages(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("A cat.", 1, 1), text("Still a cat.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	data := "data:image/png;base64," + strings.Repeat("A", 3000)
	input := `[{"role":"user","content":[{"type":"input_text","text":"Old photo:"},{"type":"input_image","image_url":"` + data + `"}]},` +
		`{"role":"developer","content":"` + strings.Repeat("x", 5000) + `"},` +
		`{"role":"user","content":[{"type":"input_text","text":"What is this?"},{"type":"input_image","image_url":"https://example.com/cat.png"},` +
		`{"type":"input_file","filename":"notes.txt","file_url":"https://example.com/notes.txt"}]}]`
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":`+input+`}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, []string{"compaction", "message"}, types(first.Output))
	carried := []string{"user input_text Old photo:", "user input_text [image omitted by compaction]",
		"user input_text What is this?", "user input_image https://example.com/cat.png", "user input_file notes.txt",
		"developer input_text " + fmt.Sprintf("%c×%d", 'S', len(summaryIntro+theSummary))}
	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, carried, partShapes(reqs[1].Items), "the 3,000-byte image is over what is left of the 2,000 bytes carried: a note stands for it")

	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":"Sure?"}`)
	require.NoError(t, err)
	reqs = p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, append(carried, "assistant output_text A cat.", "user input_text Sure?"), partShapes(reqs[2].Items))
}

// A standalone compaction item sealed before images and files were
// carried (its user messages as texts) still opens: the model sees its
// texts as user messages.
func TestServerCompactionOpensTextOnlyItems(t *testing.T) {
	t.Parallel()
	p := script(text("You are Ada.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	blob, err := e.seal(context.Background(), standaloneMark+`{"users":["I am Ada."],"summary":"`+theSummary+`"}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"input":[{"type":"compaction","encrypted_content":"`+blob+`"},{"role":"user","content":"Who am I?"}]}`)
	require.NoError(t, err)
	assert.Equal(t, "message/user: I am Ada.\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: Who am I?\n", modelText(p.requests()[0].Items))
}

// The images a model call carries (LAMBENT_LIMIT_IMAGES) are those of
// what it sees: from the latest standalone compaction item on, the images
// that item carries included, and none of the items before it, which the
// model no longer sees. A client that sends the item without the items
// before it cannot pass more images to the model than the limit; a
// continuation whose compaction left older images out may add as many.
func TestServerCompactionImagesCounted(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Two cats.", 1, 1), text("Three.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")), func(c *Config) { c.Limits.Images = 3 })
	img := func(name string) string {
		return `{"type":"input_image","image_url":"https://example.com/` + name + `.png"}`
	}
	data := `{"type":"input_image","image_url":"data:image/png;base64,` + strings.Repeat("A", 3000) + `"}`
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":[{"role":"user","content":[`+data+`]},{"role":"developer","content":"`+strings.Repeat("x", 5000)+`"},`+
		`{"role":"user","content":[`+img("a")+`,`+img("b")+`]}]}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, []string{"compaction", "message"}, types(first.Output))

	// The item and two more images: four in the model's view.
	cmp, err := json.Marshal(first.Output[0])
	require.NoError(t, err)
	_, err = run1(t, e, `{"store":false,"input":[`+string(cmp)+`,{"role":"user","content":[`+img("c")+`,`+img("d")+`]}]}`)
	wantLimit(t, err, "input[1]")

	// The data image the item left out no longer counts: three.
	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"role":"user","content":[`+img("c")+`]}]}`)
	require.NoError(t, err)
	assert.Len(t, p.requests(), 3)
}

// The images of the history before its compaction_trigger item no longer
// count against LAMBENT_LIMIT_IMAGES in a continuation: an inline image
// over what the item carries (20,000 tokens) is left out of what the
// model sees, so the continuation may add as many as the limit.
func TestCompactionTriggerContinuedImagesCounted(t *testing.T) {
	t.Parallel()
	p := script(text("A cat.", 1, 1), text(theSummary, 1, 1), text("Two dogs.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")), func(c *Config) { c.Limits.Images = 2 })
	data := `{"type":"input_image","image_url":"data:image/png;base64,` + strings.Repeat("A", maxCarriedBytes) + `"}`
	rec, err := run1(t, e, `{"input":[{"role":"user","content":[`+data+`]}]}`)
	require.NoError(t, err)
	rec, err = run1(t, e, `{"previous_response_id":"`+rec.response(t).ID+`","input":[{"type":"compaction_trigger"}]}`)
	require.NoError(t, err)
	img := `{"type":"input_image","image_url":"https://example.com/a.png"}`
	_, err = run1(t, e, `{"previous_response_id":"`+rec.response(t).ID+`","input":[{"role":"user","content":[`+img+`,`+img+`]}]}`)
	require.NoError(t, err)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, "message/user: [image omitted by compaction]\nmessage/developer: "+summaryIntro+theSummary+"\nmessage/user: \n", modelText(reqs[2].Items))
}

// Images over LAMBENT_LIMIT_IMAGES before the input items the model sees
// are named by the parameter that holds them, one the request has: the
// input's standalone compaction item that carries them (here over a limit
// lowered since it was made), or the conversation continued; never
// previous_response_id, which the request did not send.
func TestServerCompactionImagesOverLimitNamed(t *testing.T) {
	t.Parallel()
	st := store.NewMemory(store.MemoryConfig{})
	keys := withKeys(testKeyring(t, "k1"))
	p := script(text(theSummary, 1, 1), text("Two cats.", 1, 1), text("Two more.", 1, 1))
	roomy, _ := newEngine(t, p, nil, keys, func(c *Config) { c.Store = st })
	e, _ := newEngine(t, p, nil, keys, func(c *Config) { c.Store = st; c.Limits.Images = 1 })
	images := `[{"type":"input_image","image_url":"https://example.com/a.png"},{"type":"input_image","image_url":"https://example.com/b.png"}]`
	rec, err := run1(t, roomy, `{`+withCompaction("1000")+`,"input":[{"role":"developer","content":"`+strings.Repeat("x", 5000)+`"},`+
		`{"role":"user","content":`+images+`}]}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, []string{"compaction", "message"}, types(first.Output))
	cmp, err := json.Marshal(first.Output[0])
	require.NoError(t, err)
	_, err = run1(t, e, `{"store":false,"input":[{"role":"user","content":"Hi."},`+string(cmp)+`,{"role":"user","content":"And?"}]}`)
	wantLimit(t, err, "input[1]")

	_, conv := newConversation(t, st)
	_, err = run1(t, roomy, `{"conversation":"`+conv.ID+`","input":[{"role":"user","content":`+images+`}]}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"conversation":"`+conv.ID+`","input":"And?"}`)
	wantLimit(t, err, "conversation")
	assert.Len(t, p.requests(), 3)
}

// A standalone compaction item's bound counts a carried text as the item
// and the estimate of the view hold it, JSON-escaped: a text of "<" (six
// bytes each in JSON) is carried to a sixth of the bound, so that what the
// model sees right after the item is not over the threshold again by the
// estimate, and a client sending the item back (stateless chaining) is
// not compacted again for what it carries.
func TestServerCompactionCarriedBoundEscaped(t *testing.T) {
	t.Parallel()
	p := script(text(theSummary, 1, 1), text("Angles.", 1, 1), text("Still angles.", 1, 1))
	e, _ := newEngine(t, p, nil, withKeys(testKeyring(t, "k1")))
	rec, err := run1(t, e, `{`+withCompaction("1000")+`,"input":"`+strings.Repeat("<", 2000)+`"}`)
	require.NoError(t, err)
	first := rec.response(t)
	require.Equal(t, []string{"compaction", "message"}, types(first.Output))
	assert.Equal(t, []string{"user input_text <×333", "developer input_text " + fmt.Sprintf("%c×%d", 'S', len(summaryIntro+theSummary))},
		partShapes(p.requests()[1].Items), "2,000 bytes carried: 333 characters of six")

	cmp, err := json.Marshal(first.Output[0])
	require.NoError(t, err)
	rec, err = run1(t, e, `{`+withCompaction("1000")+`,"store":false,"input":[`+string(cmp)+`,{"role":"user","content":"Sure?"}]}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"message"}, types(rec.response(t).Output), "not compacted again")
	assert.Len(t, p.requests(), 3)
}

// historyOfCompactions is a history of n turns, each a user message then
// a /compact item (not standalone), all opened in r.
func historyOfCompactions(r *run, n int) []api.Item {
	r.addSummary("blob", summary{text: theSummary})
	var items []api.Item
	for i := range n {
		items = append(items,
			api.Item{Type: api.ItemMessage, ID: fmt.Sprintf("msg_%d", i), Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "note"}}},
			api.Item{Type: api.ItemCompaction, ID: fmt.Sprintf("cmp_%d", i), EncryptedContent: "blob"})
	}
	return items
}

// viewBytes is what r's view and its model call's items allocate, with
// r's history of n compaction items (historyOfCompactions): the least of
// three runs, so that what other goroutines allocate meanwhile counts as
// little as it can.
func viewBytes(n int) uint64 {
	r := &run{req: &api.CreateResponseRequest{}}
	r.history = historyOfCompactions(r, n)
	least := uint64(math.MaxUint64)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r.view()
		r.withSummaries(slices.Clone(r.history))
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// What the model sees of a history holding many compaction items, each
// standing alone and carrying the user messages before it, costs work
// in proportion to the history, not to its length times its compaction
// items: twice the items, about twice the bytes.
func TestCompactionHistoryViewIsLinear(t *testing.T) {
	small, large := viewBytes(500), viewBytes(1000)
	assert.Less(t, float64(large)/float64(small), 3.0, "bytes for 500 compaction items: %d, for 1000: %d", small, large)
}

func BenchmarkCompactionHistoryView(b *testing.B) {
	r := &run{req: &api.CreateResponseRequest{}}
	r.history = historyOfCompactions(r, 2000)
	for b.Loop() {
		r.view()
		r.withSummaries(slices.Clone(r.history))
	}
}
