package telemetry

import (
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/hooks"
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

// Prometheus holds the metrics the local server's /metrics endpoint serves
// (Handler), in a registry of its own: the GenAI conventions' operation
// duration (model calls, tool calls, responses) and token usage, and
// Lambent's tool errors, responses by status, turns and attempts, with the
// Go runtime's and the process's metrics.
type Prometheus struct {
	reg       *prometheus.Registry
	duration  *prometheus.HistogramVec
	tokens    *prometheus.HistogramVec
	toolErrs  *prometheus.CounterVec
	responses *prometheus.CounterVec
	turns     prometheus.Histogram
	attempts  prometheus.Histogram
}

// NewPrometheus returns the metrics and their registry.
func NewPrometheus() *Prometheus {
	p := &Prometheus{
		reg: prometheus.NewRegistry(),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: promName(MetricOperationDuration) + "_seconds", Help: "Duration of GenAI operations: model calls (chat), tool calls (execute_tool), responses (invoke_agent).",
			Buckets: durationBuckets,
		}, []string{promName(DimOperation), promName(DimModel), promName(DimTool), "error_type"}),
		tokens: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: promName(MetricTokenUsage), Help: "Tokens used per model call, by token type (input, output).",
			Buckets: tokenBuckets,
		}, []string{promName(DimOperation), "gen_ai_provider_name", promName(DimModel), "gen_ai_token_type"}),
		toolErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: promName(MetricToolErrors) + "_total", Help: "Tool calls whose result is an error, by tool.",
		}, []string{promName(DimTool), promName(string(attrToolKind))}),
		responses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "lambent_responses_total", Help: "Response loops ended, by model and status.",
		}, []string{promName(DimModel), promName(DimStatus)}),
		turns: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promName(MetricTurns), Help: "Model calls per response.", Buckets: countBuckets,
		}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: promName(MetricAttempts), Help: "Attempts per response.", Buckets: countBuckets,
		}),
	}
	p.reg.MustRegister(p.duration, p.tokens, p.toolErrs, p.responses, p.turns, p.attempts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return p
}

// WatchHooks adds the hook dispatcher's counters: events dropped and
// deliveries failed.
func (p *Prometheus) WatchHooks(d *hooks.Dispatcher) {
	p.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lambent_hook_events_dropped_total", Help: "Hook events dropped (a full queue)."},
			func() float64 { return float64(d.Dropped()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "lambent_hook_deliveries_failed_total", Help: "Hook deliveries that failed (per event and hook)."},
			func() float64 { return float64(d.Failed()) }),
	)
}

// Handler serves the metrics in the Prometheus text format.
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}

func (p *Prometheus) modelCall(m *engine.ModelCall, provider, model string) {
	errType := ""
	if m.Err != nil {
		errType = errorType(m.Err)
	}
	p.duration.WithLabelValues("chat", model, "", errType).Observe(m.Duration.Seconds())
	if res := m.Result; res != nil {
		p.tokens.WithLabelValues("chat", provider, model, "input").Observe(float64(res.Usage.InputTokens))
		p.tokens.WithLabelValues("chat", provider, model, "output").Observe(float64(res.Usage.OutputTokens))
	}
}

func (p *Prometheus) toolCall(c *engine.ToolCall, tool string) {
	errType := ""
	if c.Result.IsError {
		errType = errorTypeToolError
		p.toolErrs.WithLabelValues(tool, c.Kind).Inc()
	}
	p.duration.WithLabelValues("execute_tool", "", tool, errType).Observe(c.Duration.Seconds())
}

func (p *Prometheus) response(resp *api.Response, end *engine.ResponseEnd, model string) {
	errType := ""
	if end.Err != nil {
		errType = apiErrorType(end.Err)
	}
	p.duration.WithLabelValues("invoke_agent", model, "", errType).Observe(end.Duration.Seconds())
	p.responses.WithLabelValues(model, string(end.Status)).Inc()
	p.turns.Observe(float64(end.Turns))
	p.attempts.Observe(float64(end.Attempts))
}
