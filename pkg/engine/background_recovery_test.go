package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// A worker dies in the middle of a turn while a client follows the run: the
// watcher has appended the turn's events past the last checkpoint's
// NextSeq. The redelivered run numbers its events after the log's last
// (resumeSeq), so a follower resuming from the last event it got receives
// the rest, the terminal event last; numbered from NextSeq again, its
// shorter turn ended below what the follower had, which then never got a
// terminal event.
func TestBackgroundResumedRunNumbersAfterTheLog(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		clock := &fakeClock{t: time.Now()}
		crashed := make(chan struct{})
		var once sync.Once
		m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
			once.Do(func() { close(crashed) })
			<-ctx.Done()
			return nil, ctx.Err()
		}, "slow")
		long := strings.Repeat("word ", 30)
		p := script(
			step{res: provider.Result{Text: long, ToolCalls: []api.Item{call("c1", "slow", `{}`)}, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: 1, OutputTokens: 1}}},
			text("done", 1, 1),
		)
		e, st, q := bgEngine(t, mk, p, m, func(c *Config) {
			c.Now = clock.Now
			c.Background.Lease = time.Minute
		})
		rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:slow"}]}`)
		require.NoError(t, err)
		id := rec.response(t).ID
		<-q.c
		if sig, ok := st.(store.RunSignals); ok { // a client follows the run
			stored, err := st.Get(context.Background(), id)
			require.NoError(t, err)
			require.NoError(t, sig.Follow(context.Background(), id, clock.Now().Add(time.Hour), stored.ExpiresAt))
		}
		ctx, die := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- e.RunBackground(ctx, id) }()
		<-crashed
		log := st.(store.EventLog)
		var seen int64 // the last seq a live follower got before the crash
		require.Eventually(t, func() bool {
			evs, err := log.Events(context.Background(), id, -1)
			if err != nil || len(evs) == 0 {
				return false
			}
			seen = evs[len(evs)-1].Seq
			return evs[len(evs)-1].Type == "response.output_item.done" && seen > 30
		}, 10*time.Second, time.Millisecond)
		die()
		require.ErrorIs(t, <-errc, context.Canceled)

		clock.advance(2 * time.Minute) // the lease ends; the job is redelivered
		require.NoError(t, e.RunBackground(context.Background(), id))
		got, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, api.StatusCompleted, got.Response.Status)
		t.Logf("follower had seq %d; terminal event stored at seq %d", seen, got.Job.NextSeq-1)

		terminalLast(t, log, id)
		w := &rawRecorder{}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, e.StreamResponse(sctx, id, seen, w))
		var types []string
		for _, ev := range w.events {
			types = append(types, gjson.GetBytes(ev, "type").String())
		}
		assert.Contains(t, types, "response.completed", "the follower resuming after seq %d gets the terminal event; got %v", seen, types)
	})
}

// cancelBeforeHandoff is a memory store on which a POST /cancel lands
// just before the worker's hand-off write (the loop has ended on its
// deadline, its watcher is stopped).
type cancelBeforeHandoff struct {
	*store.Memory
	once sync.Once
}

func (s *cancelBeforeHandoff) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	if rec.Job != nil && rec.Job.Owner == "" && rec.Job.Turns > 0 && rec.Response.Status == api.StatusInProgress {
		s.once.Do(func() {
			cur, err := s.Memory.Get(ctx, rec.Response.ID)
			if err == nil {
				cur.Job.CancelRequested = true
				_ = s.Memory.Update(ctx, cur, api.StatusInProgress)
			}
		})
	}
	return s.Memory.Update(ctx, rec, expect)
}

// A cancel request stored between the last checkpoint and the hand-off's
// write (the loop ended near the invocation's deadline) ends the run there,
// cancelled: the hand-off's conflicting write reads the record and finds
// it. Before, the hand-off failed and left the record in_progress, leased
// by this worker and flagged for cancel, which no redelivery within the
// lease would end (and a local worker never retries).
func TestBackgroundCancelAtHandOff(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	slow := clock.taking(15 * time.Minute)
	m := newMock(echoTool, "t")
	p := script(
		slow(calls(1, 1, call("c1", "t", `{}`))),
		slow(calls(1, 1, call("c2", "t", `{}`))),
		slow(calls(1, 1, call("c3", "t", `{}`))),
		text("done", 1, 1),
	)
	st := &cancelBeforeHandoff{Memory: store.NewMemory(store.MemoryConfig{})}
	e, _, q := bgEngine(t, func(*testing.T) store.ResponseStore { return st }, p, m, func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	assert.Equal(t, 1, runInvocations(t, e, q, clock), "no continuation is enqueued")
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, got.Status, "the cancel request ends the run at its hand-off")
	terminalLast(t, st, id)
}

