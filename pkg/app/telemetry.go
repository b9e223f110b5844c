package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

// flushTimeout bounds App.Flush after a Lambda invocation.
const flushTimeout = hooks.DefaultTimeout

// observability is the operator's telemetry, wired: the engine's observer
// (nil when nothing is configured, so the loop pays nothing) and what the
// app serves, flushes and closes.
type observability struct {
	observer   *telemetry.Observer
	prometheus prometheusMetrics
	// lambdaOpts adjust the Lambda clients (tool Lambdas, the hook
	// Lambda): the trace header of the tool call's span.
	lambdaOpts []awsjson.Option
	flush      []func(context.Context) error
}

// buildTelemetry wires cfg's hooks, metrics and tracing; names are the
// model and tool names metrics may carry (metricNames). Closers go on a.
func buildTelemetry(ctx context.Context, a *App, cfg Config, names telemetry.Names, log *slog.Logger, opts *Options) (*observability, error) {
	o := &observability{}
	tc := telemetry.Config{ProviderName: genAIProviderName(cfg.defaultProvider()), Names: names,
		ProviderOf: func(model string) string { return genAIProviderName(cfg.providerOf(model)) }}
	switch {
	case opts.Tracer != nil:
		tc.Tracer = opts.Tracer
	case cfg.Telemetry.OTLPEndpoint != "":
		tp, err := telemetry.NewTracerProvider(cfg.Telemetry.OTLPEndpoint)
		if err != nil {
			return nil, err
		}
		tc.Tracer = tp
		o.flush = append(o.flush, tp.ForceFlush)
		a.close = append(a.close, func() { shutdownTracer(tp, log) })
	}
	if tc.Tracer != nil {
		o.lambdaOpts = append(o.lambdaOpts, awsjson.WithTraceHeader(telemetry.AWSTraceHeader))
	}
	if len(cfg.Telemetry.Hooks) > 0 {
		sinks, err := o.hookSinks(ctx, a, cfg, opts)
		if err != nil {
			return nil, err
		}
		d := hooks.New(hooks.Config{Sinks: sinks, Logger: log})
		a.close = append(a.close, d.Close)
		o.flush = append(o.flush, d.Flush)
		tc.Hooks = d
	}
	if cfg.Telemetry.EMF {
		w := opts.MetricsOutput
		if w == nil {
			w = os.Stdout
		}
		tc.EMF = telemetry.NewEMF(w, cfg.Telemetry.Namespace, log)
	}
	if cfg.Telemetry.Prometheus {
		p, err := newPrometheus()
		if err != nil {
			return nil, err
		}
		if tc.Hooks != nil {
			p.WatchHooks(tc.Hooks)
		}
		o.prometheus = p
		tc.Recorders = append(tc.Recorders, p)
	}
	if tc.Enabled() {
		o.observer = telemetry.New(tc)
	}
	return o, nil
}

// genAIProviderName is the gen_ai.provider.name of the provider named name
// (ProviderOpenAI, ProviderBedrock).
func genAIProviderName(name string) string {
	if name == ProviderBedrock {
		return "aws.bedrock"
	}
	return "openai"
}

// hookSinks builds the sink of each configured hook.
func (o *observability) hookSinks(ctx context.Context, a *App, cfg Config, opts *Options) ([]hooks.Sink, error) {
	var sinks []hooks.Sink
	for _, t := range cfg.Telemetry.Hooks {
		switch t.Kind {
		case hooks.TargetEventBridge:
			client := opts.HookEventBridge
			if client == nil {
				eb, err := a.eventBridge()
				if err != nil {
					return nil, fmt.Errorf("LAMBENT_HOOKS: %w", err)
				}
				client = eb
			}
			sinks = append(sinks, &hooks.EventBridge{Client: client, Bus: t.Value})
		case hooks.TargetLambda:
			client := opts.HookLambda
			if client == nil {
				c, err := lambdaexec.NewClient(ctx, o.lambdaOpts...)
				if err != nil {
					return nil, fmt.Errorf("LAMBENT_HOOKS: lambda client: %w", err)
				}
				client = c
			}
			sinks = append(sinks, &hooks.Lambda{Client: client, Function: t.Value})
		case hooks.TargetWebhook:
			w, err := hooks.NewWebhook(t.Value, cfg.Tools.AllowHosts)
			if err != nil {
				return nil, fmt.Errorf("LAMBENT_HOOKS: %w", err)
			}
			a.close = append(a.close, w.CloseIdleConnections)
			sinks = append(sinks, w)
		}
	}
	return sinks, nil
}

