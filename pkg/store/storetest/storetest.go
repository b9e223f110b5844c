// Package storetest is the conformance suite of store.ResponseStore: every
// implementation runs Run in its tests, so all of them behave the same.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.ResponseStore { return newStore(t) })
//	}
//
// Subtests run in parallel; newStore is called once per subtest and should
// return a fresh, empty store.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// Option adjusts Run.
type Option func(*options)

type options struct {
	skip map[string]bool
}

// Skip leaves the named subtests out, for a second run of the suite over a
// variant of a store that only needs part of it.
func Skip(names ...string) Option {
	return func(o *options) {
		for _, n := range names {
			o.skip[n] = true
		}
	}
}

// Run runs the conformance suite against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) store.ResponseStore, opts ...Option) {
	o := options{skip: map[string]bool{}}
	for _, opt := range opts {
		opt(&o)
	}
	// The longest first: parallel subtests start in this order, a few at
	// a time (go test -parallel), so the rest runs beside them.
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.ResponseStore)
	}{
		{"Chain50Turns", testChain50},
		{"BigOutput5MB", testBigOutput},
		{"EventLogLarge", testEventLogLarge},
		{"UpdateLarge", testUpdateLarge},
		{"RoundTrip", testRoundTrip},
		{"SetAsideItems", testSetAsideItems},
		{"Cut", testCut},
		{"CopiesAreIndependent", testCopies},
		{"InvalidRecord", testInvalidRecord},
		{"CreateConflict", testCreateConflict},
		{"NotFound", testNotFound},
		{"Delete", testDelete},
		{"UpdateStateMachine", testUpdateStateMachine},
		{"UpdateCheckpoint", testUpdateCheckpoint},
		{"Versions", testVersions},
		{"ConcurrentCheckpoints", testConcurrentCheckpoints},
		{"Job", testJob},
		{"EventLog", testEventLog},
		{"StaleClaimAppends", testStaleClaimAppends},
		{"RunSignals", testRunSignals},
		{"ConcurrentStatusWrites", testConcurrentStatusWrites},
		{"ConcurrentForks", testConcurrentForks},
		{"Expiry", testExpiry},
		{"TenantIsolation", testTenantIsolation},
		{"Pagination", testPagination},
	}
	for _, tc := range tests {
		if o.skip[tc.name] {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// NewRecord returns a record in the given status with one item of every
// kind in its output, input and context, and most optional response fields
// set. Tests and benchmarks of stores use it as "a normal response".
func NewRecord(id string, status api.Status) *store.Record {
	instr := "Answer briefly."
	prev := api.NewID(api.PrefixResponse)
	maxOut := 1024
	resp := &api.Response{
		ID:                 id,
		Object:             "response",
		CreatedAt:          time.Now().Unix(),
		Status:             status,
		Model:              "test-model",
		PreviousResponseID: &prev,
		Instructions:       &instr,
		Output: []api.Item{
			{Type: api.ItemReasoning, ID: "rs_" + id, Summary: []api.ContentPart{{Type: api.PartSummaryText, Text: "The user wants the weather."}},
				Hidden: api.ItemHidden{Encrypted: "bedrock.v1:sig:c2lnbmF0dXJl"}},
			{Type: api.ItemFunctionCall, ID: "fc_" + id, Status: api.ItemCompleted, CallID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Type: api.ItemMessage, ID: "msg_" + id, Status: api.ItemCompleted, Role: api.RoleAssistant, Content: []api.ContentPart{
				{Type: api.PartOutputText, Text: "It is <sunny> & 21 °C in Paris \u2028 \"quoted\" ✓", Annotations: []json.RawMessage{json.RawMessage(`{"type":"url_citation","url":"https://example.com"}`)}},
			}},
		},
		Tools:             []api.Tool{{Type: api.ToolFunction, Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		ToolChoice:        api.ToolChoice{Mode: api.ToolChoiceAuto},
		Truncation:        "disabled",
		ParallelToolCalls: true,
		Text:              api.TextConfig{Format: api.TextFormat{Type: api.FormatText}},
		TopP:              1,
		Temperature:       0.7,
		Usage:             &api.Usage{InputTokens: 42, OutputTokens: 17, TotalTokens: 59, OutputTokensDetails: api.OutputTokensDetails{ReasoningTokens: 5}},
		MaxOutputTokens:   &maxOut,
		Store:             true,
		ServiceTier:       "default",
		Metadata:          map[string]string{"customer": "acme", "trace": id},
	}
	if status.Terminal() {
		done := resp.CreatedAt + 2
		resp.CompletedAt = &done
	}
	return &store.Record{
		Response: resp,
		Input: []api.Item{
			{Type: api.ItemFunctionCallOutput, ID: "fco_" + id, CallID: "call_0", Output: `{"temp":21}`, Status: api.ItemCompleted},
			{Type: api.ItemMessage, ID: "msg_in_" + id, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "And tomorrow?"}}},
			// Items of OpenAI's hosted tools a client replays, kept as
			// they came.
			{Type: api.ItemWebSearchCall, ID: "ws_" + id, Status: api.ItemCompleted, Action: json.RawMessage(`{"type":"search","query":"weather: Paris","queries":["weather: Paris"]}`)},
			{Type: api.ItemToolSearchCall, ID: "tsc_" + id, Status: api.ItemCompleted, Execution: "server", Arguments: `{"paths":["crm"]}`},
			{Type: api.ItemToolSearchOutput, ID: "tso_" + id, Status: api.ItemCompleted, Execution: "server",
				OutputRaw: json.RawMessage(`[{"type":"namespace","name":"crm","tools":[{"type":"function","name":"lookup","defer_loading":true}]}]`)},
		},
		Context: []api.Item{
			{Type: api.ItemMessage, ID: "msg_c1", Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "Weather in Paris?"}}},
			{Type: api.ItemFunctionCall, ID: "fc_c1", Status: api.ItemCompleted, CallID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Type: api.ItemFunctionCallOutput, ID: "fco_c1", CallID: "call_0", OutputParts: []api.ContentPart{{Type: api.PartInputText, Text: "sunny"}}, IsError: true},
		},
	}
}

// MustJSON returns v's JSON.
func MustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// RequireSameRecord fails unless got's Response, Input, Context and Job
// have exactly want's JSON, and got has want's hidden fields and Cut.
func RequireSameRecord(t testing.TB, want, got *store.Record) {
	t.Helper()
	require.NotNil(t, got)
	require.NotNil(t, got.Response)
	for _, c := range []struct {
		name      string
		want, got any
	}{
		{"response", want.Response, got.Response},
		{"input", want.Input, got.Input},
		{"context", want.Context, got.Context},
		{"job", want.Job, got.Job},
	} {
		w, g := MustJSON(t, c.want), MustJSON(t, c.got)
		if !bytes.Equal(w, g) {
			t.Fatalf("%s differs after the round trip (%d bytes stored, %d bytes read)\nwant: %.2000s\n got: %.2000s", c.name, len(w), len(g), w, g)
		}
	}
	// The items' hidden fields, which their JSON leaves out.
	require.Equal(t, api.HiddenByID(want.Context, want.Input, want.Response.Output), api.HiddenByID(got.Context, got.Input, got.Response.Output), "hidden fields")
	require.Equal(t, want.Cut, got.Cut, "cut")
}

