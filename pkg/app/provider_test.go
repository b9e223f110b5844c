package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsconf"
	model "github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
	"github.com/lambent/lambent/pkg/provider/openai"
)

func TestProviderConfig(t *testing.T) {
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	c, err := FromEnv(env(nil))
	require.NoError(t, err)
	require.Equal(t, ProviderOpenAI, c.Provider.Name, "the local default stays the OpenAI-compatible provider")
	require.True(t, c.Uses(ProviderOpenAI))
	require.False(t, c.Uses(ProviderBedrock))

	c, err = FromEnv(env(map[string]string{"LAMBENT_PROVIDER": "bedrock", "LAMBENT_BEDROCK_GUARDRAIL_ID": "gr", "LAMBENT_BEDROCK_GUARDRAIL_VERSION": "2"}))
	require.NoError(t, err)
	require.Equal(t, ProviderBedrock, c.Provider.Name)
	require.False(t, c.Uses(ProviderOpenAI))
	require.Equal(t, "gr", c.Provider.BedrockGuardrailID)
	require.Equal(t, "2", c.Provider.BedrockGuardrailVersion)
	require.Equal(t, bedrock.CachePointsAuto, c.Provider.BedrockCachePoints, "cache points by default")

	c, err = FromEnv(env(map[string]string{"LAMBENT_PROVIDER": "bedrock", "LAMBENT_BEDROCK_CACHE_POINTS": "off"}))
	require.NoError(t, err)
	require.Equal(t, bedrock.CachePointsOff, c.Provider.BedrockCachePoints)

	c, err = FromEnv(env(map[string]string{"LAMBENT_MODEL_ROUTES": "us.anthropic.*=bedrock, amazon.nova-pro-v1:0=bedrock"}))
	require.NoError(t, err)
	require.Equal(t, []model.Route{{Pattern: "us.anthropic.*", Provider: "bedrock"}, {Pattern: "amazon.nova-pro-v1:0", Provider: "bedrock"}}, c.Provider.Routes)
	require.True(t, c.Uses(ProviderOpenAI))
	require.True(t, c.Uses(ProviderBedrock))

	for name, vars := range map[string]map[string]string{
		"unknown provider":       {"LAMBENT_PROVIDER": "vertex"},
		"route to unknown":       {"LAMBENT_MODEL_ROUTES": "gemini-*=vertex"},
		"route without provider": {"LAMBENT_MODEL_ROUTES": "gpt-4o"},
		"unknown cache points":   {"LAMBENT_BEDROCK_CACHE_POINTS": "on"},
	} {
		_, err := FromEnv(env(vars))
		require.Error(t, err, name)
	}

	// The zero Config means the OpenAI-compatible provider.
	require.True(t, (&Config{}).Uses(ProviderOpenAI))
}

// With Bedrock alone, the start-up check names it and probes no URL.
func TestCheckProviderBedrock(t *testing.T) {
	c := CheckProvider(context.Background(), Config{Provider: ProviderConfig{Name: ProviderBedrock, URL: "http://127.0.0.1:1/v1"}}, nil)
	require.Equal(t, slog.LevelInfo, c.Level)
	require.Contains(t, c.Message, "Bedrock")
	require.Contains(t, c.Hint, "LAMBENT_DEFAULT_MODEL")
	require.Contains(t, c.LogAttrs(Config{Provider: ProviderConfig{Name: ProviderBedrock}}), ProviderBedrock)
}

// buildProvider routes when routes are set, and uses the one provider
// directly otherwise.
func TestBuildProvider(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "x")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "y")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := buildProvider(Config{Provider: ProviderConfig{Name: ProviderBedrock}}, loadAWS(t), log)
	require.NoError(t, err)
	require.Equal(t, "*bedrock.Provider", typeName(p))
	p, err = buildProvider(Config{Provider: ProviderConfig{URL: "http://127.0.0.1:1/v1"}}, loadAWS(t), log)
	require.NoError(t, err)
	require.Equal(t, "*openai.Provider", typeName(p))
	p, err = buildProvider(Config{Provider: ProviderConfig{Routes: []model.Route{{Pattern: "us.*", Provider: ProviderBedrock}}}}, loadAWS(t), log)
	require.NoError(t, err)
	r, ok := p.(*model.Router)
	require.True(t, ok)
	require.Equal(t, "*bedrock.Provider", typeName(r.For("us.anthropic.claude")))
	require.Equal(t, "*openai.Provider", typeName(r.For("gpt-4o")))
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }

// loadAWS is the app's AWS configuration loader (App.AWS) for a test.
func loadAWS(t *testing.T) func() (aws.Config, error) {
	return func() (aws.Config, error) { return awsconf.Load(t.Context()) }
}

