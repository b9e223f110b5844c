package fakebedrock_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func text(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }

func message(role types.ConversationRole, blocks ...types.ContentBlock) types.Message {
	return types.Message{Role: role, Content: blocks}
}

func toolUse(id string) types.ContentBlock {
	return &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: aws.String(id), Name: aws.String("f"), Input: document.NewLazyDocument(map[string]any{})}}
}

func toolResult(id string) types.ContentBlock {
	return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: aws.String(id),
		Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: "ok"}}}}
}

func toolConfig() *types.ToolConfiguration {
	schema := document.NewLazyDocument(map[string]any{"type": "object"})
	return &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name: aws.String("f"), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}}}}
}

func describedTool(desc string) *types.ToolConfiguration {
	tc := toolConfig()
	tc.Tools[0].(*types.ToolMemberToolSpec).Value.Description = aws.String(desc)
	return tc
}

// pngBytes is a 1x1 PNG's signature and header, enough for the fake's sniffing.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func images(n int) []types.ContentBlock {
	blocks := make([]types.ContentBlock, n)
	for i := range blocks {
		blocks[i] = &types.ContentBlockMemberImage{Value: types.ImageBlock{Format: types.ImageFormatPng, Source: &types.ImageSourceMemberBytes{Value: pngBytes}}}
	}
	return blocks
}

func doc(name string) types.ContentBlock {
	return &types.ContentBlockMemberDocument{Value: types.DocumentBlock{Name: aws.String(name), Format: types.DocumentFormatTxt,
		Source: &types.DocumentSourceMemberBytes{Value: []byte("text")}}}
}

// The fake refuses what Bedrock refuses, with a ValidationException.
func TestValidation(t *testing.T) {
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "ok"} })
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	user, asst := types.ConversationRoleUser, types.ConversationRoleAssistant
	for _, tc := range []struct {
		name  string
		msgs  []types.Message
		tools *types.ToolConfiguration
		want  string // "" accepted
	}{
		{"valid", []types.Message{message(user, text("hi"))}, nil, ""},
		{"valid tool turn", []types.Message{message(user, text("hi")), message(asst, toolUse("a"), toolUse("b")), message(user, toolResult("b"), toolResult("a"))}, toolConfig(), ""},
		{"starts with assistant", []types.Message{message(asst, text("hi"))}, nil, "must start with a user message"},
		{"same role twice", []types.Message{message(user, text("a")), message(user, text("b"))}, nil, "must alternate"},
		{"blank text", []types.Message{message(user, text("  "))}, nil, "is blank"},
		{"tool blocks without toolConfig", []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a"))}, nil, "toolConfig field must be defined"},
		{"toolUse without result", []types.Message{message(user, text("hi")), message(asst, toolUse("a"), toolUse("b")), message(user, toolResult("a"))}, toolConfig(), "without toolResult blocks"},
		{"result without toolUse", []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a"), toolResult("z"))}, toolConfig(), "unexpected toolUseId"},
		{"two results for one toolUse", []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a"), toolResult("a"))}, toolConfig(), "more than one"},
		{"trailing whitespace in an earlier assistant message", []types.Message{message(user, text("hi")), message(asst, text("ok \n")), message(user, text("go on"))}, nil, ""},
		{"prefill ending in whitespace", []types.Message{message(user, text("hi")), message(asst, text("The answer is "))}, nil, "final assistant content cannot end with trailing whitespace"},
		{"toolUse id used twice", []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a")), message(asst, toolUse("a")), message(user, toolResult("a"))},
			toolConfig(), "messages.3.content.0: `tool_use` ids must be unique"},
		{"toolResult id pattern", []types.Message{message(user, text("hi")), message(asst, toolUse("a")), message(user, toolResult("a.b"))}, toolConfig(), "failed to satisfy constraint"},
		{"blank tool description", []types.Message{message(user, text("hi"))}, describedTool(""), "Member must have length greater than or equal to 1"},
		{"described tool", []types.Message{message(user, text("hi"))}, describedTool("does f"), ""},
		{"21 images", []types.Message{message(user, images(21)...)}, nil, "at most 20 images"},
		{"20 images", []types.Message{message(user, images(20)...)}, nil, ""},
		{"document", []types.Message{message(user, doc("Q3 report (final) [v2]"), text("sum up"))}, nil, ""},
		{"document name", []types.Message{message(user, doc("report.pdf"), text("sum up"))}, nil, "The document file name can only contain"},
		{"document name with two spaces", []types.Message{message(user, doc("a  b"), text("sum up"))}, nil, "more than one consecutive whitespace"},
		{"6 documents", []types.Message{message(user, doc("a"), doc("b"), doc("c"), doc("d"), doc("e"), doc("f"), text("sum up"))}, nil, "at most 5 documents"},
		{"unsigned reasoning", []types.Message{message(user, text("hi")), message(asst, &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{
			Value: types.ReasoningTextBlock{Text: aws.String("hmm")}}}, text("ok")), message(user, text("go on"))}, nil, "Invalid signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String("m"), Messages: tc.msgs, ToolConfig: tc.tools})
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			var ve *types.ValidationException
			require.ErrorAs(t, err, &ve)
			require.Contains(t, ve.ErrorMessage(), tc.want)
		})
	}
}

