package bedrock_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

// A Codex thread started on OpenAI (pkg/api/testdata/codex_openai_thread.json:
// OpenAI's hosted web searches between the calls of one turn, a tool
// search) resumes on Bedrock: the strict fake gets the turn's toolUse
// blocks together, their toolResult blocks in the next message, and none
// of the searches.
func TestGatewayCodexOpenAIThreadResumed(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "Nothing else."})
	client := gateway(t, fake, nil)
	thread, err := os.ReadFile("../../api/testdata/codex_openai_thread.json")
	require.NoError(t, err)
	body := `{"store":false,"input":` + string(thread) + `,"tools":[{"type":"function","name":"exec_command","description":"Runs a command.",` +
		`"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}},{"type":"web_search"}]}`
	var out struct{ Status string }
	require.NoError(t, client.Post(context.Background(), "responses", json.RawMessage(body), &out))
	require.Equal(t, "completed", out.Status)

	msgs := fake.Requests()[0].Messages
	var shape []string
	for _, m := range msgs {
		s := m.Role + ":"
		for _, b := range m.Content {
			switch {
			case b.ToolUse != nil:
				s += " toolUse"
			case b.ToolResult != nil:
				s += " toolResult"
			case b.Text != nil:
				s += " text"
				assert.NotContains(t, *b.Text, "weather.example", "no web search reaches the model")
				assert.NotContains(t, *b.Text, "calendar create event", "no tool search reaches the model")
			}
		}
		shape = append(shape, s)
	}
	assert.Equal(t, []string{"user: text", "assistant: toolUse toolUse", "user: toolResult toolResult", "assistant: text",
		"user: text", "assistant: toolUse", "user: toolResult", "assistant: text", "user: text"}, shape)
}
