package telemetry

import (
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
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
	DimToolKind             = "lambent.tool.kind"
)

// EMF writes CloudWatch Embedded Metric Format lines: one per tool call
// (its duration, and whether it failed, by tool) and one per response (its
// duration, turns, attempts and tokens, by model and by status). In Lambda
// the lines go to stdout, and CloudWatch Logs turns them into metrics: no
// API call is made. It is safe for concurrent use; every line is written
// whole.
type EMF struct {
	mu  sync.Mutex
	w   io.Writer
	log *slog.Logger
	// toolMetrics and responseMetrics are the lines' CloudWatchMetrics
	// directives, encoded once.
	toolMetrics, responseMetrics json.RawMessage
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
	directives := func(dims [][]string, metrics ...emfMetric) json.RawMessage {
		b, err := json.Marshal([]emfDirective{{Namespace: namespace, Dimensions: dims, Metrics: metrics}})
		if err != nil {
			panic(err) // strings and slices of strings always encode
		}
		return b
	}
	return &EMF{w: w, log: log,
		toolMetrics: directives([][]string{{DimOperation, DimTool}},
			emfMetric{Name: MetricOperationDuration, Unit: "Seconds"}, emfMetric{Name: MetricToolErrors, Unit: "Count"}),
		responseMetrics: directives([][]string{{DimOperation, DimModel}, {DimOperation, DimStatus}},
			emfMetric{Name: MetricOperationDuration, Unit: "Seconds"}, emfMetric{Name: MetricTurns, Unit: "Count"},
			emfMetric{Name: MetricAttempts, Unit: "Count"}, emfMetric{Name: MetricInputTokens, Unit: "Count"},
			emfMetric{Name: MetricOutputTokens, Unit: "Count"}),
	}
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

// emfToolLine is the line of a tool call (without its "_aws" member): its
// metrics, their dimensions and properties that identify the call.
type emfToolLine struct {
	Operation  string  `json:"gen_ai.operation.name"`
	Tool       string  `json:"gen_ai.tool.name"`
	Duration   float64 `json:"gen_ai.client.operation.duration"`
	Errors     int     `json:"lambent.tool.errors"`
	CallID     string  `json:"gen_ai.tool.call.id"`
	ResponseID string  `json:"gen_ai.response.id"`
	Kind       string  `json:"lambent.tool.kind"`
	Attempt    int     `json:"lambent.attempt"`
	Iteration  int     `json:"lambent.iteration"`
	ErrorType  string  `json:"error.type,omitempty"`
}

// emfResponseLine is the line of a response (without its "_aws" member).
type emfResponseLine struct {
	Operation    string  `json:"gen_ai.operation.name"`
	Model        string  `json:"gen_ai.request.model"`
	Status       string  `json:"lambent.response.status"`
	Duration     float64 `json:"gen_ai.client.operation.duration"`
	Turns        int     `json:"lambent.response.turns"`
	Attempts     int     `json:"lambent.response.attempts"`
	InputTokens  int     `json:"gen_ai.usage.input_tokens"`
	OutputTokens int     `json:"gen_ai.usage.output_tokens"`
	ResponseID   string  `json:"gen_ai.response.id"`
	Incomplete   string  `json:"lambent.response.incomplete_reason,omitempty"`
	ErrorType    string  `json:"error.type,omitempty"`
	HookErrors   int     `json:"lambent.hook_errors,omitempty"`
}

// write writes one line: an "_aws" member with the timestamp at and the
// encoded directives, then the members of fields (a struct).
func (e *EMF) write(at time.Time, directives json.RawMessage, fields any) {
	body, err := json.Marshal(fields)
	if err != nil || len(body) < 2 {
		e.log.Warn("EMF line not written", "err", err)
		return
	}
	b := make([]byte, 0, len(body)+len(directives)+64)
	b = append(b, `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, at.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":`...)
	b = append(b, directives...)
	b = append(b, "},"...)
	b = append(b, body[1:]...)
	b = append(b, '\n')
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.w.Write(b); err != nil {
		e.log.Warn("EMF line not written", "err", err)
	}
}

// ModelCall records nothing: EMF lines are per tool call and per response.
func (e *EMF) ModelCall(*engine.ModelCall, string, string) {}

// ToolCall writes the tool call's EMF line.
func (e *EMF) ToolCall(c *engine.ToolCall, tool string) {
	l := emfToolLine{
		Operation: "execute_tool", Tool: tool, Duration: c.Duration.Seconds(),
		CallID: c.CallID, ResponseID: c.ResponseID, Kind: c.Kind, Attempt: c.Attempt, Iteration: c.Iteration,
	}
	if c.Result.IsError {
		l.Errors, l.ErrorType = 1, ErrorTypeToolError
	}
	e.write(c.Start.Add(c.Duration), e.toolMetrics, &l)
}

// Response writes the response's EMF line: its loop in this invocation,
// the tokens of this invocation's model calls.
func (e *EMF) Response(resp *api.Response, end *engine.ResponseEnd, model string, tokens Tokens) {
	l := emfResponseLine{
		Operation: "invoke_agent", Model: model, Status: string(end.Status), Duration: end.Duration.Seconds(),
		Turns: end.Turns, Attempts: end.Attempts, InputTokens: tokens.Input, OutputTokens: tokens.Output,
		ResponseID: resp.ID, Incomplete: end.Reason,
	}
	if end.Err != nil {
		l.ErrorType = APIErrorType(end.Err)
	}
	if resp.Lambent != nil {
		l.HookErrors = len(resp.Lambent.HookErrors)
	}
	e.write(time.Now(), e.responseMetrics, &l)
}
