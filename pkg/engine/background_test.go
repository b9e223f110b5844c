package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/ddbmeter"
	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/store/storetest"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// jobQueue records enqueued jobs; tests run them explicitly.
type jobQueue struct {
	mu   sync.Mutex
	jobs []Job
	c    chan Job
}

func newJobQueue() *jobQueue { return &jobQueue{c: make(chan Job, 100)} }

func (q *jobQueue) Enqueue(_ context.Context, j Job) error {
	q.mu.Lock()
	q.jobs = append(q.jobs, j)
	q.mu.Unlock()
	q.c <- j
	return nil
}

// rawRecorder records forwarded stored events.
type rawRecorder struct {
	recorder
}

func (r *rawRecorder) WriteRawEvent(_ string, data []byte) error {
	r.mu.Lock()
	r.events = append(r.events, append([]byte(nil), data...))
	r.mu.Unlock()
	return nil
}

// has reports whether an event written so far holds s.
func (r *rawRecorder) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range r.events {
		if bytes.Contains(ev, []byte(s)) {
			return true
		}
	}
	return false
}

// runBackground creates a background response from a JSON request body.
func runBackground(t *testing.T, e *Engine, body string) (*recorder, error) {
	t.Helper()
	rec := &recorder{}
	err := e.CreateBackground(context.Background(), decodeReq(t, body), rec)
	return rec, err
}

// storeMaker makes the store a background test runs on.
type storeMaker func(t *testing.T) store.ResponseStore

// forStores runs a background test on the memory store and on DynamoDB Local
// (a test of its own table), in parallel with the other tests.
func forStores(t *testing.T, fn func(t *testing.T, mk storeMaker)) {
	t.Parallel()
	t.Run("memory", func(t *testing.T) {
		fn(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) })
	})
	t.Run("dynamodb", func(t *testing.T) {
		fn(t, func(t *testing.T) store.ResponseStore { return dynamotest.NewStore(t, "") })
	})
}

func bgEngine(t *testing.T, mk storeMaker, p *scripted, hosted tools.Catalog, mut ...func(*Config)) (*Engine, store.ResponseStore, *jobQueue) {
	q := newJobQueue()
	st := mk(t)
	e, _ := newEngine(t, p, hosted, append([]func(*Config){func(c *Config) {
		c.Store = st
		c.Background.Queue = q
		c.Background.PollInterval = time.Millisecond
	}}, mut...)...)
	return e, st, q
}

// Background create → queued; the worker run (driven by the job) completes
// it; the same job delivered twice runs the loop once.
func TestBackgroundCreateRunIdempotent(t *testing.T) { forStores(t, testBackgroundCreateRunIdempotent) }

func testBackgroundCreateRunIdempotent(t *testing.T, mk storeMaker) {
	m := newMock(echoTool, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), text("done", 2, 2))
	e, _, q := bgEngine(t, mk, p, m)
	rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	queued := rec.response(t)
	assert.Equal(t, api.StatusQueued, queued.Status)
	job := <-q.c
	assert.Equal(t, queued.ID, job.ResponseID)

	got, err := e.GetResponse(context.Background(), queued.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusQueued, got.Status)

	require.NoError(t, e.RunBackground(context.Background(), job.ResponseID))
	require.NoError(t, e.RunBackground(context.Background(), job.ResponseID), "redelivery")
	got, err = e.GetResponse(context.Background(), queued.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, []string{"function_call:t", "function_call_output", "message"}, types(got.Output))
	assert.Equal(t, 6, got.Usage.TotalTokens)
	assert.Len(t, p.requests(), 2, "the loop ran once")
	assert.True(t, got.Background)
}

// background+stream follows the worker's events to the end; a resumed
// stream after event N yields exactly N+1..end.
func TestBackgroundStreamAndResume(t *testing.T) { forStores(t, testBackgroundStreamAndResume) }

