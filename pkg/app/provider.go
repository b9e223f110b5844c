package app

import (
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambent/lambent/pkg/api"
	model "github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// Model provider names, as LAMBENT_PROVIDER and LAMBENT_MODEL_ROUTES
// write them.
const (
	// ProviderOpenAI is the OpenAI-compatible Chat Completions API at
	// LAMBENT_PROVIDER_URL.
	ProviderOpenAI = "openai"
	// ProviderBedrock is Amazon Bedrock's Converse API, with the SDK's
	// default AWS configuration (AWS_REGION, the Lambda role,
	// AWS_ENDPOINT_URL_BEDROCK_RUNTIME).
	ProviderBedrock = "bedrock"
)

var providerNames = []string{ProviderOpenAI, ProviderBedrock}

// readProviders checks c.Provider and reads the model routes.
func (c *Config) readProviders(routes string) error {
	if !slices.Contains(providerNames, c.Provider.Name) {
		return fmt.Errorf("LAMBENT_PROVIDER: unknown model provider %q (want openai or bedrock)", c.Provider.Name)
	}
	rs, err := model.ParseRoutes(routes)
	if err != nil {
		return fmt.Errorf("LAMBENT_MODEL_ROUTES: %w", err)
	}
	for _, r := range rs {
		if !slices.Contains(providerNames, r.Provider) {
			return fmt.Errorf("LAMBENT_MODEL_ROUTES: route %s=%s: unknown model provider (want openai or bedrock)", r.Pattern, r.Provider)
		}
	}
	c.Provider.Routes = rs
	return nil
}

// defaultProvider is c.Provider, openai when empty.
func (c *Config) defaultProvider() string {
	if c.Provider.Name == "" {
		return ProviderOpenAI
	}
	return c.Provider.Name
}

// Uses reports whether some model goes to the named provider: it is the
// default (LAMBENT_PROVIDER) or a route names it.
func (c *Config) Uses(name string) bool {
	return c.defaultProvider() == name || slices.ContainsFunc(c.Provider.Routes, func(r model.Route) bool { return r.Provider == name })
}

// rules are the OpenAI-compatible API's rules: its call ids and tool names
// (ProviderConfig.ToolCallIDs), and the most tools a call may offer:
// ProviderConfig.MaxTools, else OpenAI's own limit on OpenAI's hosts
// (api.openai.com, Azure OpenAI); a server of the API elsewhere (vLLM,
// Ollama, a proxy) has its own, or none.
func (p ProviderConfig) rules() model.Rules {
	mistral := p.ToolCallIDs == CallIDsMistral
	if p.ToolCallIDs == CallIDsAuto {
		mistral = hostIn(p.host(), "mistral.ai")
	}
	rules := model.OpenAIRules()
	switch {
	case mistral:
		rules = model.MistralRules()
	case !p.openAIHost():
		rules.MaxTools = 0
	}
	if p.MaxTools > 0 {
		rules.MaxTools = p.MaxTools
	}
	return rules
}

// tokenLimit is the field max_output_tokens is sent to the
// OpenAI-compatible API as (ProviderConfig.MaxTokensParam): auto names it
// by the model, on any host (OpenAI's reasoning models refuse max_tokens,
// behind a proxy too); a server that ignores max_completion_tokens
// (Ollama, LM Studio) for a model named like one of them needs max_tokens.
func (p ProviderConfig) tokenLimit() openai.TokenLimit {
	switch p.MaxTokensParam {
	case MaxTokensParamMaxTokens:
		return openai.TokenLimitMaxTokens
	case MaxTokensParamCompletion:
		return openai.TokenLimitMaxCompletionTokens
	}
	return openai.TokenLimitByModel
}

// openAIHost reports whether the OpenAI-compatible API is OpenAI's own:
// api.openai.com or Azure OpenAI (openai.com, openai.azure.com or a name
// under them).
func (p ProviderConfig) openAIHost() bool {
	host := p.host()
	return hostIn(host, "openai.com") || hostIn(host, "openai.azure.com")
}

// host is the host name of the OpenAI-compatible API's URL ("" when it
// does not parse).
func (p ProviderConfig) host() string {
	u, err := url.Parse(p.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// hostIn reports whether host is domain or a name under it.
func hostIn(host, domain string) bool {
	return host == domain || strings.HasSuffix(host, "."+domain)
}

// modelCatalog is the gateway's models (httpapi.ModelCatalog): those of
// the configuration, and those the provider reported (App.ReportModels).
type modelCatalog struct {
	configured api.Models
	reported   atomic.Pointer[[]api.Model]
}

// Models returns the configured models with the reported ones.
func (m *modelCatalog) Models() api.Models {
	out := m.configured
	if r := m.reported.Load(); r != nil {
		out.Reported = *r
	}
	return out
}

// ReportModels adds the model ids the provider named owner (ProviderOpenAI)
// listed to GET /v1/models (CheckProvider's Models, local runs), replacing
// those reported before. Safe for concurrent use.
func (a *App) ReportModels(owner string, ids []string) {
	models := make([]api.Model, len(ids))
	for i, id := range ids {
		models[i] = api.Model{ID: id, OwnedBy: owner}
	}
	a.models.reported.Store(&models)
}

// Models are the models the gateway tells clients of (GET /v1/models)
// from its configuration: the default model (LAMBENT_DEFAULT_MODEL) and
// the models of the exact routes (LAMBENT_MODEL_ROUTES) by name, the
// prefix routes as prefixes, each owned by its provider.
func (c *Config) Models() api.Models {
	var m api.Models
	named := map[string]bool{}
	if d := c.Provider.DefaultModel; d != "" {
		m.Named = append(m.Named, api.Model{ID: d, OwnedBy: c.providerOf(d)})
		named[d] = true
	}
	for _, r := range c.Provider.Routes {
		if prefix, ok := strings.CutSuffix(r.Pattern, "*"); ok {
			m.Prefixes = append(m.Prefixes, api.Model{ID: prefix, OwnedBy: r.Provider})
		} else if !named[r.Pattern] {
			m.Named = append(m.Named, api.Model{ID: r.Pattern, OwnedBy: r.Provider})
			named[r.Pattern] = true
		}
	}
	return m
}

// providerOf names the provider the router sends model to: its exact
// route's, else its longest prefix route's, else the default provider.
func (c *Config) providerOf(model string) string {
	name, best := c.defaultProvider(), -1
	for _, r := range c.Provider.Routes {
		if r.Pattern == model {
			return r.Provider
		}
		if prefix, ok := strings.CutSuffix(r.Pattern, "*"); ok && strings.HasPrefix(model, prefix) && len(prefix) > best {
			name, best = r.Provider, len(prefix)
		}
	}
	return name
}

// buildProvider builds the providers the configuration uses and, when
// routes are set, the router between them.
func buildProvider(cfg Config, awsConfig func() (aws.Config, error), log *slog.Logger) (model.Provider, error) {
	ps := map[string]model.Provider{}
	if cfg.Uses(ProviderOpenAI) {
		ps[ProviderOpenAI] = openai.New(openai.Config{BaseURL: cfg.Provider.URL, APIKey: cfg.Provider.APIKey, Logger: log, Rules: cfg.Provider.rules(),
			TokenLimit: cfg.Provider.tokenLimit()})
	}
	if cfg.Uses(ProviderBedrock) {
		awsCfg, err := awsConfig()
		if err != nil {
			return nil, err
		}
		ps[ProviderBedrock] = bedrock.New(bedrock.Config{AWS: awsCfg, GuardrailID: cfg.Provider.BedrockGuardrailID, GuardrailVersion: cfg.Provider.BedrockGuardrailVersion,
			CachePoints: cfg.Provider.BedrockCachePoints,
			ImageFetch:  bedrock.ImageFetch{AllowHosts: cfg.Tools.AllowHosts}, Logger: log})
	}
	if len(cfg.Provider.Routes) == 0 {
		return ps[cfg.defaultProvider()], nil
	}
	return model.NewRouter(ps, cfg.defaultProvider(), cfg.Provider.Routes)
}
