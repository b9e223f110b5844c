package bedrock_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

func TestToolUseAnswer(t *testing.T) {
	turn := fakebedrock.Turn{Text: "Checking both.", ToolUses: []fakebedrock.ToolUse{
		{ID: "tooluse_a", Name: "get_weather", Input: `{"city":"Paris","n":12345678901234567890}`},
		{ID: "tooluse_b", Name: "get_weather", Input: `{"city":"Zürich","days":[1,2.5]}`},
		{ID: "tooluse_c", Name: "now"}, // no input: {}
	}}
	both(t, []fakebedrock.Turn{turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		res, err := call(&provider.Request{Model: claude, Items: []api.Item{user("weather?")}, Tools: []api.ToolDefinition{weatherTool(), {Name: "now"}}, ToolChoice: api.ToolChoiceAuto})
		require.NoError(t, err)
		require.Equal(t, provider.FinishToolCalls, res.FinishReason)
		require.Equal(t, "Checking both.", res.Text)
		require.Len(t, res.ToolCalls, 3)
		for i, id := range []string{"tooluse_a", "tooluse_b", "tooluse_c"} {
			require.Equal(t, api.ItemFunctionCall, res.ToolCalls[i].Type)
			require.Equal(t, id, res.ToolCalls[i].CallID)
		}
		require.Equal(t, "get_weather", res.ToolCalls[0].Name)
		// Numbers stay exact.
		require.JSONEq(t, `{"city":"Paris","n":12345678901234567890}`, res.ToolCalls[0].Arguments)
		require.Contains(t, res.ToolCalls[0].Arguments, "12345678901234567890")
		require.JSONEq(t, `{"city":"Zürich","days":[1,2.5]}`, res.ToolCalls[1].Arguments)
		require.Equal(t, "{}", res.ToolCalls[2].Arguments)

		tc := only(t, fake).ToolConfig
		require.NotNil(t, tc)
		require.Len(t, tc.Tools, 2)
		require.Equal(t, "get_weather", tc.Tools[0].ToolSpec.Name)
		require.Equal(t, "Weather of a city", *tc.Tools[0].ToolSpec.Description)
		require.JSONEq(t, string(weatherTool().Parameters), string(tc.Tools[0].ToolSpec.InputSchema.JSON))
		require.JSONEq(t, `{"type":"object","properties":{}}`, string(tc.Tools[1].ToolSpec.InputSchema.JSON), "a tool without parameters gets an open object schema")
		require.NotNil(t, tc.ToolChoice.Auto)
	})
}

// Tool-use blocks are tracked by contentBlockIndex and their partial input
// JSON is assembled per block, even when the deltas of several blocks
// interleave.
func TestStreamToolUseByContentBlockIndex(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Text: "Two calls.", Interleave: true, Chunks: 6, ToolUses: []fakebedrock.ToolUse{
		{ID: "tooluse_1", Name: "get_weather", Input: `{"city":"Paris","unit":"celsius"}`},
		{ID: "tooluse_2", Name: "get_weather", Input: `{"city":"Rome","unit":"fahrenheit"}`},
	}})
	args := map[int]string{}
	starts := map[int][2]string{}
	var order []int
	res, err := p.Stream(context.Background(), &provider.Request{Model: claude, Items: []api.Item{user("weather?")}, Tools: []api.ToolDefinition{weatherTool()}},
		func(d provider.Delta) error {
			if d.Kind != provider.DeltaToolCall {
				return nil
			}
			if d.ToolCallID != "" {
				starts[d.ToolIndex] = [2]string{d.ToolCallID, d.ToolName}
			}
			args[d.ToolIndex] += d.Text
			if d.Text != "" {
				order = append(order, d.ToolIndex)
			}
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, [2]string{"tooluse_1", "get_weather"}, starts[0])
	require.Equal(t, [2]string{"tooluse_2", "get_weather"}, starts[1])
	require.Equal(t, `{"city":"Paris","unit":"celsius"}`, args[0])
	require.Equal(t, `{"city":"Rome","unit":"fahrenheit"}`, args[1])
	require.Equal(t, []int{0, 1, 0, 1}, order[:4], "the fake interleaved the blocks' deltas")
	require.Len(t, res.ToolCalls, 2)
	require.Equal(t, args[0], res.ToolCalls[0].Arguments)
	require.Equal(t, args[1], res.ToolCalls[1].Arguments)
}