func testBackgroundStreamAndResume(t *testing.T, mk storeMaker) {
	m := newMock(echoTool, "t")
	p := script(calls(1, 1, call("c1", "t", `{"a":1}`)), text("all done now", 1, 1))
	e, _, q := bgEngine(t, mk, p, m)
	go func() {
		j := <-q.c
		_ = e.RunBackground(context.Background(), j.ResponseID)
	}()
	rec := &rawRecorder{}
	require.NoError(t, e.CreateBackground(context.Background(), decodeReq(t, `{"input":"x","background":true,"stream":true,"tools":[{"type":"lambent:t"}]}`), rec))
	final := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, final.Status)
	all := rec.parsed(t)
	assert.Equal(t, "response.queued", all[1].Type)
	assert.Equal(t, "response.in_progress", all[2].Type)

	const n = 5
	resumed := &rawRecorder{}
	require.NoError(t, e.StreamResponse(context.Background(), final.ID, n, resumed))
	got := resumed.parsed(t)
	require.Len(t, got, len(all)-n-1)
	for i, ev := range got {
		assert.Equal(t, all[n+1+i].Seq, ev.Seq)
		assert.JSONEq(t, string(all[n+1+i].Data), string(ev.Data))
	}
}

// blockingTool is the hosted tool "slow": its one call closes started and
// runs until its context ends.
func blockingTool() (m *mockExec, started chan struct{}) {
	started = make(chan struct{})
	return newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}, "slow"), started
}

// Cancel while a tool runs: the response ends cancelled, stored, with a
// terminal event.
func TestBackgroundCancelWhileToolRuns(t *testing.T) { forStores(t, testBackgroundCancelWhileToolRuns) }

func testBackgroundCancelWhileToolRuns(t *testing.T, mk storeMaker) {
	m, started := blockingTool()
	p := script(calls(1, 1, call("c1", "slow", `{}`)), text("never", 1, 1))
	e, st, q := bgEngine(t, mk, p, m)
	rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:slow"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	done := make(chan error, 1)
	go func() { j := <-q.c; done <- e.RunBackground(context.Background(), j.ResponseID) }()
	<-started
	resp, err := e.CancelResponse(context.Background(), id)
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.Equal(t, api.StatusCancelled, resp.Status)
	stored, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, stored.Response.Status)
	evs, err := st.(store.EventLog).Events(context.Background(), id, -1)
	require.NoError(t, err)
	assert.Equal(t, "response.cancelled", evs[len(evs)-1].Type)
	assert.Len(t, p.requests(), 1)

	// A queued response is cancelled at once.
	rec, err = runBackground(t, e, `{"input":"y","background":true}`)
	require.NoError(t, err)
	<-q.c
	resp, err = e.CancelResponse(context.Background(), rec.response(t).ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, resp.Status)
}

// A five-turn task with a deadline per invocation that fits two model
// calls hands itself over and completes over several invocations, with
// every item, the usage of every turn and its timing: from the first
// invocation's start, the model time of all of them.
func TestBackgroundHandoff(t *testing.T) { forStores(t, testBackgroundHandoff) }

func testBackgroundHandoff(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	m := newMock(echoTool, "t")
	e, _, q := bgEngine(t, mk, fiveTurns(clock), m, func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"input":"five steps","background":true,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	invocations := 0
	var started time.Time
	for len(q.c) > 0 {
		j := <-q.c
		clock.advance(time.Minute) // the job waits in its queue
		if invocations == 0 {
			started = clock.Now()
		}
		invocations++
		ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(40*time.Minute))
		require.NoError(t, e.RunBackground(ctx, j.ResponseID))
		cancel()
	}
	assert.Equal(t, 3, invocations)
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Len(t, got.Output, 9)
	assert.Equal(t, 50, got.Usage.InputTokens)
	assert.Equal(t, 5, got.Usage.OutputTokens)
	assert.Len(t, m.calls(), 4)
	require.NotNil(t, got.Lambent)
	require.NotNil(t, got.Lambent.Timing)
	tm := got.Lambent.Timing
	assert.True(t, started.Truncate(time.Millisecond).Equal(tm.StartedAt), "%v, want %v", tm.StartedAt, started)
	assert.Equal(t, (75 * time.Minute).Milliseconds(), tm.ModelMS, "five model calls of 15 minutes")
	assert.Equal(t, (77 * time.Minute).Milliseconds(), tm.DurationMS, "and two waits in the queue")
}

