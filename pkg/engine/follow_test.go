package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// gatedModel streams "Hello " at once, then waits for release before the
// rest of its answer: a model turn in flight.
type gatedModel struct {
	release chan struct{}
}

func (g *gatedModel) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return nil, errors.New("gatedModel: only Stream")
}

func (g *gatedModel) Stream(ctx context.Context, _ *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	if err := fn(provider.Delta{Kind: provider.DeltaText, Text: "Hello "}); err != nil {
		return nil, err
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := fn(provider.Delta{Kind: provider.DeltaText, Text: "world."}); err != nil {
		return nil, err
	}
	return &provider.Result{Text: "Hello world.", FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 1, OutputTokens: 2}}, nil
}

// followRecorder records forwarded events and comments, and signals each.
type followRecorder struct {
	rawRecorder
	mu       sync.Mutex
	comments []string
	notify   chan struct{}
}

func newFollowRecorder() *followRecorder { return &followRecorder{notify: make(chan struct{}, 1)} }

func (f *followRecorder) signal() {
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

func (f *followRecorder) WriteRawEvent(typ string, data []byte) error {
	err := f.rawRecorder.WriteRawEvent(typ, data)
	f.signal()
	return err
}

func (f *followRecorder) WriteComment(text string) error {
	f.mu.Lock()
	f.comments = append(f.comments, text)
	f.mu.Unlock()
	f.signal()
	return nil
}

func (f *followRecorder) commentList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.comments...)
}

// await waits until cond holds, failing the test if it never does.
func (f *followRecorder) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	limit := time.After(time.Minute)
	for !cond() {
		select {
		case <-f.notify:
		case <-limit:
			t.Fatalf("the follower never got %s", what)
		}
	}
}

// has reports whether an event of type typ was forwarded (safe while the
// follower writes).
func (f *followRecorder) has(t *testing.T, typ string) bool {
	f.recorder.mu.Lock()
	snap := &recorder{events: append([]json.RawMessage(nil), f.events...)}
	f.recorder.mu.Unlock()
	for _, ev := range snap.parsed(t) {
		if ev.Type == typ {
			return true
		}
	}
	return false
}

// A follower sees a model turn as it streams (the worker appends its
// events every PollInterval, not only at checkpoints) and gets keep-alives
// while the worker is quiet; the stream ends with the terminal event.
func TestFollowerSeesProgressAndKeepAlives(t *testing.T) {
	forStores(t, testFollowerSeesProgressAndKeepAlives)
}