func newID() string { return api.NewID(api.PrefixResponse) }

func create(t *testing.T, s store.ResponseStore, ctx context.Context, rec *store.Record) {
	t.Helper()
	require.NoError(t, s.Create(ctx, rec))
}

// Output items set aside by validated output (api.ItemHidden.Aside) are
// kept in order with the others, which a resumed run gives the model; a
// continuation (Conversation) and the response's JSON leave them out.
func testSetAsideItems(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	want := NewRecord(newID(), api.StatusInProgress)
	aside := []api.Item{
		{Type: api.ItemMessage, ID: "msg_failed", Status: api.ItemCompleted, Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: "not json"}}, Hidden: api.ItemHidden{Aside: true}},
		{Type: api.ItemMessage, ID: "msg_feedback", Status: api.ItemCompleted, Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "Your answer failed validation."}}, Hidden: api.ItemHidden{Aside: true}},
	}
	shown := want.Response.Output
	want.Response.Output = append(slices.Clone(aside), shown...)
	create(t, s, ctx, want)
	got, err := s.Get(ctx, want.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, want, got)
	ids := func(items []api.Item) []string {
		out := make([]string, len(items))
		for i := range items {
			out[i] = items[i].ID
		}
		return out
	}
	require.Equal(t, ids(want.Response.Output), ids(got.Response.Output), "every output item, in order")
	assert.Equal(t, "not json", got.Response.Output[0].Text())
	assert.True(t, got.Response.Output[1].Hidden.Aside)
	conv := got.Conversation()
	assert.Equal(t, ids(shown), ids(conv[len(conv)-len(shown):]), "a continuation gets the output shown")
	assert.Len(t, conv, len(want.Context)+len(want.Input)+len(shown))
	assert.NotContains(t, string(MustJSON(t, got.Response)), "msg_failed")
}

// The record's Cut (the id of the first item the model saw after
// truncation cut its view) is kept by Create and Update, and an Update
// without one clears it; it is not in the response's JSON.
func testCut(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusInProgress)
	rec.Cut = rec.Context[0].ID
	create(t, s, ctx, rec)
	got, err := s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, rec, got)
	assert.NotContains(t, string(MustJSON(t, got.Response)), `"cut"`)
	for _, cut := range []string{rec.Input[1].ID, ""} {
		next := *got
		next.Cut = cut
		require.NoError(t, s.Update(ctx, &next, api.StatusInProgress))
		if got, err = s.Get(ctx, rec.Response.ID); err != nil {
			t.Fatal(err)
		}
		assert.Equal(t, cut, got.Cut)
	}
}

func testRoundTrip(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	for _, st := range []api.Status{api.StatusCompleted, api.StatusRequiresAction, api.StatusInProgress, api.StatusQueued} {
		want := NewRecord(newID(), st)
		create(t, s, ctx, want)
		got, err := s.Get(ctx, want.Response.ID)
		require.NoError(t, err)
		RequireSameRecord(t, want, got)
		assert.Equal(t, st, got.Response.Status)
		assert.True(t, got.ExpiresAt.After(time.Now()), "a record without ExpiresAt gets the default retention; got %v", got.ExpiresAt)
		assert.True(t, want.ExpiresAt.Equal(got.ExpiresAt), "Create sets the record's ExpiresAt to the stored expiry: %v, stored %v", want.ExpiresAt, got.ExpiresAt)
		conv := got.Conversation()
		require.Len(t, conv, len(want.Context)+len(want.Input)+len(want.Response.Output))
	}
	// A minimal response (nil slices and maps, no optional fields).
	minimal := &store.Record{Response: &api.Response{ID: newID(), Object: "response", Status: api.StatusCompleted, Model: "m"}}
	create(t, s, ctx, minimal)
	got, err := s.Get(ctx, minimal.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, minimal, got)
	assert.Empty(t, got.Input)
	assert.Empty(t, got.Context)
}

func testCopies(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusCompleted)
	rec.Response.Lambent = &api.LambentInfo{
		Attempts:      []api.Attempt{{Number: 1, Errors: []string{"too short"}}},
		Cancelled:     &api.Cancellation{Phase: "model", Attempt: 1},
		HookErrors:    []string{"hook failed"},
		Usage:         &api.LambentUsage{CacheWriteInputTokens: 3},
		Timing:        &api.Timing{StartedAt: time.Unix(1, 0).UTC(), EndedAt: time.Unix(2, 0).UTC(), DurationMS: 1000},
		UnservedTools: []string{"web_search"},
	}
	want := MustJSON(t, rec.Response)
	wantIn := MustJSON(t, rec.Input)
	wantCtx := MustJSON(t, rec.Context)
	create(t, s, ctx, rec)

	// Mutating the caller's record after Create changes nothing stored.
	rec.Response.Status = api.StatusFailed
	rec.Response.Output[0].ID = "changed"
	rec.Response.Output = append(rec.Response.Output, api.Item{Type: api.ItemMessage, ID: "extra"})
	rec.Response.Metadata["customer"] = "changed"
	*rec.Response.Instructions = "changed"
	rec.Response.Usage.TotalTokens = -1
	*rec.Response.CompletedAt = -1
	*rec.Response.MaxOutputTokens = -1
	rec.Input[0].ID = "changed"
	rec.Context[0].ID = "changed"
	changeLambent := func(l *api.LambentInfo) {
		l.Attempts[0].Number, l.Attempts[0].Errors[0] = 9, "changed"
		l.Attempts = append(l.Attempts, api.Attempt{Number: 2})
		l.Cancelled.Phase = "changed"
		l.HookErrors[0], l.UnservedTools[0] = "changed", "changed"
		l.Usage.CacheWriteInputTokens = -1
		l.Timing.DurationMS = -1
	}
	changeLambent(rec.Response.Lambent)

	got, err := s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(MustJSON(t, got.Response)))
	require.JSONEq(t, string(wantIn), string(MustJSON(t, got.Input)))
	require.JSONEq(t, string(wantCtx), string(MustJSON(t, got.Context)))

	// Mutating a record returned by Get changes nothing stored either,
	// and appending to one of its item slices changes none of the others.
	got.Response.Status = api.StatusFailed
	got.Response.Output[0].ID = "changed"
	got.Response.Metadata["customer"] = "changed"
	got.Response.Usage.TotalTokens = -1
	*got.Response.CompletedAt = -1
	got.Input[0].ID = "changed"
	got.Context[0].ID = "changed"
	changeLambent(got.Response.Lambent)
	got.Input = append(got.Input, api.Item{Type: api.ItemMessage, ID: "extra_in"})
	got.Context = append(got.Context, api.Item{Type: api.ItemMessage, ID: "extra_ctx"})
	require.Equal(t, "changed", got.Input[0].ID)
	require.Equal(t, "changed", got.Context[0].ID)
	require.Equal(t, "changed", got.Response.Output[0].ID)
	again, err := s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(MustJSON(t, again.Response)))
	require.JSONEq(t, string(wantIn), string(MustJSON(t, again.Input)))
	require.JSONEq(t, string(wantCtx), string(MustJSON(t, again.Context)))

	// The same after an Update.
	running := NewRecord(newID(), api.StatusInProgress)
	create(t, s, ctx, running)
	upd, err := s.Get(ctx, running.Response.ID)
	require.NoError(t, err)
	upd.Response.Status = api.StatusCompleted
	done := upd.Response.CreatedAt + 1
	upd.Response.CompletedAt = &done
	upd.Response.Output = append(upd.Response.Output, api.Item{Type: api.ItemMessage, ID: "msg_upd", Role: api.RoleAssistant})
	want, wantIn = MustJSON(t, upd.Response), MustJSON(t, upd.Input)
	require.NoError(t, s.Update(ctx, upd, api.StatusInProgress))
	upd.Response.Output[0].ID = "changed"
	upd.Response.Usage.TotalTokens = -1
	*upd.Response.CompletedAt = -1
	upd.Input[0].ID = "changed"
	after, err := s.Get(ctx, running.Response.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(MustJSON(t, after.Response)))
	require.JSONEq(t, string(wantIn), string(MustJSON(t, after.Input)))
	after.Input = append(after.Input, api.Item{Type: api.ItemMessage, ID: "extra_in"})
	require.Equal(t, "msg_c1", after.Context[0].ID, "appending to Input wrote over Context")
}

