package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
)

// countCalls counts the items of items of type typ for call id.
func countCalls(items []api.Item, typ, id string) int {
	n := 0
	for i := range items {
		if items[i].Type == typ && items[i].CallID == id {
			n++
		}
	}
	return n
}

// A client that keeps its own history sends a conversation's call output
// again without its id (the AI SDK's tool loop with a conversation sends
// its tool results every step, and the call with its id, which the
// conversation recognises already): the same output is recognised as the
// conversation's item, neither stored again nor shown to the model twice
// (every provider wants one output per call id). A different output for a
// call the conversation holds an output of, or two in one input, is a 400
// naming it, before the model is called, and nothing is appended.
func TestConversationCallOutputSentAgain(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		p := script(calls(1, 1, call("cw", "get_weather", `{}`)), text("done", 1, 1), text("third", 1, 1))
		st := mk(t)
		e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
		ctx := context.Background()
		cs, c := newConversation(t, st)
		create := func(input string) error {
			_, err := run1(t, e, `{"conversation":"`+c.ID+`","tools":[`+clientTool+`],"input":`+input+`}`)
			return err
		}
		const out = `{"type":"function_call_output","call_id":"cw","output":"rain"}`
		rec, err := run1(t, e, `{"conversation":"`+c.ID+`","tools":[`+clientTool+`],"input":"x"}`)
		require.NoError(t, err)
		fc, err := json.Marshal(rec.response(t).Output[0])
		require.NoError(t, err)
		require.NoError(t, create(`[`+out+`]`))
		require.NoError(t, create(`[{"role":"user","content":"x"},`+string(fc)+`,`+out+`,`+out+`,{"role":"user","content":"more"}]`))
		last := p.requests()[2].Items
		assert.Equal(t, 1, countCalls(last, api.ItemFunctionCall, "cw"), "the model sees the call once")
		assert.Equal(t, 1, countCalls(last, api.ItemFunctionCallOutput, "cw"), "and its output once")
		items, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Equal(t, []string{"message", "function_call:get_weather", "function_call_output", "message", "message", "message", "message"}, types(items))

		for _, input := range []string{
			`[{"type":"function_call_output","call_id":"cw","output":"snow"}]`,
			`[{"role":"user","content":"y"},` + out + `,{"type":"function_call_output","call_id":"cw","output":"snow"}]`,
		} {
			err = create(input)
			var ae *api.Error
			require.ErrorAs(t, err, &ae, input)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Contains(t, ae.Param, ".call_id")
			assert.Contains(t, ae.Message, "cw")
		}
		assert.Len(t, p.requests(), 3, "a refused request reaches no model")
		after, err := cs.LoadConversationItems(ctx, c.ID, 100)
		require.NoError(t, err)
		assert.Len(t, after, len(items), "nothing appended")
	})
}
