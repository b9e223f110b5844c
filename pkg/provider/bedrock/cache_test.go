package bedrock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

// longInstructions are instructions past every model's minimum of tokens
// per cache point (4,096; the fake counts 4 bytes a token).
var longInstructions = strings.Repeat("You are a careful assistant: check every figure twice. ", 320)

// cachingProvider is a provider with cache points in mode against a fake
// that answers "ok" to everything, reporting its own cache metering.
func cachingProvider(t *testing.T, mode bedrock.CachePoints) (*bedrock.Provider, *fakebedrock.Server) {
	t.Helper()
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn {
		return fakebedrock.Turn{Text: "ok", Usage: fakebedrock.Usage{OutputTokens: 2}}
	})
	t.Cleanup(fake.Close)
	return bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), CachePoints: mode}), fake
}

// toolTurns is a conversation of n tool turns: the question, then per
// turn an assistant message with two calls and a user message with
// their results.
func toolTurns(n int) []api.Item {
	items := []api.Item{user("What is the weather in Paris and Rome?")}
	for i := range n {
		a, b := "tooluse_a"+string(rune('0'+i)), "tooluse_b"+string(rune('0'+i))
		items = append(items, fcall(a, "get_weather", `{"city":"Paris"}`), fcall(b, "get_weather", `{"city":"Rome"}`),
			output(a, `{"sky":"sunny"}`, false), output(b, `{"sky":"rain"}`, false))
	}
	return items
}

// points says where a request's cache points are: in the tools, in the
// system prompt, and the indexes of the messages that end with one.
type points struct {
	tools, system int
	messages      []int
}

func where(t *testing.T, r fakebedrock.Request) points {
	t.Helper()
	var p points
	if r.ToolConfig != nil {
		for i, tl := range r.ToolConfig.Tools {
			if tl.CachePoint != nil {
				require.Equal(t, len(r.ToolConfig.Tools)-1, i, "the tools' point ends the list")
				p.tools++
			}
		}
	}
	for i, b := range r.System {
		if b.CachePoint != nil {
			require.Equal(t, len(r.System)-1, i, "the system's point ends it")
			p.system++
		}
	}
	for i, m := range r.Messages {
		for j, b := range m.Content {
			if b.CachePoint != nil {
				require.Equal(t, len(m.Content)-1, j, "a message's point ends it")
				require.Equal(t, "user", m.Role)
				p.messages = append(p.messages, i)
			}
		}
	}
	return p
}