func testInvalidRecord(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	require.Error(t, s.Create(ctx, nil))
	require.Error(t, s.Create(ctx, &store.Record{}))
	require.Error(t, s.Create(ctx, &store.Record{Response: &api.Response{Status: api.StatusCompleted}}))
	require.Error(t, s.Create(ctx, &store.Record{Response: &api.Response{ID: newID(), Status: "bogus"}}))
	require.Error(t, s.Update(ctx, nil, api.StatusInProgress))
}

func testCreateConflict(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	first := NewRecord(newID(), api.StatusCompleted)
	create(t, s, ctx, first)
	second := NewRecord(first.Response.ID, api.StatusFailed)
	second.Response.Output = nil
	err := s.Create(ctx, second)
	require.ErrorIs(t, err, store.ErrConflict)
	got, err := s.Get(ctx, first.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, first, got)
}

func testNotFound(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	id := newID()
	_, err := s.Get(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, id), store.ErrNotFound)
	_, err = s.ListInputItems(ctx, id, api.ListOptions{})
	require.ErrorIs(t, err, store.ErrNotFound)
	rec := NewRecord(id, api.StatusCompleted)
	require.ErrorIs(t, s.Update(ctx, rec, api.StatusInProgress), store.ErrNotFound)
	// An illegal transition of an absent record is still "not found".
	require.ErrorIs(t, s.Update(ctx, rec, api.StatusCompleted), store.ErrNotFound)
	_, err = s.Get(ctx, "")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testDelete(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	for _, size := range []int{0, 1 << 20} {
		t.Run(fmt.Sprintf("output%dB", size), func(t *testing.T) {
			rec := NewRecord(newID(), api.StatusInProgress)
			if size > 0 {
				rec.Response.Output = append(rec.Response.Output, textMessage("msg_big", RandomText(rand.New(rand.NewPCG(1, 2)), size)))
			}
			id := rec.Response.ID
			create(t, s, ctx, rec)
			require.NoError(t, s.Delete(ctx, id))

			_, err := s.Get(ctx, id)
			require.ErrorIs(t, err, store.ErrNotFound)
			_, err = s.ListInputItems(ctx, id, api.ListOptions{})
			require.ErrorIs(t, err, store.ErrNotFound)
			upd := NewRecord(id, api.StatusCompleted)
			require.ErrorIs(t, s.Update(ctx, upd, api.StatusInProgress), store.ErrNotFound)
			require.ErrorIs(t, s.Delete(ctx, id), store.ErrNotFound)

			// The id is free again, and nothing of the old record leaks into a new one.
			again := NewRecord(id, api.StatusCompleted)
			create(t, s, ctx, again)
			got, err := s.Get(ctx, id)
			require.NoError(t, err)
			RequireSameRecord(t, again, got)
		})
	}
}

func testUpdateStateMachine(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusQueued)
	id := rec.Response.ID
	create(t, s, ctx, rec)
	var version int64 // of the stored record

	// next returns a record with status to at the stored version.
	next := func(to api.Status) *store.Record {
		n := NewRecord(id, to)
		n.Version = version
		return n
	}
	step := func(from, to api.Status) *store.Record {
		t.Helper()
		n := next(to)
		n.Response.Output = append(n.Response.Output, textMessage("msg_"+string(to), "now "+string(to)))
		require.NoError(t, s.Update(ctx, n, from), "%s -> %s", from, to)
		require.Equal(t, version+1, n.Version, "Update increments rec.Version")
		version = n.Version
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		RequireSameRecord(t, n, got)
		require.Equal(t, version, got.Version)
		return n
	}

	// An illegal transition (queued -> completed) is a conflict and changes nothing.
	require.ErrorIs(t, s.Update(ctx, next(api.StatusCompleted), api.StatusQueued), store.ErrConflict)
	// A wrong expected status is a conflict.
	require.ErrorIs(t, s.Update(ctx, next(api.StatusCompleted), api.StatusInProgress), store.ErrConflict)
	got, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, api.StatusQueued, got.Response.Status)
	require.Equal(t, int64(0), got.Version)

	step(api.StatusQueued, api.StatusInProgress)
	final := step(api.StatusInProgress, api.StatusRequiresAction)

	// A terminal response is never rewritten: not to another status, not
	// with the same status, whatever expect says.
	for _, to := range []api.Status{api.StatusCompleted, api.StatusRequiresAction, api.StatusInProgress, api.StatusCancelled} {
		for _, expect := range []api.Status{api.StatusRequiresAction, api.StatusInProgress} {
			err := s.Update(ctx, next(to), expect)
			require.ErrorIs(t, err, store.ErrConflict, "%s -> %s must not be stored", expect, to)
		}
	}
	got, err = s.Get(ctx, id)
	require.NoError(t, err)
	RequireSameRecord(t, final, got)

	// queued -> cancelled is allowed (cancelling a background response).
	q := NewRecord(newID(), api.StatusQueued)
	create(t, s, ctx, q)
	c := NewRecord(q.Response.ID, api.StatusCancelled)
	require.NoError(t, s.Update(ctx, c, api.StatusQueued))
	again := NewRecord(q.Response.ID, api.StatusInProgress)
	again.Version = c.Version
	require.ErrorIs(t, s.Update(ctx, again, api.StatusQueued), store.ErrConflict)
}

