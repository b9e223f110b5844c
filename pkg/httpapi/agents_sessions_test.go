package httpapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// sessionModel is clientModel that also calls an MCP tool for a user
// message `call <tool> <json>`.
func sessionModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		if turn, ok := callTurn(last.Content.String()); ok && last.Role == "user" {
			return turn
		}
		return clientTurn(req)
	})
}

// sessionRuns are the answers of agents_sessions.mjs's two runs of one
// kind of tool; Items are the types of a conversation session's items.
type sessionRuns struct {
	First, Again string
	Items        []string
}

// The OpenAI Agents SDK keeps conversation state across two runs with a
// Lambent hosted tool, a request-declared MCP server (hostedMcpTool) and a
// function tool it runs itself: OpenAIConversationsSession (which adds each
// run's items through /v1/conversations/{id}/items with their ids
// stripped, mcp_call and mcp_list_tools included, then sends them back as
// input), OpenAIResponsesCompactionSession (responses.compact between the
// runs), and the previousResponseId and conversationId run options. No
// request is refused, and the model of the second run sees the first run's
// tool results (the fake model checks that every call is answered once).
func TestClientAgentsSDKSessions(t *testing.T) {
	dir := jsClients(t)
	url := startTSServer(t, dir)
	g := newGatewayWith(t, sessionModel(), map[string]string{
		"LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1",
		"LAMBENT_COMPACTION_KEYS":   compactionKeys("k1"),
	}, nil)
	var got struct {
		Errors  []string
		Refused []map[string]any
		// Each maps a kind of tool (hosted, mcp, function) to its runs.
		ConversationsSession map[string]sessionRuns `json:"conversationsSession"`
		CompactionSession    map[string]sessionRuns `json:"compactionSession"`
		History              map[string]sessionRuns
		PreviousResponseID   map[string]sessionRuns `json:"previousResponseId"`
		ConversationID       map[string]sessionRuns `json:"conversationId"`
	}
	runJS(t, dir, "agents_sessions.mjs", g.srv.URL+"/v1", &got, url)
	require.Empty(t, got.Errors)
	require.Empty(t, got.Refused)
	first := map[string]string{"hosted": "Result: 391", "mcp": "Result: HELLO", "function": "Result: sunny in Rome"}
	results := map[string]string{"hosted": "391", "mcp": "HELLO", "function": "sunny in Rome"}
	for kind, want := range first {
		for name, runs := range map[string]map[string]sessionRuns{
			"conversationsSession": got.ConversationsSession, "compactionSession": got.CompactionSession,
			"history": got.History, "previousResponseId": got.PreviousResponseID, "conversationId": got.ConversationID,
		} {
			require.Equal(t, want, runs[kind].First, "%s/%s", name, kind)
			require.True(t, strings.HasPrefix(runs[kind].Again, "Earlier results: "), "%s/%s: %q", name, kind, runs[kind].Again)
		}
		for name, runs := range map[string]map[string]sessionRuns{
			"history": got.History, "previousResponseId": got.PreviousResponseID, "conversationId": got.ConversationID,
		} {
			require.Equal(t, "Earlier results: "+results[kind], runs[kind].Again, "%s/%s", name, kind)
		}
	}
	// The session's conversation holds each item once, the calls with ids
	// the conversation gave them. The SDK adds an mcp_call without its
	// output: the second run's model sees the call answered, but empty.
	require.Equal(t, "Earlier results: sunny in Rome", got.ConversationsSession["function"].Again)
	require.Equal(t, []string{"user", "function_call", "function_call_output", "assistant", "user", "assistant"}, got.ConversationsSession["function"].Items)
	require.Equal(t, []string{"user", "mcp_call", "assistant", "user", "assistant"}, got.ConversationsSession["hosted"].Items)
	require.Equal(t, []string{"user", "mcp_list_tools", "mcp_call", "assistant", "user", "assistant"}, got.ConversationsSession["mcp"].Items)
}
