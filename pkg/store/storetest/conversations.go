package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// RunConversations is the conformance suite of store.ConversationStore:
// every implementation runs it, so all of them behave the same. newStore
// is called once per subtest (in parallel) and returns a fresh store.
func RunConversations(t *testing.T, newStore func(t *testing.T) store.ConversationStore) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, s store.ConversationStore)
	}{
		{"Items", testConvItems},
		{"Pagination", testConvPagination},
		{"Lock", testConvLock},
		{"ConcurrentAppends", testConvConcurrent},
		{"ManyAndLargeItems", testConvLarge},
		{"DeleteWhileLocked", testConvDeleteLocked},
		{"TenantIsolation", testConvTenants},
		{"LoadLimit", testConvLoadLimit},
		{"DuplicateIDs", testConvDuplicates},
		{"HiddenFields", testConvHidden},
		{"Cut", testConvCut},
		{"MetadataKeys", testConvMetadataKeys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

func convMessages(prefix string, n int) []api.Item {
	items := make([]api.Item, n)
	for i := range items {
		items[i] = textMessage(fmt.Sprintf("%s_%03d", prefix, i), fmt.Sprintf("%s %d", prefix, i))
	}
	return items
}

func ids(items []api.Item) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = items[i].ID
	}
	return out
}

// newConv creates a conversation with items; it returns its id.
func newConv(t *testing.T, ctx context.Context, s store.ConversationStore, items []api.Item) string {
	t.Helper()
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix(), Metadata: map[string]string{"k": "v"}}
	require.NoError(t, s.CreateConversation(ctx, c, items))
	require.Equal(t, int64(len(items)), c.Next)
	require.False(t, c.ExpiresAt.IsZero())
	return c.ID
}

// appendAs appends items under a lock of its own.
func appendAs(ctx context.Context, s store.ConversationStore, id, owner string, items []api.Item) error {
	if _, err := s.LockConversation(ctx, id, owner, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	return s.AppendConversationItems(ctx, id, owner, items, "")
}

func testConvItems(t *testing.T, s store.ConversationStore) {
	ctx := tenant.With(t.Context(), "acme")
	id := newConv(t, ctx, s, convMessages("a", 3))
	c, err := s.GetConversation(ctx, id)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"k": "v"}, c.Metadata)
	require.Equal(t, int64(3), c.Next)
	require.False(t, c.Locked(time.Now()))

	c, err = s.SetConversationMetadata(ctx, id, map[string]string{"topic": "x"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"topic": "x"}, c.Metadata)
	c, err = s.GetConversation(ctx, id)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"topic": "x"}, c.Metadata)

	require.NoError(t, appendAs(ctx, s, id, "resp_1", convMessages("b", 2)))
	all, err := s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Equal(t, []string{"a_000", "a_001", "a_002", "b_000", "b_001"}, ids(all))
	require.Equal(t, "b 1", all[4].Text())

	it, err := s.GetConversationItem(ctx, id, "a_001")
	require.NoError(t, err)
	require.Equal(t, "a 1", it.Text())
	_, err = s.GetConversationItem(ctx, id, "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	var inf *store.ItemNotFoundError
	require.ErrorAs(t, err, &inf)

	c, err = s.DeleteConversationItem(ctx, id, "a_001")
	require.NoError(t, err)
	require.Equal(t, id, c.ID)
	_, err = s.GetConversationItem(ctx, id, "a_001")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.DeleteConversationItem(ctx, id, "a_001")
	require.ErrorIs(t, err, store.ErrNotFound)
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Equal(t, []string{"a_000", "a_002", "b_000", "b_001"}, ids(all))

	require.NoError(t, s.DeleteConversation(ctx, id))
	for _, err := range []error{
		func() error { _, err := s.GetConversation(ctx, id); return err }(),
		func() error { _, err := s.LoadConversationItems(ctx, id, 100); return err }(),
		func() error { _, err := s.ListConversationItems(ctx, id, api.ListOptions{}); return err }(),
		func() error { _, err := s.GetConversationItem(ctx, id, "a_000"); return err }(),
		func() error { _, err := s.SetConversationMetadata(ctx, id, nil); return err }(),
		func() error { _, err := s.LockConversation(ctx, id, "x", time.Now().Add(time.Minute)); return err }(),
		s.DeleteConversation(ctx, id),
	} {
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	// A conversation without items.
	empty := newConv(t, ctx, s, nil)
	page, err := s.ListConversationItems(ctx, empty, api.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, page.Items)
	require.False(t, page.HasMore)
}

func testConvPagination(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	items := convMessages("m", 45)
	id := newConv(t, ctx, s, items[:20])
	require.NoError(t, appendAs(ctx, s, id, "r1", items[20:40]))
	require.NoError(t, appendAs(ctx, s, id, "r2", items[40:]))
	for _, order := range []string{"asc", "desc"} {
		var got []string
		after := ""
		pages := 0
		for {
			page, err := s.ListConversationItems(ctx, id, api.ListOptions{After: after, Limit: 20, Order: order})
			require.NoError(t, err)
			pages++
			got = append(got, ids(page.Items)...)
			if !page.HasMore {
				break
			}
			after = page.Items[len(page.Items)-1].ID
		}
		want := ids(items)
		if order == "desc" {
			for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
				want[i], want[j] = want[j], want[i]
			}
		}
		require.Equal(t, want, got, order)
		require.Equal(t, 3, pages, order)
	}
	page, err := s.ListConversationItems(ctx, id, api.ListOptions{})
	require.NoError(t, err, "defaults: 20, desc")
	require.Len(t, page.Items, 20)
	require.Equal(t, "m_044", page.Items[0].ID)
	require.True(t, page.HasMore)
	page, err = s.ListConversationItems(ctx, id, api.ListOptions{After: "m_004", Order: "desc"})
	require.NoError(t, err)
	require.Equal(t, []string{"m_003", "m_002", "m_001", "m_000"}, ids(page.Items))
	require.False(t, page.HasMore)
	_, err = s.ListConversationItems(ctx, id, api.ListOptions{After: "nope"})
	require.ErrorIs(t, err, store.ErrInvalidCursor)
}

