package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// The worker's side of a background response (RunBackground): claim it
// under a lease, run the loop with checkpoints (claim) while a watcher
// appends events and polls for cancel requests, hand off near the
// invocation's deadline, and store how it ended (finishBackground).

// eventBuffer collects events between checkpoints.
type eventBuffer struct {
	mu  sync.Mutex
	evs []store.Event
}

func (b *eventBuffer) WriteEvent(ev *api.StreamEvent) error {
	data, err := wirejson.Marshal(ev.Wire())
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.evs = append(b.evs, store.Event{Seq: ev.SequenceNumber, Type: ev.Type, Data: data})
	b.mu.Unlock()
	return nil
}

func (b *eventBuffer) WriteResponse(*api.Response) error { return nil }

func (b *eventBuffer) take() []store.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs := b.evs
	b.evs = nil
	return evs
}

// restore puts back events taken but not stored, before those written since.
func (b *eventBuffer) restore(evs []store.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evs = append(evs, b.evs...)
}

// RunBackground runs (or resumes) the background response id: the worker's
// entry point. It is idempotent: a response that is finished, cancelled or
// leased by a live worker is left alone. Near the invocation deadline it
// checkpoints, releases its lease and enqueues its own continuation. Its
// log lines, and the error a failure stores, carry the request id of the
// request that created the response (that ctx carries otherwise, when it
// was created before request ids were kept). The run holds a slot of its
// tenant's in-flight cap, even past the cap (its create was admitted), so
// that the tenant's next creates on this engine wait for it.
func (e *Engine) RunBackground(ctx context.Context, id string) error {
	log := e.eventLog()
	if e.cfg.Store == nil || log == nil {
		return errBackgroundUnavailable()
	}
	defer e.inflight.leave(e.inflight.hold(ctx))
	rec, err := e.cfg.Store.Get(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			e.log.WarnContext(ctx, "background job for an unknown response", "response_id", id)
			return nil
		}
		return fmt.Errorf("engine: load %s: %w", id, err)
	}
	job := rec.Job
	if job == nil || rec.Response.Status.Terminal() {
		return nil
	}
	if job.RequestID != "" {
		// The response's log lines carry the id of the request that
		// created it.
		ctx = requestid.With(ctx, job.RequestID)
	} else {
		ctx, _ = requestid.Ensure(ctx)
	}
	now := e.cfg.Now()
	if rec.Response.Status == api.StatusInProgress && job.Owner != "" && now.Before(job.LeaseUntil) {
		e.log.InfoContext(ctx, "background response leased by another worker", "response_id", id, "owner", job.Owner)
		return nil
	}
	req, err := e.openSecrets(ctx, job.Request, job.Secrets, id)
	if err != nil {
		se := api.ServerError(err, "The worker could not open the request's sealed secrets.")
		se.Code = "secrets_unavailable"
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, se))
	}
	// The request passed the limits when it was queued; they may have been
	// lowered since.
	if err := e.checkRequest(req); err != nil {
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
	}
	r := &run{req: req, resp: rec.Response, history: rec.Context, input: rec.Input, turns: job.Turns, cut: rec.Cut,
		tools: toolset{mcpItems: e.mcpItems(), hostedCalls: job.HostedCalls}}
	r.resumeCount(rec.Rendered)
	if rec.Response.Conversation != nil {
		if err := e.resumeConversation(ctx, r); err != nil {
			return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
		}
	}
	if err := r.resolveTools(e); err != nil {
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
	}
	// As a create checks what its model call sees, once its conversation is
	// resolved: the limits may have changed, and the conversation may hold
	// items added since (its lock lapsed while it was queued).
	if err := e.openView(ctx, r); err != nil {
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
	}
	seq, err := e.resumeSeq(ctx, rec)
	if err != nil {
		return e.finishedElsewhere(ctx, id, err)
	}
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true, seq: seq}
	r.budget = newBudget(ctx, e.cfg.Now, e.cfg.Loop.DeadlineReserve)
	expect := rec.Response.Status
	claimed := *rec
	cj := *job
	cj.Owner, cj.LeaseUntil, cj.Invocations = e.cfg.Background.WorkerID, now.Add(e.cfg.Background.Lease), job.Invocations+1
	cj.Claim = api.NewID("claim_")
	claimed.Job = &cj
	resp := rec.Response.Clone()
	resp.Status = api.StatusInProgress
	claimed.Response = resp
	r.resp = resp
	if expect == api.StatusQueued {
		r.em.lifecycle(api.EventResponseInProgress, resp)
	}
	if job.CancelRequested {
		return e.finishedElsewhere(ctx, id, e.finishBackground(ctx, r, &claimed, expect, buf, outcome{status: api.StatusCancelled}))
	}
	cj.NextSeq = r.em.seq
	if err := e.cfg.Store.Update(ctx, &claimed, expect); err != nil {
		if errors.Is(err, store.ErrConflict) {
			e.log.InfoContext(ctx, "background response claimed concurrently", "response_id", id)
			return nil
		}
		return e.finishedElsewhere(ctx, id, fmt.Errorf("engine: claim %s: %w", id, err))
	}
	if err := e.appendClaimed(ctx, &claimed, claimed.ExpiresAt, buf.take()); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return e.finishedElsewhere(ctx, id, errFinishedElsewhere)
		}
		e.releaseLease(ctx, &claimed)
		return e.finishedElsewhere(ctx, id, fmt.Errorf("engine: events of %s: %w", id, err))
	}
	err = e.runClaimed(ctx, r, &claimed, buf)
	if err != nil && !errors.Is(err, errFinishedElsewhere) && !errors.Is(err, store.ErrNotFound) {
		e.releaseLease(ctx, &claimed)
	}
	return e.finishedElsewhere(ctx, id, err)
}

