package httpapi_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

// A Bedrock stream cut inside a tool call's input (messageStart, the
// text's three words and its stop, the toolUse start and the first 8
// bytes of its input) fails the response with the call in_progress; a
// continuation through openai-go, by previous_response_id or in the
// conversation, gives Claude the text it had written but not the cut call
// (Bedrock takes no toolUse whose input is not a JSON object: the provider
// would have sent {}), nor a made-up result for it.
func TestContinuationAfterCutToolUseOnBedrock(t *testing.T) {
	cutTurn := fakebedrock.Turn{Text: "Let me look.", CutAfterEvents: 7,
		ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_cut", Name: "exec", Input: `{"cmd":"ls -la /tmp"}`}}}
	answer := fakebedrock.Turn{Text: "Done."}
	fake := fakebedrock.New(cutTurn, answer, cutTurn, answer)
	client := openai.NewClient(option.WithBaseURL(newBedrockGateway(t, fake)+"/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ctx := context.Background()
	cut := func(p responses.ResponseNewParams) string {
		var failed *responses.Response
		for _, e := range readSDKStream(t, client.Responses.NewStreaming(ctx, p)) {
			if e.ev.Type == "response.failed" {
				r := e.ev.Response
				failed = &r
			}
		}
		require.NotNil(t, failed)
		require.Len(t, failed.Output, 2)
		require.Equal(t, "function_call", failed.Output[1].Type)
		require.Equal(t, "in_progress", string(failed.Output[1].Status))
		require.Equal(t, `{"cmd":"`, failed.Output[1].Arguments.OfString)
		return failed.ID
	}
	p := execParams("list /tmp")
	p.PreviousResponseID = openai.String(cut(execParams("list /tmp")))
	p.Input.OfString = openai.String("go on")
	r, err := client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "Done.", r.OutputText())
	requireContinuedWithoutToolUse(t, fake, 1)

	conv, err := client.Conversations.New(ctx, conversations.ConversationNewParams{})
	require.NoError(t, err)
	p = execParams("list /tmp")
	p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)}
	cut(p)
	p.Input.OfString = openai.String("go on")
	r, err = client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "Done.", r.OutputText())
	requireContinuedWithoutToolUse(t, fake, 3)
}

// execParams is a request with input and the client function exec.
func execParams(input string) responses.ResponseNewParams {
	p := textParams(input)
	p.Tools = []responses.ToolUnionParam{{OfFunction: &responses.FunctionToolParam{Name: "exec", Parameters: map[string]any{"type": "object"}}}}
	return p
}

// requireContinuedWithoutToolUse checks what Claude got in request i:
// the question, its cut turn's text, the new question — no toolUse, nor
// a toolResult.
func requireContinuedWithoutToolUse(t *testing.T, fake *fakebedrock.Server, i int) {
	t.Helper()
	msgs := fake.Requests()[i].Messages
	require.Len(t, msgs, 3)
	require.Len(t, msgs[1].Content, 1)
	require.NotNil(t, msgs[1].Content[0].Text, "no toolUse")
	require.Equal(t, "Let me look.", *msgs[1].Content[0].Text)
	for _, b := range msgs[2].Content {
		require.Nil(t, b.ToolResult)
	}
	require.Equal(t, "go on", *msgs[2].Content[0].Text)
}

// A Bedrock answer that reaches max_tokens inside a tool call's input
// (stopReason max_tokens) ends the response incomplete with the call
// incomplete, half its input as arguments; a continuation through
// openai-go by previous_response_id gives Claude the text it had written
// but not the cut call (the provider would have sent {} for its input),
// nor a made-up result for it.
func TestContinuationAfterMaxTokensToolUseOnBedrock(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "Let me look.", StopReason: "max_tokens",
		ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_cut", Name: "exec", Input: `{"cmd":"`}}}, fakebedrock.Turn{Text: "Done."})
	client := openai.NewClient(option.WithBaseURL(newBedrockGateway(t, fake)+"/"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	ctx := context.Background()
	var cut *responses.Response
	for _, e := range readSDKStream(t, client.Responses.NewStreaming(ctx, execParams("list /tmp"))) {
		if e.ev.Type == "response.incomplete" {
			r := e.ev.Response
			cut = &r
		}
	}
	require.NotNil(t, cut)
	require.Equal(t, "max_output_tokens", string(cut.IncompleteDetails.Reason))
	require.Len(t, cut.Output, 2)
	require.Equal(t, "function_call", cut.Output[1].Type)
	require.Equal(t, "incomplete", string(cut.Output[1].Status))
	require.Equal(t, `{"cmd":"`, cut.Output[1].Arguments.OfString)

	p := execParams("go on")
	p.PreviousResponseID = openai.String(cut.ID)
	r, err := client.Responses.New(ctx, p)
	require.NoError(t, err)
	require.Equal(t, "Done.", r.OutputText())
	requireContinuedWithoutToolUse(t, fake, 1)
}
