package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/ssecheck"
)

// A response the gateway returns, created, retrieved or compacted, its
// input items, a conversation, its items, a model and a deletion hold
// every field openai-go marks required on their types (an openai-go that
// requires a new one fails here), beside the OpenResponses schema the
// other tests check.
func TestResponsesHaveOpenAIGoRequiredFields(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(
		fakellm.Turn{Text: "Hello."},
		fakellm.Turn{Text: "A summary."},
	), map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	ctx := context.Background()
	r, err := g.client.Responses.New(ctx, textParams("Hi"))
	require.NoError(t, err)
	got, err := g.client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	c, err := g.client.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "test-model", PreviousResponseID: openai.String(r.ID)})
	require.NoError(t, err)
	inputs, err := g.client.Responses.InputItems.List(ctx, r.ID, responses.InputItemListParams{})
	require.NoError(t, err)
	conv, err := g.client.Conversations.New(ctx, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("Hello", responses.EasyInputMessageRoleUser)}})
	require.NoError(t, err)
	convItems, err := g.client.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{})
	require.NoError(t, err)
	models, err := g.client.Models.List(ctx)
	require.NoError(t, err)
	deleted, err := g.client.Conversations.Delete(ctx, conv.ID)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		raw  string
		typ  any
	}{
		{"created Response", r.RawJSON(), responses.Response{}},
		{"retrieved Response", got.RawJSON(), responses.Response{}},
		{"output message", r.Output[0].RawJSON(), responses.ResponseOutputMessage{}},
		{"CompactedResponse", c.RawJSON(), responses.CompactedResponse{}},
		{"input items", inputs.RawJSON(), responses.ResponseItemList{}},
		{"Conversation", conv.RawJSON(), conversations.Conversation{}},
		{"conversation items", convItems.RawJSON(), conversations.ConversationItemList{}},
		{"Model", models.Data[0].RawJSON(), openai.Model{}},
		{"ConversationDeletedResource", deleted.RawJSON(), conversations.ConversationDeletedResource{}},
	} {
		required, err := ssecheck.Required(tc.typ)
		require.NoError(t, err, tc.name)
		require.NotEmpty(t, required, "%s: openai-go marks no field of %T required", tc.name, tc.typ)
		missing, err := ssecheck.Missing(tc.typ, []byte(tc.raw))
		require.NoError(t, err, tc.name)
		assert.Empty(t, missing, "%s: fields openai-go requires: %s", tc.name, tc.raw)
	}
}

// A response echoes an explicit standard access program, as OpenAI does,
// and shows null for none or a Daybreak one, which this gateway accepts
// and runs as the standard program (the one that ran).
func TestAccessProgramsEchoed(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "A."}, fakellm.Turn{Text: "B."}, fakellm.Turn{Text: "C."}), nil)
	for cyber, want := range map[string]string{
		"":             `null`,
		"standard":     `{"cyber":"standard"}`,
		"daybreak_red": `null`,
	} {
		params := textParams("Hi")
		if cyber != "" {
			params.AccessPrograms = responses.ResponseNewParamsAccessPrograms{Cyber: cyber}
		}
		r, err := g.client.Responses.New(context.Background(), params)
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(r.RawJSON()), &m))
		assert.JSONEq(t, want, string(m["access_programs"]), cyber)
	}
}
