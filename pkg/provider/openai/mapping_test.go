package openai_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// What the model sees on a Chat Completions backend: call ids within the
// backend's rule (40 characters; Mistral's nine alphanumerics), unique,
// each tool message answering its call; tool names within 64 of
// [A-Za-z0-9_-], mapped back in the answer; a failed call's output marked
// "Error: "; no empty assistant message.
func TestRequestFitsProviderRules(t *testing.T) {
	t.Parallel()
	long := "mcp_" + strings.Repeat("a", 48) + "_" + strings.Repeat("b", 12)
	items := []api.Item{
		msg(api.RoleUser, text("go")),
		{Type: api.ItemFunctionCall, CallID: long, Name: "github.search/issues", Arguments: `{}`},
		{Type: api.ItemFunctionCall, CallID: "call_1", Name: "calc", Arguments: `{}`},
		{Type: api.ItemFunctionCallOutput, CallID: long, Output: "division by zero", IsError: true},
		{Type: api.ItemFunctionCallOutput, CallID: "call_1", Output: "4"},
		msg(api.RoleAssistant), // a turn that said nothing
		{Type: api.ItemFunctionCall, CallID: "call_1", Name: "calc", Arguments: `{}`},
		{Type: api.ItemFunctionCallOutput, CallID: "call_1", Output: "Error: already marked", IsError: true},
	}
	tools := []api.ToolDefinition{{Name: "github.search/issues"}, {Name: "calc"}}
	for _, tc := range []struct {
		name  string
		rules provider.Rules
		id    string
	}{
		{"openai", provider.Rules{}, `^.{1,40}$`},
		{"mistral", provider.MistralRules(), `^[A-Za-z0-9]{9}$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mappedName string
			reply := func(name string) string {
				return `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"` + name + `","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`
			}
			rules := tc.rules
			if rules == (provider.Rules{}) {
				rules = provider.OpenAIRules() // the default
			}
			mapped, _ := rules.Map(&provider.Request{Tools: tools})
			mappedName = mapped.Tools[0].Name
			p, b := newBackend(t, openai.Config{Rules: tc.rules}, jsonReply(200, reply(mappedName)))
			res, err := p.Complete(context.Background(), &provider.Request{Model: "m", Items: items, Tools: tools})
			require.NoError(t, err)
			require.Len(t, res.ToolCalls, 1)
			assert.Equal(t, "github.search/issues", res.ToolCalls[0].Name, "the answer's name is mapped back")

			msgs := b.body(0)["messages"].([]any)
			roles := []string{}
			for _, m := range msgs {
				roles = append(roles, m.(map[string]any)["role"].(string))
			}
			assert.Equal(t, []string{"user", "assistant", "tool", "tool", "assistant", "tool"}, roles, "no empty assistant message")
			seen := map[string]bool{}
			var calls []string
			for _, i := range []int{1, 4} {
				for _, c := range msgs[i].(map[string]any)["tool_calls"].([]any) {
					id := c.(map[string]any)["id"].(string)
					assert.Regexp(t, tc.id, id)
					assert.False(t, seen[id], "id %q twice", id)
					seen[id] = true
					calls = append(calls, id)
					name := c.(map[string]any)["function"].(map[string]any)["name"].(string)
					assert.Regexp(t, `^[A-Za-z0-9_-]{1,64}$`, name)
				}
			}
			var answers []string
			for _, i := range []int{2, 3, 5} {
				answers = append(answers, msgs[i].(map[string]any)["tool_call_id"].(string))
			}
			assert.Equal(t, calls, answers, "each tool message answers its call")
			assert.Equal(t, "Error: division by zero", msgs[2].(map[string]any)["content"])
			assert.Equal(t, "4", msgs[3].(map[string]any)["content"])
			assert.Equal(t, "Error: already marked", msgs[5].(map[string]any)["content"])
		})
	}
}

// Streamed answers map tool names back on the deltas and the result.
func TestStreamNamesMappedBack(t *testing.T) {
	t.Parallel()
	tools := []api.ToolDefinition{{Name: "srv.tool/x"}}
	mapped, _ := provider.OpenAIRules().Map(&provider.Request{Tools: tools})
	name := mapped.Tools[0].Name
	p, _ := newBackend(t, openai.Config{}, sseReply(
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"`+name+`","arguments":""}}]},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
	))
	var names []string
	res, err := p.Stream(context.Background(), &provider.Request{Model: "m", Items: []api.Item{msg(api.RoleUser, text("go"))}, Tools: tools}, func(d provider.Delta) error {
		if d.ToolName != "" {
			names = append(names, d.ToolName)
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"srv.tool/x"}, names)
	require.Len(t, res.ToolCalls, 1)
	assert.Equal(t, "srv.tool/x", res.ToolCalls[0].Name)
}