// Cache points go after the tools (Claude), the system prompt and the last
// two user messages, then earlier user messages while points are left, on
// the models that support them (ids, inference
// profiles of every geography, ARNs naming them), at most 4; none on
// other models, on opaque ARNs, or when turned off. The fake refuses
// what Bedrock refuses (too many, tools on Nova, unsupported models).
func TestCachePointPlacement(t *testing.T) {
	t.Parallel()
	claudes := []string{claude, "global.anthropic.claude-sonnet-4-5-20250929-v1:0", "apac.anthropic.claude-haiku-4-5-20251001-v1:0",
		"anthropic.claude-3-5-haiku-20241022-v1:0", "eu.anthropic.claude-3-7-sonnet-20250219-v1:0", "us.anthropic.claude-opus-4-1-20250805-v1:0",
		"arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-3-7-sonnet-20250219-v1:0",
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0"}
	novas := []string{"amazon.nova-micro-v1:0", "us.amazon.nova-lite-v1:0", "eu.amazon.nova-pro-v1:0", "us.amazon.nova-premier-v1:0"}
	others := []string{"meta.llama3-1-70b-instruct-v1:0", "anthropic.claude-3-haiku-20240307-v1:0", "us.anthropic.claude-3-5-sonnet-20240620-v1:0",
		"mistral.mistral-large-2407-v1:0", "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5f6"}
	ctx := context.Background()
	call := func(t *testing.T, mode bedrock.CachePoints, req *provider.Request) points {
		t.Helper()
		p, fake := cachingProvider(t, mode)
		_, err := p.Complete(ctx, req)
		require.NoError(t, err, req.Model)
		_, err = p.Stream(ctx, req, func(provider.Delta) error { return nil })
		require.NoError(t, err, req.Model)
		reqs := fake.Requests()
		require.Len(t, reqs, 2)
		first := where(t, reqs[0])
		require.Equal(t, first, where(t, reqs[1]), "Converse and ConverseStream alike")
		return first
	}
	loop := func(model string, turns int) *provider.Request {
		return &provider.Request{Model: model, Instructions: "Be brief.", Tools: []api.ToolDefinition{weatherTool()},
			ToolChoice: api.ToolChoiceAuto, Items: toolTurns(turns)}
	}
	for _, model := range claudes {
		// Messages: 0 question, 1 calls, 2 results, 3 calls, 4 results.
		require.Equal(t, points{tools: 1, system: 1, messages: []int{2, 4}}, call(t, bedrock.CachePointsAuto, loop(model, 2)), model)
	}
	for _, model := range novas {
		// No tools point: the fourth goes to the question.
		require.Equal(t, points{system: 1, messages: []int{0, 2, 4}}, call(t, bedrock.CachePointsAuto, loop(model, 2)), model)
	}
	for _, model := range others {
		require.Equal(t, points{}, call(t, bedrock.CachePointsAuto, loop(model, 2)), model)
	}
	// Off: none, on a model that caches.
	require.Equal(t, points{}, call(t, bedrock.CachePointsOff, loop(claude, 2)))

	// The limit: a long loop still has 4, on the last user messages.
	require.Equal(t, points{tools: 1, system: 1, messages: []int{8, 10}}, call(t, bedrock.CachePointsAuto, loop(claude, 5)))
	require.Equal(t, points{system: 1, messages: []int{6, 8, 10}}, call(t, bedrock.CachePointsAuto, loop(novas[0], 5)))
	noSystem := loop(claude, 5)
	noSystem.Instructions = ""
	require.Equal(t, points{tools: 1, messages: []int{6, 8, 10}}, call(t, bedrock.CachePointsAuto, noSystem))
	// The first call: one user message; no system prompt, no tools.
	require.Equal(t, points{messages: []int{0}}, call(t, bedrock.CachePointsAuto, &provider.Request{Model: claude, Items: []api.Item{user("Hi")}}))
	// Developer messages join the system prompt, whose point ends it.
	req := loop(claude, 1)
	req.Items = append([]api.Item{msg(api.RoleDeveloper, "Use metric units.")}, req.Items...)
	require.Equal(t, points{tools: 1, system: 1, messages: []int{0, 2}}, call(t, bedrock.CachePointsAuto, req))
}

func TestParseCachePoints(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bedrock.CachePoints{"": bedrock.CachePointsAuto, "auto": bedrock.CachePointsAuto, " off ": bedrock.CachePointsOff} {
		got, ok := bedrock.ParseCachePoints(in)
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	_, ok := bedrock.ParseCachePoints("on")
	require.False(t, ok)
}

// Usage: input_tokens are every input token, as OpenAI counts them
// (Bedrock's inputTokens excludes cache reads and writes); cached_tokens
// the reads; the writes apart, in Result.CacheWriteTokens.
func TestCacheUsage(t *testing.T) {
	turn := fakebedrock.Turn{Text: "Hi.", Usage: fakebedrock.Usage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 100, CacheWriteInputTokens: 20}}
	both(t, []fakebedrock.Turn{turn}, func(t *testing.T, call func(*provider.Request) (*provider.Result, error), _ *fakebedrock.Server) {
		res, err := call(&provider.Request{Model: claude, Items: []api.Item{user("Hi")}})
		require.NoError(t, err)
		require.Equal(t, api.Usage{InputTokens: 130, OutputTokens: 5, TotalTokens: 135, InputTokensDetails: api.InputTokensDetails{CachedTokens: 100}}, res.Usage)
		require.Equal(t, 20, res.CacheWriteTokens)
	})
}

// The second call of a tool loop reads the first one's prompt from the
// cache and writes only what it adds; without cache points nothing is
// read nor written.
func TestSecondCallReadsCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := &provider.Request{Model: claude, Instructions: longInstructions, Tools: []api.ToolDefinition{weatherTool()}, Items: toolTurns(0)}
	second := &provider.Request{Model: claude, Instructions: longInstructions, Tools: []api.ToolDefinition{weatherTool()}, Items: toolTurns(1)}
	p, _ := cachingProvider(t, bedrock.CachePointsAuto)
	r1, err := p.Complete(ctx, first)
	require.NoError(t, err)
	require.Zero(t, r1.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, r1.Usage.InputTokens, r1.CacheWriteTokens, "the whole prompt is written")
	r2, err := p.Stream(ctx, second, func(provider.Delta) error { return nil })
	require.NoError(t, err)
	require.Equal(t, r1.Usage.InputTokens, r2.Usage.InputTokensDetails.CachedTokens, "the first prompt is read")
	require.Equal(t, r2.Usage.InputTokens-r1.Usage.InputTokens, r2.CacheWriteTokens, "what it adds is written")
	require.Greater(t, float64(r2.Usage.InputTokensDetails.CachedTokens)/float64(r2.Usage.InputTokens), 0.9)

	off, _ := cachingProvider(t, bedrock.CachePointsOff)
	for _, req := range []*provider.Request{first, second} {
		r, err := off.Complete(ctx, req)
		require.NoError(t, err)
		require.Zero(t, r.Usage.InputTokensDetails.CachedTokens)
		require.Zero(t, r.CacheWriteTokens)
		require.Positive(t, r.Usage.InputTokens)
	}
}

