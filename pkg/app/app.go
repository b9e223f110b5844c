package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/term"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsconf"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/eventbus"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/fetchurl"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
	"github.com/lambent/lambent/pkg/tools/mcp"
	"github.com/lambent/lambent/pkg/worker"
	"github.com/lambent/lambent/pkg/wsapi"
)

// App is a wired gateway (or worker).
type App struct {
	Engine  *engine.Engine
	Handler http.Handler
	Store   store.ResponseStore
	// Tools lists the hosted tools on offer.
	Tools []api.ToolDefinition
	// models answers GET /v1/models (ReportModels adds to it).
	models *modelCatalog
	close  []func()
	// flush delivers what telemetry holds back (Flush).
	flush []func(context.Context) error
	log   *slog.Logger
	// aws loads the AWS SDK configuration once, on first use, for every
	// client the app builds (AWS).
	aws func() (aws.Config, error)
	// invocations tells the cold start from later invocations
	// (StartInvocation).
	invocations requestid.Invocations
}

// AWS returns the AWS SDK configuration every client of the app shares
// (awsconf.Load), loaded once on first use: runs that use no AWS service
// never load it.
func (a *App) AWS() (aws.Config, error) { return a.aws() }

// eventBridge returns an EventBridge client (response events, hooks) of
// the app's AWS configuration.
func (a *App) eventBridge() (*awsjson.EventBridge, error) {
	awsCfg, err := a.AWS()
	if err != nil {
		return nil, err
	}
	return awsjson.NewEventBridge(awsCfg)
}

// Close releases what Build started (the in-process worker pool).
func (a *App) Close() {
	for i := len(a.close) - 1; i >= 0; i-- {
		a.close[i]()
	}
}

// Options override parts of the wiring (tests, multi-instance setups).
type Options struct {
	// Store replaces the configured store.
	Store store.ResponseStore
	// Queue replaces the configured queue.
	Queue engine.Queue
	// Publisher replaces the configured publisher.
	Publisher engine.Publisher
	// SSM and SecretsManager replace the clients that read the secrets of
	// the manifest's MCP servers.
	SSM            SSMClient
	SecretsManager SecretsManagerClient
	// Tracer replaces the OTLP tracer provider (tests: the SDK's with an
	// in-memory exporter); it turns tracing on.
	Tracer trace.TracerProvider
	// HookEventBridge and HookLambda replace the clients of the
	// eventbridge: and lambda: hooks.
	HookEventBridge eventbus.API
	HookLambda      hooks.LambdaInvoker
	// MetricsOutput replaces stdout as the destination of EMF lines.
	MetricsOutput io.Writer
}

