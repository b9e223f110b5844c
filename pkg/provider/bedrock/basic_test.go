package bedrock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

func TestTextAnswerAndUsage(t *testing.T) {
	turn := fakebedrock.Turn{Text: "Hello there, traveller.", Usage: fakebedrock.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 100, CacheWriteInputTokens: 20}}
	both(t, []fakebedrock.Turn{turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		res, err := call(&provider.Request{Model: claude, Instructions: "Be brief.", Items: []api.Item{
			msg(api.RoleDeveloper, "Answer in English."), user("Hi"),
		}})
		require.NoError(t, err)
		require.Equal(t, "Hello there, traveller.", res.Text)
		require.Equal(t, provider.FinishStop, res.FinishReason)
		require.Equal(t, claude, res.Model)
		// Input tokens include cache reads and writes; cached_tokens are the reads.
		require.Equal(t, api.Usage{InputTokens: 130, OutputTokens: 5, TotalTokens: 135, InputTokensDetails: api.InputTokensDetails{CachedTokens: 100}}, res.Usage)

		req := only(t, fake)
		require.Equal(t, claude, req.ModelID)
		// The Lambda role's credentials sign for service bedrock in AWS_REGION.
		require.Contains(t, req.Authorization, "AWS4-HMAC-SHA256 Credential=AKIDFAKEBEDROCK/")
		require.Contains(t, req.Authorization, "/"+fakebedrock.Region+"/bedrock/aws4_request")
		// Instructions, then developer and system messages, are the system prompt.
		require.Len(t, req.System, 2)
		require.Equal(t, "Be brief.", *req.System[0].Text)
		require.Equal(t, "Answer in English.", *req.System[1].Text)
		require.Len(t, req.Messages, 1)
		require.Equal(t, "user", req.Messages[0].Role)
		require.Nil(t, req.ToolConfig)
		require.Equal(t, 16384, *req.InferenceConfig.MaxTokens, "Claude's default (TestDefaultMaxTokens)")
		require.Nil(t, req.InferenceConfig.Temperature)
	})
}

// A ConverseStream call's first delta says Bedrock accepted it (its event
// stream began), once, before the answer; a call refused gets none.
func TestStreamAccepted(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Text: "hi"}, fakebedrock.Turn{Error: "ValidationException"})
	req := &provider.Request{Model: claude, Items: []api.Item{user("hi")}}
	var kinds []provider.DeltaKind
	kind := func(d provider.Delta) error { kinds = append(kinds, d.Kind); return nil }
	_, err := p.Stream(context.Background(), req, kind)
	require.NoError(t, err)
	require.NotEmpty(t, kinds)
	require.Equal(t, provider.DeltaAccepted, kinds[0])
	require.NotContains(t, kinds[1:], provider.DeltaAccepted)
	kinds = nil
	_, err = p.Stream(context.Background(), req, kind)
	require.Error(t, err)
	require.Empty(t, kinds)
}

func TestStreamDeltas(t *testing.T) {
	p, _ := newProvider(t, fakebedrock.Turn{Text: "one two three", Reasoning: "Let me think.", Chunks: 0})
	var got []provider.Delta
	res, err := p.Stream(context.Background(), &provider.Request{Model: claude, Items: []api.Item{user("count")}}, func(d provider.Delta) error {
		got = append(got, d)
		return nil
	})
	require.NoError(t, err)
	var reasoning, txt strings.Builder
	encrypted := 0
	for _, d := range got {
		switch d.Kind {
		case provider.DeltaReasoning:
			reasoning.WriteString(d.Text)
			if d.Encrypted != "" {
				encrypted++
				require.True(t, strings.HasPrefix(d.Encrypted, "bedrock.v1:sig:"), d.Encrypted)
			}
		case provider.DeltaText:
			txt.WriteString(d.Text)
		}
	}
	require.Equal(t, "Let me think.", reasoning.String())
	require.Equal(t, "one two three", txt.String())
	require.Equal(t, 1, encrypted)
	require.Greater(t, len(got), 4, "text and reasoning arrive in several deltas")
	require.Equal(t, "one two three", res.Text)
	require.Equal(t, "Let me think.", res.Reasoning)
	require.Len(t, res.ReasoningBlocks, 1)
}

