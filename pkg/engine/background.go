package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// Job is the message that asks a worker to run (or continue) a background
// response.
type Job struct {
	ResponseID string `json:"response_id"`
	Tenant     string `json:"tenant,omitempty"`
}

// Queue hands background jobs to workers (SQS in AWS, in-process locally).
type Queue interface {
	Enqueue(ctx context.Context, job Job) error
}

// Publisher announces responses that reached a terminal state (EventBridge
// in AWS).
type Publisher interface {
	Publish(ctx context.Context, r *api.Response) error
}

// errBackgroundUnavailable: background responses need a store with an
// event log and a queue.
func errBackgroundUnavailable() error {
	return api.InvalidRequestCode("background", "unsupported_parameter", "background responses are not available: this gateway has no queue or no event log configured")
}

func (e *Engine) eventLog() store.EventLog {
	l, _ := e.cfg.Store.(store.EventLog)
	return l
}

// CreateBackground creates a response for a request with background=true:
// it stores the response queued, enqueues its job for a worker
// (RunBackground) and answers at once with the queued response, or (stream)
// the events as the worker produces them. Without a queue and an event log
// it is a 400.
//
// A tenant with Limits.TenantInFlight responses running here (background
// runs of this process's worker included) is refused with a 429 first.
func (e *Engine) CreateBackground(ctx context.Context, req *api.CreateResponseRequest, w ResponseWriter) error {
	if e.cfg.Background.Queue == nil {
		return errBackgroundUnavailable()
	}
	rec, err := e.queueBackground(ctx, req)
	if err != nil {
		return err
	}
	if !req.Stream {
		return w.WriteResponse(rec.Response)
	}
	return e.follow(ctx, rec, -1, w)
}

// queueBackground stores req as a queued background response and enqueues
// its job, within a slot of the tenant's in-flight cap: the run itself
// counts where a worker of this engine runs it (RunBackground).
func (e *Engine) queueBackground(ctx context.Context, req *api.CreateResponseRequest) (*store.Record, error) {
	t, err := e.inflight.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer e.inflight.leave(t)
	rec, err := e.storeQueued(ctx, req, "")
	if err != nil {
		return nil, err
	}
	id := rec.Response.ID
	if err := e.cfg.Background.Queue.Enqueue(ctx, Job{ResponseID: id, Tenant: tenant.From(ctx)}); err != nil {
		e.log.ErrorContext(ctx, "enqueue failed", "response_id", id, "err", err)
		qe := api.ServerError(err, "The background job could not be queued.")
		qe.Code = "enqueue_failed"
		_ = e.failBackground(ctx, rec, qe)
		return nil, api.ServerError(err, "The background job could not be queued.")
	}
	return rec, nil
}

// StartBackground runs a create request that arrived as an event (SQS,
// EventBridge, a direct invocation) as a background response, in this
// worker. id is an optional caller-chosen response id: a request whose id
// already exists is not created again (idempotent redelivery), only resumed
// if unfinished.
func (e *Engine) StartBackground(ctx context.Context, req *api.CreateResponseRequest, id string) (string, error) {
	req.Background, req.Stream = true, false
	rec, err := e.storeQueued(ctx, req, id)
	switch {
	case err == nil:
		id = rec.Response.ID
	case id != "" && errors.Is(err, store.ErrConflict):
		e.log.InfoContext(ctx, "background request delivered again", "response_id", id)
	default:
		return "", err
	}
	return id, e.RunBackground(ctx, id)
}

// storeQueued validates req and stores it as a queued background response
// with its first events (response.created, response.queued).
func (e *Engine) storeQueued(ctx context.Context, req *api.CreateResponseRequest, id string) (*store.Record, error) {
	log := e.eventLog()
	if e.cfg.Store == nil || log == nil {
		return nil, errBackgroundUnavailable()
	}
	if id != "" && !api.ValidResponseID(id) {
		return nil, api.InvalidRequest("id", "a caller-chosen response id must be %q followed by letters, digits, '_' or '-', at most %d characters in all", api.PrefixResponse, api.MaxResponseIDLen)
	}
	r, err := e.prepare(ctx, req, id, nil)
	if err != nil {
		return nil, err
	}
	r.resp.Status = api.StatusQueued
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true}
	r.em.lifecycle(api.EventResponseCreated, r.resp)
	r.em.lifecycle(api.EventResponseQueued, r.resp)
	stored, secrets, err := e.sealSecrets(req, r.resp.ID)
	if err != nil {
		return nil, api.ServerError(err, "The request's secrets could not be sealed.")
	}
	rec := &store.Record{Response: r.resp, Input: r.input, Context: r.history,
		Job: &store.Job{Request: stored, Secrets: secrets, NextSeq: r.em.seq, RequestID: requestid.From(ctx)}}
	if err := e.cfg.Store.Create(ctx, rec); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("engine: response %s exists: %w", r.resp.ID, err)
		}
		return nil, e.storeErr(tooLarge(req, err), r.resp.ID, "id")
	}
	if err := log.AppendEvents(ctx, r.resp.ID, buf.take()); err != nil {
		se := api.ServerError(err, "The response's events could not be stored.")
		se.Code = "store_failed"
		_ = e.failBackground(ctx, rec, se)
		return nil, e.storeErr(err, r.resp.ID, "id")
	}
	return rec, nil
}