// toolTurnHistory is a finished tool turn: two calls, one failed, one with
// an empty output, followed by a user question.
func toolTurnHistory() []api.Item {
	return []api.Item{
		user("Weather in Paris and Rome?"),
		msg(api.RoleAssistant, "Let me check."),
		fcall("tooluse_p", "get_weather", `{"city":"Paris"}`),
		fcall("tooluse_r", "get_weather", `{"city":"Rome"}`),
		output("tooluse_p", "Error: the weather service is down", true),
		output("tooluse_r", "", false),
		user("And now?"),
		user("Please answer."),
	}
}

// toolConfig is sent whenever the history holds toolUse/toolResult blocks,
// even with no tools in the request; all results of a turn go in one user
// message, one toolResult per toolUse, failed ones with status error,
// empty ones as a non-empty block; consecutive same-role messages merge.
// The fake refuses requests that break any of these, as Bedrock does.
func TestToolHistoryWithoutTools(t *testing.T) {
	both(t, []fakebedrock.Turn{{Text: "Sunny."}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: toolTurnHistory()})
		require.NoError(t, err)
		req := only(t, fake)
		require.NotNil(t, req.ToolConfig, "toolConfig is required while the history holds tool blocks")
		require.Len(t, req.ToolConfig.Tools, 1)
		require.Equal(t, "get_weather", req.ToolConfig.Tools[0].ToolSpec.Name)
		require.Nil(t, req.ToolConfig.ToolChoice)

		require.Len(t, req.Messages, 3)
		require.Equal(t, "user", req.Messages[0].Role)
		asst := req.Messages[1]
		require.Equal(t, "assistant", asst.Role)
		require.Len(t, asst.Content, 3)
		require.Equal(t, "Let me check.", text(asst.Content[0]))
		require.Equal(t, "tooluse_p", asst.Content[1].ToolUse.ToolUseID)
		require.JSONEq(t, `{"city":"Paris"}`, string(asst.Content[1].ToolUse.Input))
		require.Equal(t, "tooluse_r", asst.Content[2].ToolUse.ToolUseID)

		results := req.Messages[2]
		require.Equal(t, "user", results.Role)
		require.Len(t, results.Content, 4, "both results and both user texts in one message")
		p, r := results.Content[0].ToolResult, results.Content[1].ToolResult
		require.Equal(t, "tooluse_p", p.ToolUseID)
		require.Equal(t, "error", p.Status)
		require.Equal(t, "Error: the weather service is down", *p.Content[0].Text)
		require.Equal(t, "tooluse_r", r.ToolUseID)
		require.Equal(t, "success", r.Status)
		require.NotEmpty(t, *r.Content[0].Text, "an empty output becomes a non-empty block")
		require.Equal(t, "And now?", text(results.Content[2]))
		require.Equal(t, "Please answer.", text(results.Content[3]))
	})
}

