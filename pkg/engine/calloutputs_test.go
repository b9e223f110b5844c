package engine

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
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

// A client that re-sends its history (the Agents SDK's sessions, the AI
// SDK) sends a call the conversation or the previous response holds again
// without its id, its arguments perhaps serialized anew (the AI SDK
// stringifies the parsed arguments): the same call is recognised as the
// held item, neither stored again nor shown to the model twice (providers
// refuse two calls of one id); one given twice in one input is kept once.
// A different call with a call_id in use, held or given earlier in the
// input, is a 400 naming its call_id, before the model is called, and
// nothing is appended.
func TestCallSentAgain(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		for _, conv := range []bool{false, true} {
			p := script(calls(1, 1, call("cw", "get_weather", `{"city": "Oslo"}`)), text("done", 1, 1))
			st := mk(t)
			e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
			ctx := context.Background()
			cs, c := newConversation(t, st)
			with := `"conversation":"` + c.ID + `"`
			rec, err := run1(t, e, `{`+with+`,"tools":[`+clientTool+`],"input":"x"}`)
			require.NoError(t, err)
			if !conv {
				with = `"previous_response_id":"` + rec.response(t).ID + `"`
			}
			create := func(input string) error {
				_, err := run1(t, e, `{`+with+`,"tools":[`+clientTool+`],"input":`+input+`}`)
				return err
			}
			fc := func(args string) string {
				return `{"type":"function_call","call_id":"cw","name":"get_weather","arguments":` + strconv.Quote(args) + `}`
			}
			const out = `{"type":"function_call_output","call_id":"cw","output":"rain"}`
			for _, tc := range []struct{ input, param, callID string }{
				{`[` + fc(`{"city":"Paris"}`) + `]`, "input[0].call_id", "cw"},
				{`[{"type":"function_call","call_id":"cw","name":"other","arguments":"{\"city\":\"Oslo\"}"}]`, "input[0].call_id", "cw"},
				{`[` + fc(`{"city":"Oslo"}`) + `,` + fc(`{"city":"Paris"}`) + `]`, "input[1].call_id", "cw"},
				{`[{"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{}"},{"type":"function_call","call_id":"c2","name":"get_weather","arguments":"{\"city\":\"Rome\"}"}]`, "input[1].call_id", "c2"},
			} {
				err = create(tc.input)
				var ae *api.Error
				require.ErrorAs(t, err, &ae, tc.input)
				assert.Equal(t, http.StatusBadRequest, ae.Status)
				assert.Equal(t, tc.param, ae.Param)
				assert.Contains(t, ae.Message, "'"+tc.callID+"'")
			}
			require.Len(t, p.requests(), 1, "a refused request reaches no model")

			require.NoError(t, create(`[`+fc(`{"city":"Oslo"}`)+`,`+fc(`{ "city" : "Oslo" }`)+`,`+out+`]`))
			require.Len(t, p.requests(), 2)
			last := p.requests()[1].Items
			assert.Equal(t, 1, countCalls(last, api.ItemFunctionCall, "cw"), "conversation %v: the model sees the call once", conv)
			assert.Equal(t, 1, countCalls(last, api.ItemFunctionCallOutput, "cw"), "and its output once")
			if conv {
				items, err := cs.LoadConversationItems(ctx, c.ID, 100)
				require.NoError(t, err)
				assert.Equal(t, []string{"message", "function_call:get_weather", "function_call_output", "message"}, types(items))
			}
		}
	})
}

// A model that numbers its calls per turn (docs/architecture.md, "Ids and
// names each provider accepts") issues call_1 in every turn: the
// conversation then holds several calls of one call_id, each answered. A
// client answers the second call_1 with its own output, and a client that
// re-sends its whole history sends every call and output again without
// their ids: neither is a duplicate, since each matches the call or the
// output it repeats, and the model sees each once.
func TestCallIDReusedAcrossTurns(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		for _, conv := range []bool{false, true} {
			p := script(calls(1, 1, call("call_1", "get_weather", `{"city":"Oslo"}`)),
				calls(1, 1, call("call_1", "get_weather", `{"city":"Paris"}`)),
				text("done", 1, 1), text("again", 1, 1))
			create, first := reusedCallIDs(t, p, mk(t), conv)
			const rain = `{"type":"function_call_output","call_id":"call_1","output":"rain"}`
			const sun = `{"type":"function_call_output","call_id":"call_1","output":"sun"}`
			second, err := create(first, `[`+rain+`]`)
			require.NoError(t, err, "conversation %v", conv)
			third, err := create(second, `[`+sun+`]`)
			require.NoError(t, err, "conversation %v: the second call_1 answered", conv)
			_, err = create(third, `[{"role":"user","content":"x"},`+weatherCall("Oslo")+`,`+rain+`,`+weatherCall("Paris")+`,`+sun+`,{"role":"user","content":"more"}]`)
			require.NoError(t, err, "conversation %v: the history sent again", conv)
			last := p.requests()[len(p.requests())-1].Items
			assert.Equal(t, 2, countCalls(last, api.ItemFunctionCall, "call_1"), "conversation %v: each call once", conv)
			assert.Equal(t, 2, countCalls(last, api.ItemFunctionCallOutput, "call_1"), "conversation %v: each output once", conv)
		}
	})
}