func testConvLock(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, nil)
	c, err := s.LockConversation(ctx, id, "resp_a", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, "resp_a", c.Lock)
	require.True(t, c.Locked(time.Now()))
	_, err = s.LockConversation(ctx, id, "resp_a", time.Now().Add(2*time.Minute))
	require.NoError(t, err, "the holder renews its lock")
	_, err = s.LockConversation(ctx, id, "resp_b", time.Now().Add(time.Minute))
	require.ErrorIs(t, err, store.ErrLocked)
	require.ErrorIs(t, s.AppendConversationItems(ctx, id, "resp_b", convMessages("b", 1), ""), store.ErrConflict)
	require.NoError(t, s.AppendConversationItems(ctx, id, "resp_a", convMessages("a", 2), ""))
	require.ErrorIs(t, s.AppendConversationItems(ctx, id, "resp_a", convMessages("x", 1), ""), store.ErrConflict, "released")
	// A lock that lapsed is free.
	_, err = s.LockConversation(ctx, id, "resp_c", time.Now().Add(-time.Second))
	require.NoError(t, err)
	_, err = s.LockConversation(ctx, id, "resp_d", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.ErrorIs(t, s.AppendConversationItems(ctx, id, "resp_c", convMessages("c", 1), ""), store.ErrConflict)
	require.NoError(t, s.AppendConversationItems(ctx, id, "resp_d", nil, ""), "releasing without items")
	c, err = s.GetConversation(ctx, id)
	require.NoError(t, err)
	require.False(t, c.Locked(time.Now()))
	require.Equal(t, int64(2), c.Next)
	// A lapsed lock nobody took since is still its holder's: it appends.
	_, err = s.LockConversation(ctx, id, "resp_e", time.Now().Add(-time.Second))
	require.NoError(t, err)
	require.NoError(t, s.AppendConversationItems(ctx, id, "resp_e", convMessages("e", 1), ""))
	c, err = s.GetConversation(ctx, id)
	require.NoError(t, err)
	require.Empty(t, c.Lock)
	require.Equal(t, int64(3), c.Next)
}

