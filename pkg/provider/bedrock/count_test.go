package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

// A text.format json_schema, which the Converse call sends as its
// outputConfig for the model to read, is counted: CountTokens takes no
// outputConfig, so the count reads the schema definition (name,
// description, schema) as a system text block. The count with a schema
// exceeds the count without by about the schema's size.
func TestCountTokensJSONSchema(t *testing.T) {
	fake := fakebedrock.New()
	t.Cleanup(fake.Close)
	p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig()})
	props := map[string]any{}
	for i := range 40 {
		props[fmt.Sprintf("field_%02d", i)] = map[string]any{"type": "string", "description": fmt.Sprintf("The value of the field number %d of the record", i)}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props, "additionalProperties": false})
	require.NoError(t, err)
	req := &provider.Request{Model: claude, Instructions: "Extract the record.", Items: []api.Item{user("Here is the record: ...")}}
	without, err := p.CountTokens(context.Background(), req)
	require.NoError(t, err)
	req.Text = &api.TextConfig{Format: api.TextFormat{Type: api.FormatJSONSchema, Name: "record", Schema: schema}}
	with, err := p.CountTokens(context.Background(), req)
	require.NoError(t, err)
	grew, size := with-without, len(schema)/4 // the fake counts 4 bytes a token
	require.Greater(t, grew, size*9/10, "the schema is counted: %d → %d, schema %d tokens", without, with, size)
	require.Less(t, grew, size*12/10, "the schema is counted once: %d → %d, schema %d tokens", without, with, size)
	c := fake.Counts()[1]
	last := c.System[len(c.System)-1]
	require.NotNil(t, last.Text)
	require.Contains(t, *last.Text, string(schema))
	require.Contains(t, *last.Text, "record")
}