// releaseLease gives up this worker's lease on rec (as last stored) when
// its run stops without an end (the invocation ended, a store write
// failed) and the job is to be delivered again: a retry of an EventBridge
// event or an asynchronous invocation comes within minutes, inside the
// lease, and would find the response leased and do nothing, leaving it
// unfinished. Released, the retry resumes it from its last checkpoint.
// Best effort: a crash leaves the lease to expire.
func (e *Engine) releaseLease(ctx context.Context, rec *store.Record) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	next := *rec
	j := *rec.Job
	unlease(&j)
	next.Job = &j
	if err := e.cfg.Store.Update(sctx, &next, rec.Response.Status); err != nil {
		e.log.WarnContext(ctx, "releasing the lease failed: it expires", "response_id", rec.Response.ID, "err", err)
		return
	}
	*rec = next
}

// unlease clears the lease of j: no worker holds it.
func unlease(j *store.Job) {
	j.Owner, j.LeaseUntil, j.Claim = "", time.Time{}, ""
}

// appendClaimed appends evs of the run this worker claimed as rec (its
// record as last stored), expiring at expiresAt. Before the last tenth of
// its lease no other worker can have claimed the response (a claim waits
// for the lease's end), and the append is appendKnown's; from then on,
// when the store can (store.ClaimedEventLog), it is conditional on rec's
// claim: store.ErrLeaseLost when another worker claimed the response, and
// nothing is appended (docs/background.md, "lease overrun"). The
// conditional append reads the record's head, at DynamoDB's price of a
// write of it, which a worker inside its lease does not pay.
func (e *Engine) appendClaimed(ctx context.Context, rec *store.Record, expiresAt time.Time, evs []store.Event) error {
	id := rec.Response.ID
	cl, ok := e.cfg.Store.(store.ClaimedEventLog)
	lease := rec.Job.LeaseUntil.Add(-e.cfg.Background.Lease / 10)
	if !ok || len(evs) == 0 || e.cfg.Now().Before(lease) {
		return e.appendKnown(ctx, id, expiresAt, evs)
	}
	return cl.AppendEventsClaimed(ctx, id, rec.Job.Claim, rec.ExpiresAt, evs)
}

// saveProgress records in rec and its job j how far r got, for the run's
// next checkpoint, hand-off or end: its model calls, its executed hosted
// calls (which max_tool_calls bounds over every invocation), the
// sequence number of its next event, and where truncation cut its
// model's view (storedCut: the next invocation starts from that cut).
func (r *run) saveProgress(rec *store.Record, j *store.Job) {
	j.Turns, j.HostedCalls, j.NextSeq = r.turns, r.tools.hostedCalls, r.em.seq
	rec.Cut = r.storedCut()
	rec.Rendered = r.storedRendered()
}