// StreamResponse follows a background response's stored events after
// sequence number `after` until its terminal event (see follow). A stream
// that starts at or after the terminal event of a finished response ends at
// once, with no event.
func (e *Engine) StreamResponse(ctx context.Context, id string, after int64, w ResponseWriter) error {
	rec, err := e.get(ctx, id, "id")
	if err != nil {
		return err
	}
	if rec.Job == nil || e.eventLog() == nil {
		return api.InvalidRequest("stream", "Only background responses can be streamed after they were created.")
	}
	return e.follow(ctx, rec, after, w)
}

// followCheckEvery is how many polls of the event log without a new event
// pass between two reads of the record, which tell a follower that the
// response has finished.
const followCheckEvery = 4

// ResumeComment is the SSE comment that ends a followed stream (background
// and stream, or GET ?stream=true) which reached the gateway's own deadline
// before the response finished: "resume starting_after=<N>", N being the
// sequence number of the last event sent. No terminal event precedes it;
// the client resumes with GET /v1/responses/{id}?stream=true&starting_after=N.
const ResumeComment = "resume starting_after="

// follow writes the stored events of the background response rec after
// sequence number `after`, polling the log every PollInterval (the worker
// appends its events at that pace), until the terminal event. A buffering
// writer is flushed when the stream starts (a pacing writer keeps it alive
// from then on while no event comes: package pacing) and after each batch;
// the batch with the terminal event is left to the caller, who ends the
// stream.
//
// When the context has a deadline (a Lambda invocation's), the stream ends
// DeadlineReserve before it with the ResumeComment instead of being cut.
// The record, read every few idle polls, marks the end: a finished
// response's terminal event is its last (events a worker that lost its
// lease wrote after it are not sent), and when that event is missing from
// the log (its append failed after the terminal state was stored) it is
// sent as stored, rebuilt from the record.
func (e *Engine) follow(ctx context.Context, rec *store.Record, after int64, w ResponseWriter) error {
	raw, ok := w.(rawEventWriter)
	if !ok {
		return errors.New("engine: the writer cannot forward stored events")
	}
	fl, _ := w.(Flusher)
	cw, _ := w.(CommentWriter)
	if fl != nil {
		if err := fl.Flush(); err != nil {
			return nil // the client went away
		}
	}
	id := rec.Response.ID
	log := e.eventLog()
	end := int64(-1) // the terminal event's sequence number, once known
	if rec.Response.Status.Terminal() {
		end = rec.Job.NextSeq - 1
	}
	var stop time.Time
	if d, ok := ctx.Deadline(); ok {
		stop = d.Add(-e.cfg.Loop.DeadlineReserve)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	idle := 0
	for {
		if end >= 0 && after >= end {
			return nil
		}
		evs, err := log.Events(ctx, id, after)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return e.storeErr(err, id, "id")
		}
		sent := 0
		for _, ev := range evs {
			if end >= 0 && ev.Seq > end {
				break
			}
			if err := raw.WriteRawEvent(ev.Type, ev.Data); err != nil {
				return nil // the client went away
			}
			after = ev.Seq
			sent++
			if api.IsTerminalEvent(ev.Type) {
				return nil
			}
		}
		if sent > 0 {
			idle = 0
			if fl != nil {
				if err := fl.Flush(); err != nil {
					return nil // the client went away
				}
			}
		} else if idle++; idle%followCheckEvery == 0 {
			cur, err := e.get(ctx, id, "id")
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			if cur.Response.Status.Terminal() {
				if end >= 0 {
					return writeTerminal(raw, cur)
				}
				end = cur.Job.NextSeq - 1
				continue
			}
		}
		wait := e.cfg.Background.PollInterval
		if !stop.IsZero() {
			left := stop.Sub(e.cfg.Now())
			if left <= 0 {
				if cw != nil {
					_ = cw.WriteComment(ResumeComment + strconv.FormatInt(after, 10))
				}
				return nil
			}
			wait = min(wait, left)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// writeTerminal writes the terminal event of the finished response rec as
// its worker stored it (or would have): its type, the sequence number
// reserved for it and the stored response.
func writeTerminal(raw rawEventWriter, rec *store.Record) error {
	ev := api.StreamEvent{Type: api.TerminalEvent(rec.Response.Status), SequenceNumber: rec.Job.NextSeq - 1, Response: rec.Response}
	data, err := wirejson.Marshal(&ev)
	if err != nil {
		return fmt.Errorf("engine: encode the terminal event of %s: %w", rec.Response.ID, err)
	}
	return raw.WriteRawEvent(ev.Type, data)
}

// eventBuffer collects events between checkpoints.
type eventBuffer struct {
	mu  sync.Mutex
	evs []store.Event
}

func (b *eventBuffer) WriteEvent(ev *api.StreamEvent) error {
	data, err := wirejson.Marshal(ev)
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
	req, err := e.openSecrets(job.Request, job.Secrets, id)
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
	r := &run{req: req, resp: rec.Response, history: rec.Context, input: rec.Input, turns: job.Turns, mcpItems: e.mcpItems()}
	if err := r.resolveTools(e); err != nil {
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
	}
	if err := e.openSummaries(ctx, r); err != nil {
		return e.finishedElsewhere(ctx, id, e.failBackground(ctx, rec, api.AsError(err)))
	}
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true, seq: job.NextSeq}
	r.budget = newBudget(ctx, e.cfg.Now, e.cfg.Loop.DeadlineReserve)
	expect := rec.Response.Status
	claimed := *rec
	cj := *job
	cj.Owner, cj.LeaseUntil, cj.Invocations = e.cfg.Background.WorkerID, now.Add(e.cfg.Background.Lease), job.Invocations+1
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
	if err := log.AppendEvents(ctx, id, buf.take()); err != nil {
		return e.finishedElsewhere(ctx, id, fmt.Errorf("engine: events of %s: %w", id, err))
	}
	return e.finishedElsewhere(ctx, id, e.runClaimed(ctx, r, &claimed, buf))
}

// runClaimed runs the loop of a claimed background response with
// checkpoints, cancel polling, event appends and handoff.
func (e *Engine) runClaimed(ctx context.Context, r *run, rec *store.Record, buf *eventBuffer) error {
	id := r.resp.ID
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	// mu guards rec against the watcher and keeps appends in order: a
	// follower that has read an event has read every event before it.
	var mu sync.Mutex
	lost := false // another worker took the lease over
	appendPending := func() error {
		evs := buf.take()
		if len(evs) == 0 {
			return nil
		}
		if err := e.eventLog().AppendEvents(ctx, id, evs); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				cancel() // deleted: stop, and finishing reports it
				return nil
			}
			buf.restore(evs)
			return fmt.Errorf("engine: events of %s: %w", id, err)
		}
		return nil
	}
	checkpoint := func() error {
		mu.Lock()
		defer mu.Unlock()
		if err := appendPending(); err != nil {
			return err
		}
		if r.em.seq == rec.Job.NextSeq {
			return nil // nothing happened since the last checkpoint
		}
		next := *rec
		j := *rec.Job
		j.Turns, j.NextSeq, j.LeaseUntil = r.turns, r.em.seq, e.cfg.Now().Add(e.cfg.Background.Lease)
		next.Job, next.Response = &j, r.resp.Clone()
		if err := e.cfg.Store.Update(ctx, &next, api.StatusInProgress); err != nil {
			switch {
			case errors.Is(err, store.ErrNotFound):
				cancel() // deleted: stop, and finishing reports it
				return nil
			case errors.Is(err, store.ErrConflict):
				// Someone else wrote: a cancel request, or a worker that
				// took the lease over. Reload and decide.
				cur, gerr := e.cfg.Store.Get(ctx, id)
				if gerr == nil && cur.Job != nil && cur.Job.CancelRequested {
					*rec = *cur
					cancel()
					return nil
				}
				lost = !errors.Is(gerr, store.ErrNotFound)
				cancel()
				return nil
			}
			return fmt.Errorf("engine: checkpoint %s: %w", id, err)
		}
		*rec = next
		return nil
	}
	r.onTurn = checkpoint
	stopWatch := e.watch(runCtx, id, cancel, func() {
		mu.Lock()
		defer mu.Unlock()
		if err := appendPending(); err != nil && runCtx.Err() == nil {
			e.log.WarnContext(ctx, "appending events failed; retrying", "response_id", id, "err", err)
		}
	})
	out := e.loop(runCtx, r)
	stopWatch()
	if lost {
		e.log.WarnContext(ctx, "background response taken over by another worker", "response_id", id)
		return nil
	}
	if out.status == api.StatusCancelled && ctx.Err() != nil {
		// The invocation itself ended: leave the lease to expire; the
		// redelivered job resumes from the last checkpoint.
		return ctx.Err()
	}
	if out.status == api.StatusIncomplete && out.reason == api.ReasonDeadline && r.turns < e.turnLimit(r) {
		return e.handOff(ctx, r, rec, buf)
	}
	mu.Lock()
	defer mu.Unlock()
	return e.finishedElsewhere(ctx, id, e.finishBackground(ctx, r, rec, api.StatusInProgress, buf, out))
}

