// Package telemetry is the engine's Observer for operators: it sends the
// tool call hooks (package hooks), records metrics — CloudWatch Embedded
// Metric Format lines (EMF), a Prometheus registry — and traces the loop
// with OpenTelemetry: a span for the response, each model call and each
// tool call, named and attributed after the GenAI semantic conventions,
// continuing the Lambda invocation's X-Ray trace and propagated to tool
// Lambdas (AWSTraceHeader) and MCP servers (Transport).
//
// Everything is off unless configured; with nothing configured the engine
// gets no Observer at all and the loop pays nothing.
package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// instrumentation names the tracer.
const instrumentation = "github.com/lambent/lambent/pkg/telemetry"

// AgentName is the gen_ai.agent.name of response spans.
const AgentName = "lambent"

// Attributes Lambent adds to the GenAI conventions' (spans, EMF lines).
const (
	attrToolKind   = attribute.Key(DimToolKind)
	attrAttempt    = attribute.Key("lambent.attempt")
	attrIteration  = attribute.Key("lambent.iteration")
	attrCompaction = attribute.Key("lambent.compaction")
	attrStatus     = attribute.Key("lambent.response.status")
	attrTurns      = attribute.Key("lambent.response.turns")
	attrIncomplete = attribute.Key("lambent.response.incomplete_reason")
	attrHookErrors = attribute.Key("lambent.hook_errors")
	// The attributes of an attempt's span events.
	attrAttemptValid      = attribute.Key("lambent.attempt.valid")
	attrAttemptCode       = attribute.Key("lambent.attempt.code")
	attrAttemptIterations = attribute.Key("lambent.attempt.iterations")
	toolTypeExtension     = "extension" // gen_ai.tool.type of calls the server executes
)

// ErrorTypeToolError is the error.type of a tool call whose result is an
// error.
const ErrorTypeToolError = "tool_error"

// Config configures an Observer; every part is optional.
type Config struct {
	// Hooks delivers the tool call hooks.
	Hooks *hooks.Dispatcher
	// EMF writes CloudWatch EMF lines.
	EMF *EMF
	// Recorders record metrics besides EMF (the local server's Prometheus
	// metrics, package telemetry/prom).
	Recorders []Recorder
	// Tracer creates the spans (an SDK TracerProvider, NewTracerProvider).
	Tracer trace.TracerProvider
	// ProviderName is the gen_ai.provider.name of model calls ("openai"
	// for OpenAI-compatible APIs): of every call without ProviderOf.
	ProviderName string
	// ProviderOf (optional) is the gen_ai.provider.name of a model's calls:
	// that of the provider the model is routed to, which may not be the
	// default one (LAMBENT_MODEL_ROUTES).
	ProviderOf func(model string) string
	// Names are the model and tool names metrics may carry; any other
	// counts as OtherLabel.
	Names Names
}

// Enabled reports whether c configures anything to observe.
func (c Config) Enabled() bool {
	return c.Hooks != nil || c.EMF != nil || len(c.Recorders) > 0 || c.Tracer != nil
}

// Recorder records metrics. model and tool are the names to record (the
// call's or response's, folded into the operator's set of names).
type Recorder interface {
	// ModelCall records a model call of the provider named provider.
	ModelCall(m *engine.ModelCall, provider, model string)
	// ToolCall records a tool call.
	ToolCall(c *engine.ToolCall, tool string)
	// Response records the end of a response's loop in this invocation;
	// tokens are what its model calls used in it.
	Response(resp *api.Response, end *engine.ResponseEnd, model string, tokens Tokens)
}

// Tokens are the tokens the model calls of one invocation of a response's
// loop used: a background response continued in another invocation
// starts it again with the usage of the invocations before, which its
// metrics and spans would otherwise count again.
type Tokens struct {
	Input, Output int
}

// Observer implements engine.Observer.
type Observer struct {
	hooks    *hooks.Dispatcher
	metrics  []Recorder
	labels   *labels
	tracer   trace.Tracer
	provider string
	// providerOf is Config.ProviderOf (nil: provider for every model).
	providerOf func(model string) string
}

var _ engine.Observer = (*Observer)(nil)

// New returns the Observer of cfg.
func New(cfg Config) *Observer {
	o := &Observer{hooks: cfg.Hooks, provider: cfg.ProviderName, providerOf: cfg.ProviderOf, labels: newLabels(cfg.Names)}
	if cfg.EMF != nil {
		o.metrics = append(o.metrics, cfg.EMF)
	}
	o.metrics = append(o.metrics, cfg.Recorders...)
	if cfg.Tracer != nil {
		o.tracer = cfg.Tracer.Tracer(instrumentation, trace.WithSchemaURL(semconv.SchemaURL))
	}
	return o
}

// providerName is the gen_ai.provider.name of model's calls.
func (o *Observer) providerName(model string) string {
	if o.providerOf != nil {
		return o.providerOf(model)
	}
	return o.provider
}