// resumeSeq returns the sequence number of the first event a worker
// running rec emits: the one its job stored, or, when a worker that ran it
// before appended events past it and then died (the events of the turn in
// flight, appended for a follower), the one after the log's last. A
// follower that received those events then receives the resumed run's,
// the terminal one last, instead of finding the rest of the run numbered
// below what it has (and its end before its position). Only an unfinished
// run can have such events: a queued one reads nothing.
func (e *Engine) resumeSeq(ctx context.Context, rec *store.Record) (int64, error) {
	seq := rec.Job.NextSeq
	if rec.Response.Status != api.StatusInProgress {
		return seq, nil
	}
	evs, err := e.eventLog().Events(ctx, rec.Response.ID, seq-1)
	if err != nil {
		return 0, fmt.Errorf("engine: events of %s: %w", rec.Response.ID, err)
	}
	if n := len(evs); n > 0 {
		seq = max(seq, evs[n-1].Seq+1)
	}
	return seq, nil
}

// claim is a background response this worker has claimed and runs: its
// record as last stored and its events not yet in the log. The loop
// checkpoints it before every model call (run.checkpoint, the loop's one
// seam for background runs); the watcher appends its events in between.
type claim struct {
	e   *Engine
	r   *run
	rec *store.Record
	buf *eventBuffer
	// cancel stops the run: a cancel request, a deletion, a lost lease.
	cancel context.CancelFunc
	// mu guards rec against the watcher and keeps appends in order: a
	// follower that has read an event has read every event before it.
	mu sync.Mutex
	// lost is set when another worker took the lease over.
	lost bool
}

// appendPending appends the events emitted since the last append (c.mu
// held); expiresAt is the response's expiry when the caller has just read
// it live (zero: unknown). A deleted response stops the run, and
// finishing reports it; so does another worker's claim (the lease was
// taken over: the events are dropped, the run is the other worker's).
func (c *claim) appendPending(ctx context.Context, expiresAt time.Time) error {
	evs := c.buf.take()
	if len(evs) == 0 {
		return nil
	}
	id := c.r.resp.ID
	if err := c.e.appendClaimed(ctx, c.rec, expiresAt, evs); err != nil {
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			c.lost = true
			c.cancel()
			return nil
		case errors.Is(err, store.ErrNotFound):
			c.cancel()
			return nil
		}
		c.buf.restore(evs)
		return fmt.Errorf("engine: events of %s: %w", id, err)
	}
	return nil
}

// afterConflict reads the record of id when a write of this worker's claim
// lost to another one (store.ErrConflict) and tells what that was: a cancel
// request (cancelled, and cur is the record holding it), a deletion
// (store.ErrNotFound), or else another worker's claim (the lease was taken
// over). A record it cannot read, after a few tries, is an error: the
// caller cannot tell which, and must not take the run for lost (nothing
// would end it).
func (e *Engine) afterConflict(ctx context.Context, id string) (cur *store.Record, cancelled bool, err error) {
	pause := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cur, err = e.cfg.Store.Get(ctx, id)
		switch {
		case err == nil:
			return cur, cur.Job != nil && cur.Job.CancelRequested, nil
		case errors.Is(err, store.ErrNotFound), attempt == 3:
			return nil, false, fmt.Errorf("engine: reading %s after a conflicting write: %w", id, err)
		}
		if !wait.Sleep(ctx, pause) {
			return nil, false, fmt.Errorf("engine: reading %s after a conflicting write: %w", id, err)
		}
		pause *= 2
	}
}

