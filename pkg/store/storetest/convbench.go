package storetest

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
)

// ConvTurn is one turn of a conversation: a user message and an assistant
// message of about 2 KB of text each (some 500 tokens each way).
func ConvTurn(rng *mrand.Rand, turn int) []api.Item {
	return []api.Item{
		{Type: api.ItemMessage, ID: fmt.Sprintf("msg_in_%d", turn), Status: api.ItemCompleted, Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: Words(rng, 2<<10)}}},
		{Type: api.ItemMessage, ID: fmt.Sprintf("msg_out_%d", turn), Status: api.ItemCompleted, Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: Words(rng, 2<<10)}}},
	}
}

// AppendTurn appends one turn as a response does: it takes the lock, then
// appends (which releases it).
func AppendTurn(ctx context.Context, s store.ConversationStore, id string, items []api.Item) error {
	owner := api.NewID(api.PrefixResponse)
	if _, err := s.LockConversation(ctx, id, owner, time.Now().Add(time.Minute)); err != nil {
		return err
	}
	return s.AppendConversationItems(ctx, id, owner, items, "")
}

// BenchConversation runs the conversation benchmarks on s; units (nil for
// stores without them) returns and resets the units spent so far.
func BenchConversation(b *testing.B, s store.ConversationStore, units func() (wcu, rcu float64)) {
	ctx := b.Context()
	rng := mrand.New(mrand.NewPCG(7, 7))
	report := func(b *testing.B, n int) {
		if units == nil {
			return
		}
		w, r := units()
		b.ReportMetric(w/float64(n), "WCU/op")
		b.ReportMetric(r/float64(n), "RCU/op")
	}
	for _, turns := range []int{10, 100} {
		id := api.NewID(api.PrefixConversation)
		require.NoError(b, s.CreateConversation(ctx, &store.Conversation{ID: id, CreatedAt: time.Now().Unix()}, nil))
		for turn := range turns {
			require.NoError(b, AppendTurn(ctx, s, id, ConvTurn(rng, turn)))
		}
		next := turns
		b.Run(fmt.Sprintf("turns=%d/append-turn", turns), func(b *testing.B) {
			pool := make([][]api.Item, 8)
			for i := range pool {
				pool[i] = ConvTurn(rng, i)
			}
			units = resetUnits(units)
			n := 0
			for b.Loop() {
				items := slices.Clone(pool[n%len(pool)])
				for i := range items {
					items[i].ID = fmt.Sprintf("msg_%d_%d", next, i)
				}
				next++
				if err := AppendTurn(ctx, s, id, items); err != nil {
					b.Fatal(err)
				}
				n++
			}
			report(b, n)
		})
		b.Run(fmt.Sprintf("turns=%d/list-page-20", turns), func(b *testing.B) {
			units = resetUnits(units)
			n := 0
			for b.Loop() {
				if _, err := s.ListConversationItems(ctx, id, api.ListOptions{Limit: 20}); err != nil {
					b.Fatal(err)
				}
				n++
			}
			report(b, n)
		})
		b.Run(fmt.Sprintf("turns=%d/load-context", turns), func(b *testing.B) {
			units = resetUnits(units)
			n := 0
			for b.Loop() {
				if _, err := s.LoadConversationItems(ctx, id, 10_000); err != nil {
					b.Fatal(err)
				}
				n++
			}
			report(b, n)
		})
	}
}

// resetUnits drops the units spent so far (setup's) and returns units.
func resetUnits(units func() (float64, float64)) func() (float64, float64) {
	if units != nil {
		units()
	}
	return units
}
