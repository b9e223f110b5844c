package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
)

// A mixed turn (hosted + client call) in a conversation pauses; its
// continuation in the same conversation runs the hosted call, whose
// completed mcp_call keeps the id of the open one the conversation holds
// and takes its place (store.Replaces); the continuation's other items are
// appended and the conversation is free again. (The append failed on the
// duplicate id: the items were lost and the conversation stayed locked.)
func TestConversationPausedCallContinued(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		m := newMock(echoTool, "search")
		p := script(calls(1, 1, call("cs", "search", `{}`), call("cw", "get_weather", `{}`)), text("both done", 1, 1), text("third", 1, 1))
		st := mk(t)
		e, _ := newEngine(t, p, m, mcpMode, func(c *Config) { c.Store = st })
		ctx := context.Background()
		cs, c := newConversation(t, st)
		tl := `"tools":[` + clientTool + `,{"type":"lambent:search"}]`
		rec, err := run1(t, e, `{"conversation":"`+c.ID+`","stream":true,"input":"x",`+tl+`}`)
		require.NoError(t, err)
		first := rec.checkOpenAIStream(t)
		require.Equal(t, api.StatusRequiresAction, first.Status)

		rec2, err := run1(t, e, `{"conversation":"`+c.ID+`","stream":true,"input":[{"type":"function_call_output","call_id":"cw","output":"rain"}],`+tl+`}`)
		require.NoError(t, err)
		r := rec2.checkOpenAIStream(t)
		require.Equal(t, api.StatusCompleted, r.Status)

		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"message", "mcp_call", "function_call:get_weather", "function_call_output", "message"}, types(items),
			"the continuation's items are appended")
		require.Len(t, items, 5)
		assert.Equal(t, api.ItemCompleted, items[1].Status, "the paused call's item is its executed version")
		assert.NotEmpty(t, items[1].Output)

		_, err = run1(t, e, `{"conversation":"`+c.ID+`","input":"next"}`)
		assert.NoError(t, err, "the conversation is free again")
	})
}

// An event delivered twice (SQS, EventBridge: at least once) while its
// background response runs in a conversation: the second delivery finds
// the response exists before it prepares anything, and leaves the
// conversation locked for the running response, whose items are then
// appended. (It took the lock again under the same owner, the response
// id, and released it on finding the response: another writer got in and
// the running response's items were appended nowhere.)
func TestStartBackgroundRedeliveryKeepsConversationLock(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx := context.Background()
		running, release := make(chan struct{}), make(chan struct{})
		p := script(step{res: text("first answer", 1, 1).res, hook: func(context.Context) { close(running); <-release }})
		e, st, _ := bgEngine(t, mk, p, nil)
		cs, c := newConversation(t, st)
		body := `{"conversation":"` + c.ID + `","input":"hello"}`
		id := "resp_evt_" + api.NewID("")[30:]
		done := make(chan error, 1)
		go func() {
			_, err := e.StartBackground(ctx, decodeReq(t, body), id)
			done <- err
		}()
		<-running
		// The redelivery, while the first delivery's run is in its model call.
		_, err := e.StartBackground(ctx, decodeReq(t, body), id)
		require.NoError(t, err)
		// Meanwhile the conversation must still be held.
		_, err = e.AddConversationItems(ctx, c.ID, []api.Item{{Type: api.ItemMessage, Role: "user", Content: []api.ContentPart{{Type: api.PartInputText, Text: "sneaked in"}}}})
		assert.Error(t, err, "the conversation is still locked by the running response")
		close(release)
		require.NoError(t, <-done)
		got, err := e.GetResponse(ctx, id)
		require.NoError(t, err)
		require.Equal(t, api.StatusCompleted, got.Status)
		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"user", "assistant"}, fieldOf(items, role), "the response's items are appended to its conversation")
	})
}

// A queued background response in a conversation holds its lock; deleting
// the response before a worker ran it frees the conversation at once, and
// its job, delivered after, runs nothing. (Nothing released the lock: the
// worker found no response and so no conversation, and every create and
// items-create in the conversation was refused with conversation_locked
// until the lock lapsed, an hour later.)
func TestDeleteQueuedBackgroundFreesConversation(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx := context.Background()
		e, st, q := bgEngine(t, mk, script(text("answer", 1, 1)), nil)
		cs, c := newConversation(t, st)
		rec, err := runBackground(t, e, `{"conversation":"`+c.ID+`","input":"hello","background":true}`)
		require.NoError(t, err)
		queued := rec.response(t)
		require.Equal(t, api.StatusQueued, queued.Status)

		_, err = e.DeleteResponse(ctx, queued.ID)
		require.NoError(t, err)
		job := <-q.c
		require.NoError(t, e.RunBackground(ctx, job.ResponseID))

		msg := []api.Item{{Type: api.ItemMessage, Role: "user", Content: []api.ContentPart{{Type: api.PartInputText, Text: "next"}}}}
		_, err = e.AddConversationItems(ctx, c.ID, msg)
		assert.NoError(t, err, "the deleted response no longer holds the conversation")
		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Len(t, items, 1, "the deleted response appended nothing")
	})
}