// LAMBENT_PROVIDER_TOOL_CALL_IDS picks the call id rule of the
// OpenAI-compatible API; auto recognises Mistral's API by its host.
func TestToolCallIDRules(t *testing.T) {
	t.Parallel()
	anyCount := model.OpenAIRules()
	anyCount.MaxTools = 0
	for _, tc := range []struct {
		ids, url string
		want     model.Rules
	}{
		// OpenAI's limit of 128 tools a call holds on OpenAI's hosts only.
		{"", "https://api.openai.com/v1", model.OpenAIRules()},
		{"", "https://my-resource.openai.azure.com/openai/v1", model.OpenAIRules()},
		{"", "http://127.0.0.1:11434/v1", anyCount},
		{"", "https://api.mistral.ai/v1", model.MistralRules()},
		{"auto", "https://mistral.ai.example.com/v1", anyCount},
		{"mistral", "http://127.0.0.1:8000/v1", model.MistralRules()},
		{"openai", "https://api.mistral.ai/v1", anyCount},
	} {
		c, err := FromEnv(func(k string) string {
			return map[string]string{"LAMBENT_PROVIDER_TOOL_CALL_IDS": tc.ids, "LAMBENT_PROVIDER_URL": tc.url}[k]
		})
		require.NoError(t, err)
		require.Equal(t, tc.want, c.Provider.rules(), "%s %s", tc.ids, tc.url)
	}
	// LAMBENT_PROVIDER_MAX_TOOLS states another server's limit, Mistral's
	// included.
	for _, url := range []string{"http://127.0.0.1:8000/v1", "https://api.mistral.ai/v1"} {
		c, err := FromEnv(func(k string) string {
			return map[string]string{"LAMBENT_PROVIDER_URL": url, "LAMBENT_PROVIDER_MAX_TOOLS": "64"}[k]
		})
		require.NoError(t, err)
		require.Equal(t, 64, c.Provider.rules().MaxTools, url)
	}
	_, err := FromEnv(func(k string) string { return map[string]string{"LAMBENT_PROVIDER_TOOL_CALL_IDS": "short"}[k] })
	require.ErrorContains(t, err, "LAMBENT_PROVIDER_TOOL_CALL_IDS")
}

// LAMBENT_PROVIDER_MAX_TOKENS_PARAM names the field max_output_tokens is
// sent as; auto names it by the model (OpenAI's reasoning models take
// max_completion_tokens), on every host: a proxy in front of OpenAI too.
func TestMaxTokensParam(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		param, url string
		want       openai.TokenLimit
	}{
		{"", "https://api.openai.com/v1", openai.TokenLimitByModel},
		{"auto", "https://my-resource.openai.azure.com/openai/v1", openai.TokenLimitByModel},
		{"", "http://127.0.0.1:4000/v1", openai.TokenLimitByModel},
		{"max_tokens", "http://localhost:11434/v1", openai.TokenLimitMaxTokens},
		{"max_completion_tokens", "https://my-resource.openai.azure.com/openai/v1", openai.TokenLimitMaxCompletionTokens},
		{"max_completion_tokens", "http://127.0.0.1:8000/v1", openai.TokenLimitMaxCompletionTokens},
		{"max_tokens", "https://api.openai.com/v1", openai.TokenLimitMaxTokens},
	} {
		c, err := FromEnv(func(k string) string {
			return map[string]string{"LAMBENT_PROVIDER_MAX_TOKENS_PARAM": tc.param, "LAMBENT_PROVIDER_URL": tc.url}[k]
		})
		require.NoError(t, err)
		require.Equal(t, tc.want, c.Provider.tokenLimit(), "%s %s", tc.param, tc.url)
	}
	_, err := FromEnv(func(k string) string {
		return map[string]string{"LAMBENT_PROVIDER_MAX_TOKENS_PARAM": "max_output_tokens"}[k]
	})
	require.ErrorContains(t, err, "LAMBENT_PROVIDER_MAX_TOKENS_PARAM")
}

// The provider the configuration builds sends max_output_tokens as
// LAMBENT_PROVIDER_MAX_TOKENS_PARAM says: by default a model named gpt-5
// gets max_completion_tokens on any host (a proxy in front of OpenAI),
// max_tokens when the setting says so (a server that ignores the other),
// and a custom deployment name max_completion_tokens when it says that.
func TestMaxTokensParamBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		param, model, want, notWant string
	}{
		{"", "gpt-5", "max_completion_tokens", "max_tokens"},
		{"", "llama3", "max_tokens", "max_completion_tokens"},
		{"max_tokens", "gpt-5", "max_tokens", "max_completion_tokens"},
		{"max_completion_tokens", "prod-reasoner", "max_completion_tokens", "max_tokens"},
	} {
		bodies := make(chan map[string]any, 1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body map[string]any
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			bodies <- body
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
		}))
		t.Cleanup(srv.Close)
		c, err := FromEnv(func(k string) string {
			return map[string]string{"LAMBENT_PROVIDER_MAX_TOKENS_PARAM": tc.param, "LAMBENT_PROVIDER_URL": srv.URL + "/v1"}[k]
		})
		require.NoError(t, err)
		p, err := buildProvider(c, loadAWS(t), slog.New(slog.DiscardHandler))
		require.NoError(t, err)
		t.Cleanup(p.(*openai.Provider).CloseIdleConnections)
		limit := 100
		_, err = p.Complete(t.Context(), &model.Request{Model: tc.model, MaxOutputTokens: &limit,
			Items: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}}})
		require.NoError(t, err)
		body := <-bodies
		require.Equal(t, 100.0, body[tc.want], "%s %s: %v", tc.param, tc.model, body)
		require.NotContains(t, body, tc.notWant, "%s %s", tc.param, tc.model)
	}
}