func TestModelARNInPath(t *testing.T) {
	arn := "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0"
	both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: arn, Items: []api.Item{user("hi")}})
		require.NoError(t, err)
		require.Equal(t, arn, only(t, fake).ModelID)
	})
}

func TestInferenceConfig(t *testing.T) {
	maxTok, temp, topP := 512, 0.25, 0.5
	desc := "A city"
	both(t, []fakebedrock.Turn{{Text: `{"city":"Paris"}`}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
		_, err := call(&provider.Request{Model: "amazon.nova-pro-v1:0", Items: []api.Item{user("hi")},
			MaxOutputTokens: &maxTok, Temperature: &temp, TopP: &topP, ServiceTier: "priority",
			Text: &api.TextConfig{Format: api.TextFormat{Type: api.FormatJSONSchema, Name: "city", Description: &desc,
				Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}})
		require.NoError(t, err)
		req := only(t, fake)
		require.Equal(t, 512, *req.InferenceConfig.MaxTokens)
		require.InDelta(t, 0.25, *req.InferenceConfig.Temperature, 1e-6)
		require.InDelta(t, 0.5, *req.InferenceConfig.TopP, 1e-6)
		require.Equal(t, "priority", req.ServiceTier.Type)
		require.JSONEq(t, `{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":"{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}}","name":"city","description":"A city"}}}}`,
			string(req.OutputConfig))
		require.Empty(t, req.AdditionalModelRequestFields, "no reasoning effort, no thinking")
	})
}

func TestGuardrail(t *testing.T) {
	for _, stream := range []bool{false, true} {
		fake := fakebedrock.New(fakebedrock.Turn{Text: "Sorry, I cannot help with that.", StopReason: "guardrail_intervened"},
			fakebedrock.Turn{Text: "filtered", StopReason: "content_filtered"})
		p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), GuardrailID: "gr-123", GuardrailVersion: "2"})
		for range 2 {
			var res *provider.Result
			var err error
			req := &provider.Request{Model: claude, Items: []api.Item{user("something bad")}}
			if stream {
				res, err = p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
			} else {
				res, err = p.Complete(context.Background(), req)
			}
			require.NoError(t, err)
			require.Equal(t, provider.FinishContentFilter, res.FinishReason)
		}
		for _, r := range fake.Requests() {
			require.NotNil(t, r.GuardrailConfig)
			require.Equal(t, "gr-123", r.GuardrailConfig.GuardrailIdentifier)
			require.Equal(t, "2", r.GuardrailConfig.GuardrailVersion)
			if stream {
				require.Equal(t, "sync", r.GuardrailConfig.StreamProcessingMode)
			}
		}
		fake.Close()
	}
}

// Without max_output_tokens, Converse caps a Claude model's answer at
// 4,096 tokens (Anthropic requires max_tokens; Bedrock fills in its
// own), which cuts agent turns short (a file written in a tool call's
// arguments): the provider sends a default within the model's limit,
// under any inference profile or ARN of the model (the fake refuses
// maxTokens above it). Other families keep Bedrock's defaults.
func TestDefaultMaxTokens(t *testing.T) {
	for model, want := range map[string]int{
		claude: 16384,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0":                                                    16384,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-opus-4-1-20250805-v1:0": 16384,
		"eu.anthropic.claude-3-7-sonnet-20250219-v1:0":                                                        16384,
		"anthropic.claude-3-5-haiku-20241022-v1:0":                                                            8192,
		"apac.anthropic.claude-3-haiku-20240307-v1:0":                                                         4096,
		"amazon.nova-pro-v1:0":                                                                                0,
		"us.meta.llama3-3-70b-instruct-v1:0":                                                                  0,
	} {
		t.Run(model, func(t *testing.T) {
			both(t, []fakebedrock.Turn{{Text: "ok"}}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server) {
				_, err := call(hi(model))
				require.NoError(t, err)
				ic := only(t, fake).InferenceConfig
				if want == 0 {
					require.Nil(t, ic)
					return
				}
				require.NotNil(t, ic)
				require.Equal(t, want, *ic.MaxTokens)
			})
		})
	}
}