func testFollowerSeesProgressAndKeepAlives(t *testing.T, mk storeMaker) {
	model := &gatedModel{release: make(chan struct{})}
	q := newJobQueue()
	st := mk(t)
	e, _ := newEngine(t, model, nil, func(c *Config) {
		c.Store, c.Background.Queue = st, q
		c.Background.PollInterval = 5 * time.Millisecond
	})
	rec, err := runBackground(t, e, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	<-q.c
	worker := make(chan error, 1)
	go func() { worker <- e.RunBackground(context.Background(), id) }()

	f := newFollowRecorder()
	// The keep-alives are the pacing's the HTTP transport gives its writer.
	w := paced(t, f, pacing.Config{KeepAlive: time.Millisecond})
	followed := make(chan error, 1)
	go func() { followed <- e.StreamResponse(context.Background(), id, -1, w) }()
	f.await(t, "the first delta while the model call is in flight", func() bool { return f.has(t, api.EventOutputTextDelta) })
	n := len(f.commentList())
	f.await(t, "a keep-alive while the worker is quiet", func() bool { return len(f.commentList()) > n })
	for _, c := range f.commentList() {
		assert.Equal(t, "keep-alive", c)
	}
	assert.False(t, f.has(t, api.EventResponseCompleted))

	close(model.release)
	require.NoError(t, <-worker)
	require.NoError(t, <-followed)
	final := f.checkStream(t)
	assert.Equal(t, api.StatusCompleted, final.Status)
	assert.Equal(t, "Hello world.", final.Output[0].Content[0].Text)
}

// At the deadline of its own invocation a follower ends with the
// documented resume comment and no terminal event; resuming with
// starting_after from it gives exactly the rest. Resuming at or past the
// terminal event of a finished response ends at once with no event.
func TestFollowerDeadlineAndResume(t *testing.T) { forStores(t, testFollowerDeadlineAndResume) }

func testFollowerDeadlineAndResume(t *testing.T, mk storeMaker) {
	model := &gatedModel{release: make(chan struct{})}
	q := newJobQueue()
	st := mk(t)
	mkEngine := func(poll time.Duration) *Engine {
		e, _ := newEngine(t, model, nil, func(c *Config) {
			c.Store, c.Background.Queue = st, q
			c.Background.PollInterval = poll
			// The follower's context below has a deadline within this
			// reserve: it must end at once, with what the log holds.
			c.Loop.DeadlineReserve = time.Hour
		})
		return e
	}
	e := mkEngine(5 * time.Millisecond)
	rec, err := runBackground(t, e, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	<-q.c
	worker := make(chan error, 1)
	go func() { worker <- e.RunBackground(context.Background(), id) }()

	// Wait until the in-flight turn's first delta is in the log (the
	// worker appends as events come while someone follows: note one, as a
	// follower does).
	if sig, ok := st.(store.RunSignals); ok {
		stored, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		require.NoError(t, sig.Follow(context.Background(), id, time.Now().Add(time.Hour), stored.ExpiresAt))
	}
	logged := func() bool {
		evs, err := st.(store.EventLog).Events(context.Background(), id, -1)
		require.NoError(t, err)
		for _, ev := range evs {
			if ev.Type == api.EventOutputTextDelta {
				return true
			}
		}
		return false
	}
	for !logged() {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := newFollowRecorder()
	require.NoError(t, e.StreamResponse(ctx, id, -1, first))
	evs := first.parsed(t)
	require.NotEmpty(t, evs)
	for _, ev := range evs {
		assert.False(t, api.IsTerminalEvent(ev.Type), "no terminal event before the response ends: %s", ev.Type)
	}
	comments := first.commentList()
	require.Len(t, comments, 1)
	last := evs[len(evs)-1].Seq
	assert.Equal(t, ResumeComment+strconv.FormatInt(last, 10), comments[0])

	close(model.release)
	require.NoError(t, <-worker)
	after, err := strconv.ParseInt(strings.TrimPrefix(comments[0], ResumeComment), 10, 64)
	require.NoError(t, err)
	rest := newFollowRecorder()
	require.NoError(t, e.StreamResponse(context.Background(), id, after, rest))
	whole := &followRecorder{}
	whole.events = append(append(whole.events, first.events...), rest.events...)
	final := whole.checkStream(t)
	assert.Equal(t, api.StatusCompleted, final.Status)
	end := whole.parsed(t)[len(whole.events)-1].Seq

	// Past the end: nothing, at once (an engine polling once an hour
	// would otherwise hang the test).
	slow := mkEngine(time.Hour)
	for _, from := range []int64{end, end + 1, end + 1000} {
		past := newFollowRecorder()
		require.NoError(t, slow.StreamResponse(context.Background(), id, from, past))
		assert.Empty(t, past.events, "starting_after=%d", from)
		assert.Empty(t, past.commentList())
	}
	all := newFollowRecorder()
	require.NoError(t, slow.StreamResponse(context.Background(), id, end-1, all))
	require.Len(t, all.events, 1)
	assert.Equal(t, api.EventResponseCompleted, all.parsed(t)[0].Type)
}

// failTerminalAppends is a store whose event log refuses batches holding a
// terminal event: a worker that dies between storing the terminal state
// and appending its last events.
type failTerminalAppends struct {
	store.ResponseStore
	log store.EventLog
}

func (f failTerminalAppends) AppendEvents(ctx context.Context, id string, evs []store.Event) error {
	for _, ev := range evs {
		if api.IsTerminalEvent(ev.Type) {
			return errors.New("event log unavailable")
		}
	}
	return f.log.AppendEvents(ctx, id, evs)
}

func (f failTerminalAppends) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	return f.log.Events(ctx, id, after)
}

// A finished response whose terminal event never reached the log still
// ends its followers' streams: with the terminal event as it would have
// been stored, rebuilt from the record.
func TestFollowerRebuildsMissingTerminalEvent(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		st := mk(t)
		q := newJobQueue()
		e, _ := newEngine(t, script(text("done", 1, 1)), nil, func(c *Config) {
			c.Store, c.Background.Queue = failTerminalAppends{ResponseStore: st, log: st.(store.EventLog)}, q
			c.Background.PollInterval = time.Millisecond
		})
		rec, err := runBackground(t, e, `{"input":"x","background":true}`)
		require.NoError(t, err)
		id := rec.response(t).ID
		<-q.c
		require.NoError(t, e.RunBackground(context.Background(), id))
		stored, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, api.StatusCompleted, stored.Response.Status)

		f := newFollowRecorder()
		require.NoError(t, e.StreamResponse(context.Background(), id, -1, f))
		evs := f.parsed(t)
		last := evs[len(evs)-1]
		assert.Equal(t, api.EventResponseCompleted, last.Type)
		assert.Equal(t, stored.Job.NextSeq-1, last.Seq)
		for _, ev := range evs[:len(evs)-1] {
			assert.Less(t, ev.Seq, last.Seq)
		}
	})
}

