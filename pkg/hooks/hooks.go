// Package hooks delivers the operator's hooks (docs/architecture.md, "Validated output":
// onToolCall and onToolResult, onAttemptStart and the attempt's result,
// for a gateway): before and after every tool call the server executes,
// and when each attempt of a validated output starts and is judged, an
// Event goes to each configured Sink — an EventBridge bus, a Lambda
// function invoked asynchronously, an HTTP webhook behind the SSRF guard
// (package egress).
//
// Delivery is safe for the loop: Send never blocks and never fails. Events
// wait in a bounded queue for a small pool of workers; a full queue drops
// the event (counted), and so does a tenant's share of it (tenant.MayQueue:
// other tenants' bursts never fill it for a tenant); each delivery has a
// timeout. Failures are logged,
// counted and collected per response (Errors), which the response reports
// in its "lambent.hook_errors" field.
package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// Event types (the EventBridge detail-type, the webhook's X-Lambent-Event).
const (
	// EventToolCall is sent before a tool call executes.
	EventToolCall = "lambent.tool.call"
	// EventToolResult is sent after it, on error too.
	EventToolResult = "lambent.tool.result"
	// EventAttemptStart is sent when an attempt of a validated output
	// starts.
	EventAttemptStart = "lambent.attempt.start"
	// EventAttemptResult is sent when its output was judged (valid, or
	// failed with its errors) or it used its iterations.
	EventAttemptResult = "lambent.attempt.result"
)