// watch runs until stopped: every PollInterval it calls appendEvents (the
// events the loop emitted since the last append go to the log, so that
// followers see a model turn as it streams, not only at checkpoints), then
// reads the record and cancels the run when a cancel was requested.
func (e *Engine) watch(ctx context.Context, id string, cancel context.CancelFunc, appendEvents func()) (stop func()) {
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
				appendEvents()
				rec, err := e.cfg.Store.Get(ctx, id)
				if errors.Is(err, store.ErrNotFound) || err == nil && rec.Job != nil && (rec.Job.CancelRequested || rec.Response.Status == api.StatusCancelled) {
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// handOff checkpoints, releases the lease and enqueues the continuation.
func (e *Engine) handOff(ctx context.Context, r *run, rec *store.Record, buf *eventBuffer) error {
	id := r.resp.ID
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := e.eventLog().AppendEvents(sctx, id, buf.take()); err != nil {
		return fmt.Errorf("engine: hand-off events of %s: %w", id, err)
	}
	next := *rec
	j := *rec.Job
	j.Turns, j.NextSeq, j.Owner, j.LeaseUntil = r.turns, r.em.seq, "", time.Time{}
	next.Job, next.Response = &j, r.resp.Clone()
	if err := e.cfg.Store.Update(sctx, &next, api.StatusInProgress); err != nil {
		return fmt.Errorf("engine: hand-off %s: %w", id, err)
	}
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
	next := *rec
	j := *rec.Job
	j.Turns, j.NextSeq, j.Owner, j.LeaseUntil = r.turns, r.em.seq, "", time.Time{}
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
		if cur.Response.Status != expect || cur.Job == nil ||
			cur.Job.Owner != "" && cur.Job.Owner != e.cfg.Background.WorkerID && e.cfg.Now().Before(cur.Job.LeaseUntil) {
			return errFinishedElsewhere
		}
		next.Version = cur.Version
		j.CancelRequested = cur.Job.CancelRequested
	}
	*rec = next
	if err := e.eventLog().AppendEvents(sctx, id, buf.take()); err != nil {
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

// cancelBackground asks a background response to stop: a queued one is
// cancelled at once, a running one gets the cancel flag its worker polls.
func (e *Engine) cancelBackground(ctx context.Context, rec *store.Record) (*api.Response, error) {
	id := rec.Response.ID
	for attempt := 0; attempt < 5; attempt++ {
		next := *rec
		j := *rec.Job
		next.Job = &j
		switch rec.Response.Status {
		case api.StatusQueued:
			r := &run{req: j.Request, resp: rec.Response.Clone(), turns: j.Turns}
			buf := &eventBuffer{}
			r.em = &emitter{w: buf, stream: true, seq: j.NextSeq}
			err := e.finishBackground(ctx, r, rec, api.StatusQueued, buf, outcome{status: api.StatusCancelled})
			if err == nil {
				return r.resp, nil
			}
			if !errors.Is(err, store.ErrConflict) {
				return nil, e.storeErr(err, id, "id") // a concurrent delete: 404
			}
		case api.StatusInProgress:
			j.CancelRequested = true
			err := e.cfg.Store.Update(ctx, &next, api.StatusInProgress)
			if err == nil {
				return e.awaitTerminal(ctx, id)
			}
			if !errors.Is(err, store.ErrConflict) {
				return nil, e.storeErr(err, id, "id")
			}
		default:
			return rec.Response, nil
		}
		cur, err := e.get(ctx, id, "id")
		if err != nil {
			return nil, err
		}
		rec = cur
		if rec.Response.Status.Terminal() {
			if rec.Response.Status == api.StatusCancelled {
				return rec.Response, nil
			}
			return nil, api.InvalidRequest("", "Cannot cancel a response with status %s.", rec.Response.Status)
		}
	}
	return nil, api.Conflict("response_conflict", "Response '%s' kept changing; try again.", id)
}

// awaitTerminal waits (bounded) for the worker to stop after a cancel request.
func (e *Engine) awaitTerminal(ctx context.Context, id string) (*api.Response, error) {
	deadline := e.cfg.Now().Add(e.cfg.Background.CancelWait)
	for {
		rec, err := e.get(ctx, id, "id")
		if err != nil {
			return nil, err
		}
		if rec.Response.Status.Terminal() || !e.cfg.Now().Before(deadline) {
			return rec.Response, nil
		}
		select {
		case <-ctx.Done():
			return rec.Response, nil
		case <-time.After(e.cfg.Background.PollInterval):
		}
	}
}
