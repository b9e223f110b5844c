package hooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/conncount"
	"github.com/lambent/lambent/internal/testing/ebtest"
	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// logBuffer keeps what a logger writes.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// recordingSink keeps what it is given, in order.
type recordingSink struct {
	mu     sync.Mutex
	events []hooks.Event
	bodies [][]byte
	// block, when set, runs first (barriers).
	block func(ctx context.Context, ev *hooks.Event) error
}

func (s *recordingSink) Name() string { return "test" }

func (s *recordingSink) Deliver(ctx context.Context, ev *hooks.Event, body []byte) error {
	if s.block != nil {
		if err := s.block(ctx, ev); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, *ev)
	s.bodies = append(s.bodies, body)
	return nil
}

func (s *recordingSink) got() []hooks.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hooks.Event(nil), s.events...)
}

func flush(t *testing.T, d *hooks.Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, d.Flush(ctx))
}

func event(typ, callID string) *hooks.Event {
	return &hooks.Event{Type: typ, ResponseID: "resp_1", Tenant: "default", ToolKind: "hosted", ToolName: "calculator", CallID: callID,
		Arguments: `{"expression":"6*7"}`, Attempt: 1, Iteration: 1, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// The events of one call arrive in order — its call before its result —
// while calls are delivered by several workers.
func TestDispatcherKeepsEachCallInOrder(t *testing.T) {
	sink := &recordingSink{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Workers: 4, Logger: quiet()})
	defer d.Close()
	const n = 32
	for i := range n {
		d.Send(t.Context(), event(hooks.EventToolCall, fmt.Sprint("c", i)), nil)
	}
	for i := range n {
		d.Send(t.Context(), event(hooks.EventToolResult, fmt.Sprint("c", i)), nil)
	}
	flush(t, d)
	got := sink.got()
	require.Len(t, got, 2*n)
	seen := map[string]string{}
	for _, ev := range got {
		switch ev.Type {
		case hooks.EventToolCall:
			assert.Empty(t, seen[ev.CallID], "%s: the call event comes first", ev.CallID)
		case hooks.EventToolResult:
			assert.Equal(t, hooks.EventToolCall, seen[ev.CallID], "%s: the result follows its call", ev.CallID)
		}
		seen[ev.CallID] = ev.Type
	}
	assert.Zero(t, d.Dropped())
	assert.Zero(t, d.Failed())
}

// A full queue drops the event without blocking Send: counted, logged and
// collected for the response. Barriers, no timing: the one worker is held
// inside its first delivery while the queue (one slot) fills.
func TestDispatcherDropsWhenTheQueueIsFull(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	sink := &recordingSink{block: func(ctx context.Context, _ *hooks.Event) error {
		once.Do(func() { close(entered) })
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Workers: 1, QueueSize: 1, Timeout: time.Hour, Logger: quiet()})
	defer d.Close()
	errs := &hooks.Errors{}
	d.Send(t.Context(), event(hooks.EventToolCall, "c1"), errs)
	<-entered // the worker holds c1; the queue is empty
	d.Send(t.Context(), event(hooks.EventToolCall, "c2"), errs)
	d.Send(t.Context(), event(hooks.EventToolCall, "c3"), errs) // no room
	assert.Equal(t, uint64(1), d.Dropped())
	close(release)
	flush(t, d)
	var ids []string
	for _, ev := range sink.got() {
		ids = append(ids, ev.CallID)
	}
	assert.Equal(t, []string{"c1", "c2"}, ids)
	assert.Equal(t, []string{"lambent.tool.call event for call c3 dropped: this tenant's share of the hook queue is full"}, errs.Seal(),
		"one tenant may fill half a worker's queue, here its one place")
}

// A delivery that outlasts the timeout fails with the context's error,
// which the response's errors collect; the worker goes on.
func TestDispatcherTimesDeliveriesOut(t *testing.T) {
	slow := &recordingSink{block: func(ctx context.Context, ev *hooks.Event) error {
		if ev.CallID == "slow" {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{slow}, Workers: 1, Timeout: time.Millisecond, Logger: quiet()})
	defer d.Close()
	errs := &hooks.Errors{}
	d.Send(t.Context(), event(hooks.EventToolCall, "slow"), errs)
	d.Send(t.Context(), event(hooks.EventToolCall, "fast"), errs)
	flush(t, d)
	assert.Equal(t, []string{"test hook: lambent.tool.call event for call slow: timeout"}, errs.Seal())
	assert.Equal(t, uint64(1), d.Failed())
	require.Len(t, slow.got(), 1)
	assert.Equal(t, "fast", slow.got()[0].CallID)
}

// Errors collects until sealed (the response ended), at most 20 messages
// and a count of the rest; later failures are only logged.
func TestErrorsCollectUntilSealed(t *testing.T) {
	fail := &recordingSink{block: func(context.Context, *hooks.Event) error { return errors.New("boom") }}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{fail}, Workers: 1, Logger: quiet()})
	defer d.Close()
	errs := &hooks.Errors{}
	for i := range 25 {
		d.Send(t.Context(), event(hooks.EventToolCall, fmt.Sprint("c", i)), errs)
	}
	flush(t, d)
	got := errs.Seal()
	require.Len(t, got, 21)
	assert.Equal(t, "test hook: lambent.tool.call event for call c0: error", got[0])
	assert.Equal(t, "5 more hook errors (see the logs)", got[20])

	late := &hooks.Errors{}
	late.Seal()
	d.Send(t.Context(), event(hooks.EventToolCall, "late"), late)
	flush(t, d)
	assert.Empty(t, late.Seal())
	assert.Equal(t, uint64(26), d.Failed())
}