// lambentUsage is the lambent.usage of a response's JSON.
func lambentUsage(t *testing.T, raw string) (writes int64) {
	t.Helper()
	var r struct {
		Lambent struct {
			Usage struct {
				CacheWriteInputTokens *int64 `json:"cache_write_input_tokens"`
			} `json:"usage"`
		} `json:"lambent"`
	}
	require.NoError(t, json.Unmarshal([]byte(raw), &r))
	require.NotNil(t, r.Lambent.Usage.CacheWriteInputTokens, "lambent.usage.cache_write_input_tokens in %s", raw)
	return *r.Lambent.Usage.CacheWriteInputTokens
}

// Through the gateway: a streamed agentic loop (the hosted calculator
// twice per turn) on Claude; the second model call reads the first's
// prompt from the fake's cache, and so does the first call of the next
// response (previous_response_id). The response's usage sums its calls:
// input_tokens all input, cached_tokens the reads, and
// lambent.usage.cache_write_input_tokens the writes, streamed and stored.
func TestGatewayCacheReads(t *testing.T) {
	fake := fakebedrock.NewHandler(func(r fakebedrock.Request) fakebedrock.Turn {
		last := r.Messages[len(r.Messages)-1]
		if last.Content[0].ToolResult != nil {
			return fakebedrock.Turn{Text: "42 and 1024.", Usage: fakebedrock.Usage{OutputTokens: 4}}
		}
		return fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{
			{Name: "calculator", Input: `{"expression":"6*7"}`}, {Name: "calculator", Input: `{"expression":"2^10"}`},
		}, Usage: fakebedrock.Usage{OutputTokens: 9}}
	})
	client := gateway(t, fake, map[string]string{"LAMBENT_BEDROCK_CACHE_POINTS": "auto"})
	ctx := context.Background()
	calc := option.WithJSONSet("tools", []any{map[string]any{"type": "lambent:calculator"}})
	evs := stream(t, client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Instructions: openai.String(longInstructions),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Compute 6*7 and 2^10.")},
	}, calc))
	last := evs[len(evs)-1]
	require.Equal(t, "response.completed", last.Type)
	r1 := last.AsResponseCompleted().Response

	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	total := func(u fakebedrock.Usage) int {
		return u.InputTokens + u.CacheReadInputTokens + u.CacheWriteInputTokens
	}
	m1, m2 := reqs[0].Metered, reqs[1].Metered
	require.Zero(t, m1.CacheReadInputTokens)
	require.Equal(t, total(m1), m2.CacheReadInputTokens, "the second call reads the first call's prompt")
	require.Positive(t, m2.CacheWriteInputTokens)

	require.Equal(t, int64(total(m1)+total(m2)), r1.Usage.InputTokens)
	require.Equal(t, int64(m2.CacheReadInputTokens), r1.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(m1.CacheWriteInputTokens+m2.CacheWriteInputTokens), lambentUsage(t, r1.RawJSON()), "streamed")
	stored, err := client.Responses.Get(ctx, r1.ID, responses.ResponseGetParams{})
	require.NoError(t, err)
	require.Equal(t, lambentUsage(t, r1.RawJSON()), lambentUsage(t, stored.RawJSON()), "stored")

	// The next response starts where the last call of this one ended.
	r2, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Instructions:       openai.String(longInstructions),
		PreviousResponseID: openai.String(r1.ID),
		Input:              responses.ResponseNewParamsInputUnion{OfString: openai.String("And 3*3?")},
	}, calc)
	require.NoError(t, err)
	reqs = fake.Requests()
	require.Len(t, reqs, 4)
	require.Equal(t, total(m2), reqs[2].Metered.CacheReadInputTokens, "the new turn reads the last call's prompt")
	require.Equal(t, int64(reqs[2].Metered.CacheReadInputTokens+reqs[3].Metered.CacheReadInputTokens), r2.Usage.InputTokensDetails.CachedTokens)
	require.Equal(t, int64(reqs[2].Metered.CacheWriteInputTokens+reqs[3].Metered.CacheWriteInputTokens), lambentUsage(t, r2.RawJSON()))
}