func testUpdateCheckpoint(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusInProgress)
	id := rec.Response.ID
	create(t, s, ctx, rec)
	version := rec.Version
	for i := range 3 {
		next := NewRecord(id, api.StatusInProgress)
		next.Version = version
		next.Response.Output = append(next.Response.Output, textMessage(fmt.Sprintf("msg_cp%d", i), fmt.Sprintf("checkpoint %d", i)))
		require.NoError(t, s.Update(ctx, next, api.StatusInProgress))
		version = next.Version
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		RequireSameRecord(t, next, got)
		assert.True(t, next.ExpiresAt.Equal(got.ExpiresAt), "Update sets the record's ExpiresAt to the stored expiry: %v, stored %v", next.ExpiresAt, got.ExpiresAt)
	}
	done := NewRecord(id, api.StatusCompleted)
	done.Version = version
	require.NoError(t, s.Update(ctx, done, api.StatusInProgress))
	after := NewRecord(id, api.StatusCompleted)
	after.Version = done.Version
	require.ErrorIs(t, s.Update(ctx, after, api.StatusCompleted), store.ErrConflict)
}

// testVersions checks Record.Version: Create stores 0, Update needs the
// stored version and stores the next, and a stale writer loses even when
// the status matches (a read-modify-write cycle cannot lose an update).
func testVersions(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusInProgress)
	rec.Version = 7
	id := rec.Response.ID
	create(t, s, ctx, rec)
	require.Equal(t, int64(0), rec.Version, "Create stores version 0")
	got, err := s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, int64(0), got.Version)

	a, err := s.Get(ctx, id) // two readers of version 0
	require.NoError(t, err)
	b, err := s.Get(ctx, id)
	require.NoError(t, err)
	a.Response = a.Response.Clone()
	a.Response.Metadata = map[string]string{"writer": "a"}
	require.NoError(t, s.Update(ctx, a, api.StatusInProgress))
	require.Equal(t, int64(1), a.Version)
	b.Response = b.Response.Clone()
	b.Response.Metadata = map[string]string{"writer": "b"}
	require.ErrorIs(t, s.Update(ctx, b, api.StatusInProgress), store.ErrConflict, "b read version 0, which is gone")
	require.Equal(t, int64(0), b.Version, "a failed update leaves rec.Version alone")
	future := NewRecord(id, api.StatusInProgress)
	future.Version = 5
	require.ErrorIs(t, s.Update(ctx, future, api.StatusInProgress), store.ErrConflict)

	got, err = s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, int64(1), got.Version)
	require.Equal(t, "a", got.Response.Metadata["writer"])

	// b reads again and wins.
	b, err = s.Get(ctx, id)
	require.NoError(t, err)
	b.Response = b.Response.Clone()
	b.Response.Metadata = map[string]string{"writer": "b"}
	require.NoError(t, s.Update(ctx, b, api.StatusInProgress))
	require.Equal(t, int64(2), b.Version)
	got, err = s.Get(ctx, id)
	require.NoError(t, err)
	require.Equal(t, int64(2), got.Version)
	require.Equal(t, "b", got.Response.Metadata["writer"])
}

// testConcurrentCheckpoints: writers that read the same version and keep
// the status (checkpoints, lease renewals, cancel flags): exactly one wins.
func testConcurrentCheckpoints(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusInProgress)
	id := rec.Response.ID
	create(t, s, ctx, rec)
	const n = 8
	recs := make([]*store.Record, n)
	for i := range recs {
		recs[i] = NewRecord(id, api.StatusInProgress)
		recs[i].Job = &store.Job{Owner: fmt.Sprintf("worker-%d", i), Turns: i}
	}
	winner := raceUpdates(ctx, t, s, recs)
	got, err := s.Get(ctx, id)
	require.NoError(t, err)
	RequireSameRecord(t, recs[winner], got)
	require.Equal(t, int64(1), got.Version)
}

// testJob: a background response's Job round-trips with the record.
func testJob(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	req, err := api.DecodeCreateRequest([]byte(`{"model":"m","instructions":"be brief","background":true,"stream":true,
		"input":[{"role":"user","content":"hello"},{"type":"function_call_output","call_id":"c1","output":"42"}],
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"lambent:calculator"}],
		"tool_choice":{"type":"function","name":"get_weather"},"temperature":0.5,"max_output_tokens":100,
		"metadata":{"k":"v"},"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}}`))
	require.NoError(t, err)
	rec := NewRecord(newID(), api.StatusQueued)
	rec.Response.Background = true
	rec.Job = &store.Job{Request: req, Owner: "worker-1", LeaseUntil: time.Now().Add(time.Minute).Round(0).UTC(),
		CancelRequested: true, Turns: 3, NextSeq: 42, Invocations: 2}
	create(t, s, ctx, rec)
	got, err := s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, rec, got)
	require.NotNil(t, got.Job)
	require.True(t, got.Job.LeaseUntil.Equal(rec.Job.LeaseUntil))

	// Updates carry it too.
	next := NewRecord(rec.Response.ID, api.StatusInProgress)
	next.Job = &store.Job{Request: req, Owner: "worker-2", Turns: 4, NextSeq: 50}
	require.NoError(t, s.Update(ctx, next, api.StatusQueued))
	got, err = s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, next, got)
	// And a record without a job has none.
	plain := NewRecord(newID(), api.StatusCompleted)
	create(t, s, ctx, plain)
	got, err = s.Get(ctx, plain.Response.ID)
	require.NoError(t, err)
	require.Nil(t, got.Job)
}

// testUpdateLarge replaces records across the sizes where stores change
// layout (one item, split items): small → large → larger → small.
func testUpdateLarge(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(3, 4))
	id := newID()
	rec := NewRecord(id, api.StatusQueued)
	create(t, s, ctx, rec)
	version := rec.Version
	steps := []struct {
		from, to api.Status
		size     int
	}{
		{api.StatusQueued, api.StatusInProgress, 1 << 20},
		{api.StatusInProgress, api.StatusInProgress, 2 << 20},
		{api.StatusInProgress, api.StatusInProgress, 600 << 10},
		{api.StatusInProgress, api.StatusCompleted, 0},
	}
	for _, st := range steps {
		next := NewRecord(id, st.to)
		next.Version = version
		if st.size > 0 {
			next.Response.Output = append(next.Response.Output, textMessage("msg_big", RandomText(rng, st.size)))
		}
		require.NoError(t, s.Update(ctx, next, st.from), "%s -> %s with %d bytes", st.from, st.to, st.size)
		version = next.Version
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		RequireSameRecord(t, next, got)
	}
	require.NoError(t, s.Delete(ctx, id))
	_, err := s.Get(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testConcurrentStatusWrites(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	for _, size := range []int{0, 512 << 10} {
		t.Run(fmt.Sprintf("output%dB", size), func(t *testing.T) {
			rec := NewRecord(newID(), api.StatusInProgress)
			id := rec.Response.ID
			create(t, s, ctx, rec)
			terminal := []api.Status{api.StatusCompleted, api.StatusFailed, api.StatusIncomplete, api.StatusCancelled, api.StatusRequiresAction}
			const n = 8
			recs := make([]*store.Record, n)
			rng := rand.New(rand.NewPCG(5, 6))
			for i := range recs {
				recs[i] = NewRecord(id, terminal[i%len(terminal)])
				recs[i].Response.Output = append(recs[i].Response.Output, textMessage("msg_writer", fmt.Sprintf("writer %d", i)))
				if size > 0 {
					recs[i].Response.Output = append(recs[i].Response.Output, textMessage("msg_big", RandomText(rng, size)))
				}
			}
			winner := raceUpdates(ctx, t, s, recs)
			got, err := s.Get(ctx, id)
			require.NoError(t, err)
			RequireSameRecord(t, recs[winner], got)
			t.Logf("writer %d won with status %s", winner, got.Response.Status)
		})
	}
}

func testConcurrentForks(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	parent := NewRecord(newID(), api.StatusRequiresAction)
	parentJSON := MustJSON(t, parent.Response)
	create(t, s, ctx, parent)
	stored, err := s.Get(ctx, parent.Response.ID)
	require.NoError(t, err)

	const n = 4
	forks := make([]*store.Record, n)
	for i := range forks {
		f := NewRecord(newID(), api.StatusCompleted)
		f.Response.PreviousResponseID = &parent.Response.ID
		f.Context = stored.Conversation()
		f.Input = []api.Item{{Type: api.ItemFunctionCallOutput, ID: fmt.Sprintf("fco_fork%d", i), CallID: "call_1", Output: fmt.Sprintf("fork %d", i)}}
		forks[i] = f
	}
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = s.Create(ctx, forks[i])
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "fork %d", i)
		got, err := s.Get(ctx, forks[i].Response.ID)
		require.NoError(t, err)
		RequireSameRecord(t, forks[i], got)
	}
	got, err := s.Get(ctx, parent.Response.ID)
	require.NoError(t, err)
	require.JSONEq(t, string(parentJSON), string(MustJSON(t, got.Response)))
}