// Responses started by events (SQS, EventBridge) run with a caller-chosen
// id; a second delivery does not create or run it again.
func TestStartBackgroundIdempotent(t *testing.T) { forStores(t, testStartBackgroundIdempotent) }

func testStartBackgroundIdempotent(t *testing.T, mk storeMaker) {
	p := script(text("hi", 1, 1))
	e, _, _ := bgEngine(t, mk, p, nil)
	req := decodeReq(t, `{"input":"hello"}`)
	id, err := e.StartBackground(context.Background(), req, "resp_event_1")
	require.NoError(t, err)
	assert.Equal(t, "resp_event_1", id)
	_, err = e.StartBackground(context.Background(), decodeReq(t, `{"input":"hello"}`), "resp_event_1")
	require.NoError(t, err)
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Len(t, p.requests(), 1)
	b, _ := json.Marshal(got)
	assert.Contains(t, string(b), `"background":true`)
}

// A worker that dies mid-turn leaves its lease; a redelivery before the
// lease ends does nothing, one after it resumes from the last checkpoint
// (the turns before the crash are kept, not re-run).
func TestBackgroundCrashResumesFromCheckpoint(t *testing.T) {
	forStores(t, testBackgroundCrashResumesFromCheckpoint)
}

func testBackgroundCrashResumesFromCheckpoint(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	crashed := make(chan struct{})
	var slowCalls int
	var mu sync.Mutex
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "slow" {
			mu.Lock()
			slowCalls++
			first := slowCalls == 1
			mu.Unlock()
			if first {
				close(crashed)
				<-ctx.Done() // the invocation dies while the tool runs
				return nil, ctx.Err()
			}
		}
		return &tools.ToolResult{Output: "ok " + c.ID}, nil
	}, "fast", "slow")
	p := script(
		calls(1, 1, call("c1", "fast", `{}`)),
		calls(1, 1, call("c2", "slow", `{}`)),
		calls(1, 1, call("c3", "slow", `{}`)),
		text("done", 1, 1),
	)
	e, st, q := bgEngine(t, mk, p, m, func(c *Config) {
		c.Now = clock.Now
		c.Background.Lease = time.Minute
	})
	rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:fast"},{"type":"lambent:slow"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	<-q.c

	ctx, die := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- e.RunBackground(ctx, id) }()
	<-crashed
	die()
	require.ErrorIs(t, <-errc, context.Canceled)
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusInProgress, got.Status)
	assert.Equal(t, []string{"function_call:fast", "function_call_output"}, types(got.Output), "the checkpoint after turn 1")
	stored, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Empty(t, stored.Job.Owner, "an invocation whose context ended released its lease (releaseLease)")
	// A crash releases nothing: the lease of a worker that died holds.
	stored.Job.Owner, stored.Job.LeaseUntil = "worker_dead", clock.Now().Add(time.Minute)
	require.NoError(t, st.Update(context.Background(), stored, api.StatusInProgress))

	require.NoError(t, e.RunBackground(context.Background(), id), "redelivered within the lease")
	assert.Len(t, p.requests(), 2, "nothing ran while the lease was live")

	clock.advance(2 * time.Minute)
	require.NoError(t, e.RunBackground(context.Background(), id))
	got, err = e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, []string{"function_call:fast", "function_call_output", "function_call:slow", "function_call_output", "message"}, types(got.Output))
	assert.Equal(t, "c3", got.Output[2].CallID)
	assert.Len(t, p.requests(), 4)
	// Usage covers the turns whose items the response keeps: the model call
	// of the crashed turn died with its invocation (before a checkpoint).
	assert.Equal(t, 3, got.Usage.InputTokens)
}