// Close waits at most one delivery timeout for what is queued, then
// cancels the deliveries still running: a hook that never answers cannot
// hold shutdown (goleak checks the workers are gone).
func TestCloseCancelsStuckDeliveries(t *testing.T) {
	stuck := &recordingSink{block: func(ctx context.Context, _ *hooks.Event) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{stuck}, Workers: 1, Timeout: 10 * time.Millisecond, Logger: quiet()})
	d.Send(t.Context(), event(hooks.EventToolCall, "c1"), nil)
	d.Close()
	d.Send(t.Context(), event(hooks.EventToolCall, "after"), nil)
	assert.Equal(t, uint64(1), d.Dropped(), "sent after Close")
}

// Arguments, output and error are capped (with a visible note); the rest
// of the event is sent as it is.
func TestEventFieldsAreCapped(t *testing.T) {
	sink := &recordingSink{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, MaxField: 16, Logger: quiet()})
	defer d.Close()
	ev := event(hooks.EventToolResult, "c1")
	ev.Arguments = strings.Repeat("a", 100)
	out := strings.Repeat("é", 20)
	ev.Output = &out
	d.Send(t.Context(), ev, nil)
	flush(t, d)
	var got map[string]any
	require.NoError(t, json.Unmarshal(sink.bodies[0], &got))
	assert.Equal(t, strings.Repeat("a", 16)+"\n[output truncated: 100 bytes, showing the first 16]", got["arguments"])
	assert.Equal(t, strings.Repeat("é", 8)+"\n[output truncated: 40 bytes, showing the first 16]", got["output"])
	assert.Equal(t, "calculator", got["tool_name"])
	assert.Equal(t, "2026-01-02T03:04:05Z", got["timestamp"])
}

// The EventBridge hook puts each event on the bus through the real SDK
// client: source lambent, detail-type the event type, detail the event.
func TestEventBridgeSink(t *testing.T) {
	bus := ebtest.NewServer(t)
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{&hooks.EventBridge{Client: bus.Client, Bus: "ops-bus"}}, Logger: quiet()})
	defer d.Close()
	d.Send(t.Context(), event(hooks.EventToolCall, "c1"), nil)
	flush(t, d)
	entries := bus.All()
	require.Len(t, entries, 1)
	assert.Equal(t, "ops-bus", entries[0]["EventBusName"])
	assert.Equal(t, "lambent", entries[0]["Source"])
	assert.Equal(t, "lambent.tool.call", entries[0]["DetailType"])
	var detail hooks.Event
	require.NoError(t, json.Unmarshal([]byte(entries[0]["Detail"].(string)), &detail))
	assert.Equal(t, *event(hooks.EventToolCall, "c1"), detail)
}

