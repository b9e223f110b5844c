package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// refEngine is an engine over mk's store whose model answers with p.
func refEngine(t *testing.T, mk storeMaker, p *scripted) (*Engine, store.ResponseStore) {
	st := mk(t)
	e, _ := newEngine(t, p, newMock(echoTool), func(c *Config) { c.Store = st })
	return e, st
}

// createIn creates a non-streamed response in ctx (a tenant) and returns it.
func createIn(ctx context.Context, t *testing.T, e *Engine, body string) (*api.Response, error) {
	t.Helper()
	rec := &recorder{}
	if err := e.CreateResponse(ctx, decodeReq(t, body), rec); err != nil {
		return nil, err
	}
	return rec.response(t), nil
}

func ref(id string) string { return `{"type":"item_reference","id":"` + id + `"}` }

// requireItemNotFound asserts err is the 400 OpenAI answers for an unknown
// item id, naming the id and pointing at the input item.
func requireItemNotFound(t *testing.T, err error, param, id string) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 400, ae.Status)
	assert.Equal(t, api.ErrTypeInvalidRequest, ae.Type)
	assert.Equal(t, param, ae.Param)
	assert.Equal(t, "Item with id '"+id+"' not found.", ae.Message)
}

// Every item the engine creates or assigns an id to carries its response's
// id: output items, and input items sent without one.
func TestItemIDsCarryTheResponseID(t *testing.T) {
	t.Parallel()
	p := script(calls(1, 1, call("c1", "t", `{}`)), step{res: text("done", 1, 1).res})
	p.steps[1].res.Reasoning = "thinking"
	st := store.NewMemory(store.MemoryConfig{})
	e, _ := newEngine(t, p, newMock(echoTool, "t"), func(c *Config) { c.Store = st })
	r, err := createIn(context.Background(), t, e, `{"input":[{"role":"user","content":"x"},{"type":"message","id":"msg_mine","role":"user","content":"y"}],"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	rec, err := st.Get(context.Background(), r.ID)
	require.NoError(t, err)
	require.Len(t, rec.Input, 2)
	assert.Equal(t, "msg_mine", rec.Input[1].ID, "a client's id stays")
	items := append([]api.Item{rec.Input[0]}, rec.Response.Output...)
	assert.Equal(t, []string{"message", "function_call:t", "function_call_output", "reasoning", "message"}, types(items))
	for _, it := range items {
		got, ok := api.ResponseIDOf(it.ID)
		assert.True(t, ok, it.ID)
		assert.Equal(t, r.ID, got, it.ID)
	}
}

// A reference into the previous response resolves from the chain already
// read, as the stored item with its id.
func TestReferenceIntoPreviousResponse(t *testing.T) { forStores(t, testReferenceIntoPreviousResponse) }

func testReferenceIntoPreviousResponse(t *testing.T, mk storeMaker) {
	p := script(text("Hello there.", 1, 1), text("ok", 1, 1))
	e, st := refEngine(t, mk, p)
	ctx := context.Background()
	first, err := createIn(ctx, t, e, `{"input":"hi"}`)
	require.NoError(t, err)
	msg := first.Output[0].ID
	second, err := createIn(ctx, t, e, `{"previous_response_id":"`+first.ID+`","input":[`+ref(msg)+`,{"role":"user","content":"again"}]}`)
	require.NoError(t, err)
	rec, err := st.Get(ctx, second.ID)
	require.NoError(t, err)
	require.Len(t, rec.Input, 2)
	assert.Equal(t, msg, rec.Input[0].ID)
	assert.Equal(t, "Hello there.", rec.Input[0].Text())
	assert.Equal(t, api.RoleAssistant, rec.Input[0].Role)
	reqs := p.requests()
	assert.Equal(t, []string{"message", "message", "message", "message"}, types(reqs[1].Items))
}

// The Vercel AI SDK with store:true: earlier turns come back as references
// without previous_response_id, into several unrelated stored responses —
// assistant messages, user input, a client function call answered in this
// request.
func TestReferenceIntoUnrelatedResponses(t *testing.T) {
	forStores(t, testReferenceIntoUnrelatedResponses)
}

func testReferenceIntoUnrelatedResponses(t *testing.T, mk storeMaker) {
	p := script(text("Hello there.", 1, 1), calls(1, 1, call("cw", "get_weather", `{"city":"Oslo"}`)), text("It is sunny.", 1, 1), text("You are welcome.", 1, 1))
	e, st := refEngine(t, mk, p)
	ctx := context.Background()
	a, err := createIn(ctx, t, e, `{"input":"hi"}`)
	require.NoError(t, err)
	aRec, err := st.Get(ctx, a.ID)
	require.NoError(t, err)
	b, err := createIn(ctx, t, e, `{"input":"weather in Oslo?","tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	require.Equal(t, []string{"function_call:get_weather"}, types(b.Output))

	input := []string{ref(aRec.Input[0].ID), ref(a.Output[0].ID), `{"role":"user","content":"weather in Oslo?"}`, ref(b.Output[0].ID),
		`{"type":"function_call_output","call_id":"cw","output":"sunny"}`}
	c, err := createIn(ctx, t, e, `{"input":[`+strings.Join(input, ",")+`],"tools":[`+clientTool+`]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, c.Status)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	seen := reqs[2].Items
	assert.Equal(t, []string{"message", "message", "message", "function_call:get_weather", "function_call_output"}, types(seen))
	assert.Equal(t, "hi", seen[0].Text())
	assert.Equal(t, "Hello there.", seen[1].Text())
	assert.Equal(t, `{"city":"Oslo"}`, seen[3].Arguments)

	rec, err := st.Get(ctx, c.ID)
	require.NoError(t, err)
	require.Len(t, rec.Input, 5)
	assert.Equal(t, aRec.Input[0].ID, rec.Input[0].ID, "a resolved reference keeps its id")
	assert.Equal(t, a.Output[0].ID, rec.Input[1].ID)
	assert.Equal(t, b.Output[0].ID, rec.Input[3].ID)
	for _, i := range []int{2, 4} {
		got, _ := api.ResponseIDOf(rec.Input[i].ID)
		assert.Equal(t, c.ID, got, "new input items carry this response's id")
	}

	// Items c was given resolve from c's record.
	_, err = createIn(ctx, t, e, `{"input":[`+ref(rec.Input[3].ID)+`,`+ref(rec.Input[4].ID)+`,{"role":"user","content":"thanks"}]}`)
	require.NoError(t, err)
	assert.Equal(t, []string{"function_call:get_weather", "function_call_output", "message"}, types(p.requests()[3].Items))
}

// Unknown ids, ids of another tenant's items, and ids of the older format
// outside the previous chain are a 400 naming the id; the older format
// still resolves within the chain.
func TestReferenceNotFound(t *testing.T) { forStores(t, testReferenceNotFound) }

func testReferenceNotFound(t *testing.T, mk storeMaker) {
	p := script(text("Hello there.", 1, 1), text("ok", 1, 1))
	e, _ := refEngine(t, mk, p)
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	old := api.NewID(api.PrefixMessage)
	first, err := createIn(alice, t, e, `{"input":[{"type":"message","id":"`+old+`","role":"user","content":"hi"}]}`)
	require.NoError(t, err)
	msg := first.Output[0].ID

	for _, id := range []string{
		api.NewItemID(api.PrefixMessage, api.NewID(api.PrefixResponse)), // a response that does not exist
		api.NewItemID(api.PrefixMessage, first.ID),                      // an item that its response does not hold
		"msg_nope",
		old, // the older format names no response
	} {
		_, err = createIn(alice, t, e, `{"input":[{"role":"user","content":"x"},`+ref(id)+`]}`)
		requireItemNotFound(t, err, "input[1].id", id)
	}
	_, err = createIn(bob, t, e, `{"input":[`+ref(msg)+`]}`)
	requireItemNotFound(t, err, "input[0].id", msg)
	_, err = createIn(bob, t, e, `{"input":[`+ref(old)+`]}`)
	requireItemNotFound(t, err, "input[0].id", old)

	second, err := createIn(alice, t, e, `{"previous_response_id":"`+first.ID+`","input":[`+ref(old)+`,`+ref(msg)+`]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, second.Status)
	assert.Len(t, p.requests(), 2, "no failed request reached the model")
}

// A background response started by an event under a caller-chosen id gives
// its items ids that carry it.
func TestReferenceIntoCallerNamedResponse(t *testing.T) {
	forStores(t, testReferenceIntoCallerNamedResponse)
}

func testReferenceIntoCallerNamedResponse(t *testing.T, mk storeMaker) {
	p := script(text("Order received.", 1, 1), text("ok", 1, 1))
	e, _, _ := bgEngine(t, mk, p, nil)
	ctx := context.Background()
	id, err := e.StartBackground(ctx, decodeReq(t, `{"input":"order 1234"}`), "resp_sqs_order-1234")
	require.NoError(t, err)
	got, err := e.GetResponse(ctx, id)
	require.NoError(t, err)
	require.Len(t, got.Output, 1)
	owner, ok := api.ResponseIDOf(got.Output[0].ID)
	require.True(t, ok, got.Output[0].ID)
	assert.Equal(t, id, owner)
	_, err = createIn(ctx, t, e, `{"input":[`+ref(got.Output[0].ID)+`,{"role":"user","content":"status?"}]}`)
	require.NoError(t, err)
	assert.Equal(t, "Order received.", p.requests()[1].Items[0].Text())

	_, err = e.StartBackground(ctx, decodeReq(t, `{"input":"x"}`), "resp_bad/id")
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "id", ae.Param)
}

// A reference to an output item validated output set aside (a failed
// answer, whose id the stream's events showed) resolves, whether
// previous_response_id names its response or not, to that item as an input
// item: the model gets it, and as input it is shown, not set aside.
func TestReferenceToSetAsideItem(t *testing.T) {
	t.Parallel()
	p := script(text(invalidReport, 1, 1), text(validReport, 1, 1), text("ok", 1, 1), text("ok", 1, 1))
	e, st := newEngine(t, p, nil)
	ctx := context.Background()
	first, err := createIn(ctx, t, e, `{"input":"assess",`+jsonSchemaFormat+`}`)
	require.NoError(t, err)
	rec, err := st.Get(ctx, first.ID)
	require.NoError(t, err)
	aside := rec.Response.Output[0]
	require.True(t, aside.Hidden.Aside, "the failed answer is set aside")
	for i, prev := range []string{"", `"previous_response_id":"` + first.ID + `",`} {
		r, err := createIn(ctx, t, e, `{`+prev+`"input":[`+ref(aside.ID)+`,{"role":"user","content":"why?"}]}`)
		require.NoError(t, err, "previous_response_id: %q", prev)
		got, err := st.Get(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, aside.ID, got.Input[0].ID)
		assert.False(t, got.Input[0].Hidden.Aside, "as input, the item is shown")
		items := p.requests()[2+i].Items
		assert.Equal(t, invalidReport, items[len(items)-2].Text(), "the model gets the referenced item")
	}
}