func shutdownTracer(tp *sdktrace.TracerProvider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log.Warn("spans left unexported at shutdown", "err", err)
	}
}

// Flush delivers what telemetry holds back (hook events, spans), for at
// most ctx. Lambda freezes the execution environment between invocations,
// and what is not sent by then waits for the next one: the Lambda handlers
// flush after each invocation.
func (a *App) Flush(ctx context.Context) error {
	var first error
	for _, f := range a.flush {
		if err := f(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// AfterInvocation flushes telemetry at the end of a Lambda invocation
// (Flush), for at most flushTimeout whether or not ctx is cancelled;
// failures are logged.
func (a *App) AfterInvocation(ctx context.Context) {
	if len(a.flush) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	if err := a.Flush(ctx); err != nil {
		a.log.WarnContext(ctx, "telemetry not flushed after the invocation", "err", err)
	}
}

// flushAfter calls a.AfterInvocation after each request h serves (in
// Lambda).
func (a *App) flushAfter(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		a.AfterInvocation(r.Context())
	})
}

// metricNames are the model and tool names the operator configured, which
// metrics may carry as labels (any other counts as "other"): the default
// model and the model routes' patterns; the manifest's tools (hosted
// tools, its MCP servers) and the built-in tools.
func metricNames(cfg Config, m *tools.Manifest) telemetry.Names {
	n := telemetry.Names{Models: []string{cfg.Provider.DefaultModel}}
	for _, r := range cfg.Provider.Routes {
		n.Models = append(n.Models, r.Pattern)
	}
	for _, m := range []*tools.Manifest{m, builtin.DefaultManifest()} {
		for _, t := range m.Tools {
			n.Tools = append(n.Tools, t.Name)
		}
	}
	return n
}

// metricsKeys is the keyring /metrics requires: LAMBENT_METRICS_KEY
// alone when set; else, when the API needs keys of one tenant, any API
// key; else none (local runs: the API needs no key either). API keys of
// several tenants without a metrics key are an error: every tenant would
// read the aggregates of the others' requests (their volumes, tokens and
// errors).
func metricsKeys(cfg Config) (tenant.Keyring, error) {
	if cfg.Telemetry.MetricsKey != "" {
		return tenant.NewKeyring(map[string]string{cfg.Telemetry.MetricsKey: "metrics"}), nil
	}
	var first string
	for _, t := range cfg.Security.APIKeys {
		switch {
		case first == "":
			first = t
		case t != first:
			return nil, errors.New("LAMBENT_METRICS_KEY: required with LAMBENT_METRICS=prometheus when the API keys name several tenants (each tenant would read the others' metrics)")
		}
	}
	return tenant.NewKeyring(cfg.Security.APIKeys), nil
}

// prometheusMetrics are the local server's Prometheus metrics
// (prom.Metrics, in builds without the lambent_lambda tag: newPrometheus).
type prometheusMetrics interface {
	telemetry.Recorder
	WatchHooks(d *hooks.Dispatcher)
	Handler() http.Handler
}

// metricsRoute serves the Prometheus metrics on GET /metrics, beside the
// API and through its checks (httpapi.Config.Routes), to requests with a
// bearer key of keys (any request when keys is nil); others get a 401.
func metricsRoute(p prometheusMetrics, keys tenant.Keyring, log *slog.Logger) httpapi.Route {
	metrics := p.Handler()
	return httpapi.Route{Pattern: "GET /metrics", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := (tenant.Rule{Keys: keys}).Resolve("", r.Header.Get("Authorization")); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="lambent-metrics"`)
			httpapi.WriteError(w, r, log, api.Unauthorized(err.Error()))
			return
		}
		metrics.ServeHTTP(w, r)
	})}
}
