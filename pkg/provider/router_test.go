package provider_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/provider"
)

// named answers with its name, so a test sees which provider served a call.
type named string

func (n named) Complete(_ context.Context, req *provider.Request) (*provider.Result, error) {
	return &provider.Result{Text: string(n), Model: req.Model}, nil
}

func (n named) Stream(_ context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	if err := fn(provider.Delta{Kind: provider.DeltaText, Text: string(n)}); err != nil {
		return nil, err
	}
	return &provider.Result{Text: string(n), Model: req.Model}, nil
}

func TestParseRoutes(t *testing.T) {
	routes, err := provider.ParseRoutes(" us.anthropic.*=bedrock,amazon.nova-*=bedrock\n gpt-4o=openai ,, arn:aws:bedrock:us-east-1:123456789012:inference-profile/x=bedrock")
	require.NoError(t, err)
	require.Equal(t, []provider.Route{
		{Pattern: "us.anthropic.*", Provider: "bedrock"},
		{Pattern: "amazon.nova-*", Provider: "bedrock"},
		{Pattern: "gpt-4o", Provider: "openai"},
		{Pattern: "arn:aws:bedrock:us-east-1:123456789012:inference-profile/x", Provider: "bedrock"},
	}, routes)
	routes, err = provider.ParseRoutes("")
	require.NoError(t, err)
	require.Empty(t, routes)
	for _, bad := range []string{"gpt-4o", "=openai", "gpt-4o=", "a*b=openai"} {
		_, err := provider.ParseRoutes(bad)
		require.Error(t, err, bad)
	}
}

func TestRouter(t *testing.T) {
	providers := map[string]provider.Provider{"openai": named("openai"), "bedrock": named("bedrock")}
	routes, err := provider.ParseRoutes("us.*=openai, us.anthropic.*=bedrock, us.anthropic.claude-special=openai, amazon.*=bedrock")
	require.NoError(t, err)
	r, err := provider.NewRouter(providers, "openai", routes)
	require.NoError(t, err)
	for model, want := range map[string]string{
		"us.anthropic.claude-sonnet-4": "bedrock", // the longest prefix wins
		"us.meta.llama3":               "openai",
		"us.anthropic.claude-special":  "openai", // an exact name beats every prefix
		"amazon.nova-pro-v1:0":         "bedrock",
		"gpt-4o":                       "openai", // the default
	} {
		res, err := r.Complete(context.Background(), &provider.Request{Model: model})
		require.NoError(t, err)
		require.Equal(t, want, res.Text, model)
		var got string
		res, err = r.Stream(context.Background(), &provider.Request{Model: model}, func(d provider.Delta) error { got = d.Text; return nil })
		require.NoError(t, err)
		require.Equal(t, want, got, model)
		require.Equal(t, model, res.Model)
	}

	bedrockDefault, err := provider.NewRouter(providers, "bedrock", nil)
	require.NoError(t, err)
	res, err := bedrockDefault.Complete(context.Background(), &provider.Request{Model: "anything"})
	require.NoError(t, err)
	require.Equal(t, "bedrock", res.Text)

	_, err = provider.NewRouter(providers, "vertex", nil)
	require.ErrorContains(t, err, `unknown model provider "vertex"`)
	_, err = provider.NewRouter(providers, "openai", []provider.Route{{Pattern: "x*", Provider: "azure"}})
	require.ErrorContains(t, err, "azure")
	_, err = provider.NewRouter(providers, "openai", []provider.Route{{Pattern: "x", Provider: "openai"}, {Pattern: "x", Provider: "bedrock"}})
	require.ErrorContains(t, err, "twice")
}

// counting is a provider that counts tokens: the length of its name.
type counting struct{ named }

func (c counting) CountTokens(context.Context, *provider.Request) (int, error) {
	return len(c.named), nil
}

// CounterFor finds the counter of a model: the provider itself, or the
// one a Router sends the model to; none when that provider counts none.
func TestCounterFor(t *testing.T) {
	r, err := provider.NewRouter(map[string]provider.Provider{"openai": named("openai"), "bedrock": counting{"bedrock"}}, "openai",
		[]provider.Route{{Pattern: "us.anthropic.*", Provider: "bedrock"}})
	require.NoError(t, err)
	c, ok := provider.CounterFor(r, "us.anthropic.claude")
	require.True(t, ok)
	n, err := c.CountTokens(context.Background(), &provider.Request{})
	require.NoError(t, err)
	require.Equal(t, len("bedrock"), n)
	_, ok = provider.CounterFor(r, "gpt-4o")
	require.False(t, ok)
	_, ok = provider.CounterFor(counting{"x"}, "any")
	require.True(t, ok)
	_, ok = provider.CounterFor(named("x"), "any")
	require.False(t, ok)
}
