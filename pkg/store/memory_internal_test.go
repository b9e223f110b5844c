package store

import (
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tenant"
)

// TestMemoryEntryHoldsItsCopy: a created entry's response is the copy it
// holds itself (one allocation), and an Update, which stores a copy of
// its own, clears that one so that nothing it refers to stays held.
func TestMemoryEntryHoldsItsCopy(t *testing.T) {
	ctx := t.Context()
	m := NewMemory(MemoryConfig{})
	usage := api.Usage{InputTokens: 3}
	rec := &Record{Response: &api.Response{ID: "resp_a", Status: api.StatusInProgress, Usage: &usage,
		Output:  []api.Item{{Type: api.ItemMessage, ID: "msg_a"}},
		Lambent: &api.LambentInfo{Timing: &api.Timing{DurationMS: 5}}}}
	if err := m.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	e := m.entries[memKey{tenant.Default, "resp_a"}].Value.(*memEntry)
	if r := e.rec.Response; r != &e.created.resp || r.Usage != &e.created.usage ||
		r.Lambent != &e.created.lambent || r.Lambent.Timing != &e.created.timing {
		t.Fatal("the created entry's response is not its own copy")
	}
	rec.Response.Status = api.StatusCompleted
	if err := m.Update(ctx, rec, api.StatusInProgress); err != nil {
		t.Fatal(err)
	}
	if e.rec.Response == &e.created.resp || e.created.resp.Output != nil || e.created.resp.ID != "" {
		t.Fatal("the created copy is still held after an Update")
	}
	got, err := m.Get(ctx, "resp_a")
	if err != nil {
		t.Fatal(err)
	}
	if got.Response.Status != api.StatusCompleted || got.Response.Usage.InputTokens != 3 || got.Response.Output[0].ID != "msg_a" {
		t.Fatalf("after the Update: %+v", got.Response)
	}
}
