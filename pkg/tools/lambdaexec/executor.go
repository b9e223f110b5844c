// Package lambdaexec is the gateway's executor of hosted tools that run as
// their own AWS Lambda functions (built with package lambdatool): a
// tools.ToolExecutor that invokes those functions with the Lambda Invoke
// API (RequestResponse), all calls of a turn concurrently, and maps every
// failure (function error, timeout, throttling, oversize payloads,
// malformed replies) to an is_error tool result for the model rather than a
// failed response. The payload is docs/architecture.md's "Tool Lambda payload": a
// tools.ToolCall in, a tools.ToolResult out.
//
// Package internal/testing/localinvoke serves tool functions on a local Lambda
// Invoke endpoint, so the whole path runs without AWS.
package lambdaexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/lambent/lambent/internal/textcut"
	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/awsjson"

	"github.com/lambent/lambent/pkg/tooldef"
	"github.com/lambent/lambent/pkg/tools"
)

// MaxPayloadBytes is the Lambda limit on a synchronous (RequestResponse)
// invocation's request and response payloads: 6 MB.
const MaxPayloadBytes = awsjson.MaxInvokePayloadBytes

// LambdaInvoker is the part of the Lambda client (*awsjson.Lambda) the
// Executor uses.
type LambdaInvoker interface {
	Invoke(ctx context.Context, in awsjson.InvokeInput) (*awsjson.InvokeOutput, error)
}

// Defaults applied to zero Config fields.
const (
	// DefaultMaxOutput is the default cut-off of a tool's output, in bytes.
	DefaultMaxOutput = 64 << 10
	// DefaultMaxRetries is how often a throttled invocation is retried by default.
	DefaultMaxRetries = 5
	// DefaultBaseDelay is the default first backoff delay after a throttle.
	DefaultBaseDelay = 100 * time.Millisecond
	// DefaultMaxDelay is the default longest backoff delay.
	DefaultMaxDelay = 2 * time.Second
)