// responseObserver observes one response.
type responseObserver struct {
	o      *Observer
	tenant string
	// errs collects the response's hook errors (nil without hooks).
	errs *hooks.Errors
	// before is the usage the response held when its loop started in
	// this invocation.
	before api.Usage
}

// StartResponse implements engine.Observer: it opens the response's span
// (a child of the Lambda invocation's trace when there is no parent span).
func (o *Observer) StartResponse(ctx context.Context, resp *api.Response) (context.Context, engine.ResponseObserver) {
	ro := &responseObserver{o: o, tenant: tenant.From(ctx)}
	if resp.Usage != nil {
		ro.before = *resp.Usage
	}
	if o.hooks != nil {
		ro.errs = &hooks.Errors{}
	}
	if o.tracer != nil {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			if h := LambdaTraceHeader(ctx); h != "" {
				ctx = XRay{}.Extract(ctx, propagation.MapCarrier{XRayHeader: h})
			}
		}
		ctx, _ = o.tracer.Start(ctx, "invoke_agent "+AgentName, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(AgentName), semconv.GenAIRequestModel(resp.Model),
			semconv.GenAIResponseID(resp.ID)))
	}
	return ctx, ro
}

// StartModelCall implements engine.ResponseObserver.
func (ro *responseObserver) StartModelCall(ctx context.Context, m *engine.ModelCall) context.Context {
	if t := ro.o.tracer; t != nil {
		ctx, _ = t.Start(ctx, "chat "+m.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(m.Start), trace.WithAttributes(
			semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(ro.o.providerName(m.Model)), semconv.GenAIRequestModel(m.Model),
			attrIteration.Int(m.Iteration)))
		if m.Compaction {
			trace.SpanFromContext(ctx).SetAttributes(attrCompaction.Bool(true))
		}
	}
	return ctx
}

// EndModelCall implements engine.ResponseObserver.
func (ro *responseObserver) EndModelCall(ctx context.Context, m *engine.ModelCall) {
	if len(ro.o.metrics) > 0 {
		model, provider := ro.o.labels.model(m.Model), ro.o.providerName(m.Model)
		for _, r := range ro.o.metrics {
			r.ModelCall(m, provider, model)
		}
	}
	if ro.o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if res := m.Result; res != nil {
		span.SetAttributes(semconv.GenAIUsageInputTokens(res.Usage.InputTokens), semconv.GenAIUsageOutputTokens(res.Usage.OutputTokens),
			semconv.GenAIResponseFinishReasons(res.FinishReason))
	}
	if m.Err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(ErrorType(m.Err)))
		span.SetStatus(codes.Error, m.Err.Error())
	}
	span.End(trace.WithTimestamp(m.Start.Add(m.Duration)))
}

// StartToolCall implements engine.ResponseObserver: the tool call's span,
// and the lambent.tool.call hook.
func (ro *responseObserver) StartToolCall(ctx context.Context, c *engine.ToolCall) context.Context {
	if t := ro.o.tracer; t != nil {
		ctx, _ = t.Start(ctx, "execute_tool "+c.Name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(c.Start), trace.WithAttributes(
			semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Name), semconv.GenAIToolCallID(c.CallID),
			semconv.GenAIToolType(toolTypeExtension), attrToolKind.String(c.Kind), attrAttempt.Int(c.Attempt), attrIteration.Int(c.Iteration)))
	}
	if ro.o.hooks != nil {
		ro.o.hooks.Send(ctx, ro.event(hooks.EventToolCall, c, c.Start), ro.errs)
	}
	return ctx
}

// EndToolCall implements engine.ResponseObserver: the lambent.tool.result
// hook, the call's metrics, the end of its span.
func (ro *responseObserver) EndToolCall(ctx context.Context, c *engine.ToolCall) {
	end := c.Start.Add(c.Duration)
	if ro.o.hooks != nil {
		ev := ro.event(hooks.EventToolResult, c, end)
		text := c.Result.Output
		if c.Result.IsError {
			ev.Error = &text
		} else {
			ev.Output = &text
		}
		ms := float64(c.Duration) / float64(time.Millisecond)
		ev.DurationMS = &ms
		ro.o.hooks.Send(ctx, ev, ro.errs)
	}
	if len(ro.o.metrics) > 0 {
		tool := ro.o.labels.tool(c.Kind, c.Name)
		for _, r := range ro.o.metrics {
			r.ToolCall(c, tool)
		}
	}
	if ro.o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	if c.Result.IsError {
		span.SetAttributes(semconv.ErrorTypeKey.String(ErrorTypeToolError))
		span.SetStatus(codes.Error, tools.Truncate(c.Result.Output, 256))
	}
	span.End(trace.WithTimestamp(end))
}