// The Lambda hook invokes its function asynchronously (InvocationType
// Event) through the real SDK client with the event as payload; a function
// that does not exist is a delivery error.
func TestLambdaSink(t *testing.T) {
	var mu sync.Mutex
	var payloads [][]byte
	srv := localinvoke.New(nil, localinvoke.WithFunction("audit", func(_ context.Context, p []byte) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		payloads = append(payloads, p)
		return nil, nil
	}))
	var invocationTypes []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		invocationTypes = append(invocationTypes, r.Header.Get("X-Amz-Invocation-Type"))
		mu.Unlock()
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	client, err := awsjson.NewLambda(aws.Config{BaseEndpoint: aws.String(ts.URL), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), Retryer: func() aws.Retryer { return aws.NopRetryer{} }, HTTPClient: lambdaexec.NewHTTPClient()})
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	logs := &logBuffer{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{&hooks.Lambda{Client: client, Function: "audit"}, &hooks.Lambda{Client: client, Function: "missing"}}, Logger: logs.logger()})
	defer d.Close()
	errs := &hooks.Errors{}
	d.Send(t.Context(), event(hooks.EventToolResult, "c1"), errs)
	flush(t, d)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"Event", "Event"}, invocationTypes)
	require.Len(t, payloads, 1)
	var got hooks.Event
	require.NoError(t, json.Unmarshal(payloads[0], &got))
	assert.Equal(t, *event(hooks.EventToolResult, "c1"), got)
	// The response names the hook's kind and a code; the function and
	// Lambda's message (an ARN) are in the log line.
	assert.Equal(t, []string{"lambda hook: lambent.tool.result event for call c1: rejected"}, errs.Seal())
	assert.Contains(t, logs.String(), "invoke missing:")
	assert.Contains(t, logs.String(), "ResourceNotFoundException")
}

// The webhook posts JSON behind the SSRF guard (package egress): a loopback URL is
// refused unless the allow-list names it, by address or after DNS
// resolution; a reply other than 2xx is a failure.
func TestWebhookSink(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var kinds []string
	status := http.StatusNoContent
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		bodies = append(bodies, string(b))
		kinds = append(kinds, r.Header.Get("X-Lambent-Event"))
		w.WriteHeader(status)
		_, _ = w.Write([]byte("nope"))
	}))
	defer ts.Close()

	_, err := hooks.NewWebhook(ts.URL+"/hook", nil)
	require.Error(t, err, "loopback is not a public address")
	assert.Contains(t, err.Error(), "loopback")
	_, err = hooks.NewWebhook("ftp://example.com/", nil)
	require.Error(t, err)

	host := strings.TrimPrefix(ts.URL, "http://")
	w, err := hooks.NewWebhook(ts.URL+"/hook?token=s3cret", []string{host})
	require.NoError(t, err)
	defer w.CloseIdleConnections()
	// A host name that resolves to loopback is checked when dialed.
	_, port, _ := strings.Cut(host, ":")
	byName, err := hooks.NewWebhook("http://localhost:"+port+"/hook", nil)
	require.NoError(t, err)

	logs := &logBuffer{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{w, byName}, Workers: 1, Logger: logs.logger()})
	defer d.Close()
	errs := &hooks.Errors{}
	d.Send(t.Context(), event(hooks.EventToolCall, "c1"), errs)
	flush(t, d)
	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	d.Send(t.Context(), event(hooks.EventToolResult, "c1"), errs)
	flush(t, d)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 2, "the allowed webhook got both events; the one by name none")
	assert.Equal(t, []string{"lambent.tool.call", "lambent.tool.result"}, kinds)
	var got hooks.Event
	require.NoError(t, json.Unmarshal([]byte(bodies[0]), &got))
	assert.Equal(t, *event(hooks.EventToolCall, "c1"), got)
	// Tenants see the hook's kind and a code, never its URL (nor its
	// token) or its reply; the log lines have the detail, without the
	// URL's query.
	assert.Equal(t, []string{
		"webhook hook: lambent.tool.call event for call c1: refused",
		"webhook hook: lambent.tool.result event for call c1: http_500",
		"webhook hook: lambent.tool.result event for call c1: refused",
	}, errs.Seal())
	logged := logs.String()
	assert.Contains(t, logged, "POST "+ts.URL+"/hook?…: 500 Internal Server Error: nope")
	assert.Contains(t, logged, "loopback address); only public internet addresses can be fetched")
	assert.NotContains(t, logged, "s3cret")
}

func TestParseTargets(t *testing.T) {
	got, err := hooks.ParseTargets(" eventbridge:ops ,,lambda:arn:aws:lambda:us-east-1:123456789012:function:audit, https://hooks.example.com/x?a=1 ,")
	require.NoError(t, err)
	assert.Equal(t, []hooks.Target{
		{Kind: hooks.TargetEventBridge, Value: "ops"},
		{Kind: hooks.TargetLambda, Value: "arn:aws:lambda:us-east-1:123456789012:function:audit"},
		{Kind: hooks.TargetWebhook, Value: "https://hooks.example.com/x?a=1"},
	}, got)
	got, err = hooks.ParseTargets(",")
	require.NoError(t, err)
	assert.Empty(t, got)
	for _, bad := range []string{"sns:topic", "eventbridge:", "lambda", "ops-bus"} {
		_, err := hooks.ParseTargets(bad)
		assert.Error(t, err, bad)
	}
}