// Config configures an Executor. The zero value uses the defaults.
type Config struct {
	// MaxOutput is the most bytes of a tool's output passed to the model;
	// longer output is cut with a visible note (default DefaultMaxOutput).
	MaxOutput int
	// MaxRetries is how often an invocation throttled by Lambda
	// (TooManyRequestsException) is retried, as long as the call's deadline
	// leaves room for the backoff (default DefaultMaxRetries; negative: never).
	MaxRetries int
	// BaseDelay is the backoff before the first retry; it doubles with each
	// retry up to MaxDelay, with jitter (defaults DefaultBaseDelay and
	// DefaultMaxDelay). A Retry-After from Lambda lengthens it.
	BaseDelay time.Duration
	// MaxDelay caps the backoff.
	MaxDelay time.Duration
	// Logger receives failures (warn) and retries (debug); nil discards.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.BaseDelay <= 0 {
		c.BaseDelay = DefaultBaseDelay
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.MaxDelay < c.BaseDelay {
		c.MaxDelay = c.BaseDelay
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// target is one Lambda-backed tool.
type target struct {
	def       tooldef.ToolDefinition
	function  string
	qualifier string
}

// Executor runs hosted tools that are Lambda functions: a tools.Catalog of
// those tools (each resolving to the Executor itself) and their
// tools.ToolExecutor. It is safe for concurrent use; the engine runs all
// calls of a turn at once, each in its own goroutine, and every call is its
// own Invoke.
//
// Wiring in pkg/app, when the manifest has lambda backings:
//
//	client, err := lambdaexec.NewClient(ctx) // honours AWS_ENDPOINT_URL_LAMBDA
//	ex, err := lambdaexec.New(client, lambdaexec.Config{Logger: log}, manifest.Tools, fallback)
//	// fallback: the built-in definitions by name (builtin.Tools(cfg): name -> h.Definition)
//	engine.Config{Hosted: tools.Catalogs{reg, ex}} // Lookup in reg, then in ex
//
// builtin.Registry skips lambda-backed tools and New skips local ones, so
// the manifest can mix both and each tool has exactly one executor. For
// local runs against `make lambdas` or `sam local start-lambda`
// (AWS_ENDPOINT_URL_LAMBDA set, LAMBENT_TOOLS not), the manifest is
// LocalManifest of the built-in tool names.
type Executor struct {
	client  LambdaInvoker
	cfg     Config
	log     *slog.Logger
	targets map[string]target
	defs    []tooldef.ToolDefinition
}

// New returns an Executor for the lambda-backed tools of manifest (tools
// with other backings are skipped). A tool's description and parameters
// come from the manifest; where it leaves them out they are taken from
// fallback[name] (typically the built-in tool of that name). A tool that
// ends up with neither a description nor parameters is an error.
func New(client LambdaInvoker, cfg Config, manifest []tools.ManifestTool, fallback map[string]tooldef.ToolDefinition) (*Executor, error) {
	if client == nil {
		return nil, errors.New("lambdaexec: New needs a Lambda client")
	}
	cfg = cfg.withDefaults()
	e := &Executor{client: client, cfg: cfg, log: cfg.Logger, targets: map[string]target{}}
	for _, t := range manifest {
		if t.Backing.Type != tools.BackingLambda {
			continue
		}
		if t.Name == "" {
			return nil, errors.New("lambdaexec: a manifest tool has no name")
		}
		if t.Backing.Function == "" {
			return nil, fmt.Errorf("lambdaexec: tool %q: a lambda backing needs a function", t.Name)
		}
		if _, dup := e.targets[t.Name]; dup {
			return nil, fmt.Errorf("lambdaexec: tool %q listed twice", t.Name)
		}
		def := t.Definition(fallback[t.Name])
		if def.Description == "" && len(def.Parameters) == 0 {
			return nil, fmt.Errorf("lambdaexec: tool %q has no definition: give its description and parameters in the manifest", t.Name)
		}
		e.targets[t.Name] = target{def: def, function: t.Backing.Function, qualifier: t.Backing.Qualifier}
		e.defs = append(e.defs, def)
	}
	sort.Slice(e.defs, func(i, j int) bool { return e.defs[i].Name < e.defs[j].Name })
	return e, nil
}

// Lookup returns the definition of a Lambda-backed tool and the Executor
// as the executor of its calls (tools.Catalog).
func (e *Executor) Lookup(name string) (tooldef.ToolDefinition, tools.ToolExecutor, bool) {
	t, ok := e.targets[name]
	if !ok {
		return tooldef.ToolDefinition{}, nil, false
	}
	return t.def, e, true
}

// List returns the definitions of every Lambda-backed tool, sorted by name.
func (e *Executor) List() []tooldef.ToolDefinition {
	return append([]tooldef.ToolDefinition(nil), e.defs...)
}

// Function returns the function name or ARN and qualifier a tool invokes.
func (e *Executor) Function(name string) (function, qualifier string, ok bool) {
	t, ok := e.targets[name]
	return t.function, t.qualifier, ok
}

// Execute invokes the tool's function with the call and returns its reply.
// ctx's deadline (the loop's remaining time budget) is the invocation's
// deadline. Every failure is an is_error result for the model; the only
// error returned is ctx's when ctx is cancelled (not timed out).
func (e *Executor) Execute(ctx context.Context, call tools.ToolCall) (*tools.ToolResult, error) {
	growStack(len(call.ID))
	t, ok := e.targets[call.Name]
	if !ok {
		return e.failure(call, "Error: tool %q is not served by a Lambda function here.", call.Name), nil
	}
	payload, err := json.Marshal(call)
	if err != nil {
		return e.failure(call, "Error: could not encode the call to tool %s: %v", call.Name, err), nil
	}
	if len(payload) > MaxPayloadBytes {
		e.log.WarnContext(ctx, "tool request over the Invoke payload limit", "tool", call.Name, "call_id", call.ID, "bytes", len(payload))
		return e.failure(call, "Error: the arguments of this call to %s are too large to send to its Lambda function (%d bytes; the limit is %d). Call it with smaller arguments.", call.Name, len(payload), MaxPayloadBytes), nil
	}
	in := awsjson.InvokeInput{
		FunctionName:   t.function,
		Qualifier:      t.qualifier,
		InvocationType: awsjson.InvocationRequestResponse,
		Payload:        payload,
	}
	start := time.Now()
	resent := false // an invocation that never reached Lambda is sent once more
	for attempt := 0; ; {
		out, err := e.client.Invoke(ctx, in)
		if err == nil {
			return e.reply(ctx, call, t, out), nil
		}
		if ctx.Err() != nil {
			return e.stopped(ctx, call, t, start)
		}
		if !resent && awsjson.Undelivered(err) {
			resent = true
			e.log.DebugContext(ctx, "tool invocation not delivered, sending it again", "tool", call.Name, "call_id", call.ID, "function", t.function, "err", err)
			continue
		}
		retryAfter, throttled := throttle(err)
		if !throttled {
			e.log.WarnContext(ctx, "tool invocation failed", "tool", call.Name, "call_id", call.ID, "function", t.function, "err", err)
			return e.failure(call, "Error: could not invoke the Lambda function of tool %s: %s", call.Name, describe(err)), nil
		}
		if attempt >= e.cfg.MaxRetries {
			e.log.WarnContext(ctx, "tool invocation throttled, retries exhausted", "tool", call.Name, "call_id", call.ID, "function", t.function, "attempts", attempt+1)
			return e.failure(call, "Error: tool %s is throttled by AWS Lambda (TooManyRequestsException after %d attempts); try again later.", call.Name, attempt+1), nil
		}
		delay := e.backoff(attempt, retryAfter)
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= delay {
			e.log.WarnContext(ctx, "tool invocation throttled, no time left to retry", "tool", call.Name, "call_id", call.ID, "function", t.function, "attempts", attempt+1)
			return e.failure(call, "Error: tool %s is throttled by AWS Lambda (TooManyRequestsException) and this response has no time left to retry it.", call.Name), nil
		}
		e.log.DebugContext(ctx, "tool invocation throttled, retrying", "tool", call.Name, "call_id", call.ID, "attempt", attempt+1, "delay", delay)
		if !wait.Sleep(ctx, delay) {
			return e.stopped(ctx, call, t, start)
		}
		attempt++
	}
}

// reply turns a completed Invoke into the tool result.
func (e *Executor) reply(ctx context.Context, call tools.ToolCall, t target, out *awsjson.InvokeOutput) *tools.ToolResult {
	if out.FunctionError != "" {
		var fe struct {
			ErrorType    string `json:"errorType"`
			ErrorMessage string `json:"errorMessage"`
		}
		detail := ""
		if json.Unmarshal(out.Payload, &fe) == nil && (fe.ErrorType != "" || fe.ErrorMessage != "") {
			detail = fe.ErrorMessage
			if fe.ErrorType != "" {
				detail = fe.ErrorType + ": " + fe.ErrorMessage
			}
		} else {
			detail = strings.TrimSpace(string(out.Payload))
		}
		e.log.WarnContext(ctx, "tool function error", "tool", call.Name, "call_id", call.ID, "function", t.function, "function_error", out.FunctionError, "error_type", fe.ErrorType, "detail", snippet([]byte(detail), 2000))
		return e.failure(call, "Error: tool %s failed (Lambda function error, %s): %s", call.Name, out.FunctionError, e.hideAWSIDs(detail))
	}
	var r struct {
		Output  *string `json:"output"`
		IsError bool    `json:"is_error"`
	}
	if err := json.Unmarshal(out.Payload, &r); err != nil || r.Output == nil {
		e.log.WarnContext(ctx, "tool function returned a malformed reply", "tool", call.Name, "call_id", call.ID, "function", t.function, "bytes", len(out.Payload), "reply", snippet(out.Payload, 2000))
		return e.failure(call, `Error: tool %s returned a malformed reply (want {"output": string, "is_error": bool}): %s`, call.Name, snippet([]byte(e.hideAWSIDs(string(out.Payload))), 200))
	}
	return &tools.ToolResult{CallID: call.ID, Output: e.cut(*r.Output), IsError: r.IsError}
}

// hideAWSIDs replaces the ARNs and account ids of a function error's text
// (or of a malformed reply, which may be one): a function that lets an AWS
// error through (AccessDeniedException names its role, the resource and
// the account) must not show them to the model and the client; the log
// line has them.
func (e *Executor) hideAWSIDs(s string) string {
	return awsjson.HideIDs(s)
}

// stopped is the result of a call whose ctx ended: a timeout is an
// is_error result, a cancellation returns ctx's error.
func (e *Executor) stopped(ctx context.Context, call tools.ToolCall, t target, start time.Time) (*tools.ToolResult, error) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		elapsed := time.Since(start).Round(time.Millisecond)
		e.log.WarnContext(ctx, "tool invocation timed out", "tool", call.Name, "call_id", call.ID, "function", t.function, "elapsed", elapsed)
		return e.failure(call, "Error: tool %s timed out after %s: this response's time budget ran out before its Lambda function answered.", call.Name, elapsed), nil
	}
	return nil, fmt.Errorf("lambdaexec: tool %s: %w", call.Name, ctx.Err())
}