// pubRecorder records published responses.
type pubRecorder struct {
	mu   sync.Mutex
	pubs []string // "<id> <status>"
}

func (p *pubRecorder) Publish(_ context.Context, r *api.Response) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pubs = append(p.pubs, r.ID+" "+string(r.Status))
	return nil
}

func (p *pubRecorder) of(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range p.pubs {
		if strings.HasPrefix(s, id+" ") {
			out = append(out, s)
		}
	}
	return out
}

// Every terminal background state is published exactly once, by whoever
// stored it: the gateway cancelling a queued response, or the worker; and
// the log holds exactly one terminal event, the stored state's. A cancel
// racing the worker's claim is either a cancel of the queued response (the
// worker then does nothing) or a cancel request the worker obeys.
func TestBackgroundTerminalPublishedOnce(t *testing.T) {
	forStores(t, testBackgroundTerminalPublishedOnce)
}

func testBackgroundTerminalPublishedOnce(t *testing.T, mk storeMaker) {
	st := mk(t)
	pub := &pubRecorder{}
	q := newJobQueue()
	cfg := func(worker string) func(*Config) {
		return func(c *Config) {
			c.Store, c.Background.Queue, c.Background.Publisher, c.Background.WorkerID = st, q, pub, worker
			c.Background.PollInterval = time.Millisecond
			c.Background.CancelWait = time.Minute
		}
	}
	steps := make([]step, 0, 64)
	for range 64 {
		steps = append(steps, text("done", 1, 1))
	}
	model := script(steps...)
	gateway, _ := newEngine(t, model, nil, cfg("gateway"))
	worker, _ := newEngine(t, model, nil, cfg("worker"))

	check := func(id string) api.Status {
		t.Helper()
		stored, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		require.True(t, stored.Response.Status.Terminal(), "%s: %s", id, stored.Response.Status)
		assert.Equal(t, []string{id + " " + string(stored.Response.Status)}, pub.of(id), "published once, as stored")
		evs, err := st.(store.EventLog).Events(context.Background(), id, -1)
		require.NoError(t, err)
		var terminal []string
		for _, ev := range evs {
			if api.IsTerminalEvent(ev.Type) && ev.Seq < stored.Job.NextSeq {
				terminal = append(terminal, fmt.Sprintf("%d %s", ev.Seq, ev.Type))
			}
		}
		assert.Equal(t, []string{fmt.Sprintf("%d %s", stored.Job.NextSeq-1, api.TerminalEvent(stored.Response.Status))}, terminal)
		return stored.Response.Status
	}

	// A queued response cancelled by the gateway; the job delivered later
	// does nothing.
	rec, err := runBackground(t, gateway, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	<-q.c
	resp, err := gateway.CancelResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, resp.Status)
	require.NoError(t, worker.RunBackground(context.Background(), id))
	assert.Equal(t, api.StatusCancelled, check(id))

	// A response the worker completes.
	rec, err = runBackground(t, gateway, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id = rec.response(t).ID
	<-q.c
	require.NoError(t, worker.RunBackground(context.Background(), id))
	require.NoError(t, worker.RunBackground(context.Background(), id), "redelivery")
	assert.Equal(t, api.StatusCompleted, check(id))

	// Cancel racing the claim.
	rounds := 12
	if strings.HasSuffix(t.Name(), "dynamodb") {
		rounds = 4
	}
	seen := map[api.Status]int{}
	for range rounds {
		rec, err := runBackground(t, gateway, `{"input":"x","background":true}`)
		require.NoError(t, err)
		id := rec.response(t).ID
		<-q.c
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			assert.NoError(t, worker.RunBackground(context.Background(), id))
		}()
		go func() {
			defer wg.Done()
			if _, err := gateway.CancelResponse(context.Background(), id); err != nil {
				var ae *api.Error
				require.ErrorAs(t, err, &ae, "a cancel that comes too late is a 400")
				assert.Equal(t, 400, ae.Status)
			}
		}()
		wg.Wait()
		seen[check(id)]++
	}
	t.Logf("terminal states of the races: %v", seen)
}

