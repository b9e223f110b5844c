// Package prom holds the metrics the local server's /metrics endpoint
// serves, in the Prometheus text format. It is its own package, which only
// local builds link (pkg/app, build tag lambent_lambda): in Lambda metrics
// are CloudWatch EMF lines, and the Prometheus client's packages would add
// 0.45 MB and 1.4 ms of package initialisation to every cold start.
package prom

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/telemetry"
)

// Bucket boundaries the GenAI semantic conventions advise.
var (
	durationBuckets = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	tokenBuckets    = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	countBuckets    = []float64{1, 2, 3, 5, 8, 13, 21, 34}
)

// promName is the Prometheus name of an OpenTelemetry metric or attribute
// name, as OpenTelemetry's Prometheus exporter writes it (dots become
// underscores).
func promName(s string) string { return strings.ReplaceAll(s, ".", "_") }

// Metrics holds the metrics the local server's /metrics endpoint serves
// (Handler), in a registry of its own: the GenAI conventions' operation
// duration (model calls, tool calls, responses) and token usage, and
// Lambent's tool errors, responses by status, turns and attempts, with the
// Go runtime's and the process's metrics.
type Metrics struct {
	reg       *prometheus.Registry
	duration  *prometheus.HistogramVec
	tokens    *prometheus.HistogramVec
	toolErrs  *prometheus.CounterVec
	responses *prometheus.CounterVec
	turns     prometheus.Histogram
	attempts  prometheus.Histogram
}

// New returns the metrics and their registry.
func New() *Metrics {
	p := &Metrics{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: promName(telemetry.MetricOperationDuration) + "_seconds", Help: "Duration of GenAI operations: model calls (chat), tool calls (execute_tool), responses (invoke_agent).",
			Buckets: durationBuckets,
		}, []string{promName(telemetry.DimOperation), promName(telemetry.DimModel), promName(telemetry.DimTool), "error_type"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: promName(telemetry.MetricTokenUsage), Help: "Tokens used per model call, by token type (input, output).",
			Buckets: tokenBuckets,
		}, []string{promName(telemetry.DimOperation), "gen_ai_provider_name", promName(telemetry.DimModel), "gen_ai_token_type"}),
		toolErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: promName(telemetry.MetricToolErrors) + "_total", Help: "Tool calls whose result is an error, by tool.",
		}, []string{promName(telemetry.DimTool), promName(telemetry.DimToolKind)}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lambent_responses_total", Help: "Response loops ended, by model and status.",
		}, []string{promName(telemetry.DimModel), promName(telemetry.DimStatus)}),
		turns: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promName(telemetry.MetricTurns), Help: "Model calls per response.", Buckets: countBuckets,
		}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promName(telemetry.MetricAttempts), Help: "Attempts per response.", Buckets: countBuckets,
		}),
	}
	p.reg.MustRegister(p.duration, p.tokens, p.toolErrs, p.responses, p.turns, p.attempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// WatchHooks adds the hook dispatcher's counters: events dropped and
// deliveries failed.
func (p *Metrics) WatchHooks(d *hooks.Dispatcher) {
	p.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lambent_hook_events_dropped_total", Help: "Hook events dropped (a full queue)."},
			func() float64 { return float64(d.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lambent_hook_deliveries_failed_total", Help: "Hook deliveries that failed (per event and hook)."},
			func() float64 { return float64(d.Failed()) }),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (p *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}

// ModelCall records a model call's duration and tokens.
func (p *Metrics) ModelCall(m *engine.ModelCall, provider, model string) {
	errType := ""
	if m.Err != nil {
		errType = telemetry.ErrorType(m.Err)
	}
	p.duration.WithLabelValues("chat", model, "", errType).Observe(m.Duration.Seconds())
	if res := m.Result; res != nil {
		p.tokens.WithLabelValues("chat", provider, model, "input").Observe(float64(res.Usage.InputTokens))
		p.tokens.WithLabelValues("chat", provider, model, "output").Observe(float64(res.Usage.OutputTokens))
	}
}

// ToolCall records a tool call's duration and error.
func (p *Metrics) ToolCall(c *engine.ToolCall, tool string) {
	errType := ""
	if c.Result.IsError {
		errType = telemetry.ErrorTypeToolError
		p.toolErrs.WithLabelValues(tool, c.Kind).Inc()
	}
	p.duration.WithLabelValues("execute_tool", "", tool, errType).Observe(c.Duration.Seconds())
}

// Response records a response's duration, status, turns and attempts.
// Tokens are recorded by model call (ModelCall).
func (p *Metrics) Response(_ *api.Response, end *engine.ResponseEnd, model string, _ telemetry.Tokens) {
	errType := ""
	if end.Err != nil {
		errType = telemetry.APIErrorType(end.Err)
	}
	p.duration.WithLabelValues("invoke_agent", model, "", errType).Observe(end.Duration.Seconds())
	p.responses.WithLabelValues(model, string(end.Status)).Inc()
	p.turns.Observe(float64(end.Turns))
	p.attempts.Observe(float64(end.Attempts))
}

var _ telemetry.Recorder = (*Metrics)(nil)
