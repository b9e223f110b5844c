package telemetry

import (
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
)

// DefaultNamespace is the CloudWatch namespace of EMF metrics.
const DefaultNamespace = "Lambent"

// Metric and dimension names: the GenAI semantic conventions' where they
// exist, Lambent's own (lambent.*) for the rest.
const (
	MetricOperationDuration = "gen_ai.client.operation.duration"
	MetricTokenUsage        = "gen_ai.client.token.usage"
	MetricInputTokens       = "gen_ai.usage.input_tokens"
	MetricOutputTokens      = "gen_ai.usage.output_tokens"
	MetricToolErrors        = "lambent.tool.errors"
	MetricTurns             = "lambent.response.turns"
	MetricAttempts          = "lambent.response.attempts"
	DimOperation            = "gen_ai.operation.name"
	DimModel                = "gen_ai.request.model"
	DimTool                 = "gen_ai.tool.name"
	DimStatus               = "lambent.response.status"
)

// EMF writes CloudWatch Embedded Metric Format lines: one per tool call
// (its duration, and whether it failed, by tool) and one per response (its
// duration, turns, attempts and tokens, by model and by status). In Lambda
// the lines go to stdout, and CloudWatch Logs turns them into metrics: no
// API call is made. It is safe for concurrent use; every line is written
// whole.
type EMF struct {
	mu        sync.Mutex
	w         io.Writer
	namespace string
	log       *slog.Logger
}

// NewEMF returns an EMF writer to w in namespace (DefaultNamespace when
// empty); log (optional) receives write failures.
func NewEMF(w io.Writer, namespace string, log *slog.Logger) *EMF {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if log == nil {
		log = slog.Default()
	}
	return &EMF{w: w, namespace: namespace, log: log}
}

// emfMetadata is a line's "_aws" member.
type emfMetadata struct {
	Timestamp         int64          `json:"Timestamp"`
	CloudWatchMetrics []emfDirective `json:"CloudWatchMetrics"`
}

type emfDirective struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []emfMetric `json:"Metrics"`
}

type emfMetric struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

// line writes one EMF line: the metrics and dimensions named, with fields
// holding their values and any other properties.
func (e *EMF) line(at time.Time, dims [][]string, metrics []emfMetric, fields map[string]any) {
	fields["_aws"] = emfMetadata{Timestamp: at.UnixMilli(), CloudWatchMetrics: []emfDirective{{Namespace: e.namespace, Dimensions: dims, Metrics: metrics}}}
	b, err := json.Marshal(fields)
	if err != nil {
		e.log.Warn("EMF line not written", "err", err)
		return
	}
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(b); err != nil {
		e.log.Warn("EMF line not written", "err", err)
	}
}

func (e *EMF) modelCall(*engine.ModelCall, string) {}

func (e *EMF) toolCall(c *engine.ToolCall) {
	fields := map[string]any{
		DimOperation:            "execute_tool",
		DimTool:                 c.Name,
		MetricOperationDuration: c.Duration.Seconds(),
		MetricToolErrors:        0,
		"gen_ai.tool.call.id":   c.CallID,
		"gen_ai.response.id":    c.ResponseID,
		string(attrToolKind):    c.Kind,
		string(attrAttempt):     c.Attempt,
		string(attrIteration):   c.Iteration,
	}
	if c.Result.IsError {
		fields[MetricToolErrors] = 1
		fields["error.type"] = errorTypeToolError
	}
	e.line(c.Start.Add(c.Duration), [][]string{{DimOperation, DimTool}}, []emfMetric{
		{Name: MetricOperationDuration, Unit: "Seconds"},
		{Name: MetricToolErrors, Unit: "Count"},
	}, fields)
}

func (e *EMF) response(resp *api.Response, end *engine.ResponseEnd) {
	var usage api.Usage
	if resp.Usage != nil {
		usage = *resp.Usage
	}
	fields := map[string]any{
		DimOperation:            "invoke_agent",
		DimModel:                resp.Model,
		DimStatus:               string(end.Status),
		MetricOperationDuration: end.Duration.Seconds(),
		MetricTurns:             end.Turns,
		MetricAttempts:          end.Attempts,
		MetricInputTokens:       usage.InputTokens,
		MetricOutputTokens:      usage.OutputTokens,
		"gen_ai.response.id":    resp.ID,
	}
	if end.Reason != "" {
		fields[string(attrIncomplete)] = end.Reason
	}
	if end.Err != nil {
		fields["error.type"] = apiErrorType(end.Err)
	}
	if resp.Lambent != nil && len(resp.Lambent.HookErrors) > 0 {
		fields[string(attrHookErrors)] = len(resp.Lambent.HookErrors)
	}
	e.line(time.Now(), [][]string{{DimOperation, DimModel}, {DimOperation, DimStatus}}, []emfMetric{
		{Name: MetricOperationDuration, Unit: "Seconds"},
		{Name: MetricTurns, Unit: "Count"},
		{Name: MetricAttempts, Unit: "Count"},
		{Name: MetricInputTokens, Unit: "Count"},
		{Name: MetricOutputTokens, Unit: "Count"},
	}, fields)
}