// checkpoint appends the pending events and stores the response as it is,
// renewing the lease, when anything happened since the last checkpoint.
// When the record changed under it (a cancel request, another worker) or
// is gone, the run is cancelled instead; when it cannot tell, it fails.
func (c *claim) checkpoint(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The record was stored live by this claim: the Update below finds out
	// whether it still is, so the append need not read it first.
	if err := c.appendPending(ctx, c.rec.ExpiresAt); err != nil || c.lost {
		return err
	}
	e, r, id := c.e, c.r, c.r.resp.ID
	if r.em.seq == c.rec.Job.NextSeq {
		return nil // nothing happened since the last checkpoint
	}
	next := *c.rec
	j := *c.rec.Job
	r.saveProgress(&next, &j)
	j.LeaseUntil = e.cfg.Now().Add(e.cfg.Background.Lease)
	next.Job, next.Response = &j, r.resp.Clone()
	r.stampTiming(next.Response, e.cfg.Now())
	if err := e.cfg.Store.Update(ctx, &next, api.StatusInProgress); err != nil {
		switch {
		case errors.Is(err, store.ErrNotFound):
			c.cancel() // deleted: stop, and finishing reports it
			return nil
		case errors.Is(err, store.ErrConflict):
			// Someone else wrote: a cancel request, or a worker that
			// took the lease over.
			cur, cancelled, gerr := e.afterConflict(ctx, id)
			switch {
			case errors.Is(gerr, store.ErrNotFound):
			case gerr != nil:
				return fmt.Errorf("engine: checkpoint %s: %w", id, gerr)
			case cancelled:
				*c.rec = *cur
			default:
				c.lost = true
			}
			c.cancel()
			return nil
		}
		return fmt.Errorf("engine: checkpoint %s: %w", id, err)
	}
	*c.rec = next
	return nil
}

// runClaimed runs the loop of a claimed background response with
// checkpoints, cancel polling, event appends and handoff.
func (e *Engine) runClaimed(ctx context.Context, r *run, rec *store.Record, buf *eventBuffer) error {
	id := r.resp.ID
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := &claim{e: e, r: r, rec: rec, buf: buf, cancel: cancel}
	// Checkpoints and appends use the invocation's context: a cancelled
	// run still stores how far it got.
	r.checkpoint = func() error { return c.checkpoint(ctx) }
	e.markRunning(ctx, id, rec.ExpiresAt)
	stopWatch := e.watch(runCtx, id, cancel, func(expiresAt time.Time) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if err := c.appendPending(ctx, expiresAt); err != nil && runCtx.Err() == nil {
			e.log.WarnContext(ctx, "appending events failed; retrying", "response_id", id, "err", err)
		}
	})
	turns, calls := r.turns, r.tools.hostedCalls
	out := e.loop(runCtx, r)
	stopWatch()
	if c.lost {
		e.log.WarnContext(ctx, "background response taken over by another worker", "response_id", id)
		return nil
	}
	if out.status == api.StatusCancelled && ctx.Err() != nil {
		// The invocation itself ended: leave the lease to expire; the
		// redelivered job resumes from the last checkpoint.
		return ctx.Err()
	}
	// An invocation that finished no model call and ran no tool would
	// hand off to one that does the same (a model call longer than an
	// invocation), for ever: the response ends incomplete instead.
	progressed := r.turns > turns || r.tools.hostedCalls > calls
	// A run at its turn limit hands off the calls its last turn left
	// pending, as a run with time runs them before it ends.
	more := r.turns < e.turnLimit(r) || len(r.pendingCalls()) > 0
	if out.status == api.StatusIncomplete && out.reason == api.ReasonDeadline && more && progressed && !out.cut {
		return e.handOff(ctx, r, rec, buf)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.finishedElsewhere(ctx, id, e.finishBackground(ctx, r, rec, api.StatusInProgress, buf, out))
}

