package dynamodb

import (
	"encoding/json"
	"fmt"
	mrand "math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
)

func jsonBytes(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// The figures of a 100-turn conversation on DynamoDB Local: appending a
// turn costs the same calls and units at turn 1, 10 and 100; listing a page
// of 20 items too (with or without a cursor); loading the model's context
// grows with the conversation. Beside them, the reference: what the same
// turn costs as a previous_response_id chain (the new response's record
// holds the whole conversation). It fails when appending or listing grows
// with the conversation.
func TestConversationBudget(t *testing.T) {
	t.Parallel()
	c := newCounter()
	s := newStore(t, c.Options)
	ctx := t.Context()
	rng := mrand.New(mrand.NewPCG(24, 24))
	conv := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
	require.NoError(t, s.CreateConversation(ctx, conv, nil))
	measure := func(fn func() error) (calls int, wcu, rcu float64) {
		t.Helper()
		c.Reset()
		require.NoError(t, fn())
		f := c.Snapshot()
		return f.Requests(), f.WCU, f.RCU
	}
	var history []api.Item
	type row struct{ calls, wcu, rcu float64 }
	appends, pages := map[int]row{}, map[int]row{}
	t.Logf("%-6s  %-26s  %-26s  %-26s  %-30s", "turn", "append turn (calls WCU RCU)", "list page of 20", "list page after cursor", "load context (calls RCU, KB)")
	for turn := 1; turn <= 100; turn++ {
		items := storetest.ConvTurn(rng, turn)
		calls, w, r := measure(func() error { return storetest.AppendTurn(ctx, s, conv.ID, items) })
		appends[turn] = row{float64(calls), w, r}
		history = append(history, items...)
		if turn != 1 && turn != 10 && turn != 50 && turn != 100 {
			continue
		}
		pc, pw, pr := measure(func() error {
			_, err := s.ListConversationItems(ctx, conv.ID, api.ListOptions{Limit: 20})
			return err
		})
		pages[turn] = row{float64(pc), pw, pr}
		cc, _, cr := measure(func() error {
			_, err := s.ListConversationItems(ctx, conv.ID, api.ListOptions{Limit: 20, Order: "asc", After: history[len(history)/2].ID})
			return err
		})
		lc, _, lr := measure(func() error {
			got, err := s.LoadConversationItems(ctx, conv.ID, 1000)
			require.Len(t, got, len(history))
			return err
		})
		t.Logf("%-6d  %-26s  %-26s  %-26s  %-30s", turn,
			fmt.Sprintf("%d %.0f %.1f (%d B)", calls, w, r, jsonBytes(items)),
			fmt.Sprintf("%d %.0f %.1f", pc, pw, pr),
			fmt.Sprintf("%d 0 %.1f", cc, cr),
			fmt.Sprintf("%d %.1f (%d KB)", lc, lr, jsonBytes(history)>>10))
	}
	// The reference: the 100th turn as a previous_response_id chain.
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	rec.Context = history[:len(history)-2]
	rec.Input, rec.Response.Output = history[len(history)-2:len(history)-1], history[len(history)-1:]
	calls, w, _ := measure(func() error { return s.Create(ctx, rec) })
	t.Logf("reference, turn 100 as a previous_response_id chain: create %d calls, %.0f WCU (the record holds the whole conversation)", calls, w)
	for _, turn := range []int{10, 50, 100} {
		require.Equal(t, appends[1], appends[turn], "appending turn %d costs what turn 1 did", turn)
	}
	require.Equal(t, pages[10], pages[100], "a page at turn 100 costs what it did at turn 10")
}

// BenchmarkConversation measures a conversation on DynamoDB Local at 10
// and 100 turns: appending a turn, listing a page of 20 items, and loading
// the whole context, each with the capacity units DynamoDB reports per
// operation (WCU/op, RCU/op) beside µs/op. Run: make bench-conversations.
func BenchmarkConversation(b *testing.B) {
	c := newCounter()
	s := newStore(b, c.Options)
	storetest.BenchConversation(b, s, func() (float64, float64) {
		f := c.Snapshot()
		c.Reset()
		return f.WCU, f.RCU
	})
}
