package dynamodb

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/provider"
)

// okModel answers every model call with "ok".
type okModel struct{}

func (okModel) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return &provider.Result{Text: "ok", FinishReason: provider.FinishStop}, nil
}

func (m okModel) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := m.Complete(ctx, req)
	return res, fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
}

// lastResponse keeps the ids a non-streamed create wrote.
type lastResponse struct {
	id      string
	outputs []string
}

func (*lastResponse) WriteEvent(*api.StreamEvent) error { return nil }

func (l *lastResponse) WriteResponse(r *api.Response) error {
	l.id, l.outputs = r.ID, nil
	for _, it := range r.Output {
		l.outputs = append(l.outputs, it.ID)
	}
	return nil
}

// TestCallBudgetItemReferences counts the DynamoDB calls of a create whose
// input references stored items (issue 11): ≤ 2 calls when the references
// point into the previous response (its one read and the write), and one
// more GetItem per other referenced response, however many of its items
// are referenced.
func TestCallBudgetItemReferences(t *testing.T) {
	t.Parallel()
	c := newCounter()
	s := newStore(t, c.Options)
	e, err := engine.New(engine.Config{Provider: okModel{}, Store: s, DefaultModel: "m", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx := t.Context()

	create := func(body string) (*lastResponse, error) {
		req, err := api.DecodeCreateRequest([]byte(body))
		require.NoError(t, err)
		w := &lastResponse{}
		return w, e.CreateResponse(ctx, req, w)
	}
	ref := func(id string) string { return `{"type":"item_reference","id":"` + id + `"}` }
	// items returns the ids of a stored response's input and output items
	// (two items of one response: ids are unique in an input).
	items := func(w *lastResponse) []string {
		page, err := s.ListInputItems(ctx, w.id, api.ListOptions{})
		require.NoError(t, err)
		require.Len(t, page.Items, 1)
		return append([]string{page.Items[0].ID}, w.outputs...)
	}
	// stored creates n responses and returns the ids of their input and
	// output items, two per response.
	stored := func(n int) [][]string {
		var ids [][]string
		for range n {
			w, err := create(`{"input":"hi"}`)
			require.NoError(t, err)
			ids = append(ids, items(w))
		}
		return ids
	}
	measure := func(name, body string) int {
		t.Helper()
		c.Reset()
		_, err := create(body)
		require.NoError(t, err, name)
		t.Logf("%-52s %s", name+":", c)
		return c.Total()
	}

	writes := measure("create, no references", `{"input":"hi"}`)
	require.Zero(t, c.Calls("GetItem"))
	require.LessOrEqual(t, writes, 2)

	prev, err := create(`{"input":"hi"}`)
	require.NoError(t, err)
	prevItems := items(prev)
	n := measure("continuation, 2 references into the previous chain", `{"previous_response_id":"`+prev.id+`","input":[`+ref(prevItems[0])+`,`+ref(prevItems[1])+`,{"role":"user","content":"again"}]}`)
	require.Equal(t, 1, c.Calls("GetItem"))
	require.LessOrEqual(t, n, 2)

	c.Reset()
	missing := api.NewItemID(api.PrefixMessage, prev.id)
	_, err = create(`{"previous_response_id":"` + prev.id + `","input":[` + ref(missing) + `]}`)
	require.Error(t, err)
	t.Logf("%-52s %s", "continuation, unknown item of the previous (400):", c)
	require.Equal(t, 1, c.Total(), "the previous response is not read twice")

	for _, others := range []int{1, 3} {
		ids := stored(others)
		var refs []string
		for _, two := range ids {
			refs = append(refs, ref(two[0]), ref(two[1])) // two references per response
		}
		name := strconv.Itoa(others)
		n := measure("no previous, references into "+name+" other responses", `{"input":[`+strings.Join(refs, ",")+`,{"role":"user","content":"next"}]}`)
		require.Equal(t, others, c.Calls("GetItem"), "one GetItem per other referenced response")
		require.Equal(t, writes+others, n)

		n = measure("continuation + references into "+name+" other responses", `{"previous_response_id":"`+prev.id+`","input":[`+ref(prev.outputs[0])+`,`+strings.Join(refs, ",")+`]}`)
		require.Equal(t, 1+others, c.Calls("GetItem"))
		require.Equal(t, writes+1+others, n)
	}

	c.Reset()
	unknown := api.NewItemID(api.PrefixMessage, api.NewID(api.PrefixResponse))
	_, err = create(`{"input":[` + ref(unknown) + `]}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, "input[0].id", ae.Param)
	t.Logf("%-52s %s", "unknown reference (400):", c)
	require.Equal(t, 1, c.Total(), "one GetItem, nothing written")
}
