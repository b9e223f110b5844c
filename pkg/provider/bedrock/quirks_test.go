package bedrock_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

// llama is a model with tool use in Converse only, system prompts, and
// toolChoice auto only.
const llama = "us.meta.llama4-maverick-17b-instruct-v1:0"

// paths records the paths of the HTTP requests a provider sends, refused
// ones included.
type paths struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  []string
}

func (p *paths) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	p.got = append(p.got, r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:])
	p.mu.Unlock()
	return p.next.RoundTrip(r)
}

func (p *paths) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := p.got
	p.got = nil
	return got
}

// quirkProvider is a provider for a fake answering every call with turn,
// and the paths of the requests it sends.
func quirkProvider(t *testing.T, turn fakebedrock.Turn) (*bedrock.Provider, *fakebedrock.Server, *paths) {
	t.Helper()
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return turn })
	t.Cleanup(fake.Close)
	cfg := fake.AWSConfig()
	hc := fake.Client()
	rec := &paths{next: hc.Transport}
	cfg.HTTPClient = &http.Client{Transport: rec}
	return bedrock.New(bedrock.Config{AWS: cfg, CachePoints: bedrock.CachePointsOff}), fake, rec
}

// Bedrock refuses a toolConfig in ConverseStream for models with tool use
// in Converse only ("This model doesn't support tool use in streaming
// mode.", Llama, Mistral, Palmyra, Jamba): a streamed call with tools to
// one is made with Converse and its answer passed on as deltas; the
// provider remembers it, so later calls go to Converse at once. A
// streamed call without tools still streams.
func TestStreamToolsInConverseOnly(t *testing.T) {
	p, fake, rec := quirkProvider(t, fakebedrock.Turn{Text: "Let me look.", ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_1", Name: "get_weather", Input: `{"city":"Paris"}`}}})
	req := &provider.Request{Model: llama, Items: []api.Item{user("Weather in Paris?")}, Tools: []api.ToolDefinition{weatherTool()}}
	for _, want := range [][]string{{"converse-stream", "converse"}, {"converse"}} {
		var text, args, name string
		res, err := p.Stream(context.Background(), req, func(d provider.Delta) error {
			switch d.Kind {
			case provider.DeltaText:
				text += d.Text
			case provider.DeltaToolCall:
				args += d.Text
				name += d.ToolName
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, want, rec.take())
		assert.Equal(t, "Let me look.", text)
		assert.Equal(t, "get_weather", name)
		assert.JSONEq(t, `{"city":"Paris"}`, args)
		require.Len(t, res.ToolCalls, 1)
		assert.Equal(t, provider.FinishToolCalls, res.FinishReason)
	}
	_, err := p.Stream(context.Background(), hi(llama), func(provider.Delta) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"converse-stream"}, rec.take(), "without tools the model streams")
	assert.Equal(t, 3, fake.Calls())
}

// Models without system prompts (Mistral 7B and Mixtral, Titan: "This
// model doesn't support system messages.") get the instructions and
// system messages at the start of the first user message instead.
func TestSystemPromptFolded(t *testing.T) {
	const mistral7b = "mistral.mistral-7b-instruct-v0:2"
	p, fake, rec := quirkProvider(t, fakebedrock.Turn{Text: "Bonjour."})
	req := &provider.Request{Model: mistral7b, Instructions: "Answer in French.", Items: []api.Item{msg(api.RoleDeveloper, "Be brief."), user("Hello!")}}
	for i, want := range [][]string{{"converse-stream", "converse-stream"}, {"converse"}} {
		var res *provider.Result
		var err error
		if i == 0 {
			res, err = p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
		} else {
			res, err = p.Complete(context.Background(), req)
		}
		require.NoError(t, err)
		assert.Equal(t, "Bonjour.", res.Text)
		assert.Equal(t, want, rec.take(), "learned once")
	}
	for _, got := range fake.Requests() {
		assert.Empty(t, got.System)
		require.Len(t, got.Messages, 1)
		var texts []string
		for _, b := range got.Messages[0].Content {
			texts = append(texts, text(b))
		}
		assert.Equal(t, []string{"Answer in French.\n\nBe brief.", "Hello!"}, texts)
	}
}

// toolChoice tool is Claude's and Nova's only; Mistral Large takes any: a
// forced function reaches it as the only tool with toolChoice any, which
// comes to the same.
func TestForcedToolAsAny(t *testing.T) {
	const large = "mistral.mistral-large-2407-v1:0"
	p, fake, rec := quirkProvider(t, fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{{Name: "get_weather", Input: `{"city":"Paris"}`}}})
	other := api.ToolDefinition{Name: "get_time", Parameters: weatherTool().Parameters}
	req := &provider.Request{Model: large, Items: []api.Item{user("Paris?")}, Tools: []api.ToolDefinition{other, weatherTool()},
		ToolChoice: api.ToolChoiceRequired, ForcedTool: "get_weather"}
	for _, want := range [][]string{{"converse", "converse"}, {"converse"}} {
		res, err := p.Complete(context.Background(), req)
		require.NoError(t, err)
		require.Len(t, res.ToolCalls, 1)
		assert.Equal(t, want, rec.take())
	}
	for _, got := range fake.Requests() {
		tc := got.ToolConfig
		require.NotNil(t, tc)
		require.Len(t, tc.Tools, 1)
		assert.Equal(t, "get_weather", tc.Tools[0].ToolSpec.Name)
		require.NotNil(t, tc.ToolChoice)
		assert.NotNil(t, tc.ToolChoice.Any)
	}
}

// A model that can be made to call no tool (toolChoice auto only: Llama)
// or takes no tools at all gets a 400 naming the parameter: tool_choice
// required or a forced function, or tools. Once learned, the refusal
// comes without a call to Bedrock.
func TestToolUseRefused(t *testing.T) {
	for _, tc := range []struct {
		name, model, param string
		req                provider.Request
	}{
		{"required", llama, "tool_choice", provider.Request{ToolChoice: api.ToolChoiceRequired}},
		{"forced", llama, "tool_choice", provider.Request{ToolChoice: api.ToolChoiceRequired, ForcedTool: "get_weather"}},
		{"no tool use", "us.meta.llama3-2-3b-instruct-v1:0", "tools", provider.Request{ToolChoice: api.ToolChoiceAuto}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, fake, rec := quirkProvider(t, fakebedrock.Turn{Text: "ok"})
			req := tc.req
			req.Model, req.Items, req.Tools = tc.model, []api.Item{user("Paris?")}, []api.ToolDefinition{weatherTool()}
			for i := range 2 {
				_, err := p.Complete(context.Background(), &req)
				ae := requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "unsupported_value")
				assert.Equal(t, tc.param, ae.Param)
				assert.Contains(t, ae.Message, tc.model)
				if i == 1 {
					assert.Empty(t, rec.take(), "learned: no call")
				}
				rec.take()
			}
			assert.Zero(t, fake.Calls())
		})
	}
}