func testExpiry(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	old := NewRecord(newID(), api.StatusInProgress)
	old.ExpiresAt = time.Now().Add(-time.Minute)
	id := old.Response.ID
	create(t, s, ctx, old)
	_, err := s.Get(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.ListInputItems(ctx, id, api.ListOptions{})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.Update(ctx, NewRecord(id, api.StatusCompleted), api.StatusInProgress), store.ErrNotFound)
	require.ErrorIs(t, s.Delete(ctx, id), store.ErrNotFound)

	// An expired id is free for a new record.
	fresh := NewRecord(id, api.StatusCompleted)
	fresh.ExpiresAt = time.Now().Add(time.Hour)
	create(t, s, ctx, fresh)
	got, err := s.Get(ctx, id)
	require.NoError(t, err)
	RequireSameRecord(t, fresh, got)
	assert.WithinDuration(t, fresh.ExpiresAt, got.ExpiresAt, time.Second)

	// An update may shorten the life of a record, down to the past.
	gone := NewRecord(newID(), api.StatusInProgress)
	create(t, s, ctx, gone)
	upd := NewRecord(gone.Response.ID, api.StatusCompleted)
	upd.ExpiresAt = time.Now().Add(-time.Second)
	require.NoError(t, s.Update(ctx, upd, api.StatusInProgress))
	_, err = s.Get(ctx, gone.Response.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testTenantIsolation(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	alice, bob := tenant.With(ctx, "alice"), tenant.With(ctx, "bob")
	id := newID()
	ra := NewRecord(id, api.StatusCompleted)
	ra.Response.Metadata["owner"] = "alice"
	rb := NewRecord(id, api.StatusInProgress)
	rb.Response.Metadata["owner"] = "bob"
	create(t, s, alice, ra)
	create(t, s, bob, rb)

	got, err := s.Get(alice, id)
	require.NoError(t, err)
	RequireSameRecord(t, ra, got)
	got, err = s.Get(bob, id)
	require.NoError(t, err)
	RequireSameRecord(t, rb, got)
	_, err = s.Get(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound, "the default tenant sees neither")

	// Updates and deletes stay within their tenant.
	require.ErrorIs(t, s.Update(alice, NewRecord(id, api.StatusCompleted), api.StatusInProgress), store.ErrConflict)
	require.NoError(t, s.Delete(alice, id))
	_, err = s.Get(alice, id)
	require.ErrorIs(t, err, store.ErrNotFound)
	got, err = s.Get(bob, id)
	require.NoError(t, err)
	RequireSameRecord(t, rb, got)
	require.NoError(t, s.Update(bob, NewRecord(id, api.StatusCompleted), api.StatusInProgress))
	page, err := s.ListInputItems(bob, id, api.ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Items, len(NewRecord(id, api.StatusCompleted).Input))

	// Separators in tenants or ids cannot reach another tenant's records.
	odd := tenant.With(ctx, "t#1")
	create(t, s, odd, NewRecord("x", api.StatusCompleted))
	_, err = s.Get(tenant.With(ctx, "t"), "1#x")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.Get(odd, "x")
	require.NoError(t, err)
}

func testPagination(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rec := NewRecord(newID(), api.StatusCompleted)
	rec.Input = nil
	for i := 1; i <= 7; i++ {
		rec.Input = append(rec.Input, textInput(fmt.Sprintf("in_%d", i), fmt.Sprintf("input %d", i)))
	}
	id := rec.Response.ID
	create(t, s, ctx, rec)

	ids := func(p *store.ItemPage) string {
		var out []string
		for _, it := range p.Items {
			out = append(out, strings.TrimPrefix(it.ID, "in_"))
		}
		return strings.Join(out, ",")
	}
	cases := []struct {
		opts    api.ListOptions
		want    string
		hasMore bool
	}{
		{api.ListOptions{}, "7,6,5,4,3,2,1", false},
		{api.ListOptions{Order: "desc", Limit: 3}, "7,6,5", true},
		{api.ListOptions{Order: "desc", Limit: 3, After: "in_5"}, "4,3,2", true},
		{api.ListOptions{Order: "desc", Limit: 3, After: "in_2"}, "1", false},
		{api.ListOptions{Order: "desc", Limit: 3, After: "in_1"}, "", false},
		{api.ListOptions{Order: "asc"}, "1,2,3,4,5,6,7", false},
		{api.ListOptions{Order: "asc", Limit: 3}, "1,2,3", true},
		{api.ListOptions{Order: "asc", Limit: 3, After: "in_3"}, "4,5,6", true},
		{api.ListOptions{Order: "asc", Limit: 3, After: "in_6"}, "7", false},
		{api.ListOptions{Order: "asc", Limit: 4, After: "in_3"}, "4,5,6,7", false},
		{api.ListOptions{Order: "asc", Limit: 1}, "1", true},
		{api.ListOptions{Limit: 100}, "7,6,5,4,3,2,1", false},
	}
	for _, c := range cases {
		p, err := s.ListInputItems(ctx, id, c.opts)
		require.NoError(t, err, "%+v", c.opts)
		assert.Equal(t, c.want, ids(p), "%+v", c.opts)
		assert.Equal(t, c.hasMore, p.HasMore, "has_more of %+v", c.opts)
	}
	// Listed items are the stored items.
	p, err := s.ListInputItems(ctx, id, api.ListOptions{Order: "asc"})
	require.NoError(t, err)
	require.Equal(t, string(MustJSON(t, rec.Input)), string(MustJSON(t, p.Items)))

	// An unknown cursor is a client error the HTTP layer can map to 400.
	_, err = s.ListInputItems(ctx, id, api.ListOptions{After: "in_nope"})
	require.ErrorIs(t, err, store.ErrInvalidCursor)
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.Equal(t, 400, ae.Status)
	require.Equal(t, "after", ae.Param)

	// Default and maximum page sizes.
	many := NewRecord(newID(), api.StatusCompleted)
	many.Input = nil
	for i := range 150 {
		many.Input = append(many.Input, textInput(fmt.Sprintf("in_%03d", i), "x"))
	}
	create(t, s, ctx, many)
	p, err = s.ListInputItems(ctx, many.Response.ID, api.ListOptions{})
	require.NoError(t, err)
	require.Len(t, p.Items, api.DefaultListLimit)
	require.Equal(t, "in_149", p.Items[0].ID)
	require.True(t, p.HasMore)
	p, err = s.ListInputItems(ctx, many.Response.ID, api.ListOptions{Order: "asc", Limit: 1000})
	require.NoError(t, err)
	require.Len(t, p.Items, api.MaxListLimit)
	require.True(t, p.HasMore)
	p, err = s.ListInputItems(ctx, many.Response.ID, api.ListOptions{Order: "asc", Limit: 100, After: p.Items[99].ID})
	require.NoError(t, err)
	require.Len(t, p.Items, 50)
	require.Equal(t, "in_149", p.Items[49].ID)
	require.False(t, p.HasMore)

	// A record without input lists an empty page.
	empty := NewRecord(newID(), api.StatusCompleted)
	empty.Input = nil
	create(t, s, ctx, empty)
	p, err = s.ListInputItems(ctx, empty.Response.ID, api.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, p.Items)
	require.False(t, p.HasMore)
}

func testBigOutput(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(7, 8))
	// Random letters and digits compress poorly (about 6 bits a byte): the
	// hard case for a store that compresses.
	text := RandomText(rng, 5<<20)
	rec := NewRecord(newID(), api.StatusCompleted)
	rec.Response.Output = append(rec.Response.Output, textMessage("msg_5mb", text))
	create(t, s, ctx, rec)
	got, err := s.Get(ctx, rec.Response.ID)
	require.NoError(t, err)
	last := got.Response.Output[len(got.Response.Output)-1]
	require.Len(t, last.Content, 1)
	require.True(t, last.Content[0].Text == text, "the 5 MB output text changed (%d bytes read)", len(last.Content[0].Text))
	RequireSameRecord(t, rec, got)
	p, err := s.ListInputItems(ctx, rec.Response.ID, api.ListOptions{})
	require.NoError(t, err)
	require.Len(t, p.Items, len(rec.Input))
}

// testChain50 builds a 50-turn previous_response_id chain the way the
// engine does (each record's Context is the previous record's
// Conversation) and checks the last record holds the whole conversation.
// A turn is a 4 KB user message, a function call and a 4 KB answer (about
// a thousand tokens each way), so the last record holds about 430 KB of JSON.
func testChain50(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(9, 10))
	var prev *store.Record
	var want []api.Item
	for turn := range 50 {
		rec := NewRecord(newID(), api.StatusCompleted)
		rec.Input = []api.Item{textInput(fmt.Sprintf("msg_in_%02d", turn), Words(rng, 4<<10))}
		rec.Response.Output = []api.Item{
			{Type: api.ItemFunctionCall, ID: fmt.Sprintf("fc_%02d", turn), Status: api.ItemCompleted, CallID: fmt.Sprintf("call_%02d", turn), Name: "search", Arguments: fmt.Sprintf(`{"q":"turn %d"}`, turn)},
			textMessage(fmt.Sprintf("msg_out_%02d", turn), Words(rng, 4<<10)),
		}
		rec.Context = nil
		if prev != nil {
			rec.Response.PreviousResponseID = &prev.Response.ID
			stored, err := s.Get(ctx, prev.Response.ID)
			require.NoError(t, err, "turn %d", turn)
			rec.Context = stored.Conversation()
		}
		create(t, s, ctx, rec)
		want = append(want, rec.Input...)
		want = append(want, rec.Response.Output...)
		prev = rec
	}
	got, err := s.Get(ctx, prev.Response.ID)
	require.NoError(t, err)
	RequireSameRecord(t, prev, got)
	w, g := MustJSON(t, want), MustJSON(t, got.Conversation())
	require.True(t, bytes.Equal(w, g), "the 50-turn conversation changed: %d bytes written, %d read", len(w), len(g))
	t.Logf("50-turn chain: last record holds %d items, %d bytes of JSON", len(want), len(w))
}

