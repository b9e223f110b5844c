package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The try-out model calls the calculator, answers its result, echoes the
// rest, and thinks (signed) when asked to reason.
func TestParrot(t *testing.T) {
	fake, err := fakebedrock.ListenHandler("127.0.0.1:0", parrot)
	require.NoError(t, err)
	defer fake.Close()
	p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig()})
	ctx := context.Background()
	calc := []api.ToolDefinition{{Name: "calculator"}}
	user := func(s string) api.Item {
		return api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: s}}}
	}
	const model = "us.anthropic.claude-sonnet-4-20250514-v1:0"

	res, err := p.Complete(ctx, &provider.Request{Model: model, Items: []api.Item{user("hello")}})
	require.NoError(t, err)
	require.Equal(t, "You said: hello", res.Text)

	res, err = p.Stream(ctx, &provider.Request{Model: model, Items: []api.Item{user("calculate 6*7")}, Tools: calc, ReasoningEffort: "low"},
		func(provider.Delta) error { return nil })
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 1)
	require.JSONEq(t, `{"expression":"6*7"}`, res.ToolCalls[0].Arguments)
	require.NotEmpty(t, res.Reasoning)

	items := []api.Item{user("calculate 6*7"), res.ToolCalls[0], {Type: api.ItemFunctionCallOutput, CallID: res.ToolCalls[0].CallID, Output: "42"}}
	res, err = p.Complete(ctx, &provider.Request{Model: model, Items: items, Tools: calc})
	require.NoError(t, err)
	require.Equal(t, "The tool says: 42", res.Text)
}
