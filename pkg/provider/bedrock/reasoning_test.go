package bedrock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// reasoningItems turns a result's reasoning blocks into the reasoning
// items the engine stores.
func reasoningItems(res *provider.Result) []api.Item {
	var out []api.Item
	for _, b := range res.ReasoningBlocks {
		it := api.Item{Type: api.ItemReasoning, EncryptedContent: b.Encrypted}
		if b.Text != "" {
			it.Content = []api.ContentPart{{Type: api.PartReasoningText, Text: b.Text}}
		}
		out = append(out, it)
	}
	return out
}

// Claude's thinking comes back as reasoning blocks whose signature and
// redacted content travel in encrypted_content, and go back to Bedrock
// unchanged so that the continuation is valid (the fake checks every
// signature it handed out).
func TestReasoningRoundTrip(t *testing.T) {
	first := fakebedrock.Turn{Reasoning: "The user wants the weather; call the tool.", Redacted: []byte{0, 1, 2, 250},
		Text: "Checking.", ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_w", Name: "get_weather", Input: `{"city":"Oslo"}`}}}
	both(t, []fakebedrock.Turn{first, {Text: "It is cold."}, {Text: "never"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		tools := []api.ToolDefinition{weatherTool()}
		res, err := call(&provider.Request{Model: claude, ReasoningEffort: "medium", Items: []api.Item{user("Weather in Oslo?")}, Tools: tools})
		require.NoError(t, err)
		require.Equal(t, "The user wants the weather; call the tool.", res.Reasoning)
		require.Len(t, res.ReasoningBlocks, 2)
		require.Equal(t, "The user wants the weather; call the tool.", res.ReasoningBlocks[0].Text)
		require.True(t, strings.HasPrefix(res.ReasoningBlocks[0].Encrypted, "bedrock.v1:sig:"))
		require.Empty(t, res.ReasoningBlocks[1].Text)
		require.True(t, strings.HasPrefix(res.ReasoningBlocks[1].Encrypted, "bedrock.v1:redacted:"))

		history := []api.Item{user("Weather in Oslo?")}
		history = append(history, reasoningItems(res)...)
		history = append(history, msg(api.RoleAssistant, res.Text), res.ToolCalls[0], output(res.ToolCalls[0].CallID, "-5°C", false))
		// Reasoning from elsewhere is not sent: another provider's
		// encrypted_content, and reasoning without any.
		history = append(history[:1], append([]api.Item{
			{Type: api.ItemReasoning, EncryptedContent: "gAAAAABopenai-opaque"},
			{Type: api.ItemReasoning, Content: []api.ContentPart{{Type: api.PartReasoningText, Text: "unsigned"}}},
		}, history[1:]...)...)
		res2, err := call(&provider.Request{Model: claude, ReasoningEffort: "medium", Items: history, Tools: tools})
		require.NoError(t, err, "the fake accepts the signed reasoning as it was")
		require.Contains(t, string(fake.Requests()[1].AdditionalModelRequestFields), `"thinking"`, "the tool loop thought, so it thinks on")
		require.Equal(t, "It is cold.", res2.Text)
		asst := fake.Requests()[1].Messages[1]
		require.Equal(t, "assistant", asst.Role)
		require.Len(t, asst.Content, 4)
		require.Equal(t, "The user wants the weather; call the tool.", asst.Content[0].ReasoningContent.ReasoningText.Text)
		require.NotEmpty(t, asst.Content[0].ReasoningContent.ReasoningText.Signature)
		require.Equal(t, []byte{0, 1, 2, 250}, asst.Content[1].ReasoningContent.RedactedContent)
		require.Equal(t, "Checking.", text(asst.Content[2]))
		require.NotNil(t, asst.Content[3].ToolUse)

		// Altered reasoning is refused by Bedrock: the client sees its 400.
		history[3].Content[0].Text = "I changed my mind."
		_, err = call(&provider.Request{Model: claude, Items: history, Tools: tools})
		ae := requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "invalid_request")
		require.Contains(t, ae.Message, "signature")
	})
}

func TestThinkingConfig(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name, model, effort string
		max                 *int
		budget, maxTokens   int // 0: no thinking / no maxTokens
	}{
		{"high", claude, "high", nil, 16384, 16384 + 4096},
		{"low", "anthropic.claude-3-7-sonnet-20250219-v1:0", "low", nil, 1024, 16384}, // Claude's default (TestDefaultMaxTokens)
		{"under max_output_tokens", claude, "high", n(2000), 1999, 2000},
		{"max_output_tokens too small", claude, "medium", n(1000), 0, 1000},
		{"not Claude", "amazon.nova-pro-v1:0", "high", nil, 0, 0},
		{"no effort", claude, "", nil, 0, 16384},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, fake := newProvider(t, fakebedrock.Turn{Text: "ok"})
			_, err := p.Complete(context.Background(), &provider.Request{Model: tc.model, ReasoningEffort: tc.effort, MaxOutputTokens: tc.max, Items: []api.Item{user("hi")}})
			require.NoError(t, err)
			req := only(t, fake)
			if tc.budget == 0 {
				require.Empty(t, req.AdditionalModelRequestFields)
			} else {
				var extra struct {
					Thinking struct {
						Type   string `json:"type"`
						Budget int    `json:"budget_tokens"`
					} `json:"thinking"`
				}
				require.NoError(t, json.Unmarshal(req.AdditionalModelRequestFields, &extra))
				require.Equal(t, "enabled", extra.Thinking.Type)
				require.Equal(t, tc.budget, extra.Thinking.Budget)
			}
			if tc.maxTokens == 0 {
				require.Nil(t, req.InferenceConfig)
			} else {
				require.Equal(t, tc.maxTokens, *req.InferenceConfig.MaxTokens)
			}
		})
	}
}

// Anthropic allows thinking with tool choice auto or none only, and not to
// continue a tool loop whose assistant turn did not think.
func TestThinkingInToolLoop(t *testing.T) {
	tools := []api.ToolDefinition{weatherTool()}
	both(t, []fakebedrock.Turn{{ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_f", Name: "get_weather", Input: `{"city":"Bern"}`}}}, {Text: "Mild."}, {Text: "Hello."}},
		func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
			res, err := call(&provider.Request{Model: claude, ReasoningEffort: "high", Items: []api.Item{user("Weather in Bern?")}, Tools: tools, ForcedTool: "get_weather", ToolChoice: api.ToolChoiceRequired})
			require.NoError(t, err)
			history := []api.Item{user("Weather in Bern?"), res.ToolCalls[0], output("tooluse_f", "mild", false)}
			_, err = call(&provider.Request{Model: claude, ReasoningEffort: "high", Items: history, Tools: tools, ToolChoice: api.ToolChoiceAuto})
			require.NoError(t, err)
			_, err = call(&provider.Request{Model: claude, ReasoningEffort: "high", Items: append(history, msg(api.RoleAssistant, "Mild."), user("Thanks")), Tools: tools, ToolChoice: api.ToolChoiceAuto})
			require.NoError(t, err)
			reqs := fake.Requests()
			require.Empty(t, reqs[0].AdditionalModelRequestFields, "a forced tool choice: no thinking")
			require.Empty(t, reqs[1].AdditionalModelRequestFields, "the tool loop's assistant turn did not think")
			require.Contains(t, string(reqs[2].AdditionalModelRequestFields), `"thinking"`, "a new user turn may think again")
		})
}
