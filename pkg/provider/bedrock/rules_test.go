package bedrock_test

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

// Converse requires the first message to be the user's (the fake refuses
// anything else, as Bedrock does): a history that starts with the
// assistant (a chat UI replaying its greeting) or holds instructions only
// (a developer message, which becomes the system prompt) gets a user
// message before it.
func TestHistoryStartsWithUser(t *testing.T) {
	for name, items := range map[string][]api.Item{
		"greeting first":    {msg(api.RoleAssistant, "Hi! How can I help you today?"), user("What is 2+2?")},
		"instructions only": {msg(api.RoleDeveloper, "Answer with a number.")},
	} {
		t.Run(name, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{Text: "4"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				_, err := call(&provider.Request{Model: claude, Items: items})
				require.NoError(t, err)
				req := only(t, fake)
				require.Equal(t, "user", req.Messages[0].Role)
				assert.Equal(t, "(conversation start)", text(req.Messages[0].Content[0]))
			})
		})
	}
}

// Claude thinks only at temperature 1 and top_p 0.95 or more (the fake
// refuses others, as Anthropic does): with a reasoning effort, the
// request's temperature is left out and its top_p raised.
func TestThinkingLeavesSamplingOut(t *testing.T) {
	temp, topP := 0.3, 0.5
	both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, ReasoningEffort: "medium", Temperature: &temp, TopP: &topP, Items: []api.Item{user("Think.")}})
		require.NoError(t, err)
		req := only(t, fake)
		assert.Contains(t, string(req.AdditionalModelRequestFields), `"thinking"`)
		assert.Nil(t, req.InferenceConfig.Temperature)
		assert.InDelta(t, 0.95, *req.InferenceConfig.TopP, 1e-6)
	})
}

// A Claude model without extended thinking (3.5 Haiku) gets no thinking
// field for a reasoning effort: it would refuse it.
func TestNoThinkingOnOlderClaude(t *testing.T) {
	both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: "us.anthropic.claude-3-5-haiku-20241022-v1:0", ReasoningEffort: "high", Items: []api.Item{user("Think.")}})
		require.NoError(t, err)
		assert.Empty(t, only(t, fake).AdditionalModelRequestFields)
	})
}

// A function declared with "parameters": {} (OpenAI's APIs take it for no
// parameters) reaches Converse as a schema of type object, which it
// requires (the fake refuses a schema without one).
func TestToolWithEmptySchema(t *testing.T) {
	both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: []api.Item{user("Ping.")},
			Tools: []api.ToolDefinition{{Name: "ping", Parameters: json.RawMessage(`{}`)}}})
		require.NoError(t, err)
	})
}

// An image's format is its bytes' (the model refuses an image whose bytes
// are not the format declared): a data URL that says png and holds a JPEG
// goes as jpeg.
func TestImageFormatFromBytes(t *testing.T) {
	jpeg := append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), make([]byte, 64)...)
	both(t, []fakebedrock.Turn{{Text: "a picture"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: []api.Item{imageMessage("data:image/png;base64," + base64.StdEncoding.EncodeToString(jpeg))}})
		require.NoError(t, err)
		img := only(t, fake).Messages[0].Content[1].Image
		require.NotNil(t, img)
		assert.Equal(t, "jpeg", img.Format)
	})
}

// A history that ends with an assistant message (a prefill the model
// continues) is sent without the trailing whitespace of its last text:
// Anthropic's models refuse it ("final assistant content cannot end with
// trailing whitespace"), as the fake does.
func TestPrefillTrailingWhitespace(t *testing.T) {
	both(t, []fakebedrock.Turn{{Text: "4"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Items: []api.Item{user("What is 2+2? Start with 'The answer is'."), msg(api.RoleAssistant, "The answer is \n")}})
		require.NoError(t, err)
		req := only(t, fake)
		require.Len(t, req.Messages, 2)
		assert.Equal(t, "The answer is", text(req.Messages[1].Content[0]))
	})
}

// A call id the history repeats across turns (a client that numbers its
// calls per turn) reaches Bedrock as distinct toolUse ids, each answered:
// Anthropic's models refuse two toolUse blocks with one id.
func TestRepeatedCallIDAcrossTurns(t *testing.T) {
	both(t, []fakebedrock.Turn{{Text: "done"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: claude, Tools: []api.ToolDefinition{weatherTool()}, Items: []api.Item{
			user("Paris?"), fcall("call_0", "get_weather", `{"city":"Paris"}`), output("call_0", "sunny", false), msg(api.RoleAssistant, "Sunny."),
			user("Rome?"), fcall("call_0", "get_weather", `{"city":"Rome"}`), output("call_0", "rainy", false),
		}})
		require.NoError(t, err)
		req := only(t, fake)
		var uses, results []string
		for _, m := range req.Messages {
			for _, b := range m.Content {
				if b.ToolUse != nil {
					uses = append(uses, b.ToolUse.ToolUseID)
				}
				if b.ToolResult != nil {
					results = append(results, b.ToolResult.ToolUseID)
				}
			}
		}
		require.Len(t, uses, 2)
		assert.NotEqual(t, uses[0], uses[1])
		assert.Equal(t, uses, results)
	})
}

// Converse's system blocks take text only (and cache points and guard
// content): an image or a file in a system or developer message is a 400
// unsupported_content before the call, not dropped unseen.
func TestSystemImageRejected(t *testing.T) {
	parts := map[string]api.ContentPart{
		"input_image": {Type: api.PartInputImage, ImageURL: "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)},
		"input_file":  {Type: api.PartInputFile, FileData: "abc"},
	}
	for _, role := range []string{api.RoleSystem, api.RoleDeveloper} {
		for name, part := range parts {
			t.Run(role+" "+name, func(t *testing.T) {
				both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
					system := msg(role, "The logo:")
					system.Content = append(system.Content, part)
					_, err := call(&provider.Request{Model: claude, Items: []api.Item{system, user("Describe it.")}})
					ae := requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "unsupported_content")
					assert.Contains(t, ae.Message, name)
					assert.Zero(t, fake.Calls(), "nothing is sent to Bedrock")
				})
			})
		}
	}
}