// eventLog returns s's event log; stores without one skip the event tests.
func eventLog(t *testing.T, s store.ResponseStore) store.EventLog {
	l, ok := s.(store.EventLog)
	if !ok {
		t.Skipf("%T implements no store.EventLog", s)
	}
	return l
}

// testRunSignals: a running background response's worker sees a cancel
// request through the store's run signals, never another tenant's, and
// ErrNotFound once the response is deleted (then it reads the record).
func testRunSignals(t *testing.T, s store.ResponseStore) {
	sig, ok := s.(store.RunSignals)
	if !ok {
		t.Skipf("%T implements no store.RunSignals", s)
	}
	ctx := tenant.With(t.Context(), "alice")
	id := newID()
	_, err := sig.Poll(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing noted for an unknown response")

	rec := NewRecord(id, api.StatusQueued)
	rec.Job = &store.Job{}
	rec.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Second)
	create(t, s, ctx, rec)
	require.NoError(t, eventLog(t, s).AppendEvents(ctx, id, events(0, 1, "q")))
	running, err := s.Get(ctx, id)
	require.NoError(t, err)
	running.Response.Status = api.StatusInProgress
	require.NoError(t, s.Update(ctx, running, api.StatusQueued))
	require.NoError(t, sig.MarkRunning(ctx, id, rec.ExpiresAt))
	got, err := sig.Poll(ctx, id)
	require.NoError(t, err)
	assert.False(t, got.Cancel)
	assert.True(t, got.ExpiresAt.Equal(rec.ExpiresAt), "expires at %v, want %v", got.ExpiresAt, rec.ExpiresAt)

	// A follower's note: the run is followed until it ends (a store whose
	// appends cost nothing may report every run as followed).
	until := time.Now().Add(30 * time.Second).Truncate(time.Millisecond)
	require.NoError(t, sig.Follow(ctx, id, until, rec.ExpiresAt))
	got, err = sig.Poll(ctx, id)
	require.NoError(t, err)
	assert.False(t, got.FollowedUntil.Before(until), "followed until %v, want %v or later", got.FollowedUntil, until)

	bob := tenant.With(t.Context(), "bob")
	_, err = sig.Poll(bob, id)
	require.ErrorIs(t, err, store.ErrNotFound, "another tenant sees nothing")
	require.NoError(t, sig.RequestCancel(bob, id, rec.ExpiresAt))
	got, err = sig.Poll(ctx, id)
	require.NoError(t, err)
	assert.False(t, got.Cancel, "another tenant's cancel request does not reach alice's run")

	// The canceller marks the record, then signals; a worker marking its
	// run after that keeps the cancel, and so does a follower.
	running.Job.CancelRequested = true
	require.NoError(t, s.Update(ctx, running, api.StatusInProgress))
	require.NoError(t, sig.RequestCancel(ctx, id, rec.ExpiresAt))
	require.NoError(t, sig.MarkRunning(ctx, id, rec.ExpiresAt))
	require.NoError(t, sig.Follow(ctx, id, until, rec.ExpiresAt))
	got, err = sig.Poll(ctx, id)
	require.NoError(t, err)
	assert.True(t, got.Cancel)

	require.NoError(t, s.Delete(ctx, id))
	_, err = sig.Poll(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound, "a deleted response's run is told")
	// A follower's note renewed just after the delete does not bring the
	// response back, for the worker's poll nor for the followers.
	if err := sig.Follow(ctx, id, until, rec.ExpiresAt); err != nil {
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	_, err = sig.Poll(ctx, id)
	require.ErrorIs(t, err, store.ErrNotFound, "a note after the delete leaves it deleted")
	_, err = eventLog(t, s).Events(ctx, id, -1)
	require.ErrorIs(t, err, store.ErrNotFound, "a note after the delete leaves its events gone")

	// An id created again after its response expired starts with no
	// signal: the earlier run's cancel request is not the new one's.
	reused := NewRecord(newID(), api.StatusInProgress)
	reused.Job = &store.Job{}
	reused.ExpiresAt = time.Now().Add(-time.Minute).Truncate(time.Second)
	create(t, s, ctx, reused)
	require.NoError(t, sig.MarkRunning(ctx, reused.Response.ID, reused.ExpiresAt))
	require.NoError(t, sig.RequestCancel(ctx, reused.Response.ID, reused.ExpiresAt))
	again := NewRecord(reused.Response.ID, api.StatusInProgress)
	again.Job = &store.Job{}
	create(t, s, ctx, again)
	require.NoError(t, sig.MarkRunning(ctx, again.Response.ID, again.ExpiresAt))
	got, err = sig.Poll(ctx, again.Response.ID)
	require.NoError(t, err)
	assert.False(t, got.Cancel, "the expired response's cancel request stays with it")
	assert.True(t, got.ExpiresAt.Equal(again.ExpiresAt), "expires at %v, want %v", got.ExpiresAt, again.ExpiresAt)
	// And the same after a delete: the tombstone is the deleted one's.
	require.NoError(t, sig.RequestCancel(ctx, again.Response.ID, again.ExpiresAt))
	require.NoError(t, eventLog(t, s).AppendEvents(ctx, again.Response.ID, events(0, 1, "r")))
	require.NoError(t, s.Delete(ctx, again.Response.ID))
	third := NewRecord(again.Response.ID, api.StatusInProgress)
	third.Job = &store.Job{}
	third.ExpiresAt = again.ExpiresAt.Add(time.Hour)
	create(t, s, ctx, third)
	require.NoError(t, sig.MarkRunning(ctx, third.Response.ID, third.ExpiresAt))
	got, err = sig.Poll(ctx, third.Response.ID)
	require.NoError(t, err, "the id created again after its delete has its own signal")
	assert.False(t, got.Cancel, "the deleted response's cancel request stays with it")

	// Signals expire with the response.
	old := newID()
	require.NoError(t, sig.MarkRunning(ctx, old, time.Now().Add(-time.Second)))
	_, err = sig.Poll(ctx, old)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// testStaleClaimAppends: a worker that ran past its lease (claim A) and
// appends after another worker claimed the response (claim B) is refused,
// and B's events stay as B wrote them (docs/background.md, "lease
// overrun").
func testStaleClaimAppends(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	l := eventLog(t, s)
	id := newID()
	rec := NewRecord(id, api.StatusQueued)
	rec.Job = &store.Job{}
	create(t, s, ctx, rec)
	claim := func(owner string, expect api.Status) *store.Record {
		t.Helper()
		next := NewRecord(id, api.StatusInProgress)
		next.Version, next.ExpiresAt = rec.Version, rec.ExpiresAt
		next.Job = &store.Job{Owner: owner, LeaseUntil: time.Now().Add(time.Minute), Claim: owner + "-claim"}
		require.NoError(t, s.Update(ctx, next, expect))
		rec = next
		return next
	}
	a := claim("worker-a", api.StatusQueued)
	require.NoError(t, appendClaimed(ctx, l, id, a, events(0, 4, "a")))
	// A's lease ran out; B claims and numbers its events after the log's last.
	b := claim("worker-b", api.StatusInProgress)
	require.NoError(t, appendClaimed(ctx, l, id, b, events(5, 9, "b")))
	// A, still running its turn, appends what it emitted since.
	err := appendClaimed(ctx, l, id, a, events(5, 7, "a"))
	require.ErrorIs(t, err, store.ErrLeaseLost, "a stale claim's append is refused")
	got, err := l.Events(ctx, id, -1)
	require.NoError(t, err)
	requireEvents(t, slices.Concat(events(0, 4, "a"), events(5, 9, "b")), got)
	// The claimed append of a deleted response: ErrNotFound.
	require.NoError(t, s.Delete(ctx, id))
	require.ErrorIs(t, appendClaimed(ctx, l, id, b, events(10, 10, "b")), store.ErrNotFound)
}

// appendClaimed appends evs under rec's claim (store.ClaimedEventLog).
func appendClaimed(ctx context.Context, l store.EventLog, id string, rec *store.Record, evs []store.Event) error {
	cl, ok := l.(store.ClaimedEventLog)
	if !ok {
		return fmt.Errorf("%T implements no store.ClaimedEventLog", l)
	}
	return cl.AppendEventsClaimed(ctx, id, rec.Job.Claim, rec.ExpiresAt, evs)
}

func events(from, to int64, tag string) []store.Event {
	var out []store.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, store.Event{Seq: seq, Type: "response.output_text.delta",
			Data: fmt.Appendf(nil, `{"type":"response.output_text.delta","sequence_number":%d,"delta":"%s <b>&</b> \u00e9"}`, seq, tag)})
	}
	return out
}