// knownLog is a DynamoDB store that counts its appends: with and without
// the read of the response (store.KnownEventLog), and the expiries passed.
type knownLog struct {
	*dynamodb.Store
	mu       sync.Mutex
	plain    int
	expiries []time.Time
}

func (k *knownLog) AppendEvents(ctx context.Context, id string, evs []store.Event) error {
	k.mu.Lock()
	k.plain++
	k.mu.Unlock()
	return k.Store.AppendEvents(ctx, id, evs)
}

func (k *knownLog) AppendEventsKnown(ctx context.Context, id string, expiresAt time.Time, evs []store.Event) error {
	k.mu.Lock()
	k.expiries = append(k.expiries, expiresAt)
	k.mu.Unlock()
	return k.Store.AppendEventsKnown(ctx, id, expiresAt, evs)
}

// A background run appends the events of its checkpoints and of its
// watcher without the store's read of the response (it has just read or
// written the record), with the record's expiry; every event is still
// there for a stream that resumes from the start.
func TestBackgroundAppendsKnown(t *testing.T) {
	t.Parallel()
	log := &knownLog{Store: dynamotest.NewStore(t, "")}
	m := newMock(echoTool, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), calls(1, 1, call("c2", "t", `{}`)), text("done", 2, 2))
	e, _, q := bgEngine(t, func(*testing.T) store.ResponseStore { return log }, p, m)
	live := &rawRecorder{}
	go func() {
		j := <-q.c
		_ = e.RunBackground(context.Background(), j.ResponseID)
	}()
	require.NoError(t, e.CreateBackground(context.Background(), decodeReq(t, `{"input":"x","background":true,"stream":true,"tools":[{"type":"lambent:t"}]}`), live))
	final := live.checkStream(t)
	require.Equal(t, api.StatusCompleted, final.Status)

	rec, err := log.Get(context.Background(), final.ID)
	require.NoError(t, err)
	log.mu.Lock()
	require.NotEmpty(t, log.expiries, "the checkpoints append without a read")
	for _, exp := range log.expiries {
		require.Equal(t, rec.ExpiresAt, exp)
	}
	log.mu.Unlock()

	all := live.parsed(t)
	resumed := &rawRecorder{}
	require.NoError(t, e.StreamResponse(context.Background(), final.ID, 0, resumed))
	got := resumed.parsed(t)
	require.Len(t, got, len(all)-1)
	for i, ev := range got {
		require.Equal(t, all[1+i].Seq, ev.Seq)
		require.JSONEq(t, string(all[1+i].Data), string(ev.Data))
	}
}

// toolRun is a background response on DynamoDB Local (its client metered)
// whose worker runs, waiting on the blocking tool "slow".
type toolRun struct {
	e     *Engine
	id    string
	meter *ddbmeter.Meter
	// done gets the worker's result.
	done chan error
}

// startToolRun creates the background response of body (a request with
// the tool lambent:slow) and runs its worker until the tool has started.
func startToolRun(t *testing.T, body string) *toolRun {
	t.Helper()
	tr := &toolRun{meter: ddbmeter.New(), done: make(chan error, 1)}
	m, started := blockingTool()
	p := script(calls(1, 1, call("c1", "slow", `{}`)), text("never", 1, 1))
	e, _, q := bgEngine(t, func(t *testing.T) store.ResponseStore {
		return dynamotest.NewStoreWith(t, dynamodb.Config{}, tr.meter.Options)
	}, p, m)
	rec, err := runBackground(t, e, body)
	require.NoError(t, err)
	tr.e, tr.id = e, rec.response(t).ID
	go func() { j := <-q.c; tr.done <- e.RunBackground(context.Background(), j.ResponseID) }()
	<-started
	return tr
}