// Requests must be signed with SigV4 for service bedrock.
func TestUnsignedRefused(t *testing.T) {
	fake := fakebedrock.New(fakebedrock.Turn{Text: "never"})
	defer fake.Close()
	resp, err := fake.Client().Post(fake.URL+"/model/m/converse", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Equal(t, 0, fake.Calls())
}

// A ConverseStream answer decodes with the SDK into the scripted blocks,
// and a scripted exception arrives as the SDK's typed error.
func TestStreamFrames(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{Reasoning: "think", Text: "two words", ToolUses: []fakebedrock.ToolUse{{ID: "t1", Name: "f", Input: `{"x":1}`}},
			Usage: fakebedrock.Usage{InputTokens: 3, OutputTokens: 4, CacheReadInputTokens: 5}},
		fakebedrock.Turn{Text: "oops", StreamError: "throttlingException", ErrorMessage: "slow down"},
	)
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	in := &bedrockruntime.ConverseStreamInput{ModelId: aws.String("m"), Messages: []types.Message{message(types.ConversationRoleUser, text("hi"))}}

	out, err := client.ConverseStream(context.Background(), in)
	require.NoError(t, err)
	var txt, reasoning, input, sig, stop string
	var usage *types.TokenUsage
	for ev := range out.GetStream().Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			switch d := v.Value.Delta.(type) {
			case *types.ContentBlockDeltaMemberText:
				txt += d.Value
			case *types.ContentBlockDeltaMemberToolUse:
				input += aws.ToString(d.Value.Input)
			case *types.ContentBlockDeltaMemberReasoningContent:
				switch r := d.Value.(type) {
				case *types.ReasoningContentBlockDeltaMemberText:
					reasoning += r.Value
				case *types.ReasoningContentBlockDeltaMemberSignature:
					sig = r.Value
				}
			}
		case *types.ConverseStreamOutputMemberMessageStop:
			stop = string(v.Value.StopReason)
		case *types.ConverseStreamOutputMemberMetadata:
			usage = v.Value.Usage
		}
	}
	require.NoError(t, out.GetStream().Close())
	require.Equal(t, "two words", txt)
	require.Equal(t, "think", reasoning)
	require.NotEmpty(t, sig)
	require.Equal(t, `{"x":1}`, input)
	require.Equal(t, "tool_use", stop)
	require.Equal(t, int32(12), aws.ToInt32(usage.TotalTokens))
	require.Equal(t, int32(5), aws.ToInt32(usage.CacheReadInputTokens))

	out, err = client.ConverseStream(context.Background(), in)
	require.NoError(t, err)
	for range out.GetStream().Events() {
	}
	var te *types.ThrottlingException
	require.True(t, errors.As(out.GetStream().Err(), &te), "%v", out.GetStream().Err())
	require.Equal(t, "slow down", te.ErrorMessage())
	_ = out.GetStream().Close() // repeats Err
}

// The fake refuses the features a model lacks, as Bedrock does, under
// any inference profile or ARN of the model.
func TestModelFeatures(t *testing.T) {
	t.Parallel()
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "ok"} })
	defer fake.Close()
	client := bedrockruntime.NewFromConfig(fake.AWSConfig())
	msgs := []types.Message{message(types.ConversationRoleUser, text("hi"))}
	system := []types.SystemContentBlock{&types.SystemContentBlockMemberText{Value: "Be brief."}}
	withChoice := func(c types.ToolChoice) *types.ToolConfiguration {
		tc := toolConfig()
		tc.ToolChoice = c
		return tc
	}
	anyChoice := withChoice(&types.ToolChoiceMemberAny{})
	fnChoice := withChoice(&types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String("f")}})
	for _, tc := range []struct {
		model  string
		stream bool
		system []types.SystemContentBlock
		tools  *types.ToolConfiguration
		want   string // "" accepted
	}{
		{"us.meta.llama4-maverick-17b-instruct-v1:0", false, system, toolConfig(), ""},
		{"us.meta.llama4-maverick-17b-instruct-v1:0", true, system, toolConfig(), "This model doesn't support tool use in streaming mode."},
		{"arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.meta.llama3-3-70b-instruct-v1:0", true, nil, toolConfig(), "in streaming mode"},
		{"us.meta.llama3-2-3b-instruct-v1:0", false, nil, toolConfig(), "This model doesn't support tool use."},
		{"meta.llama3-1-70b-instruct-v1:0", false, nil, anyChoice, "toolConfig.toolChoice.any"},
		{"mistral.mistral-large-2407-v1:0", false, nil, anyChoice, ""},
		{"mistral.mistral-large-2407-v1:0", false, nil, fnChoice, "toolConfig.toolChoice.tool"},
		{"us.amazon.nova-pro-v1:0", true, system, fnChoice, ""},
		{sonnet4, true, system, fnChoice, ""},
		{"mistral.mistral-7b-instruct-v0:2", true, system, nil, "This model doesn't support system messages."},
		{"mistral.mistral-7b-instruct-v0:2", true, nil, nil, ""},
	} {
		var err error
		if tc.stream {
			var out *bedrockruntime.ConverseStreamOutput
			out, err = client.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: aws.String(tc.model), Messages: msgs, System: tc.system, ToolConfig: tc.tools})
			if err == nil {
				for range out.GetStream().Events() {
				}
				err = out.GetStream().Close()
			}
		} else {
			_, err = client.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: aws.String(tc.model), Messages: msgs, System: tc.system, ToolConfig: tc.tools})
		}
		if tc.want == "" {
			require.NoError(t, err, tc.model)
			continue
		}
		var ve *types.ValidationException
		require.ErrorAs(t, err, &ve, tc.model)
		require.Contains(t, ve.ErrorMessage(), tc.want, tc.model)
	}
}