func requireEvents(t *testing.T, want, got []store.Event) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Seq, got[i].Seq, "event %d", i)
		require.Equal(t, want[i].Type, got[i].Type, "event %d", i)
		require.Equal(t, string(want[i].Data), string(got[i].Data), "event %d", i)
	}
}

func testEventLog(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	l := eventLog(t, s)
	id := newID()
	require.ErrorIs(t, l.AppendEvents(ctx, id, events(0, 1, "x")), store.ErrNotFound)
	_, err := l.Events(ctx, id, -1)
	require.ErrorIs(t, err, store.ErrNotFound)

	rec := NewRecord(id, api.StatusQueued)
	rec.Job = &store.Job{}
	create(t, s, ctx, rec)
	got, err := l.Events(ctx, id, -1)
	require.NoError(t, err)
	require.Empty(t, got)
	require.NoError(t, l.AppendEvents(ctx, id, nil))

	first := events(0, 9, "a")
	require.NoError(t, l.AppendEvents(ctx, id, first))
	got, err = l.Events(ctx, id, -1)
	require.NoError(t, err)
	requireEvents(t, first, got)
	got, err = l.Events(ctx, id, 4)
	require.NoError(t, err)
	requireEvents(t, first[5:], got)
	got, err = l.Events(ctx, id, 9)
	require.NoError(t, err)
	require.Empty(t, got)

	second := events(10, 14, "b")
	require.NoError(t, l.AppendEvents(ctx, id, second))
	got, err = l.Events(ctx, id, 7)
	require.NoError(t, err)
	requireEvents(t, append(slices.Clone(first[8:]), second...), got)

	// A later write of the same sequence numbers replaces them (a resumed
	// worker re-emits); within one call, the last event of a number counts.
	redo := append(events(8, 11, "c"), events(11, 11, "d")...)
	require.NoError(t, l.AppendEvents(ctx, id, redo))
	want := slices.Concat(first[:8], events(8, 10, "c"), events(11, 11, "d"), second[2:])
	got, err = l.Events(ctx, id, -1)
	require.NoError(t, err)
	requireEvents(t, want, got)

	// Any bytes come back as written.
	odd := []store.Event{{Seq: 15, Type: "x", Data: []byte(`{ "spaced" : true }`)}, {Seq: 16, Type: "y", Data: []byte("not json \xff")}, {Seq: 17, Type: "z"}}
	require.NoError(t, l.AppendEvents(ctx, id, odd))
	got, err = l.Events(ctx, id, 14)
	require.NoError(t, err)
	requireEvents(t, odd, got)

	// Tenants do not share events.
	other := tenant.With(ctx, "other")
	orec := NewRecord(id, api.StatusQueued)
	orec.Job = &store.Job{}
	create(t, s, other, orec)
	got, err = l.Events(other, id, -1)
	require.NoError(t, err)
	require.Empty(t, got)

	// Delete removes the events with the record; the id starts afresh.
	require.NoError(t, s.Delete(ctx, id))
	_, err = l.Events(ctx, id, -1)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, l.AppendEvents(ctx, id, events(20, 21, "e")), store.ErrNotFound)
	create(t, s, ctx, NewRecord(id, api.StatusQueued))
	got, err = l.Events(ctx, id, -1)
	require.NoError(t, err)
	require.Empty(t, got)

	// Whatever the record, its events go with it.
	plain := NewRecord(newID(), api.StatusCompleted)
	create(t, s, ctx, plain)
	require.NoError(t, l.AppendEvents(ctx, plain.Response.ID, events(0, 1, "g")))
	require.NoError(t, s.Delete(ctx, plain.Response.ID))
	create(t, s, ctx, NewRecord(plain.Response.ID, api.StatusCompleted))
	got, err = l.Events(ctx, plain.Response.ID, -1)
	require.NoError(t, err)
	require.Empty(t, got)

	// Events of an expired record are gone with it.
	exp := NewRecord(newID(), api.StatusQueued)
	exp.Job = &store.Job{}
	exp.ExpiresAt = time.Now().Add(2 * time.Second)
	create(t, s, ctx, exp)
	require.NoError(t, l.AppendEvents(ctx, exp.Response.ID, events(0, 2, "f")))
	time.Sleep(time.Until(exp.ExpiresAt) + 1100*time.Millisecond)
	_, err = l.Events(ctx, exp.Response.ID, -1)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, l.AppendEvents(ctx, exp.Response.ID, events(3, 3, "f")), store.ErrNotFound)
}