func (e *Executor) failure(call tools.ToolCall, format string, a ...any) *tools.ToolResult {
	return &tools.ToolResult{CallID: call.ID, Output: e.cut(fmt.Sprintf(format, a...)), IsError: true}
}

// cut limits s to MaxOutput bytes (on a UTF-8 boundary) plus a note.
func (e *Executor) cut(s string) string {
	return tools.Truncate(s, e.cfg.MaxOutput)
}

// backoff is the delay before retry attempt+1: exponential from BaseDelay,
// capped at MaxDelay, with equal jitter (half fixed, half random), and at
// least retryAfter.
func (e *Executor) backoff(attempt int, retryAfter time.Duration) time.Duration {
	return max(wait.EqualJitter(wait.Exponential(e.cfg.BaseDelay, e.cfg.MaxDelay, attempt)), retryAfter)
}

// isThrottleCode reports the Invoke error codes that mean the function did
// not run because of a rate or concurrency limit: safe to retry.
func isThrottleCode(code string) bool {
	return code == "TooManyRequestsException" || code == "EC2ThrottledException"
}

// throttle reports whether err is a throttle, with Lambda's Retry-After.
func throttle(err error) (retryAfter time.Duration, ok bool) {
	var ae *awsjson.Error
	if errors.As(err, &ae) && (isThrottleCode(ae.Code) || ae.StatusCode == http.StatusTooManyRequests) {
		return ae.RetryAfter, true
	}
	return 0, false
}

// describe names an SDK error for the model, and whoever reads the
// response: the API error code (ResourceNotFoundException,
// AccessDeniedException...) when there is one. Never the error's message
// nor its text: AWS messages name ARNs, accounts and roles, transport
// errors the endpoint; the log line has them.
func describe(err error) string {
	var ae *awsjson.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return "the Lambda API could not be reached"
}

func snippet(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty payload)"
	}
	return textcut.Ellipsis(s, n)
}

// growStack grows the calling goroutine's stack once, while it is shallow,
// to the size an Invoke through the SDK's middleware needs, instead of the
// several copies of an ever deeper stack the runtime would make on the
// way. The engine runs every call on a fresh goroutine, so this is paid on
// every call.
//
//go:noinline
func growStack(i int) byte {
	var pad [stackPad]byte
	pad[i%stackPad] = 1
	return pad[(i*7)%stackPad]
}

const stackPad = 32 << 10
