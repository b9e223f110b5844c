package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/provider/openai"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
)

// App is a wired gateway.
type App struct {
	Engine  *engine.Engine
	Handler http.Handler
	Store   store.ResponseStore
	Tools   *tools.Registry
}

// Build wires the parts described by cfg. storeOverride, when non-nil,
// replaces the configured store (tests and multi-instance setups).
func Build(ctx context.Context, cfg Config, log *slog.Logger, storeOverride store.ResponseStore) (*App, error) {
	manifest := builtin.DefaultManifest()
	if cfg.Tools != "" {
		m, err := tools.LoadManifest(cfg.Tools)
		if err != nil {
			return nil, fmt.Errorf("LAMBENT_TOOLS: %w", err)
		}
		manifest = m
	}
	reg, err := builtin.Registry(manifest, builtin.Config{Fetch: fetchurl.Config{AllowHosts: cfg.FetchAllowHosts}})
	if err != nil {
		return nil, fmt.Errorf("LAMBENT_TOOLS: %w", err)
	}
	if err := reg.Initialize(ctx); err != nil {
		return nil, err
	}
	st := storeOverride
	if st == nil {
		st, err = buildStore(ctx, cfg)
		if err != nil {
			return nil, err
		}
	}
	eng, err := engine.New(engine.Config{
		Provider:        openai.New(openai.Config{BaseURL: cfg.ProviderURL, APIKey: cfg.ProviderAPIKey, Logger: log}),
		Store:           st,
		Executors:       []tools.ToolExecutor{tools.FunctionExecutor{}, tools.LocalExecutor{Registry: reg}},
		Hosted:          reg,
		DefaultModel:    cfg.DefaultModel,
		MaxTurns:        cfg.MaxTurns,
		OpenAICompat:    cfg.OpenAICompat,
		Logger:          log,
		DeadlineReserve: cfg.DeadlineReserve,
		KeepAlive:       cfg.KeepAlive,
	})
	if err != nil {
		return nil, err
	}
	h := httpapi.New(httpapi.Config{Service: eng, MaxBody: cfg.MaxBody, Logger: log})
	return &App{Engine: eng, Handler: h, Store: st, Tools: reg}, nil
}

func buildStore(ctx context.Context, cfg Config) (store.ResponseStore, error) {
	switch cfg.Store {
	case "memory":
		return store.NewMemory(store.MemoryConfig{TTL: cfg.Retention}), nil
	}
	return nil, fmt.Errorf("LAMBENT_STORE=%s is not available yet", cfg.Store)
}

// Logger returns a JSON slog logger at cfg's level.
func Logger(cfg Config, w interface{ Write([]byte) (int, error) }) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl}))
}