// StartAttempt implements engine.ResponseObserver: the
// lambent.attempt.start hook, an event on the response's span.
func (ro *responseObserver) StartAttempt(ctx context.Context, a *engine.Attempt) {
	if ro.o.hooks != nil {
		ro.o.hooks.Send(ctx, ro.attemptEvent(hooks.EventAttemptStart, a), ro.errs)
	}
	if ro.o.tracer != nil {
		trace.SpanFromContext(ctx).AddEvent(hooks.EventAttemptStart, trace.WithTimestamp(a.At), trace.WithAttributes(attrAttempt.Int(a.Number)))
	}
}

// EndAttempt implements engine.ResponseObserver: the
// lambent.attempt.result hook, an event on the response's span.
func (ro *responseObserver) EndAttempt(ctx context.Context, a *engine.Attempt) {
	if ro.o.hooks != nil {
		ev := ro.attemptEvent(hooks.EventAttemptResult, a)
		valid, iterations, usage := a.Valid, a.Iterations, a.Usage
		ev.Valid, ev.Code, ev.Errors, ev.Iterations, ev.Usage = &valid, a.Code, a.Errors, &iterations, &usage
		ro.o.hooks.Send(ctx, ev, ro.errs)
	}
	if ro.o.tracer != nil {
		attrs := []attribute.KeyValue{attrAttempt.Int(a.Number), attrAttemptValid.Bool(a.Valid), attrAttemptIterations.Int(a.Iterations)}
		if a.Code != "" {
			attrs = append(attrs, attrAttemptCode.String(a.Code))
		}
		trace.SpanFromContext(ctx).AddEvent(hooks.EventAttemptResult, trace.WithTimestamp(a.At), trace.WithAttributes(attrs...))
	}
}

func (ro *responseObserver) attemptEvent(typ string, a *engine.Attempt) *hooks.Event {
	return &hooks.Event{Type: typ, ResponseID: a.ResponseID, Tenant: ro.tenant, Attempt: a.Number, Iteration: a.Turns, Timestamp: a.At.UTC()}
}

func (ro *responseObserver) event(typ string, c *engine.ToolCall, at time.Time) *hooks.Event {
	return &hooks.Event{Type: typ, ResponseID: c.ResponseID, Tenant: ro.tenant, ToolKind: c.Kind, ToolName: c.Name, CallID: c.CallID,
		Arguments: c.Arguments, Attempt: c.Attempt, Iteration: c.Iteration, Timestamp: at.UTC()}
}

// EndResponse implements engine.ResponseObserver: the hook errors known
// now go into the response; its metrics; the end of its span.
func (ro *responseObserver) EndResponse(ctx context.Context, resp *api.Response, end *engine.ResponseEnd) {
	var hookErrs []string
	if ro.errs != nil {
		hookErrs = ro.errs.Seal()
		resp.AddHookErrors(hookErrs...)
	}
	tokens := ro.tokens(resp)
	if len(ro.o.metrics) > 0 {
		model := ro.o.labels.model(resp.Model)
		for _, r := range ro.o.metrics {
			r.Response(resp, end, model, tokens)
		}
	}
	if ro.o.tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(attrStatus.String(string(end.Status)), attrTurns.Int(end.Turns))
	if resp.Usage != nil {
		span.SetAttributes(semconv.GenAIUsageInputTokens(tokens.Input), semconv.GenAIUsageOutputTokens(tokens.Output))
	}
	if end.Reason != "" {
		span.SetAttributes(attrIncomplete.String(end.Reason))
	}
	if len(hookErrs) > 0 {
		span.SetAttributes(attrHookErrors.StringSlice(hookErrs))
	}
	if end.Err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(APIErrorType(end.Err)))
		span.SetStatus(codes.Error, end.Err.Message)
	}
	span.End()
}

// tokens is what resp's model calls used since its loop started in this
// invocation.
func (ro *responseObserver) tokens(resp *api.Response) Tokens {
	if resp.Usage == nil {
		return Tokens{}
	}
	return Tokens{Input: resp.Usage.InputTokens - ro.before.InputTokens, Output: resp.Usage.OutputTokens - ro.before.OutputTokens}
}

// ErrorTypeOther is the error.type of an error whose code and type are
// both outside the fixed set (knownErrorType): the conventions' fallback.
const ErrorTypeOther = "_OTHER"

// ErrorType is the error.type of a failed model call: its API error's
// error.type (APIErrorType), else ErrorTypeOther.
func ErrorType(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return APIErrorType(ae)
	}
	return ErrorTypeOther
}

// APIErrorType is the error.type of a failed response or model call: its
// error's code when the code is one of a fixed set (knownErrorType), else
// its type when that is, else ErrorTypeOther. A provider's 4xx passes its
// code through to the client, and that code is the provider's text about
// one tenant's request: as a label it would be read by every reader of the
// metrics, and every distinct code a series.
func APIErrorType(ae *api.Error) string {
	switch {
	case knownErrorType(ae.Code):
		return ae.Code
	case knownErrorType(ae.Type):
		return ae.Type
	}
	return ErrorTypeOther
}
