package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/ebtest"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/worker"
)

func TestMain(m *testing.M) { os.Exit(dynamolocal.MainLeakChecked(m)) }

// captureQueue keeps enqueued jobs for the test to deliver.
type captureQueue struct {
	mu   sync.Mutex
	jobs []engine.Job
}

func (q *captureQueue) Enqueue(_ context.Context, j engine.Job) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.jobs = append(q.jobs, j)
	return nil
}

type env struct {
	app   *app.App
	fake  *fakellm.Server
	queue *captureQueue
	bus   *ebtest.Bus
	h     *worker.Handler
}

func newEnv(t *testing.T, turns ...fakellm.Turn) *env {
	t.Helper()
	fake := fakellm.New(turns...)
	t.Cleanup(fake.Close)
	bus := ebtest.NewServer(t)
	vars := map[string]string{"LAMBENT_PROVIDER_URL": fake.URL, "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_LOG_LEVEL": "error"}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	q := &captureQueue{}
	// The responses live in DynamoDB Local, as in AWS.
	a, err := app.Build(context.Background(), cfg, app.Logger(cfg, io.Discard), &app.Options{Store: dynamotest.NewStore(t, ""), Queue: q, Publisher: &worker.Publisher{Client: bus.Client, Bus: "lambent-bus"}})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return &env{app: a, fake: fake, queue: q, bus: bus, h: &worker.Handler{Runner: a.Engine, Logger: app.Logger(cfg, io.Discard)}}
}

func sample(t *testing.T, name, id string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile("../../events/" + name)
	require.NoError(t, err)
	return json.RawMessage(strings.ReplaceAll(string(b), "RESPONSE_ID", id))
}

type discard struct{ resp *api.Response }

func (d *discard) WriteEvent(*api.StreamEvent) error   { return nil }
func (d *discard) WriteResponse(r *api.Response) error { d.resp = r; return nil }

// Background create → worker run driven by the events/ SQS sample → GET
// shows completed with all items; the same message twice runs the loop once.
func TestSQSJobSample(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}, Usage: fakellm.Usage{PromptTokens: 5, CompletionTokens: 2}},
		fakellm.Turn{Text: "It is 42.", Usage: fakellm.Usage{PromptTokens: 9, CompletionTokens: 3}},
	)
	req, err := api.DecodeCreateRequest([]byte(`{"input":"6*7?","background":true,"tools":[{"type":"lambent:calculator"}]}`))
	require.NoError(t, err)
	d := &discard{}
	require.NoError(t, e.app.Engine.CreateBackground(context.Background(), req, d))
	require.Equal(t, api.StatusQueued, d.resp.Status)
	require.Len(t, e.queue.jobs, 1)
	id := e.queue.jobs[0].ResponseID

	payload := sample(t, "worker-sqs-job.json", id)
	for i := 0; i < 2; i++ {
		out, err := e.h.Invoke(context.Background(), payload)
		require.NoError(t, err)
		assert.Empty(t, out.(events.SQSEventResponse).BatchItemFailures)
	}
	got, err := e.app.Engine.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	require.Len(t, got.Output, 2)
	assert.Equal(t, api.ItemMCPCall, got.Output[0].Type)
	assert.Equal(t, "42", got.Output[0].Output)
	assert.Equal(t, 19, got.Usage.TotalTokens)
	assert.Equal(t, 2, e.fake.Calls(), "the loop ran once")

	// The direct-invocation sample is the same job: nothing runs again.
	_, err = e.h.Invoke(context.Background(), sample(t, "worker-direct-job.json", id))
	require.NoError(t, err)
	assert.Equal(t, 2, e.fake.Calls())
}

// A create request in an SQS message runs under its caller-chosen id; the
// invalid one in the same batch is a batch item failure (on its way to the
// dead-letter queue), never dropped.
func TestSQSCreateSample(t *testing.T) {
	t.Parallel()
	e := newEnv(t,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		fakellm.Turn{Text: "42"},
	)
	invalid := []events.SQSBatchItemFailure{{ItemIdentifier: "a1f0c2d3-0000-4bad-9c0d-000000000bad"}}
	out, err := e.h.Invoke(context.Background(), sample(t, "worker-sqs-create.json", ""))
	require.NoError(t, err)
	assert.Equal(t, invalid, out.(events.SQSEventResponse).BatchItemFailures)
	got, err := e.app.Engine.GetResponse(context.Background(), "resp_sqs_order_1234")
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, "1234", got.Metadata["order"])
	// Delivered again: not created or run again.
	out, err = e.h.Invoke(context.Background(), sample(t, "worker-sqs-create.json", ""))
	require.NoError(t, err)
	assert.Equal(t, invalid, out.(events.SQSEventResponse).BatchItemFailures)
	assert.Equal(t, 2, e.fake.Calls())
}