// polls waits for n more polls of the worker (GetItem calls) and returns
// what DynamoDB served meanwhile.
func (tr *toolRun) polls(n int) ddbmeter.Figures {
	before := tr.meter.Snapshot()
	for tr.meter.Snapshot().Sub(before).Calls["GetItem"] < n {
		time.Sleep(time.Millisecond)
	}
	return tr.meter.Snapshot().Sub(before)
}

// cancel cancels the run, waits for its worker and checks that the run
// ended cancelled. (POST /cancel answers once the run has stopped or after
// its few seconds of waiting, whichever comes first: on a loaded machine
// the worker may stop after that, so the stored response is what tells.)
func (tr *toolRun) cancel(t *testing.T) {
	t.Helper()
	_, err := tr.e.CancelResponse(context.Background(), tr.id)
	require.NoError(t, err)
	require.NoError(t, <-tr.done)
	resp, err := tr.e.GetResponse(context.Background(), tr.id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, resp.Status)
}

// While a background run waits on a tool, the worker's polls for cancel
// requests read the run's small signal item, not the record: on DynamoDB
// each costs at most one read unit (half, eventually consistent), where a
// read of this record's head (~300 KB, incompressible input) costs ~75.
// A cancel request still stops the run through them.
func TestBackgroundPollsReadSignalsNotTheRecord(t *testing.T) {
	t.Parallel()
	big := storetest.RandomText(rand.New(rand.NewPCG(1, 2)), 300_000)
	body, err := json.Marshal(map[string]any{"input": big, "background": true, "tools": []any{map[string]string{"type": "lambent:slow"}}})
	require.NoError(t, err)
	tr := startToolRun(t, string(body))
	during := tr.polls(20)
	gets := during.Calls["GetItem"]
	t.Logf("%d polls of a running run with a 300 KB record: %s", gets, during)
	assert.LessOrEqual(t, during.RCU, float64(gets), "%d polls read %.1f units (%s)", gets, during.RCU, during)
	tr.cancel(t)
}

// Nobody following, a background run appends its events at checkpoints
// only: while its tool runs, its polls write nothing. A follower's note
// (store.RunSignals.Follow) brings the events of the turn in flight to it
// before the tool ends, as they came before the note.
func TestBackgroundAppendsEventsWhileFollowed(t *testing.T) {
	t.Parallel()
	tr := startToolRun(t, `{"input":"x","background":true,"tools":[{"type":"lambent:slow"}]}`)
	during := tr.polls(20)
	assert.Zero(t, during.Calls["PutItem"], "20 polls and nobody following: no append (%s)", during)

	ctx, stopFollowing := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	w := &rawRecorder{}
	go func() { followed <- tr.e.StreamResponse(ctx, tr.id, -1, w) }()
	for !w.has(`"type":"response.output_item.added"`) {
		time.Sleep(time.Millisecond)
	}
	stopFollowing()
	require.NoError(t, <-followed)
	tr.cancel(t)
}

// The stream of a background + stream create notes its follower with the
// response's expiry, as a GET ?stream=true does: the signal item it writes
// is live, so the worker's polls read it (and see the follower) instead of
// finding nothing and reading the whole record.
func TestBackgroundStreamCreateNotesFollowerLive(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		e, st, _ := bgEngine(t, mk, script(text("done", 1, 1)), nil)
		sig, ok := st.(store.RunSignals)
		require.True(t, ok, "both stores keep run signals")
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		w := &rawRecorder{}
		created := make(chan error, 1)
		go func() {
			created <- e.CreateBackground(ctx, decodeReq(t, `{"input":"x","background":true,"stream":true}`), w)
		}()
		for !w.has(`"type":"response.queued"`) {
			time.Sleep(time.Millisecond)
		}
		w.mu.Lock()
		id := gjson.GetBytes(w.events[0], "response.id").String()
		w.mu.Unlock()
		var rs store.RunSignal
		require.Eventually(t, func() bool {
			var err error
			rs, err = sig.Poll(context.Background(), id)
			return err == nil && !rs.FollowedUntil.IsZero()
		}, 10*time.Second, time.Millisecond, "the follower's note is live")
		rec, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, rec.ExpiresAt.Unix(), rs.ExpiresAt.Unix(), "the note expires with the response")
		stop()
		require.NoError(t, <-created)
	})
}