// cancelThenGetFails is a memory store on which a POST /cancel lands just
// before the worker's first checkpoint after its claim, and the worker's
// next read of the record fails once (a throttled or timed-out GetItem).
type cancelThenGetFails struct {
	*store.Memory
	mu       sync.Mutex
	armed    bool
	failNext bool
}

func (s *cancelThenGetFails) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	s.mu.Lock()
	fire := s.armed && rec.Job != nil && rec.Job.Owner != "" && rec.Job.Turns > 0
	if fire {
		s.armed = false
	}
	s.mu.Unlock()
	if fire {
		cur, err := s.Memory.Get(ctx, rec.Response.ID)
		if err == nil {
			cur.Job.CancelRequested = true
			_ = s.Memory.Update(ctx, cur, api.StatusInProgress)
		}
		s.mu.Lock()
		s.failNext = true
		s.mu.Unlock()
	}
	return s.Memory.Update(ctx, rec, expect)
}

func (s *cancelThenGetFails) Get(ctx context.Context, id string) (*store.Record, error) {
	s.mu.Lock()
	fail := s.failNext
	s.failNext = false
	s.mu.Unlock()
	if fail {
		return nil, context.DeadlineExceeded
	}
	return s.Memory.Get(ctx, id)
}

// A checkpoint that conflicts with a cancel request and then fails to read
// the record once (a throttled or timed-out read) reads it again and ends
// the run cancelled. Before, any failed read was taken for a lease another
// worker had taken over: the run stopped, RunBackground returned nil (the
// message deleted) and the response stayed in_progress with nobody to end
// it.
func TestBackgroundCheckpointConflictReadRetried(t *testing.T) {
	m := newMock(echoTool, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), calls(1, 1, call("c2", "t", `{}`)), text("done", 1, 1))
	st := &cancelThenGetFails{Memory: store.NewMemory(store.MemoryConfig{})}
	e, _, q := bgEngine(t, func(*testing.T) store.ResponseStore { return st }, p, m,
		func(c *Config) { c.Background.PollInterval = time.Hour })
	rec, err := runBackground(t, e, `{"input":"x","background":true,"tools":[{"type":"lambent:t"}]}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	<-q.c
	st.mu.Lock()
	st.armed = true
	st.mu.Unlock()
	require.NoError(t, e.RunBackground(context.Background(), id))
	got, err := st.Memory.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCancelled, got.Response.Status, "the cancel request ends the run")
}

// A model call longer than an invocation is cut at the invocation's
// deadline; an invocation that finished no model call and ran no tool
// does not hand off (its continuation would do the same, for ever, past
// LAMBENT_MAX_TURNS, each one billed): the response ends incomplete.
func TestBackgroundNoHandOffWithoutProgress(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	never := func() step {
		return step{err: context.DeadlineExceeded, hook: func(context.Context) { clock.advance(50 * time.Minute) }}
	}
	p := script(never(), never(), never())
	e, _, q := bgEngine(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }, p, nil,
		func(c *Config) { c.Now = clock.Now })
	rec, err := runBackground(t, e, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	assert.Equal(t, 1, runInvocations(t, e, q, clock), "no continuation")
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusIncomplete, got.Status)
	assert.Len(t, p.requests(), 1)
}

// terminalLast checks that the terminal event of response id is the last
// event of its log.
func terminalLast(t *testing.T, log store.EventLog, id string) {
	t.Helper()
	all, err := log.Events(context.Background(), id, -1)
	require.NoError(t, err)
	for i, ev := range all {
		if api.IsTerminalEvent(ev.Type) {
			assert.Equal(t, len(all)-1, i, "the terminal event (seq %d) is the log's last; %d events follow it", ev.Seq, len(all)-1-i)
		}
	}
}

// A worker (A) that runs past its lease in the middle of a turn while
// another (B) claims the response and runs it to its end: A's events of
// that turn, appended after B's claim, are refused (store.ErrLeaseLost)
// and A stops, so the log holds B's run as B wrote it. (They were
// appended, numbered as B numbered its own, and replaced B's events.)
func TestBackgroundStaleWorkerAppendsRefused(t *testing.T) {
	forStores(t, func(t *testing.T, mk storeMaker) {
		clock := &fakeClock{t: time.Now()}
		st := mk(t)
		blocked, release := make(chan struct{}), make(chan struct{})
		slow := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
			close(blocked)
			<-release
			return &tools.ToolResult{Output: "slow result"}, nil
		}, "slow")
		worker := func(id string, p *scripted) *Engine {
			e, _ := newEngine(t, p, slow, func(c *Config) {
				c.Store, c.Now, c.Background.WorkerID = st, clock.Now, id
				c.Background.Queue = newJobQueue()
				c.Background.PollInterval = time.Millisecond
				c.Background.Lease = time.Minute
			})
			return e
		}
		a := worker("worker-a", script(
			step{res: provider.Result{Text: "A thinks", ToolCalls: []api.Item{call("c1", "slow", `{}`)}, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: 1, OutputTokens: 1}}},
			text("A's answer", 1, 1)))
		b := worker("worker-b", script(text("B's answer", 1, 1)))
		rec, err := runBackground(t, a, `{"input":"x","background":true,"tools":[{"type":"lambent:slow"}]}`)
		require.NoError(t, err)
		id := rec.response(t).ID
		if sig, ok := st.(store.RunSignals); ok { // a client follows the run
			stored, err := st.Get(context.Background(), id)
			require.NoError(t, err)
			require.NoError(t, sig.Follow(context.Background(), id, clock.Now().Add(time.Hour), stored.ExpiresAt))
		}
		errA := make(chan error, 1)
		go func() { errA <- a.RunBackground(context.Background(), id) }()
		<-blocked
		log := st.(store.EventLog)
		require.Eventually(t, func() bool { // A's watcher appended its turn
			evs, err := log.Events(context.Background(), id, -1)
			return err == nil && len(evs) > 0 && evs[len(evs)-1].Type == "response.output_item.done"
		}, 10*time.Second, time.Millisecond)

		clock.advance(2 * time.Minute) // A's lease ends; B claims and finishes
		require.NoError(t, b.RunBackground(context.Background(), id))
		byB, err := log.Events(context.Background(), id, -1)
		require.NoError(t, err)
		close(release) // A's tool returns: A emits the rest of its turn
		require.NoError(t, <-errA)

		after, err := log.Events(context.Background(), id, -1)
		require.NoError(t, err)
		require.Len(t, after, len(byB))
		for i := range byB {
			assert.JSONEq(t, string(byB[i].Data), string(after[i].Data), "event %d (seq %d) as B wrote it", i, byB[i].Seq)
		}
		terminalLast(t, log, id)
		got, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, api.StatusCompleted, got.Response.Status)
	})
}

// A worker (A) whose lease ran out in its last model call, while another
// claim of the same process (B: one WorkerID, as the local pool's workers
// share) took the response over, must not store its end over B's run:
// its terminal update conflicts with B's claim, and the retry that is
// meant for a moved flag (a cancel request) took B's claim, being of the
// same WorkerID, for A's own, and completed the response with A's answer
// while B ran it.
func TestBackgroundStaleClaimOfSameWorkerDoesNotFinish(t *testing.T) {
	clock := &fakeClock{t: time.Now()}
	st := store.NewMemory(store.MemoryConfig{})
	aIn, aOut := make(chan struct{}), make(chan struct{})
	bIn, bOut := make(chan struct{}), make(chan struct{})
	blockingText := func(answer string, in, out chan struct{}) *scripted {
		s := text(answer, 1, 1)
		s.hook = func(context.Context) { close(in); <-out }
		return script(s)
	}
	worker := func(p *scripted) *Engine {
		e, _ := newEngine(t, p, nil, func(c *Config) {
			c.Store, c.Now, c.Background.WorkerID = st, clock.Now, "worker-1"
			c.Background.Queue = newJobQueue()
			c.Background.PollInterval = time.Hour // no watcher append
			c.Background.Lease = time.Minute
		})
		return e
	}
	a := worker(blockingText("A's answer", aIn, aOut))
	b := worker(blockingText("B's answer", bIn, bOut))
	rec, err := runBackground(t, a, `{"input":"x","background":true}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { errA <- a.RunBackground(context.Background(), id) }()
	<-aIn
	clock.advance(2 * time.Minute) // A's lease ends; B claims
	go func() { errB <- b.RunBackground(context.Background(), id) }()
	<-bIn
	close(aOut) // A's model answers: A ends its run
	require.NoError(t, <-errA)
	got, err := st.Get(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusInProgress, got.Response.Status, "B still runs the response")
	close(bOut)
	require.NoError(t, <-errB)
	got, err = st.Get(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, api.StatusCompleted, got.Response.Status)
	assert.Contains(t, fmt.Sprint(got.Response.Output), "B's answer", "the run of the claim holding the lease ends the response")
}