// reusedCallIDs runs the first response of a model that numbers its calls
// per turn (script p: call_1 in each of its turns) with a client tool, in
// a conversation (conv) or alone, and returns a function that continues
// the response prev with input (through the conversation, or
// previous_response_id), and that first response.
func reusedCallIDs(t *testing.T, p *scripted, st store.ResponseStore, conv bool) (continueWith func(prev *recorder, input string) (*recorder, error), first *recorder) {
	t.Helper()
	e, _ := newEngine(t, p, nil, func(c *Config) { c.Store = st })
	_, c := newConversation(t, st)
	start := ``
	if conv {
		start = `"conversation":"` + c.ID + `",`
	}
	first, err := run1(t, e, `{`+start+`"tools":[`+clientTool+`],"input":"x"}`)
	require.NoError(t, err)
	return func(prev *recorder, input string) (*recorder, error) {
		with := start
		if !conv {
			with = `"previous_response_id":"` + prev.response(t).ID + `",`
		}
		return run1(t, e, `{`+with+`"tools":[`+clientTool+`],"input":`+input+`}`)
	}, first
}

// weatherCall is a get_weather function_call item of call_1 for city,
// without its id.
func weatherCall(city string) string {
	return `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"` + city + `\"}"}`
}

// A continuation that leaves the second call_1 of a model numbering its
// calls per turn unanswered (the client sends a message instead) gets it
// the error result every unanswered client call gets: the first call_1's
// output answers the first call only, so the model never sees a call
// without its output.
func TestReusedCallIDLeftUnanswered(t *testing.T) {
	p := script(calls(1, 1, call("call_1", "get_weather", `{"city":"Oslo"}`)),
		calls(1, 1, call("call_1", "get_weather", `{"city":"Paris"}`)),
		text("done", 1, 1))
	e, _ := newEngine(t, p, nil)
	first, err := run1(t, e, `{"tools":[`+clientTool+`],"input":"x"}`)
	require.NoError(t, err)
	second, err := run1(t, e, `{"previous_response_id":"`+first.response(t).ID+`","tools":[`+clientTool+`],"input":[{"type":"function_call_output","call_id":"call_1","output":"rain"}]}`)
	require.NoError(t, err)
	_, err = run1(t, e, `{"previous_response_id":"`+second.response(t).ID+`","tools":[`+clientTool+`],"input":"never mind"}`)
	require.NoError(t, err)
	last := p.requests()[len(p.requests())-1].Items
	assert.Equal(t, 2, countCalls(last, api.ItemFunctionCall, "call_1"), "both calls")
	assert.Equal(t, 2, countCalls(last, api.ItemFunctionCallOutput, "call_1"), "each with its output")
}

// A tool that answers two calls of a reused call_id alike ("ok" both
// times) answers each: the second "ok" is the answer of the call waiting
// for it, not the first call's output sent again, through
// previous_response_id and in a conversation, whether the client sends the
// answer alone or its whole history again.
func TestReusedCallIDAnsweredAlike(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		for _, conv := range []bool{false, true} {
			for _, whole := range []bool{false, true} {
				p := script(calls(1, 1, call("call_1", "get_weather", `{"city":"Oslo"}`)),
					calls(1, 1, call("call_1", "get_weather", `{"city":"Paris"}`)),
					text("done", 1, 1))
				create, first := reusedCallIDs(t, p, mk(t), conv)
				const ok = `{"type":"function_call_output","call_id":"call_1","output":"ok"}`
				second, err := create(first, `[`+ok+`]`)
				require.NoError(t, err)
				input := `[` + ok + `]`
				if whole {
					input = `[{"role":"user","content":"x"},` + weatherCall("Oslo") + `,` + ok + `,` + weatherCall("Paris") + `,` + ok + `]`
				}
				_, err = create(second, input)
				require.NoError(t, err, "conversation %v, whole history %v", conv, whole)
				last := p.requests()[len(p.requests())-1].Items
				var outputs []string
				for _, it := range last {
					if it.Type == api.ItemFunctionCallOutput {
						outputs = append(outputs, it.Output)
					}
				}
				assert.Equal(t, []string{"ok", "ok"}, outputs, "conversation %v, whole history %v: each call its own answer", conv, whole)
			}
		}
	})
}

// reusedCallIDInput is a request with a client tool whose input is n calls
// of one call_id, each with arguments of its own and its output: a model
// numbering its calls per turn, its history sent again.
func reusedCallIDInput(n int) string {
	var b strings.Builder
	b.WriteString(`{"tools":[` + clientTool + `],"input":[{"role":"user","content":"x"}`)
	for i := range n {
		b.WriteString(`,` + weatherCall(strconv.Itoa(i)) + `,{"type":"function_call_output","call_id":"call_1","output":"ok"}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// Recognising a call or output sent again takes work linear in the items
// of its call_id: 4,000 calls of one call_id (an 8 MB body holds 5,000
// with their outputs) compared each with every earlier one took 35 s of
// CPU. Four times the items may cost four times the allocations, not
// sixteen.
func TestReusedCallIDManyCallsLinear(t *testing.T) {
	allocs := func(n int) float64 {
		body := reusedCallIDInput(n)
		return testing.AllocsPerRun(1, func() {
			e, _ := newEngine(t, script(text("done", 1, 1)), nil)
			_, err := run1(t, e, body)
			require.NoError(t, err)
		})
	}
	small, large := allocs(100), allocs(400)
	assert.Less(t, large/small, 8.0, "allocations: %v for 100 calls, %v for 400", small, large)
}
