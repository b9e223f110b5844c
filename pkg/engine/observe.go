package engine

import (
	"context"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// Observer watches the loop of every response: the operator's tool call
// hooks, metrics and traces (package telemetry) implement it. A nil
// Config.Observer observes nothing and costs nothing: the loop then makes
// none of these calls.
type Observer interface {
	// StartResponse is called when the loop of a response starts (again,
	// for each invocation of a background response). The context it
	// returns is the loop's from then on (it may carry a span); the
	// ResponseObserver receives the rest of the loop.
	StartResponse(ctx context.Context, resp *api.Response) (context.Context, ResponseObserver)
}

// ResponseObserver watches one response's loop. Its methods must not
// block: anything slow (delivering a hook) is the observer's to do in the
// background. The tool call methods are called concurrently for the calls
// of a turn; the others from the loop's goroutine.
type ResponseObserver interface {
	// StartModelCall is called before each model call; the context it
	// returns is the call's.
	StartModelCall(ctx context.Context, m *ModelCall) context.Context
	// EndModelCall is called after it, with the context StartModelCall
	// returned, m.Result or m.Err set.
	EndModelCall(ctx context.Context, m *ModelCall)
	// StartToolCall is called before each execution of a tool call
	// (onToolCall, docs/architecture.md "Validated output"); the context it returns is the execution's.
	StartToolCall(ctx context.Context, c *ToolCall) context.Context
	// EndToolCall is called after it (onToolResult), with the context
	// StartToolCall returned, on error too: c.Result is what the model
	// receives.
	EndToolCall(ctx context.Context, c *ToolCall)
	// EndResponse is called when the loop ends, before the response is
	// finalized and stored: the observer may add to resp.Lambent (its
	// hook errors).
	EndResponse(ctx context.Context, resp *api.Response, end *ResponseEnd)
}

// Kinds of tool calls (ToolCall.Kind).
const (
	// ToolKindHosted is a hosted tool of the gateway's manifest, run
	// in-process or as its own Lambda function.
	ToolKindHosted = "hosted"
	// ToolKindMCP is a tool of an MCP server.
	ToolKindMCP = "mcp"
	// ToolKindReflection is a call of validated output's output tool with
	// reflection: its handler's text is the call's result.
	ToolKindReflection = "reflection"
	// ToolKindValidator is a validator tool checking an attempt's output.
	ToolKindValidator = "validator"
)

// ToolCall is one execution of a tool call the server runs: the payload
// of the operator's hooks.
type ToolCall struct {
	ResponseID string
	// Kind says what runs the call: ToolKindHosted, ToolKindMCP,
	// ToolKindReflection or ToolKindValidator.
	Kind      string
	Name      string
	CallID    string
	Arguments string
	// Attempt is the attempt the call belongs to, from 1 (always 1 without
	// validated output).
	Attempt int
	// Iteration is the model call that asked for the call, from 1 (its
	// place among the response's model calls); 0 for a call left pending
	// by the previous response and run before any model call.
	Iteration int
	// Start is when the execution started; Duration is set at its end.
	Start    time.Time
	Duration time.Duration
	// Result is what the model receives (an executor's error becomes an
	// is_error result); set at the end.
	Result *tools.ToolResult
}

// ModelCall is one call of the model.
type ModelCall struct {
	ResponseID string
	Model      string
	// Iteration numbers the response's model calls from 1.
	Iteration int
	Stream    bool
	Start     time.Time
	// Duration, Result and Err are set at the end.
	Duration time.Duration
	Result   *provider.Result
	Err      error
}

// ResponseEnd is how a response's loop ended.
type ResponseEnd struct {
	// Status is the status the loop ended with (finalize may still report
	// requires_action as completed, Config.Loop.OpenAICompat). A background
	// response that hands off to its next invocation ends this one's loop
	// incomplete with reason "deadline".
	Status api.Status
	// Reason is the incomplete reason.
	Reason string
	// Err is the failure of a failed response.
	Err *api.Error
	// Turns counts the response's model calls so far.
	Turns int
	// Attempts counts its attempts (1 until validated output numbers them).
	Attempts int
	// Duration is the loop's time in this invocation.
	Duration time.Duration
}

// observe starts observing r's loop, when an observer is configured, and
// returns the loop's context and the function that ends the observation.
func (e *Engine) observe(ctx context.Context, r *run) (context.Context, func(outcome)) {
	if e.cfg.Observer == nil {
		return ctx, nil
	}
	start := e.cfg.Now()
	octx, obs := e.cfg.Observer.StartResponse(ctx, r.resp)
	r.obs = obs
	return octx, func(out outcome) {
		obs.EndResponse(octx, r.resp, &ResponseEnd{Status: out.status, Reason: out.reason, Err: out.err, Turns: max(r.turns, r.modelCalls),
			Attempts: 1, Duration: e.cfg.Now().Sub(start)})
		r.obs = nil
	}
}
