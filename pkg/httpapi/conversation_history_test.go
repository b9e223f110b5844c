package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// historyModel calls get_weather for Rome, then (a step later) for Paris,
// then answers with every tool result it sees.
func historyModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Content.String())
			}
		}
		if cities := []string{"Rome", "Paris"}; len(results) < len(cities) {
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "get_weather", Arguments: `{"city":"` + cities[len(results)] + `"}`}}}
		}
		return fakellm.Turn{Text: "Results: " + strings.Join(results, ", ")}
	})
}

// Clients that keep their own history and send the whole of it each turn
// with a conversation set — the AI SDK with providerOptions.openai
// .conversation, npm openai building its input as OpenAI's
// function-calling guide does — send a function_call_output again, without
// its id, on every later request (the AI SDK on each later step of its
// tool loop): the conversation recognises it, so it holds one output per
// call and the model sees it once (the fake model refuses a tool_call_id
// answered twice, as Chat Completions does).
func TestClientConversationHistory(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, historyModel(), nil)
	type client struct {
		Answers []string
		Items   []string
	}
	var got struct {
		Errors  []string
		Refused []map[string]any
		AISDK   *client `json:"aiSdk"`
		NPM     *client
	}
	runJS(t, dir, "conversation_history.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.Empty(t, got.Refused)
	for name, c := range map[string]*client{"ai sdk": got.AISDK, "npm": got.NPM} {
		require.NotNil(t, c, name)
		want := "Results: sunny in Rome, sunny in Paris"
		require.Equal(t, []string{want, want, want}, c.Answers, name)
		count := map[string]int{}
		for _, typ := range c.Items {
			count[typ]++
		}
		require.Equal(t, 2, count["function_call"], "%s: %v", name, c.Items)
		require.Equal(t, 2, count["function_call_output"], "%s: %v", name, c.Items)
	}
}