// corruptStore is a store whose records cannot be read.
type corruptStore struct{ store.ResponseStore }

func (s corruptStore) Get(context.Context, string) (*store.Record, error) {
	return nil, fmt.Errorf("test: %w", store.ErrCorrupt)
}

// A response whose record cannot be read is still deleted: the read that
// DELETE makes first (for the conversation a background response holds)
// does not stand in its way.
func TestDeleteUnreadableResponse(t *testing.T) {
	t.Parallel()
	st := store.NewMemory(store.MemoryConfig{})
	e, _ := newEngine(t, script(text("answer", 1, 1)), nil, func(c *Config) { c.Store = st })
	rec, err := run1(t, e, `{"input":"hello"}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	e.cfg.Store = corruptStore{st}
	_, err = e.DeleteResponse(context.Background(), id)
	require.NoError(t, err)
	_, err = st.Get(context.Background(), id)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// partlyDeletingStore deletes records but reports parts of them left.
type partlyDeletingStore struct{ store.ResponseStore }

func (s partlyDeletingStore) Delete(ctx context.Context, id string) error {
	if err := s.ResponseStore.Delete(ctx, id); err != nil {
		return err
	}
	return fmt.Errorf("test: %w: chunks throttled", store.ErrPartlyDeleted)
}

// A delete that removed the response but left parts of it to expire
// (store.ErrPartlyDeleted) succeeded: the client gets the deletion, not a
// 500 whose retry would be a 404.
func TestDeletePartlyIsDeleted(t *testing.T) {
	t.Parallel()
	st := store.NewMemory(store.MemoryConfig{})
	e, _ := newEngine(t, script(text("answer", 1, 1)), nil, func(c *Config) { c.Store = partlyDeletingStore{st} })
	rec, err := run1(t, e, `{"input":"hello"}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	res, err := e.DeleteResponse(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, res.Deleted)
}

// lapseLock makes the lock of conversation id lapse as if its holder had
// run past its LockUntil (the stores compare locks with the wall clock):
// the holder keeps it, with a LockUntil in the past.
func lapseLock(t *testing.T, ctx context.Context, cs store.ConversationStore, id string) {
	t.Helper()
	c, err := cs.GetConversation(ctx, id)
	require.NoError(t, err)
	require.NotEmpty(t, c.Lock, "a response holds the conversation")
	_, err = cs.LockConversation(ctx, id, c.Lock, time.Now().Add(-time.Minute))
	require.NoError(t, err)
}

// A foreground response that runs longer than its conversation lock (a
// local server's request has no deadline: the lock lapses after
// Background.Lease, 15 minutes, which a long agentic loop with slow tools
// can pass) still appends its items when nobody else took the lock
// meanwhile. (The append found the lock lapsed and failed: the turn was
// silently lost from the conversation, only a warning logged.)
func TestLongResponseOutlivesConversationLock(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx := context.Background()
		st := mk(t)
		cs, c := newConversation(t, st)
		p := script(step{res: text("late answer", 1, 1).res, hook: func(ctx context.Context) { lapseLock(t, ctx, cs, c.ID) }})
		e, _ := newEngine(t, p, nil, func(cfg *Config) { cfg.Store = st })
		rec, err := run1(t, e, `{"conversation":"`+c.ID+`","input":"hello"}`)
		require.NoError(t, err)
		require.Equal(t, api.StatusCompleted, rec.response(t).Status)
		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"user", "assistant"}, fieldOf(items, role), "the response's turn is appended to its conversation")
		got, err := cs.GetConversation(ctx, c.ID)
		require.NoError(t, err)
		assert.Empty(t, got.Lock, "the append released the lock")
	})
}

