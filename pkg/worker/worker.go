// Package worker runs background responses: the Lambda handler of the
// worker function (SQS batches, EventBridge events, direct invocations),
// the in-process queue of local runs, and the AWS queue and publisher
// (SQS, EventBridge) the engine uses in Lambda.
package worker

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/tenant"
)

// Runner is what the worker needs of the engine.
type Runner interface {
	RunBackground(ctx context.Context, id string) error
	StartBackground(ctx context.Context, req *api.CreateResponseRequest, id string) (string, error)
}

// Handler handles the worker function's invocations.
//
// A message names its tenant ("tenant"), and the worker acts as that
// tenant without further check: whoever may send to the queue, put events
// on the bus or invoke the function may act as any tenant. Those
// permissions (IAM) are the trust boundary of background responses.
type Handler struct {
	Runner Runner
	Logger *slog.Logger
	// RequireTenant refuses messages that name no tenant as invalid
	// (ErrInvalidMessage) instead of running them as the default tenant:
	// on when API keys are configured, where every tenant is a key's.
	RequireTenant bool
}

// Invoke handles one invocation, whatever triggered it: an SQS batch
// (answered with partial batch failures), an EventBridge event, or a
// direct payload (a job {"response_id"} or a create request).
//
// A create request that names no "id" gets one derived from its delivery
// (DeliveryID): the SQS message id, the EventBridge event id, else the
// Lambda request id of the invocation, which an asynchronous invocation
// keeps across Lambda's retries. A redelivered message therefore finds the
// response its first delivery created, and resumes it or leaves it as it
// ended, instead of creating (and paying the model for) another one.
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	ctx = requestid.WithLambda(ctx)
	var probe struct {
		Records    []json.RawMessage `json:"Records"`
		DetailType string            `json:"detail-type"`
		Source     string            `json:"source"`
	}
	_ = json.Unmarshal(payload, &probe)
	var derived string
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		derived = DeliveryID(DeliveryInvocation, lc.AwsRequestID)
	}
	switch {
	case len(probe.Records) > 0:
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("worker: SQS event: %w", err)
		}
		return h.SQS(ctx, ev), nil
	case probe.DetailType != "" && probe.Source != "":
		var ev events.EventBridgeEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, fmt.Errorf("worker: EventBridge event: %w", err)
		}
		payload = ev.Detail
		derived = DeliveryID(DeliveryEvent, ev.ID)
	}
	ctx = requestid.With(ctx, requestid.New())
	if err := h.message(ctx, payload, derived); err != nil {
		h.log().ErrorContext(ctx, "invocation failed", "invalid", errors.Is(err, ErrInvalidMessage), "err", err)
		return nil, err
	}
	return nil, nil
}

// SQS runs every message of a batch concurrently, each with a request id
// of its own (package requestid), and reports the ones
// that failed, so only they are redelivered (and, once the queue's
// maxReceiveCount is reached, moved to its dead-letter queue).
func (h *Handler) SQS(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var (
		mu   sync.Mutex
		resp = events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
		wg   sync.WaitGroup
	)
	for _, m := range ev.Records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := requestid.With(ctx, requestid.New())
			if err := h.message(ctx, json.RawMessage(m.Body), DeliveryID(DeliveryMessage, m.MessageId)); err != nil {
				h.log().ErrorContext(ctx, "message failed", "message_id", m.MessageId, "invalid", errors.Is(err, ErrInvalidMessage),
					"receive_count", m.Attributes["ApproximateReceiveCount"], "err", err)
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return resp
}

// ErrInvalidMessage marks a message no redelivery can run: not a JSON
// object, without a tenant where one is required, or a create request the
// API refuses (a 4xx other than 429). It is
// still an error, so that the message is not lost: an SQS message is
// reported as a batch item failure and, after the queue's maxReceiveCount
// deliveries, moved to its dead-letter queue; an asynchronous invocation
// (EventBridge, async Invoke) fails and, after Lambda's retries, goes to the
// function's on-failure destination; a synchronous Invoke returns it.
var ErrInvalidMessage = errors.New("worker: invalid message")

// Kinds of delivery a response id derives from (DeliveryID).
const (
	// DeliveryMessage: an SQS message, by its message id.
	DeliveryMessage = "sqs"
	// DeliveryEvent: an EventBridge event, by its event id.
	DeliveryEvent = "evt"
	// DeliveryInvocation: a direct invocation, by its Lambda request id.
	DeliveryInvocation = "inv"
)

// DeliveryID is the response id of a create request that names none,
// derived from its delivery: "resp_<kind>_<id>" (kind one of DeliveryMessage,
// DeliveryEvent, DeliveryInvocation), or, when id has characters a response
// id may not hold or is too long, "resp_<kind>_" and the SHA-256 of id in
// hexadecimal. The same delivery always gives the same response id; "" for
// an empty id.
func DeliveryID(kind, id string) string {
	if id == "" {
		return ""
	}
	prefix := api.PrefixResponse + kind + "_"
	if s := prefix + id; api.ValidResponseID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(id))
	return prefix + hex.EncodeToString(sum[:])
}