// The attempt events of a response arrive in order (its start before its
// result) and carry the attempt's result without the tool fields; their
// errors are capped as the other fields are.
func TestAttemptEvents(t *testing.T) {
	sink := &recordingSink{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Workers: 4, MaxField: 16, Logger: quiet()})
	defer d.Close()
	const n = 16
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i := range n {
		d.Send(t.Context(), &hooks.Event{Type: hooks.EventAttemptStart, ResponseID: fmt.Sprint("resp_", i), Tenant: "default", Attempt: 1, Timestamp: at}, nil)
	}
	for i := range n {
		valid, iterations := false, 2
		d.Send(t.Context(), &hooks.Event{Type: hooks.EventAttemptResult, ResponseID: fmt.Sprint("resp_", i), Tenant: "default", Attempt: 1, Iteration: 2,
			Valid: &valid, Code: "validation_failed", Errors: []string{strings.Repeat("e", 100)}, Iterations: &iterations,
			Usage: &api.Usage{InputTokens: 5, OutputTokens: 2, TotalTokens: 7}, Timestamp: at}, nil)
	}
	flush(t, d)
	got := sink.got()
	require.Len(t, got, 2*n)
	seen := map[string]string{}
	for _, ev := range got {
		if ev.Type == hooks.EventAttemptResult {
			assert.Equal(t, hooks.EventAttemptStart, seen[ev.ResponseID], "%s: the result follows the start", ev.ResponseID)
		} else {
			assert.Empty(t, seen[ev.ResponseID], "%s: the start comes first", ev.ResponseID)
		}
		seen[ev.ResponseID] = ev.Type
	}
	var start, result map[string]any
	for i, ev := range got {
		if ev.ResponseID == "resp_3" && ev.Type == hooks.EventAttemptStart {
			require.NoError(t, json.Unmarshal(sink.bodies[i], &start))
		}
		if ev.ResponseID == "resp_3" && ev.Type == hooks.EventAttemptResult {
			require.NoError(t, json.Unmarshal(sink.bodies[i], &result))
		}
	}
	assert.Equal(t, map[string]any{"type": "lambent.attempt.start", "response_id": "resp_3", "tenant": "default", "attempt": float64(1),
		"iteration": float64(0), "timestamp": "2026-01-02T03:04:05Z"}, start)
	assert.Equal(t, map[string]any{"type": "lambent.attempt.result", "response_id": "resp_3", "tenant": "default", "attempt": float64(1),
		"iteration": float64(2), "valid": false, "code": "validation_failed",
		"errors":     []any{strings.Repeat("e", 16) + "\n[output truncated: 100 bytes, showing the first 16]"},
		"iterations": float64(2), "usage": map[string]any{"input_tokens": float64(5), "output_tokens": float64(2), "total_tokens": float64(7),
			"input_tokens_details": map[string]any{"cached_tokens": float64(0), "cache_write_tokens": float64(0)}, "output_tokens_details": map[string]any{"reasoning_tokens": float64(0)}},
		"timestamp": "2026-01-02T03:04:05Z"}, result)
}

// A failed delivery of an attempt event names the attempt in the
// response's hook errors.
func TestAttemptEventFailureNamesTheAttempt(t *testing.T) {
	sink := &recordingSink{block: func(context.Context, *hooks.Event) error { return errors.New("down") }}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Logger: quiet()})
	defer d.Close()
	errs := &hooks.Errors{}
	d.Send(t.Context(), &hooks.Event{Type: hooks.EventAttemptStart, ResponseID: "resp_1", Attempt: 2}, errs)
	flush(t, d)
	assert.Equal(t, []string{"test hook: lambent.attempt.start event for attempt 2: error"}, errs.Seal())
}