// A background create stores the queued record and appends its first
// events without reading the record back: Create gave it the expiry the
// events take (store.KnownEventLog). So does the worker after its claim
// and its terminal write.
func TestBackgroundAppendsAfterItsWritesWithoutReads(t *testing.T) {
	t.Parallel()
	meter := ddbmeter.New()
	e, _, q := bgEngine(t, func(t *testing.T) store.ResponseStore {
		return dynamotest.NewStoreWith(t, dynamodb.Config{}, meter.Options)
	}, script(text("done", 1, 1)), nil, func(c *Config) { c.Background.PollInterval = time.Hour })
	before := meter.Snapshot() // the table's creation
	rec, err := runBackground(t, e, `{"input":"x","background":true}`)
	require.NoError(t, err)
	created := meter.Snapshot().Sub(before)
	assert.Equal(t, 2, created.Calls["PutItem"], "the record and its first events (%s)", created)
	assert.Zero(t, created.Calls["GetItem"], "no read (%s)", created)
	created = meter.Snapshot()

	id := rec.response(t).ID
	j := <-q.c
	require.NoError(t, e.RunBackground(context.Background(), j.ResponseID))
	run := meter.Snapshot().Sub(created)
	// The worker reads the record once (its job; no poll is due within
	// the hour); every append follows a write of its own.
	assert.Equal(t, 1, run.Calls["GetItem"], "the worker's reads (%s)", run)
	resp, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, resp.Status)
}

// fiveTurns scripts a background run that hands off: four turns of one
// call of tool t, then the answer, each model call taking 15 minutes on
// clock.
func fiveTurns(clock *fakeClock) *scripted {
	slow := clock.taking(15 * time.Minute)
	return script(
		slow(calls(10, 1, call("c1", "t", `{"n":1}`))),
		slow(calls(10, 1, call("c2", "t", `{"n":2}`))),
		slow(calls(10, 1, call("c3", "t", `{"n":3}`))),
		slow(calls(10, 1, call("c4", "t", `{"n":4}`))),
		slow(text("all five done", 10, 1)),
	)
}

// runInvocations runs the jobs of q, each in an invocation of 40 minutes
// on clock, until none is left (continuations included), and returns how
// many ran.
func runInvocations(t *testing.T, e *Engine, q *jobQueue, clock *fakeClock) int {
	t.Helper()
	n := 0
	for len(q.c) > 0 {
		j := <-q.c
		n++
		ctx, cancel := context.WithDeadline(context.Background(), clock.Now().Add(40*time.Minute))
		require.NoError(t, e.RunBackground(ctx, j.ResponseID))
		cancel()
	}
	return n
}

// The turn limit holds over hand-offs in the middle of a turn: a run that
// stops before its turn's tool calls (they do not fit the invocation) has
// made that turn's model call, and its continuation runs the calls without
// making it again. (It counted the turn as not made: every invocation that
// ran the pending calls, one model call and stopped before its calls left
// the count where it was, and the response called the model without end.)
// At the limit, the last turn's pending calls are still handed off and
// run, and the response ends incomplete with max_turns, as with time.
func TestBackgroundTurnLimitAcrossMidTurnHandOffs(t *testing.T) {
	forStores(t, testBackgroundTurnLimitAcrossMidTurnHandOffs)
}

