package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lambent/lambent/pkg/egress"
)

// ProviderCheckTimeout bounds CheckProvider: a provider that has not
// answered by then is reported unreachable.
const ProviderCheckTimeout = 3 * time.Second

// providerSetupHint says how to point Lambent at a model.
const providerSetupHint = "start a local model (Ollama: `ollama serve`, then `ollama pull llama3.2`), " +
	"or point LAMBENT_PROVIDER_URL at an OpenAI-compatible API (e.g. https://api.openai.com/v1) " +
	"with LAMBENT_PROVIDER_API_KEY and LAMBENT_DEFAULT_MODEL; `make demo` runs the gateway with a scripted fake model"

// ProviderCheck is what CheckProvider found: a finding to log at Level,
// with a Hint saying what to do about it (empty when there is nothing to
// do).
type ProviderCheck struct {
	// Level is Info when the provider answered and the default model is
	// offered (or none is configured), Warn otherwise.
	Level slog.Level
	// Message describes the finding.
	Message string
	// Hint says what to do, or is empty.
	Hint string
	// Models lists the provider's model ids, when it listed them.
	Models []string
}

// LogAttrs returns the check's attributes for a log record.
func (c ProviderCheck) LogAttrs(cfg Config) []any {
	attrs := []any{"provider", egress.ShownURL(cfg.Provider.URL)}
	if !cfg.Uses(ProviderOpenAI) {
		attrs[1] = ProviderBedrock
	}
	if c.Hint != "" {
		attrs = append(attrs, "hint", c.Hint)
	}
	if len(c.Models) > 0 {
		attrs = append(attrs, "models", c.Models)
	}
	return attrs
}

// CheckProvider asks the configured provider for its models once (GET
// <LAMBENT_PROVIDER_URL>/models with the provider key), within
// ProviderCheckTimeout, and says what to do when no model is reachable,
// the key is refused, or the default model is not on offer. It never
// fails: every outcome is a finding. hc nil means http.DefaultClient. Local
// runs call it at start-up; Lambda cold starts do not.
//
// With Bedrock alone (LAMBENT_PROVIDER=bedrock and no route to openai)
// nothing is probed: the finding names Bedrock.
func CheckProvider(ctx context.Context, cfg Config, hc *http.Client) ProviderCheck {
	if !cfg.Uses(ProviderOpenAI) {
		return ProviderCheck{Level: slog.LevelInfo, Message: "model provider: Amazon Bedrock (LAMBENT_PROVIDER=bedrock, the AWS SDK's configuration)",
			Hint: defaultModelHint(cfg, nil)}
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, ProviderCheckTimeout)
	defer cancel()
	target := cfg.Provider.URL + "/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		// The error quotes the URL: only its cause is shown.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return ProviderCheck{Level: slog.LevelWarn, Message: fmt.Sprintf("LAMBENT_PROVIDER_URL %q is not a usable URL: %v", egress.ShownURL(cfg.Provider.URL), err), Hint: providerSetupHint}
	}
	if cfg.Provider.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.Provider.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", ProviderCheckTimeout)
		}
		err = egress.ShownURLError(err)
		return ProviderCheck{Level: slog.LevelWarn, Message: "no model provider reachable at " + egress.ShownURL(cfg.Provider.URL) + ": " + err.Error(), Hint: providerSetupHint}
	}
	defer func() { _ = egress.DrainClose(resp.Body) }()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "set LAMBENT_PROVIDER_API_KEY to a valid key for this provider"
		if cfg.Provider.APIKey == "" {
			hint = "the provider needs a key: set LAMBENT_PROVIDER_API_KEY"
		}
		return ProviderCheck{Level: slog.LevelWarn, Message: fmt.Sprintf("the model provider refused the request (HTTP %d)", resp.StatusCode), Hint: hint}
	case resp.StatusCode/100 != 2:
		// Reachable; some OpenAI-compatible servers just do not list models.
		return ProviderCheck{Level: slog.LevelInfo, Message: fmt.Sprintf("model provider reachable; it does not list its models (HTTP %d)", resp.StatusCode), Hint: defaultModelHint(cfg, nil)}
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&list); err != nil {
		return ProviderCheck{Level: slog.LevelInfo, Message: "model provider reachable; its model list is not an OpenAI list: " + err.Error(), Hint: defaultModelHint(cfg, nil)}
	}
	models := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		models = append(models, m.ID)
	}
	c := ProviderCheck{Level: slog.LevelInfo, Message: fmt.Sprintf("model provider reachable, %d models", len(models)), Models: models}
	switch {
	case len(models) == 0:
		c.Level, c.Message = slog.LevelWarn, "the model provider offers no models"
		c.Hint = "install one (Ollama: `ollama pull llama3.2`) or point LAMBENT_PROVIDER_URL at another provider"
	case cfg.Provider.DefaultModel != "" && !offers(models, cfg.Provider.DefaultModel):
		c.Level, c.Message = slog.LevelWarn, fmt.Sprintf("LAMBENT_DEFAULT_MODEL %q is not among the provider's models", cfg.Provider.DefaultModel)
		c.Hint = "set LAMBENT_DEFAULT_MODEL to one of the models listed, or name a model in each request"
	default:
		c.Hint = defaultModelHint(cfg, models)
	}
	return c
}

// defaultModelHint reminds that requests must name a model when there is
// no default.
func defaultModelHint(cfg Config, models []string) string {
	if cfg.Provider.DefaultModel != "" {
		return ""
	}
	h := "requests must name a model; set LAMBENT_DEFAULT_MODEL for a default"
	if len(models) > 0 {
		h += " (e.g. " + models[0] + ")"
	}
	return h
}

// offers reports whether model is listed, Ollama's implicit ":latest" tag
// included.
func offers(models []string, model string) bool {
	return slices.ContainsFunc(models, func(m string) bool {
		return m == model || (!strings.Contains(model, ":") && m == model+":latest")
	})
}