// An attempt's event carries at most 20 of its errors (each cut to 500
// bytes, as a validation reports them), so that it fits what its sinks take (EventBridge and an
// asynchronous Lambda invocation: 256 KB): 40 errors of 10 KB made a
// 330 KB body that every sink refused.
func TestAttemptResultEventBounded(t *testing.T) {
	s := &recordingSink{}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{s}, Logger: quiet()})
	defer d.Close()
	errs := make([]string, 40)
	for i := range errs {
		errs[i] = "check: " + strings.Repeat("y", 10000)
	}
	valid, n := false, 1
	d.Send(context.Background(), &hooks.Event{Type: hooks.EventAttemptResult, ResponseID: "resp_1", Tenant: "t", Attempt: 1,
		Valid: &valid, Code: "validation_failed", Errors: errs, Iterations: &n, Timestamp: time.Now()}, nil)
	require.NoError(t, d.Flush(context.Background()))
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Len(t, s.bodies, 1)
	require.LessOrEqual(t, len(s.bodies[0]), 256<<10)
	require.Len(t, s.events[0].Errors, 21)
	require.Equal(t, "(and 20 more errors)", s.events[0].Errors[20])
	require.LessOrEqual(t, len(s.events[0].Errors[0]), 500+len("…"))
}

// The queues are shared, their room is not: one tenant's burst of events
// (its sink slow) takes at most half of each worker's queue, so another
// tenant's event still finds room, and only the bursting tenant's own
// events are dropped.
func TestHookQueueShareOfATenant(t *testing.T) {
	release := make(chan struct{})
	sink := &recordingSink{block: func(ctx context.Context, ev *hooks.Event) error {
		if ev.Tenant == "acme" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Timeout: time.Hour, Logger: quiet()})
	defer d.Close()
	aErrs := &hooks.Errors{}
	for i := range 4 * hooks.DefaultQueueSize {
		ev := event(hooks.EventToolCall, fmt.Sprint("acme-", i))
		ev.Tenant, ev.ResponseID = "acme", "resp_acme"
		d.Send(t.Context(), ev, aErrs)
	}
	require.NotZero(t, d.Dropped(), "acme's burst is cut")
	dropped, bErrs := sendOf(t, d, "globex")
	close(release)
	flush(t, d)
	require.Zero(t, dropped, "globex's event was dropped: %q", bErrs.Seal())
	require.Empty(t, bErrs.Seal())
}

// sendOf sends one event of tenant's response to d and returns how many
// events d dropped meanwhile (0 or 1) and the response's hook errors.
func sendOf(t *testing.T, d *hooks.Dispatcher, tenant string) (uint64, *hooks.Errors) {
	before, errs := d.Dropped(), &hooks.Errors{}
	ev := event(hooks.EventToolCall, tenant+"-1")
	ev.Tenant, ev.ResponseID = tenant, "resp_"+tenant
	d.Send(t.Context(), ev, errs)
	return d.Dropped() - before, errs
}

// Two tenants bursting at once leave room for a third: each may hold at
// most half of the room the others leave (two halves filled the queue
// before, and a third tenant's event was dropped: "the hook queue is
// full").
func TestHookQueueTwoBurstsLeaveRoomForAThird(t *testing.T) {
	release := make(chan struct{})
	sink := &recordingSink{block: func(ctx context.Context, ev *hooks.Event) error {
		if ev.Tenant != "initech" {
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Workers: 1, QueueSize: 16, Timeout: time.Hour, Logger: quiet()})
	defer d.Close()
	for _, tenant := range []string{"acme", "globex"} {
		for i := range 100 {
			ev := event(hooks.EventToolCall, fmt.Sprint(tenant, i))
			ev.Tenant, ev.ResponseID = tenant, "resp_"+tenant
			d.Send(t.Context(), ev, nil)
		}
	}
	dropped, errs := sendOf(t, d, "initech")
	close(release)
	flush(t, d)
	require.Zero(t, dropped, "initech's event was dropped: %q", errs.Seal())
}

// A tenant's share is half of each worker's queue, not of one: a gateway
// with one tenant (every single-tenant deployment) keeps about half of
// all its queue's room (200 events over 4 queues of 256 drop none).
func TestHookQueueShareIsPerQueue(t *testing.T) {
	release := make(chan struct{})
	sink := &recordingSink{block: func(ctx context.Context, _ *hooks.Event) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{sink}, Timeout: time.Hour, Logger: quiet()})
	defer d.Close()
	for i := range 200 {
		ev := event(hooks.EventToolCall, fmt.Sprint("c", i))
		ev.ResponseID = fmt.Sprint("resp_", i)
		d.Send(t.Context(), ev, nil)
	}
	dropped := d.Dropped()
	close(release)
	flush(t, d)
	require.Zero(t, dropped)
}

