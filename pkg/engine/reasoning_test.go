package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// thinking is a model turn that reasons (one block with opaque state) and
// calls the client function get_weather.
func thinking() step {
	st := calls(1, 1, call("call_1", "get_weather", `{"city":"Paris"}`))
	st.res.ReasoningBlocks = []provider.ReasoningBlock{{Text: "Call the tool.", Encrypted: "state-1"}}
	return st
}

const weatherTool = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]`

// A reasoning item's opaque state is encrypted_content only when include
// asks for it; otherwise it is kept hidden with the item, stored, and the
// model gets it back on the continuation all the same. reasoning.summary
// gives the reasoning text as the summary.
func TestReasoningStateHiddenUnlessIncluded(t *testing.T) {
	t.Parallel()
	p := script(thinking(), text("Sunny.", 1, 1), thinking())
	e, st := newEngine(t, p, &mockExec{})

	rec, err := run1(t, e, `{"model":"m","input":"Weather?",`+weatherTool+`,"reasoning":{"effort":"low","summary":"auto"}}`)
	require.NoError(t, err)
	resp := rec.response(t)
	require.Equal(t, api.StatusRequiresAction, resp.Status)
	rs := resp.Output[0]
	require.Equal(t, api.ItemReasoning, rs.Type)
	assert.Empty(t, rs.EncryptedContent, "not shown without include")
	assert.NotContains(t, string(rec.resp), "state-1")
	assert.Equal(t, []api.ContentPart{{Type: api.PartSummaryText, Text: "Call the tool."}}, rs.Summary)
	stored, err := st.Get(context.Background(), resp.ID)
	require.NoError(t, err)
	assert.Equal(t, "state-1", stored.Response.Output[0].Hidden.Encrypted, "the store keeps it")

	_, err = run1(t, e, `{"model":"m","previous_response_id":"`+resp.ID+`",`+weatherTool+`,"input":[{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`)
	require.NoError(t, err)
	var sent []api.Item
	for _, it := range p.requests()[1].Items {
		if it.Type == api.ItemReasoning {
			sent = append(sent, it)
		}
	}
	require.Len(t, sent, 1)
	assert.Equal(t, "state-1", sent[0].EncryptedContent, "the model gets its state back")
	assert.Equal(t, "Call the tool.", sent[0].Text())

	// With include, it is shown; without reasoning.summary, no summary.
	rec, err = run1(t, e, `{"model":"m","input":"Weather?",`+weatherTool+`,"store":false,"include":["reasoning.encrypted_content"]}`)
	require.NoError(t, err)
	rs = rec.response(t).Output[0]
	assert.Equal(t, "state-1", rs.EncryptedContent)
	assert.Empty(t, rs.Summary)
}

// A store: false client replays a reasoning item as it got it: the model
// gets it unchanged (its text and state).
func TestReasoningReplayedUnchanged(t *testing.T) {
	t.Parallel()
	p := script(text("Sunny.", 1, 1))
	e, _ := newEngine(t, p, &mockExec{})
	_, err := run1(t, e, `{"model":"m","store":false,`+weatherTool+`,"input":[
		{"role":"user","content":"Weather?"},
		{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Call the tool."}],"encrypted_content":"state-1"},
		{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_1","output":"sunny"}]}`)
	require.NoError(t, err)
	items := p.requests()[0].Items
	require.Equal(t, api.ItemReasoning, items[1].Type)
	assert.Equal(t, "state-1", items[1].EncryptedContent)
	assert.Equal(t, "Call the tool.", items[1].Text())
}