// Results come in toolUse order whatever the order of the outputs; a call
// left without output gets an error result; an output answering no call of
// the turn before it goes as text.
func TestToolResultPairing(t *testing.T) {
	items := []api.Item{
		user("go"),
		fcall("tooluse_1", "get_weather", `{"city":"A"}`),
		fcall("tooluse_2", "get_weather", `{"city":"B"}`),
		fcall("tooluse_3", "get_weather", `{"city":"C"}`),
		output("tooluse_3", "sunny in C", false),
		output("tooluse_1", "rain in A", false),
		output("tooluse_1", "a second answer to call 1", false),
		output("tooluse_zzz", "an answer to no call", false),
	}
	both(t, []fakebedrock.Turn{{Text: "done"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: items, Tools: []api.ToolDefinition{weatherTool()}})
		require.NoError(t, err)
		results := only(t, fake).Messages[2].Content
		require.Len(t, results, 5)
		for i, id := range []string{"tooluse_1", "tooluse_2", "tooluse_3"} {
			require.Equal(t, id, results[i].ToolResult.ToolUseID)
		}
		require.Equal(t, "rain in A", *results[0].ToolResult.Content[0].Text)
		require.Equal(t, "error", results[1].ToolResult.Status)
		require.Contains(t, *results[1].ToolResult.Content[0].Text, "no output")
		require.Equal(t, "sunny in C", *results[2].ToolResult.Content[0].Text)
		require.Contains(t, text(results[3]), "a second answer to call 1")
		require.Contains(t, text(results[4]), "tooluse_zzz")
	})
	// Calls at the very end of the history (no outputs at all).
	both(t, []fakebedrock.Turn{{Text: "done"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: items[:3], Tools: []api.ToolDefinition{weatherTool()}})
		require.NoError(t, err)
		msgs := only(t, fake).Messages
		require.Len(t, msgs, 3)
		require.Equal(t, "error", msgs[2].Content[0].ToolResult.Status)
		require.Equal(t, "error", msgs[2].Content[1].ToolResult.Status)
	})
}

func TestToolChoice(t *testing.T) {
	tools := []api.ToolDefinition{weatherTool(), {Name: "now"}}
	for _, tc := range []struct {
		name, choice, forced string
		want                 func(t *testing.T, c *fakebedrock.ToolChoice)
	}{
		{"auto", api.ToolChoiceAuto, "", func(t *testing.T, c *fakebedrock.ToolChoice) { require.NotNil(t, c.Auto) }},
		{"required", api.ToolChoiceRequired, "", func(t *testing.T, c *fakebedrock.ToolChoice) { require.NotNil(t, c.Any) }},
		{"forced", api.ToolChoiceRequired, "now", func(t *testing.T, c *fakebedrock.ToolChoice) { require.Equal(t, "now", c.Tool.Name) }},
		{"default", "", "", func(t *testing.T, c *fakebedrock.ToolChoice) { require.Nil(t, c) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				_, err := call(&provider.Request{Model: claude, Items: []api.Item{user("hi")}, Tools: tools, ToolChoice: tc.choice, ForcedTool: tc.forced})
				require.NoError(t, err)
				got := only(t, fake).ToolConfig
				require.Len(t, got.Tools, 2)
				tc.want(t, got.ToolChoice)
			})
		})
	}
}

// tool_choice none: no tools are offered unless the history needs its
// toolConfig, and tool calls the model makes anyway are dropped.
func TestToolChoiceNone(t *testing.T) {
	turn := fakebedrock.Turn{Text: "I will not call tools.", ToolUses: []fakebedrock.ToolUse{{Name: "get_weather", Input: `{"city":"Oslo"}`}}}
	both(t, []fakebedrock.Turn{turn, turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		res, err := call(&provider.Request{Model: claude, Items: []api.Item{user("hi")}, Tools: []api.ToolDefinition{weatherTool()}, ToolChoice: api.ToolChoiceNone})
		require.NoError(t, err)
		require.Empty(t, res.ToolCalls)
		require.Equal(t, provider.FinishStop, res.FinishReason)
		require.Equal(t, "I will not call tools.", res.Text)

		res, err = call(&provider.Request{Model: claude, Items: toolTurnHistory(), Tools: []api.ToolDefinition{weatherTool()}, ToolChoice: api.ToolChoiceNone})
		require.NoError(t, err)
		require.Empty(t, res.ToolCalls)
		reqs := fake.Requests()
		require.Nil(t, reqs[0].ToolConfig, "none without tool history: no tools")
		require.NotNil(t, reqs[1].ToolConfig, "none with tool history: the history stays valid")
		require.Nil(t, reqs[1].ToolConfig.ToolChoice)
	})
}