// Writers racing on one conversation never interleave or lose items: each
// appends its three items under the lock, retrying while it is taken.
func testConvConcurrent(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, nil)
	const writers = 6
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			owner := fmt.Sprintf("w%d", w)
			for {
				err := appendAs(ctx, s, id, owner, convMessages(owner, 3))
				if err == nil {
					return
				}
				if !errors.Is(err, store.ErrLocked) {
					t.Error(err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	all, err := s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Len(t, all, 3*writers)
	for i := 0; i < len(all); i += 3 {
		owner := all[i].ID[:2]
		require.Equal(t, []string{owner + "_000", owner + "_001", owner + "_002"}, ids(all[i:i+3]))
	}
}

// Appends larger than one write (60 items) and items larger than a row
// (400 KB of random text) come back whole and in order.
func testConvLarge(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, nil)
	items := convMessages("n", 60)
	rng := rand.New(rand.NewPCG(7, 24))
	items[30] = textMessage("n_030", RandomText(rng, 400<<10))
	require.NoError(t, appendAs(ctx, s, id, "r", items))
	all, err := s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Equal(t, ids(items), ids(all))
	require.Equal(t, items[30].Text(), all[30].Text())
	it, err := s.GetConversationItem(ctx, id, "n_030")
	require.NoError(t, err)
	require.Equal(t, items[30].Text(), it.Text())
	page, err := s.ListConversationItems(ctx, id, api.ListOptions{After: "n_025", Limit: 10, Order: "asc"})
	require.NoError(t, err)
	require.Equal(t, ids(items[26:36]), ids(page.Items))
	require.Equal(t, items[30].Text(), page.Items[4].Text())
	_, err = s.DeleteConversationItem(ctx, id, "n_030")
	require.NoError(t, err)
	require.NoError(t, s.DeleteConversation(ctx, id))
}

// Deleting a conversation whose lock a response holds deletes it; the
// response's append then finds no conversation.
func testConvDeleteLocked(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, convMessages("a", 1))
	_, err := s.LockConversation(ctx, id, "resp_a", time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.NoError(t, s.DeleteConversation(ctx, id))
	require.ErrorIs(t, s.AppendConversationItems(ctx, id, "resp_a", convMessages("b", 1), ""), store.ErrNotFound)
	_, err = s.GetConversation(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testConvTenants(t *testing.T, s store.ConversationStore) {
	acme := tenant.With(t.Context(), "acme")
	globex := tenant.With(t.Context(), "acme#x")
	id := newConv(t, acme, s, convMessages("a", 2))
	for _, err := range []error{
		func() error { _, err := s.GetConversation(globex, id); return err }(),
		func() error { _, err := s.LoadConversationItems(globex, id, 10); return err }(),
		func() error { _, err := s.ListConversationItems(globex, id, api.ListOptions{}); return err }(),
		func() error { _, err := s.GetConversationItem(globex, id, "a_000"); return err }(),
		func() error { _, err := s.DeleteConversationItem(globex, id, "a_000"); return err }(),
		func() error { _, err := s.SetConversationMetadata(globex, id, nil); return err }(),
		func() error { _, err := s.LockConversation(globex, id, "x", time.Now().Add(time.Minute)); return err }(),
		s.AppendConversationItems(globex, id, "x", nil, ""),
		s.DeleteConversation(globex, id),
	} {
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	all, err := s.LoadConversationItems(acme, id, 10)
	require.NoError(t, err)
	require.Len(t, all, 2)
}

func testConvLoadLimit(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, convMessages("a", 5))
	_, err := s.LoadConversationItems(ctx, id, 4)
	require.ErrorIs(t, err, store.ErrTooManyItems)
	all, err := s.LoadConversationItems(ctx, id, 5)
	require.NoError(t, err)
	require.Len(t, all, 5)
}

// Item ids are unique in a conversation: an append that brings an id it
// holds fails whole, and the lock stays with its owner.
func testConvDuplicates(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, convMessages("a", 2))
	_, err := s.LockConversation(ctx, id, "r", time.Now().Add(time.Minute))
	require.NoError(t, err)
	items := append(convMessages("b", 2), convMessages("a", 2)[1])
	err = s.AppendConversationItems(ctx, id, "r", items, "")
	var dup *store.DuplicateItemError
	require.ErrorAs(t, err, &dup)
	require.Equal(t, "a_001", dup.ItemID)
	require.ErrorIs(t, err, store.ErrConflict)
	all, err := s.LoadConversationItems(ctx, id, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a_000", "a_001"}, ids(all), "nothing of the failed append")
	require.NoError(t, s.AppendConversationItems(ctx, id, "r", convMessages("b", 2), ""))
	// A deleted item's id may come again.
	_, err = s.DeleteConversationItem(ctx, id, "a_000")
	require.NoError(t, err)
	require.NoError(t, appendAs(ctx, s, id, "r2", convMessages("a", 1)))
	all, err = s.LoadConversationItems(ctx, id, 10)
	require.NoError(t, err)
	require.Equal(t, []string{"a_001", "b_000", "b_001", "a_000"}, ids(all))

	// A long append (more items than one transaction takes on DynamoDB)
	// that fails at its end leaves nothing of its beginning either; the
	// same items appended again then all go in.
	_, err = s.LockConversation(ctx, id, "r5", time.Now().Add(time.Minute))
	require.NoError(t, err)
	long := convMessages("d", 60)
	err = s.AppendConversationItems(ctx, id, "r5", append(long, convMessages("a", 1)...), "")
	require.ErrorAs(t, err, &dup)
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Equal(t, []string{"a_001", "b_000", "b_001", "a_000"}, ids(all), "nothing of the failed long append")
	require.NoError(t, s.AppendConversationItems(ctx, id, "r5", long, ""))
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Len(t, all, 64)
	require.Equal(t, "d_059", all[63].ID)

	// An mcp_call a failed long append brought (its rows left above the
	// end, then passed by a later append) is not held: appended again, it
	// goes at the end and replaces nothing.
	_, err = s.LockConversation(ctx, id, "r6", time.Now().Add(time.Minute))
	require.NoError(t, err)
	stray := api.Item{Type: api.ItemMCPCall, ID: "mcp_s", Status: api.ItemInProgress, ServerLabel: "lambent", Name: "search", Arguments: "{}"}
	err = s.AppendConversationItems(ctx, id, "r6", append(append([]api.Item{stray}, convMessages("e", 59)...), convMessages("a", 1)...), "")
	require.ErrorAs(t, err, &dup)
	require.NoError(t, s.AppendConversationItems(ctx, id, "r6", convMessages("y", 1), ""))
	require.NoError(t, appendAs(ctx, s, id, "r7", []api.Item{stray}))
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	require.Equal(t, []string{"y_000", "mcp_s"}, ids(all[len(all)-2:]), "the item after the failed append stays, the stray call is appended")
	// An id of the failed append is no item: no cursor either, in either
	// order (DynamoDB: its id row, left above the end then passed, points
	// at another item's row).
	for _, order := range []string{"asc", "desc"} {
		_, err = s.ListConversationItems(ctx, id, api.ListOptions{After: "e_000", Order: order})
		require.ErrorIs(t, err, store.ErrInvalidCursor, "order %s", order)
	}
	_, err = s.GetConversationItem(ctx, id, "e_000")
	require.ErrorIs(t, err, store.ErrNotFound)

	// An mcp_call the conversation holds (a call paused with its turn)
	// is replaced in place by its executed version, with the items after
	// it appended (store.Replaces).
	open := api.Item{Type: api.ItemMCPCall, ID: "mcp_p", Status: api.ItemInProgress, ServerLabel: "lambent", Name: "search", Arguments: "{}",
		Hidden: api.ItemHidden{ModelCallID: "call_p", TurnStart: true}}
	require.NoError(t, appendAs(ctx, s, id, "r3", []api.Item{open}))
	done := open
	done.Status, done.Output = api.ItemCompleted, "found"
	require.NoError(t, appendAs(ctx, s, id, "r4", append([]api.Item{done}, convMessages("c", 1)...)))
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	all = all[len(all)-2:]
	require.Equal(t, []string{"mcp_p", "c_000"}, ids(all))
	assert.Equal(t, api.ItemCompleted, all[0].Status)
	assert.Equal(t, "found", all[0].Output)
	assert.Equal(t, open.Hidden, all[0].Hidden)

	// A long append that replaces a held call and fails at its end leaves
	// the held call as it was too.
	again := done
	again.Output = "found again"
	_, err = s.LockConversation(ctx, id, "r8", time.Now().Add(time.Minute))
	require.NoError(t, err)
	err = s.AppendConversationItems(ctx, id, "r8", append(append([]api.Item{again}, convMessages("f", 60)...), convMessages("a", 1)...), "")
	require.ErrorAs(t, err, &dup)
	all, err = s.LoadConversationItems(ctx, id, 100)
	require.NoError(t, err)
	i := slices.IndexFunc(all, func(it api.Item) bool { return it.ID == "mcp_p" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, "found", all[i].Output, "nothing of the failed append, its replacement included")
}

// The items' fields beyond their wire shape (api.ItemHidden: the call id
// the model issued, the mark of a turn's first call) come back as they
// were appended, inline and in chunks.
func testConvHidden(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, nil)
	rng := rand.New(rand.NewPCG(3, 5))
	items := []api.Item{
		{Type: api.ItemMCPCall, ID: "mcp_1", Status: api.ItemCompleted, ServerLabel: api.HostedServerLabel, Name: "calc", Arguments: "{}", Output: "4",
			Hidden: api.ItemHidden{ModelCallID: "call_a", TurnStart: true}},
		{Type: api.ItemMCPCall, ID: "mcp_2", Status: api.ItemCompleted, ServerLabel: api.HostedServerLabel, Name: "calc", Arguments: "{}", Output: RandomText(rng, 400<<10),
			Hidden: api.ItemHidden{ModelCallID: "call_b"}},
		textMessage("m_3", "done"),
		// A listing the gateway made (an operator's MCP server trusts no other).
		{Type: api.ItemMCPListTools, ID: "mcpl_5", Status: api.ItemCompleted, ServerLabel: "ops", Tools: []api.MCPTool{{Name: "add", InputSchema: json.RawMessage(`{"type":"object"}`)}},
			Hidden: api.ItemHidden{Listed: true}},
		// A reasoning item's state hidden from the client.
		{Type: api.ItemReasoning, ID: "rs_4", Status: api.ItemCompleted, Content: []api.ContentPart{{Type: api.PartReasoningText, Text: "hm"}},
			Hidden: api.ItemHidden{Encrypted: "bedrock.v1:sig:abc"}},
	}
	require.NoError(t, appendAs(ctx, s, id, "r", items))
	all, err := s.LoadConversationItems(ctx, id, 10)
	require.NoError(t, err)
	require.Len(t, all, 5)
	for i := range items {
		require.Equal(t, items[i].Hidden, all[i].Hidden, "item %d", i)
	}
	require.Empty(t, all[4].EncryptedContent, "the hidden state stays hidden")
}

// The conversation's Cut is the one its last append with items gave it:
// an append without items (a lock released) leaves it, an append with
// items and no cut clears it. Get and Lock return it.
func testConvCut(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	id := newConv(t, ctx, s, convMessages("a", 2))
	cutOf := func() string {
		t.Helper()
		c, err := s.GetConversation(ctx, id)
		require.NoError(t, err)
		return c.Cut
	}
	require.Empty(t, cutOf())
	lock := func(owner string) *store.Conversation {
		t.Helper()
		c, err := s.LockConversation(ctx, id, owner, time.Now().Add(time.Minute))
		require.NoError(t, err)
		return c
	}
	lock("r1")
	require.NoError(t, s.AppendConversationItems(ctx, id, "r1", convMessages("b", 2), "a_001"))
	require.Equal(t, "a_001", cutOf())
	require.Equal(t, "a_001", lock("r2").Cut)
	require.NoError(t, s.AppendConversationItems(ctx, id, "r2", nil, ""))
	require.Equal(t, "a_001", cutOf(), "a lock released without items leaves the cut")
	lock("r3")
	require.NoError(t, s.AppendConversationItems(ctx, id, "r3", convMessages("c", 1), ""))
	require.Empty(t, cutOf(), "a turn without a cut clears it")
}

// testConvMetadataKeys: any metadata the API accepts round-trips, an empty
// key and an empty value included. (DynamoDB refuses an empty key in a map
// attribute: a create or update holding one was a 500.)
func testConvMetadataKeys(t *testing.T, s store.ConversationStore) {
	ctx := t.Context()
	md := map[string]string{"": "empty key", "k": "", "ключ": "значение"}
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix(), Metadata: md}
	require.NoError(t, s.CreateConversation(ctx, c, nil))
	got, err := s.GetConversation(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, md, got.Metadata)

	md = map[string]string{"": ""}
	got, err = s.SetConversationMetadata(ctx, c.ID, md)
	require.NoError(t, err)
	require.Equal(t, md, got.Metadata)
	got, err = s.GetConversation(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, md, got.Metadata)
}
