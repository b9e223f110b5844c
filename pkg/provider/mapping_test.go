package provider_test

import (
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ids a provider refuses (Lambent's 65-character item ids, other
// providers' ids with characters Bedrock refuses, any id for Mistral's
// nine alphanumerics) map to a valid id, the same for a call and its
// result and on every model call; valid ids pass unchanged.
func TestRulesMapIDs(t *testing.T) {
	t.Parallel()
	long := "mcp_" + strings.Repeat("a", 48) + "_" + strings.Repeat("b", 12)
	for _, tc := range []struct {
		name  string
		rules provider.Rules
		keep  []string
		remap []string
	}{
		{"openai", provider.OpenAIRules(), []string{"call_1", "toolu_01AbC", "call.1:x", strings.Repeat("z", 40)}, []string{long, strings.Repeat("z", 41)}},
		{"bedrock", provider.BedrockRules(), []string{"call_1", "tooluse_AbC-9", strings.Repeat("z", 64)}, []string{long, "call.1", "call:x/y", strings.Repeat("z", 65)}},
		{"mistral", provider.MistralRules(), []string{"aB3dE9xYz", "123456789"}, []string{"call_1", long, "aB3dE9xY_", "aB3dE9xYzz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, id := range tc.keep {
				got, _ := tc.rules.Map(&provider.Request{Items: pair(id)})
				assert.Equal(t, id, got.Items[0].CallID)
				assert.Equal(t, id, got.Items[1].CallID)
			}
			seen := map[string]string{}
			for _, id := range tc.remap {
				req := &provider.Request{Items: pair(id)}
				got, _ := tc.rules.Map(req)
				mapped := got.Items[0].CallID
				assert.NotEqual(t, id, mapped)
				assert.True(t, tc.rules.ValidID(mapped), "%q → %q is not valid", id, mapped)
				assert.Equal(t, mapped, got.Items[1].CallID, "the result follows its call")
				again, _ := tc.rules.Map(req)
				assert.Equal(t, mapped, again.Items[0].CallID, "deterministic")
				assert.Equal(t, id, req.Items[0].CallID, "the request is not changed")
				if prev, dup := seen[mapped]; dup {
					t.Errorf("%q and %q both map to %q", prev, id, mapped)
				}
				seen[mapped] = id
			}
		})
	}
}

func pair(id string) []api.Item {
	return []api.Item{
		{Type: api.ItemFunctionCall, CallID: id, Name: "f", Arguments: "{}"},
		{Type: api.ItemFunctionCallOutput, CallID: id, Output: "ok"},
	}
}

// A model that numbers its calls per turn reuses ids: every call after the
// first with an id gets a fresh one, and each result follows its own call.
func TestRulesMapDuplicateIDs(t *testing.T) {
	t.Parallel()
	items := append(pair("call_1"), pair("call_1")...)
	items = append(items, pair("call_1")...)
	got, _ := provider.OpenAIRules().Map(&provider.Request{Items: items})
	ids := map[string]bool{}
	for i := 0; i < len(got.Items); i += 2 {
		call, res := got.Items[i], got.Items[i+1]
		assert.Equal(t, call.CallID, res.CallID)
		assert.False(t, ids[call.CallID], "id %q given twice", call.CallID)
		ids[call.CallID] = true
	}
	assert.Equal(t, "call_1", got.Items[0].CallID, "the first keeps its id")
}

// Tool names a provider refuses (dots and slashes of namespaced names,
// more than 64 characters) map to valid, distinct names in the tools, the
// forced tool and the history, and the model's calls map back.
func TestRulesMapNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 80)
	req := &provider.Request{
		Tools:      []api.ToolDefinition{{Name: "get_weather"}, {Name: "github.search/issues"}, {Name: long}, {Name: long + "x"}},
		ForcedTool: "github.search/issues",
		Items:      []api.Item{{Type: api.ItemFunctionCall, CallID: "call_1", Name: "github.search/issues"}},
	}
	got, m := provider.OpenAIRules().Map(req)
	assert.Equal(t, "get_weather", got.Tools[0].Name)
	names := map[string]bool{}
	for _, d := range got.Tools {
		assert.True(t, provider.OpenAIRules().ValidName(d.Name), d.Name)
		assert.False(t, names[d.Name], "name %q twice", d.Name)
		names[d.Name] = true
	}
	assert.Equal(t, got.Tools[1].Name, got.ForcedTool)
	assert.Equal(t, got.Tools[1].Name, got.Items[0].Name)
	assert.Equal(t, "github.search/issues", req.Tools[1].Name, "the request is not changed")

	res := &provider.Result{ToolCalls: []api.Item{{Type: api.ItemFunctionCall, CallID: "c", Name: got.Tools[2].Name}, {Type: api.ItemFunctionCall, Name: "get_weather"}}}
	m.Result(res)
	assert.Equal(t, long, res.ToolCalls[0].Name)
	assert.Equal(t, "get_weather", res.ToolCalls[1].Name)

	var deltas []string
	fn := m.Stream(func(d provider.Delta) error { deltas = append(deltas, d.ToolName); return nil })
	require.NoError(t, fn(provider.Delta{Kind: provider.DeltaToolCall, ToolName: got.Tools[1].Name}))
	require.NoError(t, fn(provider.Delta{Kind: provider.DeltaToolCall, Text: "{}"}))
	assert.Equal(t, []string{"github.search/issues", ""}, deltas)
}

// A request that fits the rules is returned as it is; one that does not
// is copied, never changed.
func TestRulesMapUnchanged(t *testing.T) {
	t.Parallel()
	req := &provider.Request{Model: "m", Tools: []api.ToolDefinition{{Name: "get_weather"}}, ForcedTool: "get_weather",
		Items: []api.Item{{Type: api.ItemFunctionCall, CallID: "call_1", Name: "get_weather"}, {Type: api.ItemFunctionCallOutput, CallID: "call_1"}}}
	got, _ := provider.OpenAIRules().Map(req)
	assert.Same(t, req, got)

	req.ForcedTool = "github.search/issues"
	got, _ = provider.OpenAIRules().Map(req)
	assert.NotSame(t, req, got)
	assert.Equal(t, "github.search/issues", req.ForcedTool, "the request is not changed")
	assert.NotEqual(t, req.ForcedTool, got.ForcedTool)
}

func TestDerivedCallID(t *testing.T) {
	t.Parallel()
	id := provider.DerivedCallID("mcp_0123")
	assert.Equal(t, id, provider.DerivedCallID("mcp_0123"))
	assert.NotEqual(t, id, provider.DerivedCallID("mcp_0124"))
	assert.True(t, provider.OpenAIRules().ValidID(id), id)
	assert.True(t, provider.BedrockRules().ValidID(id), id)
}

func TestErrorText(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "Error: division by zero", provider.ErrorText("division by zero"))
	assert.Equal(t, "Error: tool \"x\" does not exist.", provider.ErrorText("Error: tool \"x\" does not exist."))
	assert.Equal(t, "Error: the tool call failed without a message.", provider.ErrorText(" "))
}