// A foreground response whose loop runs past its conversation lock (no
// request deadline; its first turn takes 20 minutes) keeps the
// conversation to itself: the lock is renewed at its next turn, so an items-create meanwhile is refused with
// conversation_locked, and the response's turn is appended. (Once the
// lock had lapsed the items-create got in and released the lock, and the
// response's own append, at its end, found the lock gone: its turn was
// lost.)
func TestLongResponseRenewsConversationLock(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx := context.Background()
		st := mk(t)
		cs, c := newConversation(t, st)
		var e *Engine
		var sneak error
		clock := &fakeClock{t: time.Now()}
		first := calls(1, 1, call("c1", "t", `{}`))
		first.hook = func(ctx context.Context) {
			clock.advance(20 * time.Minute)
			lapseLock(t, ctx, cs, c.ID)
		}
		second := text("done", 1, 1)
		second.hook = func(ctx context.Context) {
			_, sneak = e.AddConversationItems(ctx, c.ID, []api.Item{{Type: api.ItemMessage, Role: "user", Content: []api.ContentPart{{Type: api.PartInputText, Text: "sneaked in"}}}})
		}
		e, _ = newEngine(t, script(first, second), newMock(echoTool, "t"), func(cfg *Config) { cfg.Store, cfg.Now = st, clock.Now })
		rec, err := run1(t, e, `{"conversation":"`+c.ID+`","input":"hello","tools":[{"type":"lambent:t"}]}`)
		require.NoError(t, err)
		require.Equal(t, api.StatusCompleted, rec.response(t).Status)
		var ae *api.Error
		require.ErrorAs(t, sneak, &ae, "the running response still holds the conversation")
		assert.Equal(t, "conversation_locked", ae.Code)
		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"message", "function_call:t", "function_call_output", "message"}, types(items), "the response's turn is appended")
	})
}

// A background response in a conversation whose input names an item the
// conversation holds (a client replaying it) and that fails when its
// worker starts (here: the conversation passed a lowered item limit) ends
// failed, and its other input items are appended, as a failed response's
// are. (The worker had not loaded the conversation, so the named item was
// appended again: a duplicate id, and the append failed whole.)
func TestBackgroundFailedAtStartAppendsNewInput(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		ctx := context.Background()
		e, st, q := bgEngine(t, mk, script(text("answer", 1, 1)), nil)
		cs := st.(store.ConversationStore)
		msg := func(id, text string) api.Item {
			return api.Item{Type: api.ItemMessage, ID: id, Role: "user", Status: api.ItemCompleted, Content: []api.ContentPart{{Type: api.PartInputText, Text: text}}}
		}
		c := &store.Conversation{ID: api.NewID(api.PrefixConversation)}
		require.NoError(t, cs.CreateConversation(ctx, c, []api.Item{msg("msg_a", "one"), msg("msg_b", "two")}))
		body := `{"conversation":"` + c.ID + `","background":true,"input":[` +
			`{"type":"message","id":"msg_b","role":"user","content":"two"},{"type":"message","id":"msg_c","role":"user","content":"three"}]}`
		rec, err := runBackground(t, e, body)
		require.NoError(t, err)
		require.Equal(t, api.StatusQueued, rec.response(t).Status)

		e.cfg.Limits.ConversationItems = 1
		job := <-q.c
		require.NoError(t, e.RunBackground(ctx, job.ResponseID))
		got, err := e.GetResponse(ctx, job.ResponseID)
		require.NoError(t, err)
		require.Equal(t, api.StatusFailed, got.Status)

		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"msg_a", "msg_b", "msg_c"}, fieldOf(items, itemID), "the failed response's new input is appended once")
		conv, err := cs.GetConversation(ctx, c.ID)
		require.NoError(t, err)
		assert.Empty(t, conv.Lock)
	})
}

// partlyDeletingConversations deletes conversation items but reports parts
// of them left.
type partlyDeletingConversations struct{ *store.Memory }

func (s partlyDeletingConversations) DeleteConversationItem(ctx context.Context, id, itemID string) (*store.Conversation, error) {
	c, err := s.Memory.DeleteConversationItem(ctx, id, itemID)
	if err != nil {
		return nil, err
	}
	return c, fmt.Errorf("test: %w: chunks throttled", store.ErrPartlyDeleted)
}

// A conversation item's delete that removed the item but left parts of it
// to expire (store.ErrPartlyDeleted) succeeded, as a response's does.
func TestDeleteItemPartlyIsDeleted(t *testing.T) {
	t.Parallel()
	st := partlyDeletingConversations{store.NewMemory(store.MemoryConfig{})}
	e, _ := newEngine(t, script(), nil, func(c *Config) { c.Store = st })
	creq, err := api.DecodeConversationCreate([]byte(`{"items":[{"type":"message","id":"msg_a","role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	conv, err := e.CreateConversation(context.Background(), creq)
	require.NoError(t, err)
	got, err := e.DeleteConversationItem(context.Background(), conv.ID, "msg_a")
	require.NoError(t, err)
	assert.Equal(t, conv.ID, got.ID)
}