// watch runs until stopped: every PollInterval it polls the run
// (pollRun) and cancels it when the response is gone or a cancel was
// requested; else, while someone follows the run, it calls appendEvents
// (the events the loop emitted since the last append go to the log, so
// that followers see a model turn as it streams, not only at checkpoints)
// with the expiry of the response it just saw live (zero when the read
// failed), so that the append needs no read of its own. Nobody following,
// the events wait for the next checkpoint: one write a turn instead of
// one a poll.
func (e *Engine) watch(ctx context.Context, id string, cancel context.CancelFunc, appendEvents func(expiresAt time.Time)) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(e.cfg.Background.PollInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				p := e.pollRun(ctx, id)
				if p.stop {
					cancel()
					return
				}
				if p.followed {
					appendEvents(p.expiresAt)
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// runPoll is what pollRun found.
type runPoll struct {
	// stop: a cancel was requested, or the response is gone.
	stop bool
	// expiresAt is the live response's expiry (zero when unknown).
	expiresAt time.Time
	// followed: someone may follow the run's events (true unless the
	// run's signals say nobody does).
	followed bool
}

// pollRun tells whether the background run of id must stop, the live
// response's expiry and whether anyone follows the run. With a store that
// keeps run signals it is one small read (store.RunSignals); without, or
// when no signal is noted (the response was deleted, or marking the run
// failed), a read of the whole record, which marks the run again when the
// response is live.
func (e *Engine) pollRun(ctx context.Context, id string) runPoll {
	sig, ok := e.cfg.Store.(store.RunSignals)
	if ok {
		rs, err := sig.Poll(ctx, id)
		if err == nil {
			return runPoll{stop: rs.Cancel, expiresAt: rs.ExpiresAt, followed: rs.FollowedUntil.After(e.cfg.Now())}
		}
		if !errors.Is(err, store.ErrNotFound) {
			return runPoll{followed: true} // try again at the next poll
		}
	}
	rec, err := e.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return runPoll{stop: true}
	case err != nil:
		return runPoll{followed: true}
	case rec.Job != nil && (rec.Job.CancelRequested || rec.Response.Status == api.StatusCancelled):
		return runPoll{stop: true}
	}
	if ok {
		e.markRunning(ctx, id, rec.ExpiresAt)
	}
	return runPoll{expiresAt: rec.ExpiresAt, followed: true}
}

// markRunning notes that this worker runs the background response id, so
// that pollRun reads the run's signals instead of the record. A failure
// costs only reads: pollRun reads the record until a mark succeeds.
func (e *Engine) markRunning(ctx context.Context, id string, expiresAt time.Time) {
	e.signal(ctx, id, "marking the background run failed; polling its record instead",
		func(sig store.RunSignals) error { return sig.MarkRunning(ctx, id, expiresAt) })
}

// signal writes one of the run signals of the background response id
// (store.RunSignals) when the store keeps them. Every signal has a slower
// fallback, so a failure never fails the caller: it is logged with what
// it costs (failed).
func (e *Engine) signal(ctx context.Context, id, failed string, write func(store.RunSignals) error) {
	sig, ok := e.cfg.Store.(store.RunSignals)
	if !ok {
		return
	}
	// ErrNotFound: the response was deleted, which the run's next poll
	// and its followers' find out.
	if err := write(sig); err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
		e.log.WarnContext(ctx, failed, "response_id", id, "err", err)
	}
}

// handOff checkpoints, releases the lease and enqueues the continuation.
func (e *Engine) handOff(ctx context.Context, r *run, rec *store.Record, buf *eventBuffer) error {
	id := r.resp.ID
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	// As at a checkpoint: the record was stored live by this claim, and
	// the Update below finds out whether it still is.
	if err := e.appendClaimed(sctx, rec, rec.ExpiresAt, buf.take()); err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return errFinishedElsewhere
		}
		return fmt.Errorf("engine: hand-off events of %s: %w", id, err)
	}
	next := *rec
	j := *rec.Job
	r.saveProgress(&next, &j)
	unlease(&j)
	next.Job, next.Response = &j, r.resp.Clone()
	r.stampTiming(next.Response, e.cfg.Now())
	if err := e.cfg.Store.Update(sctx, &next, api.StatusInProgress); err != nil {
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("engine: hand-off %s: %w", id, err)
		}
		// A cancel request since the last checkpoint ends the run here:
		// no continuation would (this worker's lease still holds it).
		cur, cancelled, gerr := e.afterConflict(sctx, id)
		switch {
		case gerr != nil:
			return fmt.Errorf("engine: hand-off %s: %w", id, gerr)
		case cancelled:
			*rec = *cur
			return e.finishBackground(ctx, r, rec, api.StatusInProgress, buf, outcome{status: api.StatusCancelled})
		}
		return errFinishedElsewhere
	}
	*rec = next
	if err := e.cfg.Background.Queue.Enqueue(sctx, Job{ResponseID: id, Tenant: tenant.From(ctx)}); err != nil {
		return fmt.Errorf("engine: hand-off %s: enqueue: %w", id, err)
	}
	e.log.InfoContext(ctx, "background response handed off", "response_id", id, "turns", r.turns, "invocation", j.Invocations)
	return nil
}

// errFinishedElsewhere: finishBackground stored nothing because the
// response reached a terminal state elsewhere, or changed under another
// owner (a worker's claim, whose run will end it).
var errFinishedElsewhere = fmt.Errorf("engine: the response finished or changed elsewhere: %w", store.ErrConflict)

