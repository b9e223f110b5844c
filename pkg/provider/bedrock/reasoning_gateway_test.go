package bedrock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

// The reasoning round trip of a store: false client (as Codex runs),
// through openai-go: include asks for reasoning.encrypted_content, so
// Claude's signed thinking comes back as the reasoning item's
// encrypted_content, with reasoning.summary's summary part (streamed with
// its events); the client replays the items with its function output, and
// the thinking block reaches Bedrock unchanged — the fake refuses altered
// or unsigned thinking, and an assistant turn with tool use that does not
// start with it.
func TestGatewayReasoningReplay(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "non-streaming"}[streaming], func(t *testing.T) {
			fake := fakebedrock.New(
				fakebedrock.Turn{Reasoning: "The user wants the weather; call the tool.", ToolUses: []fakebedrock.ToolUse{
					{ID: "tooluse_wx", Name: "get_weather", Input: `{"city":"Paris"}`}}},
				fakebedrock.Turn{Text: "Sunny in Paris."},
			)
			client := gateway(t, fake, nil)
			ctx := context.Background()
			input := responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser)}
			params := func() responses.ResponseNewParams {
				return responses.ResponseNewParams{
					Input:     responses.ResponseNewParamsInputUnion{OfInputItemList: input},
					Tools:     []responses.ToolUnionParam{weatherParam()},
					Store:     openai.Bool(false),
					Include:   []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
					Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortLow, Summary: responses.ReasoningSummaryAuto},
				}
			}
			var first responses.Response
			if streaming {
				evs := stream(t, client.Responses.NewStreaming(ctx, params()))
				first = evs[len(evs)-1].AsResponseCompleted().Response
				var summary []string
				for _, ev := range evs {
					if strings.HasPrefix(ev.Type, "response.reasoning_summary") {
						summary = append(summary, ev.Type)
					}
				}
				assert.Equal(t, []string{"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
					"response.reasoning_summary_text.done", "response.reasoning_summary_part.done"}, summary)
			} else {
				r, err := client.Responses.New(ctx, params())
				require.NoError(t, err)
				first = *r
			}
			require.Len(t, first.Output, 2)
			rs := first.Output[0].AsReasoning()
			require.Equal(t, "reasoning", first.Output[0].Type)
			assert.True(t, strings.HasPrefix(rs.EncryptedContent, "bedrock.v1:sig:"), "include asks for it: %q", rs.EncryptedContent)
			require.Len(t, rs.Summary, 1)
			assert.Equal(t, "The user wants the weather; call the tool.", rs.Summary[0].Text)
			require.Equal(t, "function_call", first.Output[1].Type)

			// The client replays the output as it got it, and answers.
			for _, it := range first.Output {
				input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON())))
			}
			input = append(input, functionOutput("tooluse_wx", `{"sky":"sunny"}`))
			var done responses.Response
			if streaming {
				evs := stream(t, client.Responses.NewStreaming(ctx, params()))
				done = evs[len(evs)-1].AsResponseCompleted().Response
			} else {
				r, err := client.Responses.New(ctx, params())
				require.NoError(t, err)
				done = *r
			}
			require.Equal(t, responses.ResponseStatusCompleted, done.Status)
			assert.Equal(t, "Sunny in Paris.", done.OutputText())

			second := fake.Requests()[1]
			require.Len(t, second.Messages, 3)
			thinking := second.Messages[1].Content[0].ReasoningContent
			require.NotNil(t, thinking, "the thinking block goes back first")
			require.NotNil(t, thinking.ReasoningText)
			assert.Equal(t, "The user wants the weather; call the tool.", thinking.ReasoningText.Text)
			assert.Equal(t, strings.TrimPrefix(rs.EncryptedContent, "bedrock.v1:sig:"), thinking.ReasoningText.Signature)
		})
	}
}

// A stored response keeps the thinking's signature whether or not it was
// shown: a retrieve whose include asks for it shows it.
func TestGatewayReasoningRetrieveInclude(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Reasoning: "Say hi.", Text: "Hi."})
	client := gateway(t, fake, nil)
	ctx := context.Background()
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Hello")},
		Reasoning: responses.ReasoningParam{Effort: responses.ReasoningEffortLow},
	})
	require.NoError(t, err)
	require.Equal(t, "reasoning", r.Output[0].Type)
	assert.Empty(t, r.Output[0].AsReasoning().EncryptedContent)

	got, err := client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Empty(t, got.Output[0].AsReasoning().EncryptedContent)
	got, err = client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got.Output[0].AsReasoning().EncryptedContent, "bedrock.v1:sig:"), "%q", got.Output[0].AsReasoning().EncryptedContent)
	got, err = client.Responses.Get(ctx, r.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	assert.Empty(t, got.Output[0].AsReasoning().EncryptedContent, "showing it changed nothing stored")
}
