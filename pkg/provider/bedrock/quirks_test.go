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
