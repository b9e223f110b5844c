package httpapi_test

// OpenAI's client-executed local_shell and computer use tools through the
// official Go SDK (docs/tools.md, "Tool types"): the model sees them as
// functions, the calls come back as local_shell_call and computer_call
// items, the response pauses, and a store: false client continues with
// their outputs.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

func TestE2EClientKindsSDK(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Turn{Text: "done"}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call_ls", Name: "local_shell", Arguments: `{"command":["ls","-la"],"timeout_ms":5000,"working_directory":"/tmp","env":{"A":"1"}}`},
			{ID: "call_cu", Name: "computer_use_preview", Arguments: `{"type":"click","x":10,"y":20,"button":"left"}`},
		}}
	})
	g := newGateway(t, fake, nil)
	ctx := context.Background()
	tools := []responses.ToolUnionParam{
		{OfLocalShell: &responses.ToolLocalShellParam{}},
		{OfComputerUsePreview: &responses.ComputerUsePreviewToolParam{DisplayWidth: 1024, DisplayHeight: 768, Environment: responses.ComputerUsePreviewToolEnvironmentBrowser}},
	}
	input := []responses.ResponseInputItemUnionParam{responses.ResponseInputItemParamOfMessage("open the page", responses.EasyInputMessageRoleUser)}
	resp, err := g.client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "m", Store: openai.Bool(false), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	})
	require.NoError(t, err)
	require.Len(t, resp.Output, 2)

	ls := resp.Output[0].AsLocalShellCall()
	assert.Equal(t, "local_shell_call", resp.Output[0].Type)
	assert.Equal(t, "call_ls", ls.CallID)
	assert.Equal(t, []string{"ls", "-la"}, ls.Action.Command)
	assert.Equal(t, "exec", string(ls.Action.Type))
	assert.Equal(t, int64(5000), ls.Action.TimeoutMs)
	assert.Equal(t, "/tmp", ls.Action.WorkingDirectory)
	assert.Equal(t, map[string]string{"A": "1"}, ls.Action.Env)

	cu := resp.Output[1].AsComputerCall()
	assert.Equal(t, "computer_call", resp.Output[1].Type)
	assert.Equal(t, "call_cu", cu.CallID)
	assert.Equal(t, "click", cu.Action.Type)
	assert.Equal(t, int64(10), cu.Action.X)
	assert.Equal(t, int64(20), cu.Action.Y)
	assert.Equal(t, "left", cu.Action.Button)
	assert.True(t, cu.JSON.PendingSafetyChecks.Valid())
	assert.Empty(t, cu.PendingSafetyChecks)

	// The model was offered both as functions (the display in the
	// computer's description).
	offered := modelTools(fake.Requests()[0])
	require.Contains(t, offered, "local_shell")
	require.Contains(t, offered, "computer_use_preview")
	assert.Contains(t, offered["computer_use_preview"].Description, "1024x768 pixels (browser)")

	// The store: false client replays the calls and answers them.
	for _, it := range resp.Output {
		input = append(input, param.Override[responses.ResponseInputItemUnionParam](json.RawMessage(it.RawJSON())))
	}
	input = append(input,
		responses.ResponseInputItemUnionParam{OfLocalShellCallOutput: &responses.ResponseInputItemLocalShellCallOutputParam{ID: "call_ls", Output: "a.txt\n"}},
		responses.ResponseInputItemUnionParam{OfComputerCallOutput: &responses.ResponseInputItemComputerCallOutputParam{CallID: "call_cu",
			Output: responses.ResponseComputerToolCallOutputScreenshotParam{ImageURL: openai.String("https://example.com/shot.png")}}},
	)
	resp, err = g.client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "m", Store: openai.Bool(false), Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input},
	})
	require.NoError(t, err)
	assert.Equal(t, "done", resp.OutputText())

	reqs := fake.Requests()
	var calls, outputs []string
	for _, m := range reqs[len(reqs)-1].Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Function.Name+" "+string(c.Function.Arguments))
		}
		if m.Role == "tool" {
			outputs = append(outputs, m.ToolCallID+" "+m.Content.String())
		}
	}
	assert.Equal(t, []string{
		// The model's own arguments, without the "type":"exec" the item's
		// action adds (the local_shell schema has no type).
		`call_ls local_shell {"command":["ls","-la"],"env":{"A":"1"},"timeout_ms":5000,"working_directory":"/tmp"}`,
		`call_cu computer_use_preview {"type":"click","x":10,"y":20,"button":"left"}`}, calls)
	assert.Equal(t, []string{"call_ls a.txt\n", "call_cu Action performed. The screen after it:"}, outputs)

	// tool_choice forces the computer tool; local_shell cannot be forced
	// (as at OpenAI).
	_, err = g.client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "m", Tools: tools, Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("click")},
		ToolChoice: responses.ResponseNewParamsToolChoiceUnion{OfHostedTool: &responses.ToolChoiceTypesParam{Type: responses.ToolChoiceTypesTypeComputerUsePreview}},
	})
	require.NoError(t, err)
	reqs = fake.Requests()
	assert.JSONEq(t, `{"type":"function","function":{"name":"computer_use_preview"}}`, string(reqs[len(reqs)-1].ToolChoice))
	status, _, raw := g.postJSON(`{"model":"m","input":"go","tools":[{"type":"local_shell"}],"tool_choice":{"type":"local_shell"}}`)
	wantError(t, status, raw, 400, "tool_choice.type", "")
}