// finishedElsewhere logs and drops errFinishedElsewhere and store.ErrNotFound,
// for a worker: the response is in other hands or was deleted while it ran
// (an ordinary outcome: the worker just stops), there is nothing to retry.
func (e *Engine) finishedElsewhere(ctx context.Context, id string, err error) error {
	switch {
	case errors.Is(err, errFinishedElsewhere):
		e.log.InfoContext(ctx, "background response finished elsewhere", "response_id", id)
		return nil
	case errors.Is(err, store.ErrNotFound):
		e.log.InfoContext(ctx, "background response deleted while it ran", "response_id", id)
		return nil
	}
	return err
}

// finishBackground ends a background response: it stores the terminal
// state, then appends the remaining events (the terminal one last), then
// publishes the response. The stored record is the commit point: only the
// caller whose terminal update succeeded appends a terminal event and
// publishes, so each terminal state is published once and the log never
// holds the terminal event of a response that did not end so. When the
// record changed, the update is retried on the new version if only a flag
// moved (a cancel request on the caller's own response); a response that
// finished elsewhere, changed status or is leased by another worker gives
// errFinishedElsewhere.
func (e *Engine) finishBackground(ctx context.Context, r *run, rec *store.Record, expect api.Status, buf *eventBuffer, out outcome) error {
	id := r.resp.ID
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	e.finalize(ctx, r, out)
	r.em.lifecycle(api.TerminalEvent(r.resp.Status), r.resp)
	// The conversation gets the response's items before anyone can read
	// the response's end (its record or its events).
	if r.conv == nil && r.resp.Conversation != nil {
		if cs := e.conversations(); cs != nil {
			r.conv = &runConversation{cs: cs, id: r.resp.Conversation.ID}
		}
	}
	e.endConversation(ctx, r)
	next := *rec
	j := *rec.Job
	r.saveProgress(&next, &j)
	unlease(&j)
	next.Job, next.Response = &j, r.resp
	for attempt := 0; ; attempt++ {
		err := e.cfg.Store.Update(sctx, &next, expect)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) || attempt == 3 {
			return fmt.Errorf("engine: finish %s: %w", id, err)
		}
		cur, gerr := e.cfg.Store.Get(sctx, id)
		if gerr != nil {
			return fmt.Errorf("engine: finish %s: %w", id, gerr)
		}
		// Another claim holding a live lease is another owner, also of
		// this WorkerID (the local pool's workers share it).
		if cur.Response.Status != expect || cur.Job == nil ||
			cur.Job.Owner != "" && (cur.Job.Owner != e.cfg.Background.WorkerID || cur.Job.Claim != rec.Job.Claim) &&
				e.cfg.Now().Before(cur.Job.LeaseUntil) {
			return errFinishedElsewhere
		}
		next.Version = cur.Version
		j.CancelRequested = cur.Job.CancelRequested
	}
	*rec = next
	if err := e.appendKnown(sctx, id, next.ExpiresAt, buf.take()); err != nil {
		// Followers send the terminal event rebuilt from the record.
		e.log.WarnContext(ctx, "the final events were not stored", "response_id", id, "err", err)
	}
	e.log.InfoContext(ctx, "background response done", "response_id", id, "status", r.resp.Status, "turns", r.turns, "invocations", j.Invocations)
	if e.cfg.Background.Publisher != nil {
		if err := e.cfg.Background.Publisher.Publish(sctx, r.resp); err != nil {
			e.log.ErrorContext(ctx, "publish failed", "response_id", id, "err", err)
		}
	}
	return nil
}

// failBackground ends a background response that cannot run.
func (e *Engine) failBackground(ctx context.Context, rec *store.Record, ae *api.Error) error {
	r := &run{req: rec.Job.Request, resp: rec.Response.Clone(), history: rec.Context, input: rec.Input, turns: rec.Job.Turns}
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true, seq: rec.Job.NextSeq}
	expect := r.resp.Status
	if expect == api.StatusQueued {
		r.resp.Status = api.StatusInProgress
		r.em.lifecycle(api.EventResponseInProgress, r.resp)
		expect = api.StatusQueued
	}
	return e.finishBackground(ctx, r, rec, expect, buf, outcome{status: api.StatusFailed, err: ae})
}
