package bedrock_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

// CountTokens counts the input of a model call with Bedrock's CountTokens:
// the Converse mapping of the call (system prompt, messages, toolConfig,
// cache points and thinking as the call would send them), for the
// foundation model a cross-region inference profile or an ARN names
// (CountTokens takes foundation model ids only). The count is what a
// Converse call of the same request reads: its usage's input_tokens.
func TestCountTokens(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "ok"})
	t.Cleanup(fake.Close)
	p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig()})
	effort := "low"
	req := &provider.Request{Model: claude, Instructions: "Be brief.", ReasoningEffort: effort,
		Items: []api.Item{user("Weather in Paris?"), fcall("call_1", "get_weather", `{"city":"Paris"}`), output("call_1", "sunny", false),
			msg(api.RoleAssistant, "Sunny."), user("And in Rome?")},
		Tools: []api.ToolDefinition{weatherTool()}}
	n, err := p.CountTokens(context.Background(), req)
	require.NoError(t, err)
	require.Positive(t, n)
	counts := fake.Counts()
	require.Len(t, counts, 1)
	c := counts[0]
	require.Equal(t, "anthropic.claude-sonnet-4-20250514-v1:0", c.ModelID, "the profile's foundation model")
	require.Equal(t, "Be brief.", *c.System[0].Text)
	require.Len(t, c.Messages, 5)
	require.NotNil(t, c.ToolConfig)
	require.Equal(t, "get_weather", c.ToolConfig.Tools[0].ToolSpec.Name)
	require.Contains(t, string(c.AdditionalModelRequestFields), `"budget_tokens":1024`)
	require.Contains(t, string(c.Body), `"cachePoint"`, "cache points as the call sends them")

	res, err := p.Complete(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, n, res.Usage.InputTokens, "the count is what the call reads")

	req.Model = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/" + claude
	_, err = p.CountTokens(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "anthropic.claude-sonnet-4-20250514-v1:0", fake.Counts()[1].ModelID)
}

// A model Bedrock does not count for (Amazon Nova, an application
// inference profile) is a 501 input_tokens_unsupported naming it, which no
// retry cures; what Bedrock refuses of the request is its 400, as a
// model call's.
func TestCountTokensRefused(t *testing.T) {
	fake := fakebedrock.New()
	t.Cleanup(fake.Close)
	p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig()})
	for _, model := range []string{"us.amazon.nova-pro-v1:0", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"} {
		_, err := p.CountTokens(context.Background(), &provider.Request{Model: model, Items: []api.Item{user("hi")}})
		var ae *api.Error
		require.True(t, errors.As(err, &ae), "%v", err)
		require.Equal(t, http.StatusNotImplemented, ae.Status, model)
		require.Equal(t, "input_tokens_unsupported", ae.Code)
		require.True(t, ae.NoRetry)
		require.Contains(t, ae.Message, model)
	}
	_, err := p.CountTokens(context.Background(), &provider.Request{Model: claude, Items: []api.Item{user("hi")}, MaxOutputTokens: new(int)})
	require.NoError(t, err, "maxTokens is no part of a count")
	require.Empty(t, fake.Requests(), "no model call")
}