// An EventBridge-triggered response runs and its completion is published.
func TestEventBridgeSampleAndPublish(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.Turn{Text: "Export is broken on Safari.", Usage: fakellm.Usage{PromptTokens: 20, CompletionTokens: 6}})
	_, err := e.h.Invoke(context.Background(), sample(t, "worker-eventbridge-create.json", ""))
	require.NoError(t, err)
	got, err := e.app.Engine.GetResponse(context.Background(), "resp_eventbridge_ticket_42")
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	entries := e.bus.All()
	require.Len(t, entries, 1)
	assert.Equal(t, "lambent.response.completed", entries[0]["DetailType"])
	assert.Equal(t, "lambent", entries[0]["Source"])
	assert.Equal(t, "lambent-bus", entries[0]["EventBusName"])
	var detail worker.Detail
	require.NoError(t, json.Unmarshal([]byte(entries[0]["Detail"].(string)), &detail))
	assert.Equal(t, "resp_eventbridge_ticket_42", detail.ID)
	assert.Equal(t, api.StatusCompleted, detail.Status)
	assert.Equal(t, 26, detail.Usage.TotalTokens)
	assert.Equal(t, "42", detail.Metadata["ticket"])
	assert.Equal(t, "default", detail.Tenant, "an event naming no tenant runs as the default one")
}

// A published event names the response's tenant: a consumer of a
// multi-tenant gateway's bus (billing, notifications) can tell whose
// response ended. It used to name none.
func TestPublishedEventNamesTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.Turn{Text: "Done."})
	ev := strings.Replace(string(sample(t, "worker-eventbridge-create.json", "")), `"detail": {`, `"detail": {"tenant": "acme",`, 1)
	_, err := e.h.Invoke(context.Background(), json.RawMessage(ev))
	require.NoError(t, err)
	entries := e.bus.All()
	require.Len(t, entries, 1)
	var detail worker.Detail
	require.NoError(t, json.Unmarshal([]byte(entries[0]["Detail"].(string)), &detail))
	assert.Equal(t, "resp_eventbridge_ticket_42", detail.ID)
	assert.Equal(t, "acme", detail.Tenant)
}

// failingRunner fails for one id, to check partial batch failures.
type failingRunner struct{ bad string }

func (f failingRunner) RunBackground(_ context.Context, id string) error {
	if id == f.bad {
		return errors.New("store unavailable")
	}
	return nil
}

func (f failingRunner) StartBackground(context.Context, *api.CreateResponseRequest, string) (string, error) {
	return "", nil
}