// A followed stream (GET ?stream=true) takes a slot of its tenant's
// in-flight cap while it is open, as a create does: one tenant could open
// any number of them, each polling the store. Another tenant is not
// affected.
func TestFollowersCountInFlight(t *testing.T) {
	q := newJobQueue()
	e, _ := newEngine(t, script(), nil, func(c *Config) {
		c.Store, c.Background.Queue = store.NewMemory(store.MemoryConfig{}), q
		c.Background.PollInterval = 5 * time.Millisecond
		c.Limits.TenantInFlight = 2
	})
	acme := tenant.With(context.Background(), "acme")
	rec := &recorder{}
	require.NoError(t, e.CreateBackground(acme, decodeReq(t, `{"input":"x","background":true}`), rec))
	id := rec.response(t).ID
	<-q.c // queued: nothing runs it, the followers wait
	ctx, stop := context.WithCancel(acme)
	done := make(chan error, 2)
	for range 2 {
		f := newFollowRecorder()
		go func() { done <- e.StreamResponse(ctx, id, -1, f) }()
		f.await(t, "the follower streams", func() bool { return f.has(t, api.EventResponseCreated) })
	}
	// Before the cap it would follow until its context ends.
	third, cancel := context.WithTimeout(acme, 5*time.Second)
	defer cancel()
	err := e.StreamResponse(third, id, -1, newFollowRecorder())
	var ae *api.Error
	require.ErrorAs(t, err, &ae, "a third follower is over the cap")
	assert.Equal(t, http.StatusTooManyRequests, ae.Status)
	other := &recorder{}
	require.NoError(t, e.CreateBackground(tenant.With(context.Background(), "other"), decodeReq(t, `{"input":"y","background":true}`), other), "another tenant is not affected")
	stop()
	for range 2 {
		<-done
	}
	// The slots are free again.
	require.NoError(t, e.CreateBackground(acme, decodeReq(t, `{"input":"z","background":true}`), &recorder{}))
}
