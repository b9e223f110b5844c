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
	// StartAttempt is called when an attempt of a validated output starts
	// (onAttemptStart); EndAttempt when its iterations have ended and its
	// output was judged (a.Valid, or a.Code and a.Errors), or it used its
	// iterations without an output. An attempt the response's end cuts
	// short (cancelled, incomplete, a failed model call) has no EndAttempt:
	// the response's status says why. Both are called from the loop's
	// goroutine.
	StartAttempt(ctx context.Context, a *Attempt)
	EndAttempt(ctx context.Context, a *Attempt)
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
	// ToolKindOutput is a call of the output tool without reflection: it
	// ends the attempt's iterations, and its result is the verdict (the
	// validators it runs are calls of their own).
	ToolKindOutput = "output"
	// ToolKindSubmit is a call of submit (the output tool with
	// reflection): it ends the attempt's iterations, and its result is the
	// verdict on the attempt's last output.
	ToolKindSubmit = "submit"
)

// ToolCall is one execution of a tool call the server runs: the payload
// of the operator's hooks.
type ToolCall struct {
	ResponseID string
	// Kind says what runs the call: ToolKindHosted, ToolKindMCP,
	// ToolKindReflection, ToolKindValidator, ToolKindOutput or
	// ToolKindSubmit.
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

// Attempt is one attempt of a validated output (docs/validated-output.md):
// the payload of the attempt hooks.
type Attempt struct {
	ResponseID string
	// Number numbers the response's attempts from 1.
	Number int
	// Turns is the response's model calls so far.
	Turns int
	// At is when the attempt started (StartAttempt) or ended.
	At time.Time
	// Valid, Code, Errors, Iterations and Usage are set at the end: Valid
	// for a valid output, else Code (validation_failed,
	// submit_before_output, invalid_response, max_iterations) and Errors;
	// Iterations and Usage are the attempt's model calls and their tokens.
	Valid      bool
	Code       string
	Errors     []string
	Iterations int
	Usage      api.Usage
}

// ModelCall is one call of the model.
type ModelCall struct {
	ResponseID string
	Model      string
	// Iteration numbers the response's model calls from 1.
	Iteration int
	Stream    bool
	// Compaction marks the summarising call of server-side compaction
	// (context_management), made before the model call of Iteration.
	Compaction bool
	Start      time.Time
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
	// Attempts counts its attempts (1 without validated output).
	Attempts int
	// Duration is the loop's time in this invocation.
	Duration time.Duration
}

// attemptStarted tells the observer that r's current attempt started.
func (e *Engine) attemptStarted(ctx context.Context, r *run) {
	if r.obs == nil {
		return
	}
	cur := r.att.current(r)
	r.obs.StartAttempt(ctx, &Attempt{ResponseID: r.resp.ID, Number: cur.Number, Turns: r.turns, At: e.cfg.Now()})
}

// attemptEnded tells the observer that r's current attempt ended (its
// verdict is recorded in it).
func (e *Engine) attemptEnded(ctx context.Context, r *run) {
	if r.obs == nil {
		return
	}
	cur := r.att.current(r)
	r.obs.EndAttempt(ctx, &Attempt{ResponseID: r.resp.ID, Number: cur.Number, Turns: r.turns, At: e.cfg.Now(),
		Valid: cur.Valid, Code: cur.Code, Errors: append([]string(nil), cur.Errors...), Iterations: cur.Iterations, Usage: cur.Usage})
}

// observed runs the execution of the call p with fn, which returns its
// result: the observer (the operator's hooks) sees it before and after.
// Every call the server executes goes through it: executors' (execute),
// and the output and submit calls whose result is the verdict
// (endIterations). iteration is the model call that asked for it.
func (e *Engine) observed(ctx context.Context, r *run, p *plannedCall, iteration int, fn func(context.Context) *tools.ToolResult) *tools.ToolResult {
	obs := r.obs
	if obs == nil {
		return fn(ctx)
	}
	c := &ToolCall{ResponseID: p.call.ResponseID, Kind: p.kind, Name: p.call.Name, CallID: p.call.ID, Arguments: p.call.Arguments,
		Attempt: r.att.number(r), Iteration: iteration, Start: e.cfg.Now()}
	ctx = obs.StartToolCall(ctx, c)
	c.Result = fn(ctx)
	c.Duration = e.cfg.Now().Sub(c.Start)
	obs.EndToolCall(ctx, c)
	return c.Result
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
			Attempts: r.att.number(r), Duration: e.cfg.Now().Sub(start)})
		r.obs = nil
	}
}