// Event is what a hook receives, as JSON: the EventBridge event's detail,
// the hook Lambda's payload, the webhook's body.
type Event struct {
	// Type is EventToolCall, EventToolResult, EventAttemptStart or
	// EventAttemptResult.
	Type       string `json:"type"`
	ResponseID string `json:"response_id"`
	Tenant     string `json:"tenant"`
	// ToolKind says what runs the call: "hosted" (a tool of the gateway's
	// manifest), "mcp", "reflection", "validator", "output" or "submit".
	// The tool fields are the tool events' only.
	ToolKind  string `json:"tool_kind,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// Output is the result's output (EventToolResult, when not an error).
	Output *string `json:"output,omitempty"`
	// Error is the result's error text (EventToolResult, is_error).
	Error *string `json:"error,omitempty"`
	// DurationMS is the execution's duration (EventToolResult).
	DurationMS *float64 `json:"duration_ms,omitempty"`
	// Attempt and Iteration place the event in the response: its attempt
	// (from 1) and, for a tool call, the model call that asked for it
	// (from 1; 0 for a call left pending by the previous response), for an
	// attempt event the response's model calls so far.
	Attempt   int `json:"attempt"`
	Iteration int `json:"iteration"`
	// Valid, Code, Errors, Iterations and Usage are the attempt's result
	// (EventAttemptResult): valid, or the failure's code and errors; the
	// attempt's model calls and their tokens.
	Valid      *bool      `json:"valid,omitempty"`
	Code       string     `json:"code,omitempty"`
	Errors     []string   `json:"errors,omitempty"`
	Iterations *int       `json:"iterations,omitempty"`
	Usage      *api.Usage `json:"usage,omitempty"`
	// Timestamp is when the call or attempt started (EventToolCall,
	// EventAttemptStart) or ended.
	Timestamp time.Time `json:"timestamp"`
}

// key is what picks the event's queue: a call's events, and a response's
// attempt events, keep their order.
func (ev *Event) key() string {
	if ev.CallID != "" {
		return ev.CallID
	}
	return ev.ResponseID
}

// subject names what the event is about in errors: "call <id>" or
// "attempt <n>".
func (ev *Event) subject() string {
	if ev.CallID != "" {
		return "call " + ev.CallID
	}
	return fmt.Sprintf("attempt %d", ev.Attempt)
}

// Sink delivers events to one hook.
type Sink interface {
	// Name names the hook in errors and logs ("eventbridge", "lambda",
	// "webhook").
	Name() string
	// Deliver sends one event; body is ev as JSON. ctx bounds it.
	Deliver(ctx context.Context, ev *Event, body []byte) error
}

// Defaults of Config.
const (
	DefaultQueueSize = 1024
	DefaultWorkers   = 4
	DefaultTimeout   = 5 * time.Second
	// DefaultMaxField caps arguments, output and error in an event, in
	// bytes: EventBridge and asynchronous Lambda payloads are limited.
	DefaultMaxField = 8 << 10
	// maxErrors bounds the errors one response collects.
	maxErrors = 20
)

// Config configures a Dispatcher.
type Config struct {
	Sinks []Sink
	// QueueSize bounds the events waiting for delivery (default
	// DefaultQueueSize), split among the workers' queues; more are
	// dropped, and so are a tenant's past its share of a queue
	// (tenant.MayQueue).
	QueueSize int
	// Workers deliver concurrently (default DefaultWorkers). The events of
	// one call go through one worker, in order: its call before its
	// result.
	Workers int
	// Timeout bounds each delivery to each sink (default DefaultTimeout).
	Timeout time.Duration
	// MaxField caps arguments, output and error (default DefaultMaxField).
	MaxField int
	// Logger receives delivery failures and drops (default slog.Default()).
	Logger *slog.Logger
}

// item is a queued event with the errors of its response and the context
// of its request (its request id, for the log lines; never its deadline:
// a delivery outlives the request).
type item struct {
	ev   *Event
	errs *Errors
	ctx  context.Context
	// share is the tenant's share of the queue the event waits in.
	share shareKey
}

// shareKey names a tenant's share of one worker's queue.
type shareKey struct {
	queue  int
	tenant string
}

// Dispatcher queues events and delivers them to every sink. It is safe for
// concurrent use; Close stops it.
type Dispatcher struct {
	cfg    Config
	log    *slog.Logger
	queues []chan item
	// seed picks a call's queue (its events stay in order).
	seed   maphash.Seed
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	dropped atomic.Uint64
	failed  atomic.Uint64

	mu      sync.Mutex
	pending int
	// waiting counts each tenant's events waiting in each worker's queue:
	// a tenant may hold less than half of the room the others leave in a
	// queue (tenant.MayQueue), so that no tenants' bursts fill a queue
	// another tenant's events need.
	waiting map[shareKey]int
	idle    []chan struct{}
	// closed refuses events sent once Close has begun.
	closed bool
}

// New starts a dispatcher for cfg.Sinks.
func New(cfg Config) *Dispatcher {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.Workers > cfg.QueueSize {
		cfg.Workers = cfg.QueueSize
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxField <= 0 {
		cfg.MaxField = DefaultMaxField
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dispatcher{cfg: cfg, log: cfg.Logger, seed: maphash.MakeSeed(), waiting: map[shareKey]int{}}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.queues = make([]chan item, cfg.Workers)
	for i := range d.queues {
		q := make(chan item, cfg.QueueSize/cfg.Workers)
		d.queues[i] = q
		d.wg.Go(func() { d.work(q) })
	}
	return d
}

// Send queues ev for delivery without blocking; errs (optional) collects
// its failures for the response. A full queue drops ev. ctx is the
// request's: the log lines of the delivery carry its request id.
func (d *Dispatcher) Send(ctx context.Context, ev *Event, errs *Errors) {
	ctx = context.WithoutCancel(ctx)
	qi := int(maphash.String(d.seed, ev.key()) % uint64(len(d.queues)))
	if why := d.enqueue(qi, item{ev: ev, errs: errs, ctx: ctx, share: shareKey{queue: qi, tenant: ev.Tenant}}); why != "" {
		d.drop(ctx, ev, errs, why)
	}
}

// enqueue queues it in queue qi and counts it pending, or returns why not
// (closed, the tenant's share or the queue full). It holds d.mu, as Close
// does to mark the dispatcher closed: an event is queued before Close
// flushes, and so delivered (or dropped at its end), or refused. Checked
// apart from the queueing, a Send racing Close queued its event after
// the workers had stopped, and it stayed pending: every later Flush waited
// out its timeout.
func (d *Dispatcher) enqueue(qi int, it item) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.closed:
		return "the dispatcher is closed"
	case !tenant.MayQueue(d.waiting[it.share], len(d.queues[qi]), cap(d.queues[qi])):
		return "this tenant's share of the hook queue is full"
	}
	select {
	case d.queues[qi] <- it:
	default:
		return "the hook queue is full"
	}
	// A worker that takes it at once waits for d.mu to count it out.
	d.waiting[it.share]++
	d.pending++
	return ""
}

// dequeued marks one event of a tenant's share as out of its queue.
func (d *Dispatcher) dequeued(share shareKey) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.waiting[share]--; d.waiting[share] <= 0 {
		delete(d.waiting, share)
	}
}

func (d *Dispatcher) drop(ctx context.Context, ev *Event, errs *Errors, why string) {
	d.dropped.Add(1)
	msg := fmt.Sprintf("%s event for %s dropped: %s", ev.Type, ev.subject(), why)
	errs.add(msg)
	d.log.WarnContext(ctx, "hook event dropped", "event", ev.Type, "response_id", ev.ResponseID, "call_id", ev.CallID, "reason", why)
}

// Dropped counts the events dropped so far (a full queue, or sent after
// Close).
func (d *Dispatcher) Dropped() uint64 { return d.dropped.Load() }

// Failed counts the failed deliveries so far (one per event and sink).
func (d *Dispatcher) Failed() uint64 { return d.failed.Load() }

// work delivers the events of q until the dispatcher closes.
func (d *Dispatcher) work(q chan item) {
	for {
		select {
		case it := <-q:
			d.dequeued(it.share)
			d.deliver(it)
			d.done()
		case <-d.ctx.Done():
			return
		}
	}
}

// deliver sends one event to every sink.
func (d *Dispatcher) deliver(it item) {
	ev := it.ev
	ev.Arguments = tools.Truncate(ev.Arguments, d.cfg.MaxField)
	for _, p := range []*string{ev.Output, ev.Error} {
		if p != nil {
			*p = tools.Truncate(*p, d.cfg.MaxField)
		}
	}
	if len(ev.Errors) > 0 {
		// Bounded as a validation reports them (at most 20, each cut to
		// 500 bytes), so that an attempt's event stays under what its
		// sinks take (EventBridge and an asynchronous Lambda invocation:
		// 256 KB).
		ev.Errors = schemacheck.BoundErrors(ev.Errors)
	}
	for i := range ev.Errors {
		ev.Errors[i] = tools.Truncate(ev.Errors[i], d.cfg.MaxField)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		d.fail(it, "encode", err)
		return
	}
	for _, s := range d.cfg.Sinks {
		ctx, cancel := context.WithTimeout(d.ctx, d.cfg.Timeout)
		err := s.Deliver(ctx, ev, body)
		cancel()
		if err != nil {
			d.fail(it, s.Name(), err)
		}
	}
}

// fail records a failed delivery: the response's hook errors name the
// hook's kind and the failure's code (FailureCode), never the hook's
// target nor its reply; the log line has them.
func (d *Dispatcher) fail(it item, sink string, err error) {
	d.failed.Add(1)
	code := FailureCode(err)
	collected := it.errs.add(fmt.Sprintf("%s hook: %s event for %s: %s", sink, it.ev.Type, it.ev.subject(), code))
	d.log.WarnContext(it.ctx, "hook delivery failed", "hook", sink, "code", code, "event", it.ev.Type, "response_id", it.ev.ResponseID, "call_id", it.ev.CallID,
		"in_response", collected, "err", err)
}

// done marks one sent event as delivered or dropped.
func (d *Dispatcher) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending--; d.pending == 0 {
		for _, c := range d.idle {
			close(c)
		}
		d.idle = nil
	}
}

// Flush waits until every event sent so far is delivered (or dropped), or
// ctx ends. Lambda calls it after each invocation: the execution
// environment is frozen between invocations, deliveries with it.
func (d *Dispatcher) Flush(ctx context.Context) error {
	d.mu.Lock()
	if d.pending == 0 {
		d.mu.Unlock()
		return nil
	}
	c := make(chan struct{})
	d.idle = append(d.idle, c)
	d.mu.Unlock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		// Its waiter goes (when done has not closed it meanwhile): the
		// deliveries may stay pending for long, and every flush that
		// gives up would leave one more.
		d.mu.Lock()
		d.idle = slices.DeleteFunc(d.idle, func(w chan struct{}) bool { return w == c })
		d.mu.Unlock()
		return fmt.Errorf("hooks: flush: %w", ctx.Err())
	}
}

// Close delivers what is queued, for at most one delivery timeout, then
// cancels what is left, stops the workers and drops what they left queued.
// Events sent once Close has begun are dropped.
func (d *Dispatcher) Close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.cfg.Timeout)
	defer cancel()
	if err := d.Flush(ctx); err != nil {
		d.log.Warn("hook events left undelivered at shutdown", "err", err)
	}
	d.cancel()
	d.wg.Wait()
	for _, q := range d.queues {
		for len(q) > 0 {
			it := <-q
			d.dequeued(it.share)
			d.drop(it.ctx, it.ev, it.errs, "the dispatcher closed before delivering it")
			d.done()
		}
	}
}

// Errors collects the hook failures of one response until it ends. It is
// safe for concurrent use; the zero value is ready, and a nil *Errors
// collects nothing.
type Errors struct {
	mu     sync.Mutex
	list   []string
	more   int
	sealed bool
}

// add records msg unless the response has ended; it reports whether msg
// was recorded.
func (e *Errors) add(msg string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.sealed:
		return false
	case len(e.list) == maxErrors:
		e.more++
	default:
		e.list = append(e.list, msg)
	}
	return true
}

// Seal ends the collection (the response ends) and returns what was
// collected; later failures are only logged.
func (e *Errors) Seal() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sealed = true
	if e.more > 0 {
		return append(e.list, fmt.Sprintf("%d more hook errors (see the logs)", e.more))
	}
	return e.list
}