// message runs one message: a job {"response_id","tenant"} resumes a
// stored background response; anything else is a create request with an
// optional caller-chosen "id" (and "tenant"), else the id derived from its
// delivery (derived; a new one when that is empty). Every failure is
// returned (an invalid message wrapped in ErrInvalidMessage), so that
// nothing is dropped without a trace.
func (h *Handler) message(ctx context.Context, body json.RawMessage, derived string) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return fmt.Errorf("%w: not a JSON object", ErrInvalidMessage)
	}
	t := stringField(fields, "tenant")
	delete(fields, "tenant")
	switch {
	case t != "":
		ctx = tenant.With(ctx, t)
	case h.RequireTenant:
		return fmt.Errorf("%w: no \"tenant\" (required where API keys are configured)", ErrInvalidMessage)
	}
	if id := stringField(fields, "response_id"); id != "" && len(fields) == 1 {
		return h.Runner.RunBackground(ctx, id)
	}
	id := stringField(fields, "id")
	delete(fields, "id")
	if id == "" {
		id = derived
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	req, err := api.DecodeCreateRequest(raw)
	if err == nil {
		_, err = h.Runner.StartBackground(ctx, req, id)
	}
	var ae *api.Error
	if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 429 {
		return fmt.Errorf("%w: create request (id %q): %d %s (param %q)", ErrInvalidMessage, id, ae.Status, ae.Message, ae.Param)
	}
	return err
}

func stringField(fields map[string]json.RawMessage, k string) string {
	v, ok := fields[k]
	if !ok || bytes.Equal(v, []byte("null")) {
		return ""
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

func (h *Handler) log() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// Local is an in-process queue for local runs: Enqueue hands the job to a
// pool of goroutines that run it through the same worker code as Lambda.
// The pool is shared fairly by the tenants: a worker that comes free runs
// the oldest job of the tenant running the fewest jobs, so a tenant that
// queued many long jobs does not hold the others' behind all of them; and
// a tenant may have less than half of the room the other tenants leave
// waiting (tenant.MayQueue): half of the queue alone, and no tenants fill
// it for another.
type Local struct {
	mu      sync.Mutex
	waiting map[string][]localJob // queued jobs by tenant, oldest first
	queued  int                   // the jobs of waiting
	running map[string]int        // jobs running by tenant
	seq     uint64                // the next job's arrival number
	ready   chan struct{}         // a token per queued job
	wg      sync.WaitGroup
	ctx     context.Context // ended by Close
	cancel  context.CancelFunc
	run     func(ctx context.Context, id string) error
	log     *slog.Logger
}

// localJob is a queued job and its arrival number.
type localJob struct {
	job engine.Job
	seq uint64
}

// localQueueSize bounds the jobs the in-process queue holds.
const localQueueSize = 1024

// NewLocal starts n workers running jobs with run (engine.RunBackground).
// Close stops them.
func NewLocal(n int, run func(ctx context.Context, id string) error, log *slog.Logger) *Local {
	if n <= 0 {
		n = 4
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Local{waiting: map[string][]localJob{}, running: map[string]int{}, ready: make(chan struct{}, localQueueSize),
		ctx: ctx, cancel: cancel, run: run, log: log}
	for i := 0; i < n; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-ctx.Done():
					return
				case <-l.ready:
					// A job taken as Close began (the select picks
					// either) is dropped with the queue, not started.
					if ctx.Err() != nil {
						return
					}
					l.runNext(ctx)
				}
			}
		}()
	}
	return l
}

// runNext runs the job next picks, as its tenant.
func (l *Local) runNext(ctx context.Context) {
	j := l.next()
	defer l.done(j.Tenant)
	jctx := ctx
	if j.Tenant != "" {
		jctx = tenant.With(ctx, j.Tenant)
	}
	if err := l.run(jctx, j.ResponseID); err != nil && ctx.Err() == nil {
		l.log.Error("background job failed", "response_id", j.ResponseID, "err", err)
	}
}

// next takes the job to run: the oldest of the tenant running the fewest
// jobs (of those with jobs queued; between equals, the one whose job came
// first). A token of ready stands for it, so one is queued.
func (l *Local) next() engine.Job {
	l.mu.Lock()
	defer l.mu.Unlock()
	pick := ""
	for t, q := range l.waiting {
		if p, ok := l.waiting[pick]; !ok || l.running[t] < l.running[pick] ||
			l.running[t] == l.running[pick] && q[0].seq < p[0].seq {
			pick = t
		}
	}
	q := l.waiting[pick]
	if len(q) == 1 {
		delete(l.waiting, pick)
	} else {
		l.waiting[pick] = q[1:]
	}
	l.queued--
	l.running[pick]++
	return q[0].job
}

// done records the end of a job of tenant t.
func (l *Local) done(t string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running[t]--; l.running[t] == 0 {
		delete(l.running, t)
	}
}

// Enqueue queues a job; it fails when the queue is full or closed, and
// with a 429 (*api.Error) when the job's tenant has its share of the queue
// waiting (tenant.MayQueue: a background create holds its tenant's
// in-flight slot only until its job is queued, so the in-flight cap does
// not bound a tenant's queued jobs).
func (l *Local) Enqueue(ctx context.Context, j engine.Job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx.Err() != nil {
		return errors.New("worker: local queue is closed")
	}
	if !tenant.MayQueue(len(l.waiting[j.Tenant]), l.queued, localQueueSize) {
		return api.RateLimited("2", nil, "Too many background responses are queued for this API key; retry when some have run.")
	}
	select {
	case l.ready <- struct{}{}:
	default:
		return errors.New("worker: local queue is full")
	}
	l.waiting[j.Tenant] = append(l.waiting[j.Tenant], localJob{job: j, seq: l.seq})
	l.queued++
	l.seq++
	return nil
}

// Close stops the workers, cancelling running jobs (their responses resume
// when enqueued again) and dropping the queued ones.
func (l *Local) Close() {
	l.cancel()
	l.wg.Wait()
}
