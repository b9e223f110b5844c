package bedrock_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// claude is a cross-region inference profile id of an Anthropic model.
const claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// newProvider starts fake with turns and returns a provider for it,
// without cache points: the tests that use it check the messages' shape,
// cache_test.go the cache points.
func newProvider(t *testing.T, turns ...fakebedrock.Turn) (*bedrock.Provider, *fakebedrock.Server) {
	t.Helper()
	fake := fakebedrock.New(turns...)
	t.Cleanup(fake.Close)
	return bedrock.New(bedrock.Config{AWS: fake.AWSConfig(), CachePoints: bedrock.CachePointsOff}), fake
}

// both runs fn once with Complete (Converse) and once with Stream
// (ConverseStream), each against a fresh fake with turns.
func both(t *testing.T, turns []fakebedrock.Turn, fn func(t *testing.T, call func(*provider.Request) (*provider.Result, error), fake *fakebedrock.Server)) {
	t.Helper()
	t.Run("Converse", func(t *testing.T) {
		p, fake := newProvider(t, turns...)
		fn(t, func(r *provider.Request) (*provider.Result, error) { return p.Complete(context.Background(), r) }, fake)
	})
	t.Run("ConverseStream", func(t *testing.T) {
		p, fake := newProvider(t, turns...)
		fn(t, func(r *provider.Request) (*provider.Result, error) {
			return p.Stream(context.Background(), r, func(provider.Delta) error { return nil })
		}, fake)
	})
}

func user(text string) api.Item {
	return api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: text}}}
}

func msg(role, text string) api.Item {
	typ := api.PartInputText
	if role == api.RoleAssistant {
		typ = api.PartOutputText
	}
	return api.Item{Type: api.ItemMessage, Role: role, Content: []api.ContentPart{{Type: typ, Text: text}}}
}

func fcall(id, name, args string) api.Item {
	return api.Item{Type: api.ItemFunctionCall, CallID: id, Name: name, Arguments: args}
}

func output(id, out string, isErr bool) api.Item {
	return api.Item{Type: api.ItemFunctionCallOutput, CallID: id, Output: out, IsError: isErr}
}

func weatherTool() api.ToolDefinition {
	return api.ToolDefinition{Name: "get_weather", Description: "Weather of a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
}

// only returns the one request the fake received.
func only(t *testing.T, fake *fakebedrock.Server) fakebedrock.Request {
	t.Helper()
	reqs := fake.Requests()
	require.Len(t, reqs, 1)
	return reqs[0]
}

func text(b fakebedrock.ContentBlock) string {
	if b.Text == nil {
		return ""
	}
	return *b.Text
}