func testBackgroundTurnLimitAcrossMidTurnHandOffs(t *testing.T, mk storeMaker) {
	clock := &fakeClock{t: time.Now()}
	// Invocations have 40 minutes: a model call takes 12, a tool call 15,
	// so each invocation runs the pending call, one model call, and finds
	// no time for that call's tool call.
	slow := clock.taking(12 * time.Minute)
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		clock.advance(15 * time.Minute)
		return &tools.ToolResult{Output: "found"}, nil
	}, "lookup")
	var steps []step
	for i := range 8 {
		steps = append(steps, slow(calls(1, 1, call(fmt.Sprintf("c%d", i), "lookup", `{}`))))
	}
	p := script(steps...)
	e, _, q := bgEngine(t, mk, p, m, func(c *Config) { c.Now = clock.Now; c.Loop.MaxTurns = 3 })
	rec, err := runBackground(t, e, `{"input":"go","background":true,"tools":[{"type":"lambent:lookup"}]}`)
	require.NoError(t, err)
	require.Greater(t, runInvocations(t, e, q, clock), 1, "the run was handed off")
	got := e.mustGet(t, rec.response(t).ID)
	assert.Len(t, p.requests(), 3, "LAMBENT_MAX_TURNS 3")
	assert.Len(t, m.calls(), 3, "the last turn's call ran")
	assert.Equal(t, api.StatusIncomplete, got.Status)
	require.NotNil(t, got.IncompleteDetails)
	assert.Equal(t, api.ReasonMaxTurns, got.IncompleteDetails.Reason)
}

// cutModel is a scripted model whose call number cut sends text (if any)
// and then runs into the invocation's deadline (the clock passes it).
type cutModel struct {
	*scripted
	clock *fakeClock
	cut   int
	text  string
	mu    sync.Mutex
	n     int
}

func (c *cutModel) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	c.mu.Lock()
	c.n++
	n := c.n
	c.mu.Unlock()
	if n != c.cut {
		return c.scripted.Stream(ctx, req, fn)
	}
	if c.text != "" {
		if err := fn(provider.Delta{Kind: provider.DeltaText, Text: c.text}); err != nil {
			return nil, err
		}
	}
	c.clock.advance(time.Hour)
	return nil, context.DeadlineExceeded
}

// A background model call the invocation's deadline cuts after it sent
// output ends the response incomplete with that output (its last item
// incomplete, as OpenResponses has it only in an incomplete response):
// handed off, the next invocation made the call again after the cut text,
// and the completed response's output_text held both. A call cut before it
// sent anything is made again by the next invocation.
func TestBackgroundDeadlineInAModelCall(t *testing.T) {
	for _, c := range []struct {
		name, text  string
		invocations int
		status      api.Status
		types       []string
	}{
		{"after output", "The answer is", 1, api.StatusIncomplete, []string{"function_call:lookup", "function_call_output", "message"}},
		{"before output", "", 2, api.StatusCompleted, []string{"function_call:lookup", "function_call_output", "message"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Now()}
			slow := clock.taking(5 * time.Minute)
			p := &cutModel{scripted: script(slow(calls(1, 1, call("c1", "lookup", `{}`))), slow(text("done", 1, 1))), clock: clock, cut: 2, text: c.text}
			mem := func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }
			e, _, q := bgEngine(t, mem, nil, newMock(echoTool, "lookup"), func(cfg *Config) { cfg.Now = clock.Now; cfg.Provider = p })
			rec, err := runBackground(t, e, `{"input":"go","background":true,"tools":[{"type":"lambent:lookup"}]}`)
			require.NoError(t, err)
			id := rec.response(t).ID
			assert.Equal(t, c.invocations, runInvocations(t, e, q, clock))
			got := e.mustGet(t, id)
			assert.Equal(t, c.status, got.Status)
			assert.Equal(t, c.types, types(got.Output))
			last := got.Output[len(got.Output)-1]
			if c.text != "" {
				assert.Equal(t, api.ItemIncomplete, last.Status)
				assert.Equal(t, api.ReasonDeadline, got.IncompleteDetails.Reason)
				assert.Equal(t, c.text, outputText(got))
			} else {
				assert.Equal(t, "done", outputText(got))
			}
			raw := &rawRecorder{}
			require.NoError(t, e.StreamResponse(context.Background(), id, -1, raw))
			raw.checkStream(t)
		})
	}
}