func TestInvalidToolSchema(t *testing.T) {
	p, fake := newProvider(t)
	_, err := p.Complete(context.Background(), &provider.Request{Model: claude, Items: []api.Item{user("hi")},
		Tools: []api.ToolDefinition{{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}})
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, 400, ae.Status)
	require.Equal(t, "tools", ae.Param)
	require.Zero(t, fake.Calls())
}

func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		reason string
		tools  bool
		want   string
	}{
		{"end_turn", false, provider.FinishStop},
		{"stop_sequence", false, provider.FinishStop},
		{"tool_use", true, provider.FinishToolCalls},
		{"max_tokens", false, provider.FinishLength},
		{"model_context_window_exceeded", false, provider.FinishLength},
		{"guardrail_intervened", false, provider.FinishContentFilter},
		{"content_filtered", false, provider.FinishContentFilter},
		{"malformed_model_output", false, ""},
		{"malformed_tool_use", false, ""},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			turn := fakebedrock.Turn{Text: "partial answer", StopReason: tc.reason}
			if tc.tools {
				turn.ToolUses = []fakebedrock.ToolUse{{Name: "get_weather", Input: `{"city":"Lima"}`}}
			}
			both(t, []fakebedrock.Turn{turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), _ *fakebedrock.Server) {
				res, err := call(&provider.Request{Model: claude, Items: []api.Item{user("hi")}, Tools: []api.ToolDefinition{weatherTool()}})
				if tc.want == "" {
					var ae *api.Error
					require.ErrorAs(t, err, &ae)
					require.Equal(t, 502, ae.Status)
					require.Contains(t, ae.Message, tc.reason)
					return
				}
				require.NoError(t, err)
				require.Equal(t, tc.want, res.FinishReason)
			})
		})
	}
}

// A failed call reaches a model with a toolResult status (Claude 3 and 4,
// Nova) as status "error"; other models, for which Bedrock documents no
// status, get no status and the failure marked in the text. Call ids and
// tool names Bedrock refuses are mapped, and the answer's names mapped back.
func TestToolErrorsAndMapping(t *testing.T) {
	items := []api.Item{
		user("go"),
		fcall("mcp_0123456789abcdef0123456789abcdef0123456789abcdef_0123456789ab", "github.search/issues", `{}`),
		output("mcp_0123456789abcdef0123456789abcdef0123456789abcdef_0123456789ab", "division by zero", true),
	}
	tool := api.ToolDefinition{Name: "github.search/issues", Parameters: weatherTool().Parameters}
	mapped, _ := provider.BedrockRules().Map(&provider.Request{Tools: []api.ToolDefinition{tool}})
	name := mapped.Tools[0].Name
	for _, tc := range []struct {
		model, status, text string
	}{
		{claude, "error", "division by zero"},
		{"amazon.nova-pro-v1:0", "error", "division by zero"},
		{"meta.llama3-3-70b-instruct-v1:0", "", "Error: division by zero"},
	} {
		t.Run(tc.model, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_1", Name: name, Input: `{}`}}}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				res, err := call(&provider.Request{Model: tc.model, Items: items, Tools: []api.ToolDefinition{tool}})
				require.NoError(t, err)
				got := only(t, fake)
				use := got.Messages[1].Content[0].ToolUse
				result := got.Messages[2].Content[0].ToolResult
				require.NotNil(t, use)
				require.NotNil(t, result)
				assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, use.ToolUseID)
				assert.Equal(t, use.ToolUseID, result.ToolUseID)
				assert.Equal(t, name, use.Name)
				assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, use.Name)
				assert.Equal(t, tc.status, result.Status)
				require.NotNil(t, result.Content[0].Text)
				assert.Equal(t, tc.text, *result.Content[0].Text)
				require.Len(t, res.ToolCalls, 1)
				assert.Equal(t, "github.search/issues", res.ToolCalls[0].Name, "the answer's name is mapped back")
			})
		})
	}
}