func TestSQSPartialBatchFailure(t *testing.T) {
	t.Parallel()
	h := &worker.Handler{Runner: failingRunner{bad: "resp_bad"}, Logger: app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard)}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"response_id":"resp_ok"}`, EventSource: "aws:sqs"},
		{MessageId: "m2", Body: `{"response_id":"resp_bad"}`, EventSource: "aws:sqs"},
		{MessageId: "m3", Body: `not json`, EventSource: "aws:sqs"},
	}}
	resp := h.SQS(context.Background(), ev)
	assert.ElementsMatch(t, []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}, {ItemIdentifier: "m3"}}, resp.BatchItemFailures,
		"a failed run is retried; a message that is not JSON goes to the dead-letter queue, never dropped")
}

// An invalid message is never lost without a trace: an SQS record is a
// batch item failure (redelivered, then moved to the dead-letter queue by
// the queue's redrive policy), an EventBridge event or a direct invocation
// fails (Lambda's retries, then the on-failure destination). Nothing is
// stored or run for it.
func TestInvalidMessagesAreNotDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	invalid := map[string]string{
		"not JSON":           `not json`,
		"JSON array":         `["hi"]`,
		"JSON null":          `null`,
		"unknown parameter":  `{"input":"hi","frobnicate":true}`,
		"no input":           `{"model":"m"}`,
		"with id, bad input": `{"id":"resp_sqs_invalid_1","input":42}`,
		"unknown previous":   `{"id":"resp_sqs_invalid_2","input":"hi","previous_response_id":"resp_doesnotexist"}`,
	}
	var records []events.SQSMessage
	var want []events.SQSBatchItemFailure
	for name, body := range invalid {
		records = append(records, events.SQSMessage{MessageId: name, Body: body, EventSource: "aws:sqs"})
		want = append(want, events.SQSBatchItemFailure{ItemIdentifier: name})
	}
	out, err := e.h.Invoke(context.Background(), json.RawMessage(mustMarshal(t, events.SQSEvent{Records: records})))
	require.NoError(t, err)
	assert.ElementsMatch(t, want, out.(events.SQSEventResponse).BatchItemFailures)

	for name, body := range invalid {
		ev := events.EventBridgeEvent{Version: "0", ID: "ev-1", DetailType: "lambent.response.create", Source: "lambent.requests", Detail: json.RawMessage(`{}`)}
		if json.Valid([]byte(body)) {
			ev.Detail = json.RawMessage(body)
		} else {
			ev.Detail = mustMarshal(t, body) // a JSON string, not an object
		}
		_, err := e.h.Invoke(context.Background(), mustMarshal(t, ev))
		require.ErrorIs(t, err, worker.ErrInvalidMessage, "EventBridge %s", name)
	}
	_, err = e.h.Invoke(context.Background(), json.RawMessage(`{"input":"hi","frobnicate":true}`))
	require.ErrorIs(t, err, worker.ErrInvalidMessage, "direct invocation")

	for _, id := range []string{"resp_sqs_invalid_1", "resp_sqs_invalid_2"} {
		_, err := e.app.Engine.GetResponse(context.Background(), id)
		require.Error(t, err, "nothing is stored for an invalid request")
	}
	assert.Zero(t, e.fake.Calls())
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// The in-process queue runs jobs on its goroutines and stops cleanly.
func TestLocalQueue(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 3)
	l := worker.NewLocal(2, func(ctx context.Context, id string) error { ran <- id; return nil }, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard))
	for _, id := range []string{"a", "b", "c"} {
		require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: id}))
	}
	got := map[string]bool{}
	for i := 0; i < 3; i++ {
		select {
		case id := <-ran:
			got[id] = true
		case <-time.After(10 * time.Second):
			t.Fatal("jobs did not run")
		}
	}
	assert.Len(t, got, 3)
	l.Close()
}

// With API keys configured (RequireTenant), a message that names no tenant
// is refused: it would act as the default tenant. It is an invalid message
// (a batch item failure on its way to the dead-letter queue, an error for
// EventBridge and direct invocations) and nothing runs; the same message
// with a tenant runs under that tenant.
func TestRequireTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakellm.Turn{Text: "done"})
	e.h.RequireTenant = true
	noTenant := `{"id":"resp_no_tenant_1","input":"hi"}`
	out, err := e.h.Invoke(context.Background(), mustMarshal(t, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: noTenant, EventSource: "aws:sqs"}}}))
	require.NoError(t, err)
	assert.Equal(t, []events.SQSBatchItemFailure{{ItemIdentifier: "m1"}}, out.(events.SQSEventResponse).BatchItemFailures)
	_, err = e.h.Invoke(context.Background(), json.RawMessage(noTenant))
	require.ErrorIs(t, err, worker.ErrInvalidMessage, "direct invocation")
	_, err = e.h.Invoke(context.Background(), sample(t, "worker-eventbridge-create.json", ""))
	require.ErrorIs(t, err, worker.ErrInvalidMessage, "EventBridge")
	_, err = e.h.Invoke(context.Background(), json.RawMessage(`{"response_id":"resp_no_tenant_1"}`))
	require.ErrorIs(t, err, worker.ErrInvalidMessage, "a job without a tenant")
	assert.Zero(t, e.fake.Calls(), "nothing ran")

	_, err = e.h.Invoke(context.Background(), json.RawMessage(`{"id":"resp_with_tenant_1","input":"hi","tenant":"acme"}`))
	require.NoError(t, err)
	_, err = e.app.Engine.GetResponse(tenant.With(context.Background(), "acme"), "resp_with_tenant_1")
	require.NoError(t, err, "the response is the named tenant's")
	_, err = e.app.Engine.GetResponse(context.Background(), "resp_with_tenant_1")
	require.Error(t, err, "not the default tenant's")
}

// A failed response's error message, however long, is cut in the event
// published for it (EventBridge refuses an event over 256 KB, and the
// event would be lost); the stored response keeps it whole.
func TestPublishedErrorMessageBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := &worker.Publisher{Client: e.bus.Client, Bus: "lambent-bus"}
	r := &api.Response{ID: "resp_long_error", Status: api.StatusFailed, Model: "m",
		Error: &api.ResponseError{Code: "validation_failed", Message: strings.Repeat("x", 300<<10)}}
	require.NoError(t, p.Publish(context.Background(), r))
	entries := e.bus.All()
	require.Len(t, entries, 1)
	detail := entries[0]["Detail"].(string)
	require.Less(t, len(detail), 256<<10)
	assert.Len(t, r.Error.Message, 300<<10, "the response keeps its message")
}

// The in-process queue is shared fairly by the tenants: a worker that
// comes free runs a job of the tenant running the fewest, not the oldest
// job queued. A tenant that queued many long jobs (up to its in-flight
// limit, 64) held every other tenant's background responses behind all of
// them.
func TestLocalQueueFairAcrossTenants(t *testing.T) {
	t.Parallel()
	ids := []string{"a1", "a2", "a3", "a4", "b1"}
	started := make(chan string, len(ids))
	gates := map[string]chan struct{}{}
	var once sync.Map
	release := func(id string) {
		if _, done := once.LoadOrStore(id, true); !done {
			close(gates[id])
		}
	}
	for _, id := range ids {
		gates[id] = make(chan struct{})
	}
	l := worker.NewLocal(2, func(ctx context.Context, id string) error {
		started <- id
		<-gates[id]
		return nil
	}, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard))
	defer l.Close()
	defer func() {
		for _, id := range ids {
			release(id)
		}
	}()
	next := func() string {
		select {
		case id := <-started:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no job started")
			return ""
		}
	}
	enqueue := func(id string) {
		require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: id, Tenant: id[:1]}))
	}
	for _, id := range ids[:4] {
		enqueue(id)
	}
	first := map[string]bool{next(): true, next(): true}
	require.Equal(t, map[string]bool{"a1": true, "a2": true}, first)
	enqueue("b1")
	release("a1")
	assert.Equal(t, "b1", next(), "the job a worker runs next, tenant a running one and b none")
}

// Two tenants queueing at once leave room for a third: each may have at
// most half of the room the others leave waiting. Two halves (512 jobs
// each) filled the queue before, and a third tenant's job failed ("worker:
// local queue is full", a 500 enqueue_failed).
func TestLocalQueueTwoTenantsLeaveRoomForAThird(t *testing.T) {
	t.Parallel()
	entered, block := make(chan struct{}), make(chan struct{})
	l := worker.NewLocal(1, func(ctx context.Context, id string) error {
		if id == "running" {
			close(entered)
		}
		<-block
		return nil
	}, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard))
	defer l.Close()
	defer close(block)
	require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: "running", Tenant: "acme"}))
	<-entered // the only worker runs it until the test ends
	queued := map[string]int{}
	for _, tn := range []string{"acme", "globex"} {
		for {
			err := l.Enqueue(context.Background(), engine.Job{ResponseID: tn, Tenant: tn})
			if err != nil {
				var ae *api.Error
				require.ErrorAs(t, err, &ae, "%s's refusal", tn)
				require.Equal(t, api.CodeRateLimitExceeded, ae.Code)
				break
			}
			queued[tn]++
		}
	}
	assert.Equal(t, map[string]int{"acme": 512, "globex": 256}, queued)
	require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: "i1", Tenant: "initech"}), "a third tenant's job")
}

// Close starts no queued job: a worker that takes a job from the queue
// once Close has cancelled the workers drops it (the queue is in memory:
// its jobs are gone with it) instead of running it for a process that is
// stopping. A worker that comes free as Close begins could take the next
// job as well as see the end (a select picks either at random).
func TestLocalQueueCloseStartsNoQueuedJob(t *testing.T) {
	t.Parallel()
	started := make(chan string, 2)
	l := worker.NewLocal(1, func(ctx context.Context, id string) error {
		started <- id
		if id == "running" {
			<-ctx.Done() // returns once Close has cancelled it
		}
		return nil
	}, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard))
	require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: "running"}))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start")
	}
	require.NoError(t, l.Enqueue(context.Background(), engine.Job{ResponseID: "queued"}))
	l.Close()
	close(started)
	for id := range started {
		t.Errorf("job %q started after Close", id)
	}
}

// Enqueue fails once the queue is closed: no worker would run the job
// (a hand-off as the process stops must not count as done).
func TestLocalQueueEnqueueAfterClose(t *testing.T) {
	t.Parallel()
	l := worker.NewLocal(1, func(context.Context, string) error { return nil }, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard))
	l.Close()
	require.Error(t, l.Enqueue(context.Background(), engine.Job{ResponseID: "late"}))
}
