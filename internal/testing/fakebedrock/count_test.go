package fakebedrock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

// CountTokens (POST /model/{modelId}/count-tokens) through the real SDK
// client: a Converse input of an Anthropic Claude model, named by its
// foundation model id, is counted as a Converse call of that input would
// meter it, without a scripted turn nor the prompt cache; inference
// profile ids, ARNs and models that are not Claude are refused as
// Bedrock refuses them, and so is what Converse refuses.
func TestCountTokens(t *testing.T) {
	t.Parallel()
	fake := fakebedrock.New(fakebedrock.Turn{Text: "ok"})
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	ctx := context.Background()
	const sonnet4 = "anthropic.claude-sonnet-4-20250514-v1:0" // a foundation model id
	user, asst := types.ConversationRoleUser, types.ConversationRoleAssistant
	msgs := []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a"), cachePoint())}
	system := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}}
	count := func(model string, msgs []types.Message, tools *types.ToolConfiguration) (int, error) {
		out, err := client.CountTokens(ctx, &bedrockruntime.CountTokensInput{ModelId: aws.String(model),
			Input: &types.CountTokensInputMemberConverse{Value: types.ConverseTokensRequest{Messages: msgs, System: system, ToolConfig: tools}}})
		if err != nil {
			return 0, err
		}
		return int(aws.ToInt32(out.InputTokens)), nil
	}

	n, err := count(sonnet4, msgs, toolConfig())
	require.NoError(t, err)
	conv, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(sonnet4), Messages: msgs, System: system, ToolConfig: toolConfig()})
	require.NoError(t, err)
	u := conv.Usage
	require.Positive(t, n)
	require.Equal(t, n, int(aws.ToInt32(u.InputTokens)+aws.ToInt32(u.CacheReadInputTokens)+aws.ToInt32(u.CacheWriteInputTokens)), "the count is what the call reads")
	require.Equal(t, 1, fake.Calls(), "a count takes no scripted turn")
	counts := fake.Counts()
	require.Len(t, counts, 1)
	require.Equal(t, "CountTokens", counts[0].Operation)
	require.Equal(t, sonnet4, counts[0].ModelID)
	require.Len(t, counts[0].Messages, 3)
	require.Equal(t, "Be brief.", *counts[0].System[0].Text)

	for _, tc := range []struct {
		name, model string
		msgs        []types.Message
		tools       *types.ToolConfiguration
		want        string
	}{
		{"cross-region inference profile", "us." + sonnet4, msgs, toolConfig(), "The provided model doesn't support counting tokens."},
		{"ARN", "arn:aws:bedrock:us-east-1::foundation-model/" + sonnet4, msgs, toolConfig(), "The provided model doesn't support counting tokens."},
		{"Nova", nova, msgs, toolConfig(), "The provided model doesn't support counting tokens."},
		{"tool blocks without toolConfig", sonnet4, msgs, nil, "The toolConfig field must be defined"},
		{"starts with assistant", sonnet4, msgs[1:], toolConfig(), "A conversation must start with a user message."},
		{"no messages", sonnet4, nil, nil, "A conversation must start with a user message."},
	} {
		_, err := count(tc.model, tc.msgs, tc.tools)
		var ve *types.ValidationException
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.want, ve.ErrorMessage()[:min(len(ve.ErrorMessage()), len(tc.want))], tc.name)
	}
	require.Len(t, fake.Counts(), 1, "refused counts are not recorded")
}

// With a context window the fake refuses, as Bedrock does, a Converse or
// ConverseStream call whose input comes to more tokens than the window
// (what CountTokens counts for it): a ValidationException "Input is too
// long for requested model.", nothing answered from the script; a call
// within the window is answered.
func TestContextWindow(t *testing.T) {
	t.Parallel()
	fake := fakebedrock.New(fakebedrock.Turn{Text: "ok"})
	defer fake.Close()
	fake.SetContextWindow(40)
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	ctx := context.Background()
	long := []types.Message{message(types.ConversationRoleUser, text(strings.Repeat("x", 400)))}
	_, err := client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(nova), Messages: long})
	var ve *types.ValidationException
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "Input is too long for requested model.", ve.ErrorMessage())
	_, err = client.ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(nova), Messages: long})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, 0, fake.Calls())
	_, err = client.Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(nova), Messages: []types.Message{message(types.ConversationRoleUser, text("hi"))}})
	require.NoError(t, err)
}