// Bedrock's constraint errors quote the value they refuse ("1 validation
// error detected: Value '...' at 'modelId' ..."), so a tenant's input can
// put a feature refusal's words inside a ValidationException. Only a
// message that is the refusal teaches the provider anything: the call is
// a 400 made once, and the model's next call with tools, system prompt
// and a forced tool reaches Bedrock unchanged, for every tenant.
func TestQuotedRefusalTeachesNothing(t *testing.T) {
	for _, phrase := range []string{
		"This model doesn't support tool use in streaming mode.",
		"This model doesn't support tool use.",
		"This model doesn't support system messages.",
		"This model doesn't support the toolConfig.toolChoice.tool field.",
		"This model doesn't support the toolConfig.toolChoice.any field.",
	} {
		t.Run(phrase, func(t *testing.T) {
			fake := fakebedrock.NewHandler(func(r fakebedrock.Request) fakebedrock.Turn {
				if r.Seq == 0 {
					return fakebedrock.Turn{Error: "ValidationException",
						ErrorMessage: "1 validation error detected: Value 'x " + phrase + "' at 'outputConfig.textFormat.structure.jsonSchema.description' failed to satisfy constraint: Member must have length less than or equal to 1000"}
				}
				return fakebedrock.Turn{ToolUses: []fakebedrock.ToolUse{{Name: "get_weather", Input: `{"city":"Paris"}`}}}
			})
			t.Cleanup(fake.Close)
			p := bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), CachePoints: bedrock.CachePointsOff})
			req := &provider.Request{Model: claude, Instructions: "Be brief.", Items: []api.Item{user("Paris?")}, Tools: []api.ToolDefinition{weatherTool()},
				ToolChoice: api.ToolChoiceRequired, ForcedTool: "get_weather"}
			stream := func() (*provider.Result, error) {
				return p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
			}
			_, err := stream()
			requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "invalid_request")
			require.Equal(t, 1, fake.Calls(), "not made again")
			res, err := stream()
			require.NoError(t, err)
			require.Len(t, res.ToolCalls, 1)
			got := fake.Requests()
			require.Len(t, got, 2)
			assert.Equal(t, "ConverseStream", got[1].Operation)
			assert.NotEmpty(t, got[1].System)
			require.NotNil(t, got[1].ToolConfig)
			require.NotNil(t, got[1].ToolConfig.ToolChoice)
			assert.NotNil(t, got[1].ToolConfig.ToolChoice.Tool)
		})
	}
}

// Bedrock refuses a feature a model lacks before the model runs, in its
// reply to the call. The same words in an exception event of a stream
// that opened (the model has run, and been billed) teach nothing and the
// call is not made again, even when no delta was passed on yet.
func TestRefusalInOpenStreamNotRetried(t *testing.T) {
	p, fake, rec := quirkProvider(t, fakebedrock.Turn{StreamError: "validationException", ErrorMessage: "This model doesn't support tool use in streaming mode."})
	req := &provider.Request{Model: claude, Items: []api.Item{user("Paris?")}, Tools: []api.ToolDefinition{weatherTool()}}
	_, err := p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
	requireAPIError(t, err, 400, api.ErrTypeInvalidRequest, "invalid_request")
	assert.Equal(t, []string{"converse-stream"}, rec.take(), "not made again")
	assert.Equal(t, 1, fake.Calls())
}