// A webhook URL refused at start-up (by the SSRF guard, or not a URL) is
// named without its query and password, as the webhook's delivery errors
// name it: the error is logged (a Lambda's init error goes to its log
// group), and the query may hold the hook's token. So is a LAMBENT_HOOKS
// entry of no known kind (a mistyped URL).
func TestWebhookRefusedAtStartHidesItsQuery(t *testing.T) {
	for _, raw := range []string{"http://127.0.0.1:9/hook?token=s3cret", "http://10.0.0.5/hook?token=s3cret", "http://[::1/hook?token=s3cret",
		"http://127.0.0.1:9/hook#s3cret", "http://hook:s3cret@127.0.0.1:9/hook"} {
		_, err := hooks.NewWebhook(raw, nil)
		require.Error(t, err, raw)
		assert.NotContains(t, err.Error(), "s3cret", raw)
		assert.Contains(t, err.Error(), "hooks: webhook URL", raw)
	}
	for _, bad := range []string{"https://hooks.example.com/x?token=s3cret%zz", "htps://hooks.example.com/x?token=s3cret"} {
		_, err := hooks.ParseTargets(bad)
		if err != nil {
			assert.NotContains(t, err.Error(), "s3cret", bad)
		}
	}
}

// A delivery's error, which the log line shows, names the webhook's URL
// without its credentials: no query, no fragment, no password, and no user
// name either (https://<token>@host sends the token as Basic
// authentication's user name).
func TestWebhookDeliveryErrorHidesItsCredentials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens: connection refused
	for _, raw := range []string{"http://s3cret@" + addr + "/hook", "http://u:s3cret@" + addr + "/hook?token=s3cret",
		"http://s3cret:@" + addr + "/hook", "http://" + addr + "/hook#s3cret"} {
		w, err := hooks.NewWebhook(raw, []string{addr})
		require.NoError(t, err, raw)
		err = w.Deliver(t.Context(), event(hooks.EventToolCall, "c1"), []byte("{}"))
		require.Error(t, err, raw)
		assert.NotContains(t, err.Error(), "s3cret", raw)
		assert.Contains(t, err.Error(), addr+"/hook", raw)
		assert.Equal(t, "unreachable", hooks.FailureCode(err), raw)
	}
}

// A webhook keeps the connections its concurrent deliveries (one a worker)
// opened: two rounds of DefaultWorkers concurrent deliveries open
// DefaultWorkers connections, not 2 more a round (net/http's default pool
// of 2 a host).
func TestWebhookReusesConnections(t *testing.T) {
	n := hooks.DefaultWorkers
	b := conncount.NewBarrier(n)
	srv := conncount.Start(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { b.Wait() }))
	w, err := hooks.NewWebhook(srv.URL+"/hook", []string{strings.TrimPrefix(srv.URL, "http://")})
	require.NoError(t, err)
	defer w.CloseIdleConnections()
	ev := event(hooks.EventToolCall, "c1")
	require.NoError(t, conncount.Rounds(2, n, func() error { return w.Deliver(t.Context(), ev, []byte(`{}`)) }))
	assert.Equal(t, n, srv.Opened(), "connections of 2 rounds of %d concurrent deliveries", n)
}

// A webhook's error reply longer than what is read of it is drained (up
// to egress.MaxDrain) before its body is closed, so that its connection is
// reused: closed unread, net/http closed the connection and the next
// delivery dialed again.
func TestWebhookErrorReplyKeepsConnection(t *testing.T) {
	page := strings.Repeat("x", 16<<10) // an HTML error page, over the 4 KiB read
	srv := conncount.Start(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, page)
	}))
	w, err := hooks.NewWebhook(srv.URL+"/hook", []string{strings.TrimPrefix(srv.URL, "http://")})
	require.NoError(t, err)
	defer w.CloseIdleConnections()
	ev := event(hooks.EventToolCall, "c1")
	for range 2 {
		require.Error(t, w.Deliver(t.Context(), ev, []byte(`{}`)))
	}
	assert.Equal(t, 1, srv.Opened(), "connections of 2 deliveries answered 502")
}

// A target missing its "://" names no user information it holds: "u:key@host"
// parses as a scheme's opaque part, which a URL's String shows whole.
func TestParseTargetsHidesUserInfoWithoutAuthority(t *testing.T) {
	for _, target := range []string{"u:s3cret@h.example/hook", "https//u:s3cret@h.example/hook"} {
		_, err := hooks.ParseTargets(target)
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseTargets(%q) = %v, want an error without the secret", target, err)
		}
	}
}