// Build wires the parts described by cfg.
func Build(ctx context.Context, cfg Config, log *slog.Logger, opts *Options) (*App, error) {
	if opts == nil {
		opts = &Options{}
	}
	if cfg.Server.MemoryLimit > 0 {
		debug.SetMemoryLimit(cfg.Server.MemoryLimit)
	}
	a := &App{aws: sync.OnceValues(func() (aws.Config, error) { return awsconf.Load(ctx) }), models: &modelCatalog{configured: cfg.Models()}}
	if err := a.build(ctx, cfg, log, opts); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// build wires the parts into a; what it started, a.Close stops.
func (a *App) build(ctx context.Context, cfg Config, log *slog.Logger, opts *Options) error {
	manifest := builtin.DefaultManifest()
	if cfg.Tools.Manifest != "" {
		m, err := tools.LoadManifest(cfg.Tools.Manifest)
		if err != nil {
			return fmt.Errorf("LAMBENT_TOOLS: %w", err)
		}
		manifest = m
	}
	obs, err := buildTelemetry(ctx, a, cfg, metricNames(cfg, manifest), log, opts)
	if err != nil {
		return err
	}
	a.flush, a.log = obs.flush, log
	if cfg.Tools.Manifest == "" && cfg.Tools.LambdaEndpoint != "" {
		// `make lambdas` (or sam local start-lambda) serves the built-in
		// tools: call them through the Lambda client path.
		names := make([]string, len(manifest.Tools))
		for i, t := range manifest.Tools {
			names[i] = t.Name
		}
		manifest = lambdaexec.LocalManifest(names...)
	}
	bcfg := builtin.Config{Fetch: fetchurl.Config{AllowHosts: cfg.Tools.AllowHosts}}
	reg, err := builtin.Registry(manifest, bcfg)
	if err != nil {
		return fmt.Errorf("LAMBENT_TOOLS: %w", err)
	}
	if err := reg.Initialize(ctx); err != nil {
		return err
	}
	a.close = append(a.close, func() { _ = reg.Shutdown(context.Background()) })
	catalog := tools.Catalogs{reg}
	a.Tools = reg.List()
	if remote := lambdaTools(manifest); len(remote) > 0 {
		client, err := lambdaexec.NewClient(ctx, obs.lambdaOpts...)
		if err != nil {
			return fmt.Errorf("lambda client: %w", err)
		}
		fallback := map[string]api.ToolDefinition{}
		for name, h := range builtin.Tools(bcfg) {
			fallback[name] = h.Definition
		}
		ex, err := lambdaexec.New(client, lambdaexec.Config{Logger: log}, remote, fallback)
		if err != nil {
			return fmt.Errorf("LAMBENT_TOOLS: %w", err)
		}
		catalog = append(catalog, ex)
		a.Tools = append(a.Tools, ex.List()...)
	}
	servers, serverDefs, err := mcpServers(ctx, manifest, opts, a.AWS)
	if err != nil {
		return fmt.Errorf("LAMBENT_TOOLS: %w", err)
	}
	a.Tools = append(a.Tools, serverDefs...)
	st := opts.Store
	if st == nil {
		if st, err = buildStore(ctx, cfg, a.AWS); err != nil {
			return err
		}
	}
	a.Store = st
	var eng *engine.Engine
	queue, publisher := opts.Queue, opts.Publisher
	if queue == nil {
		if cfg.Background.QueueURL != "" {
			awsCfg, err := a.AWS()
			if err != nil {
				return err
			}
			client, err := awsjson.NewSQS(awsCfg)
			if err != nil {
				return fmt.Errorf("LAMBENT_QUEUE_URL: %w", err)
			}
			queue = &worker.SQSQueue{Client: client, QueueURL: cfg.Background.QueueURL}
		} else {
			local := worker.NewLocal(cfg.Background.LocalWorkers, func(ctx context.Context, id string) error { return eng.RunBackground(ctx, id) }, log)
			a.close = append(a.close, local.Close)
			queue = local
		}
	}
	if publisher == nil && cfg.Background.EventBus != "" {
		client, err := a.eventBridge()
		if err != nil {
			return fmt.Errorf("LAMBENT_EVENT_BUS: %w", err)
		}
		publisher = &worker.Publisher{Client: client, Bus: cfg.Background.EventBus}
	}
	keys, err := compactionKeys(cfg, log)
	if err != nil {
		return err
	}
	var observer engine.Observer // nil unless something observes: no cost
	if obs.observer != nil {
		observer = obs.observer
	}
	prov, err := buildProvider(cfg, a.AWS, log)
	if err != nil {
		return err
	}
	eng, err = engine.New(engine.Config{
		Provider:     prov,
		Compaction:   keys,
		Store:        st,
		Hosted:       catalog,
		DefaultModel: cfg.Provider.DefaultModel,
		Limits:       cfg.Limits,
		Loop: engine.LoopConfig{
			MaxTurns: cfg.Loop.MaxTurns,
			// Validated output's loop policy defaults.
			MaxAttempts:             cfg.Loop.MaxAttempts,
			MaxIterationsPerAttempt: cfg.Loop.MaxIterationsPerAttempt,
			DeadlineReserve:         cfg.Loop.DeadlineReserve,
			HostedToolItems:         cfg.Loop.HostedToolItems,
			OpenAICompat:            cfg.Loop.OpenAICompat,
			SkipArgumentCheck:       !cfg.Loop.ValidateToolArguments,
		},
		MCP: engine.MCPConfig{
			Connector: mcp.New(mcp.Config{AllowHosts: cfg.Tools.AllowHosts, AllowStdio: !cfg.InLambda, Propagate: telemetry.Transport}),
			Servers:   servers,
			SecretKey: cfg.Security.SecretKey,
		},
		Builtin:    engine.BuiltinConfig{Tools: cfg.Tools.Builtin, Refuse: cfg.Tools.RefuseUnserved},
		Background: engine.BackgroundConfig{Queue: queue, Publisher: publisher},
		Observer:   observer,
		Logger:     log,
	})
	if err != nil {
		return err
	}
	a.Engine = eng
	hc := httpapi.Config{Service: eng, MaxBody: cfg.Server.MaxBody, Logger: log, Tenants: cfg.Tenants(), AllowedHosts: cfg.Server.AllowedHosts,
		Pacing: pacing.Config{KeepAlive: cfg.Loop.KeepAlive}, Models: a.models,
		WebSocket: wsapi.Config{TenantConnections: cfg.Limits.TenantWebSockets, CacheBytes: int64(cfg.Limits.WebSocketCacheBytes),
			TenantCacheBytes: int64(cfg.Limits.TenantWebSocketCacheBytes)}}
	if obs.prometheus != nil {
		keys, err := metricsKeys(cfg)
		if err != nil {
			return err
		}
		hc.Routes = append(hc.Routes, metricsRoute(obs.prometheus, keys, log))
	}
	var h http.Handler = httpapi.New(hc)
	if cfg.InLambda && len(a.flush) > 0 {
		h = a.flushAfter(h)
	}
	// The request's id is given before the flush after it, which logs
	// with it.
	a.Handler = requestid.Middleware(h)
	return nil
}

// compactionKeys returns the configured compaction keys; without any, a
// key generated for this process in local runs (its compaction items do
// not survive a restart), and none in Lambda, where every instance would
// generate its own (compaction then answers 501).
func compactionKeys(cfg Config, log *slog.Logger) (*compaction.Keyring, error) {
	switch {
	case cfg.Security.CompactionKeys != nil:
		return cfg.Security.CompactionKeys, nil
	case cfg.InLambda:
		log.Warn("compaction disabled: no compaction keys (set the template parameter CompactionKeysParameter, LAMBENT_COMPACTION_KEYS_SSM)")
		return nil, nil
	}
	keys, err := compaction.NewDevKeyring()
	if err != nil {
		return nil, err
	}
	log.Warn("no compaction keys (LAMBENT_COMPACTION_KEYS, LAMBENT_COMPACTION_KEYS_SSM): compaction summaries are sealed with a key generated for this process, so compaction items will not open after a restart")
	return keys, nil
}

// lambdaTools returns the manifest's Lambda-backed tools.
func lambdaTools(m *tools.Manifest) []tools.ManifestTool {
	var out []tools.ManifestTool
	for _, t := range m.Tools {
		if t.Backing.Type == tools.BackingLambda {
			out = append(out, t)
		}
	}
	return out
}

func buildStore(ctx context.Context, cfg Config, awsConfig func() (aws.Config, error)) (store.ResponseStore, error) {
	switch cfg.Store.Kind {
	case "memory":
		return store.NewMemory(store.MemoryConfig{TTL: cfg.Store.Retention, MaxBytes: cfg.Store.MemoryMaxBytes}), nil
	case "dynamodb":
		awsCfg, err := awsConfig()
		if err != nil {
			return nil, err
		}
		client := dynamodb.NewClient(awsCfg)
		st, err := dynamodb.New(client, dynamodb.Config{Table: cfg.Store.Table, Retention: cfg.Store.Retention})
		if err != nil {
			return nil, err
		}
		if cfg.Store.CreateTable {
			if err := st.EnsureTable(ctx); err != nil {
				return nil, fmt.Errorf("create table %s: %w", cfg.Store.Table, err)
			}
		}
		return st, nil
	}
	return nil, errors.New("unknown store " + cfg.Store.Kind)
}

// Logger returns a slog logger at cfg's level writing to w: JSON, or
// slog's text form when cfg.LogFormat says so (see Config.LogFormat). A
// record logged with a request's context carries its request id
// (requestid.NewHandler); each attribute's text is cut to
// MaxLogAttrBytes (boundedHandler).
func Logger(cfg Config, w io.Writer) *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.Server.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if textLogs(cfg, w) {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(requestid.NewHandler(boundedHandler{h}))
}

// textLogs reports whether logs to w are text: as LAMBENT_LOG_FORMAT
// says, else in Lambda as AWS_LAMBDA_LOG_FORMAT says (JSON unless Text),
// else text when w is a terminal.
func textLogs(cfg Config, w io.Writer) bool {
	switch cfg.Server.LogFormat {
	case LogText:
		return true
	case LogJSON:
		return false
	}
	if cfg.InLambda {
		return strings.EqualFold(cfg.Server.LambdaLogFormat, "Text")
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
