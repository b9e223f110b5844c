package bedrock_test

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/mcptest"
)

// screenshotCall starts a gateway with env on a fake Bedrock whose Claude
// calls the computer_use_preview tool for a screenshot, then answers "A
// desktop.", and makes the first response: its computer_call, with the
// tools it declared.
func screenshotCall(t *testing.T, env map[string]string) (*fakebedrock.Server, openai.Client, []responses.ToolUnionParam, *responses.Response, responses.ResponseComputerToolCall) {
	t.Helper()
	fake := fakebedrock.New(
		fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_cu", Name: "computer_use_preview", Input: `{"type":"screenshot"}`}}},
		fakebedrock.Turn{Text: "A desktop."},
	)
	client := gateway(t, fake, env)
	tools := []responses.ToolUnionParam{{OfComputerUsePreview: &responses.ComputerUsePreviewToolParam{
		DisplayWidth: 1280, DisplayHeight: 800, Environment: responses.ComputerUsePreviewToolEnvironmentLinux}}}
	r, err := client.Responses.New(context.Background(), responses.ResponseNewParams{
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is on the screen?")}, Tools: tools,
	})
	require.NoError(t, err)
	require.Len(t, r.Output, 1)
	require.Equal(t, "computer_call", r.Output[0].Type)
	cu := r.Output[0].AsComputerCall()
	assert.Equal(t, "screenshot", cu.Action.Type)
	return fake, client, tools, r, cu
}

// Computer use through openai-go on Bedrock: Claude's call of the
// computer_use_preview tool comes back as a computer_call, and the
// client's screenshot reaches Claude as an image block of the toolResult.
func TestGatewayComputerUseScreenshot(t *testing.T) {
	fake, client, tools, r, cu := screenshotCall(t, nil)
	ctx := context.Background()

	shot := "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
	done, err := client.Responses.New(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(r.ID), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{{OfComputerCallOutput: &responses.ResponseInputItemComputerCallOutputParam{
			CallID: cu.CallID, Output: responses.ResponseComputerToolCallOutputScreenshotParam{ImageURL: openai.String(shot)}}}}},
	})
	require.NoError(t, err)
	assert.Equal(t, "A desktop.", done.OutputText())

	msgs := fake.Requests()[1].Messages
	res := msgs[len(msgs)-1].Content[0].ToolResult
	require.NotNil(t, res)
	assert.Equal(t, "tooluse_cu", res.ToolUseID)
	require.Len(t, res.Content, 2)
	assert.Equal(t, "Action performed. The screen after it:", *res.Content[0].Text)
	require.NotNil(t, res.Content[1].Image)
	assert.Equal(t, "png", res.Content[1].Image.Format)
	assert.Equal(t, png, res.Content[1].Image.Source.Bytes)
}

// A computer call's screenshot given by file_id, which Bedrock cannot
// read, is refused with the 400 a message's file_id image gets, before
// anything connects: the request's MCP server is never contacted, Bedrock
// not called again.
func TestGatewayComputerScreenshotFileIDRefusedFirst(t *testing.T) {
	fake, client, tools, r, cu := screenshotCall(t, map[string]string{"LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1"})
	ctx := context.Background()

	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	tools = append(tools, responses.ToolUnionParam{OfMcp: &responses.ToolMcpParam{ServerLabel: "docs", ServerURL: openai.String(srv.Endpoint),
		RequireApproval: responses.ToolMcpRequireApprovalUnionParam{OfMcpToolApprovalSetting: openai.String("never")}}})
	_, err := client.Responses.New(ctx, responses.ResponseNewParams{
		PreviousResponseID: openai.String(r.ID), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{{OfComputerCallOutput: &responses.ResponseInputItemComputerCallOutputParam{
			CallID: cu.CallID, Output: responses.ResponseComputerToolCallOutputScreenshotParam{FileID: openai.String("file_123")}}}}},
	})
	var apiErr *openai.Error
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 400, apiErr.StatusCode)
	require.Equal(t, "unsupported_content", apiErr.Code)
	require.Contains(t, apiErr.Message, "input_image by file_id is not supported")
	srv.Idle()
	require.Zero(t, len(srv.Headers()), "requests the MCP server received before the refusal")
	require.Zero(t, srv.Connections(), "the MCP server was connected to before the refusal")
	require.Len(t, fake.Requests(), 1, "Bedrock was called again")
}