// testEventLogLarge: events as large as a 2 MB response (a
// response.completed event carries the whole response) and many events in
// one call round-trip byte for byte.
func testEventLogLarge(t *testing.T, s store.ResponseStore) {
	ctx := t.Context()
	l := eventLog(t, s)
	rec := NewRecord(newID(), api.StatusInProgress)
	rec.Job = &store.Job{}
	create(t, s, ctx, rec)
	id := rec.Response.ID
	many := events(0, 999, "many")
	require.NoError(t, l.AppendEvents(ctx, id, many))
	text := RandomText(rand.New(rand.NewPCG(11, 12)), 2<<20)
	data, err := json.Marshal(map[string]any{"type": "response.completed", "sequence_number": 1000, "text": text})
	require.NoError(t, err)
	big := []store.Event{{Seq: 1000, Type: "response.completed", Data: data}}
	require.NoError(t, l.AppendEvents(ctx, id, big))
	got, err := l.Events(ctx, id, -1)
	require.NoError(t, err)
	requireEvents(t, append(many, big...), got)
	got, err = l.Events(ctx, id, 999)
	require.NoError(t, err)
	requireEvents(t, big, got)
	require.NoError(t, s.Delete(ctx, id))
	_, err = l.Events(ctx, id, -1)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func textMessage(id, text string) api.Item {
	return api.Item{Type: api.ItemMessage, ID: id, Status: api.ItemCompleted, Role: api.RoleAssistant,
		Content: []api.ContentPart{{Type: api.PartOutputText, Text: text}}}
}

func textInput(id, text string) api.Item {
	return api.Item{Type: api.ItemMessage, ID: id, Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: text}}}
}

// RandomText returns n bytes of random letters, digits and spaces: text
// that compresses poorly (about 6 bits a byte).
func RandomText(rng *rand.Rand, n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n"
	b := make([]byte, n)
	for i := 0; i < n; {
		for r, k := rng.Uint64(), 0; k < 10 && i < n; k, i = k+1, i+1 {
			b[i] = alphabet[r&63]
			r >>= 6
		}
	}
	return string(b)
}

// Words returns about n bytes of prose-like text (words from a small
// vocabulary), which compresses like real model output.
func Words(rng *rand.Rand, n int) string {
	vocab := strings.Fields(`the a of to and in is it that for on with as was be this by are from at or
		an not have which but they one all were we when there can their more if will been has would
		model response tool call function output weather Paris city temperature forecast question
		answer result search query document context conversation request server client stream event
		Lambda DynamoDB table item partition gateway "quoted" <tag> & naïve café 東京 🙂`)
	var b strings.Builder
	b.Grow(n + 16)
	for b.Len() < n {
		b.WriteString(vocab[rng.IntN(len(vocab))])
		if rng.IntN(12) == 0 {
			b.WriteString(".\n")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// raceUpdates starts one Update of in_progress per record at once (a start
// barrier) and requires that exactly one wins and the others get
// ErrConflict; it returns the winner's index.
func raceUpdates(ctx context.Context, t *testing.T, s store.ResponseStore, recs []*store.Record) int {
	t.Helper()
	errs := make([]error, len(recs))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() {
			<-start
			errs[i] = s.Update(ctx, recs[i], api.StatusInProgress)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "writers %d and %d both won", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, store.ErrConflict, "writer %d", i)
	}
	require.NotEqual(t, -1, winner, "no writer won")
	return winner
}
