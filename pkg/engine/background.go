package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
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

// rawEventWriter is implemented by ResponseWriters that can forward a
// stored event's JSON as is.
type rawEventWriter interface {
	WriteRawEvent(typ string, data []byte) error
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
func (e *Engine) CreateBackground(ctx context.Context, req *api.CreateResponseRequest, w ResponseWriter) error {
	if e.cfg.Queue == nil {
		return errBackgroundUnavailable()
	}
	rec, err := e.storeQueued(ctx, req, "")
	if err != nil {
		return err
	}
	id := rec.Response.ID
	if err := e.cfg.Queue.Enqueue(ctx, Job{ResponseID: id, Tenant: tenant.From(ctx)}); err != nil {
		e.log.Error("enqueue failed", "response_id", id, "err", err)
		_ = e.failBackground(ctx, rec, &api.Error{Type: api.ErrTypeServer, Code: "enqueue_failed", Message: err.Error()})
		return api.ServerError(err, "the background job could not be queued: %v", err)
	}
	if !req.Stream {
		return w.WriteResponse(rec.Response)
	}
	return e.follow(ctx, id, -1, w)
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
		e.log.Info("background request delivered again", "response_id", id)
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
	if id != "" && !strings.HasPrefix(id, api.PrefixResponse) {
		return nil, api.InvalidRequest("id", "a caller-chosen response id must start with %q", api.PrefixResponse)
	}
	r, err := e.prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	if id != "" {
		r.resp.ID = id
	}
	r.resp.Status = api.StatusQueued
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true}
	r.em.lifecycle(api.EventResponseCreated, r.resp)
	r.em.lifecycle(api.EventResponseQueued, r.resp)
	stored, secrets, err := e.sealSecrets(req, r.resp.ID)
	if err != nil {
		return nil, api.ServerError(err, "the request's secrets could not be sealed: %v", err)
	}
	rec := &store.Record{Response: r.resp, Input: r.input, Context: r.history, Job: &store.Job{Request: stored, Secrets: secrets, NextSeq: r.em.seq}}
	if err := e.cfg.Store.Create(ctx, rec); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return nil, fmt.Errorf("engine: response %s exists: %w", r.resp.ID, err)
		}
		return nil, e.storeErr(err, r.resp.ID, "id")
	}
	if err := log.AppendEvents(ctx, r.resp.ID, buf.take()); err != nil {
		_ = e.failBackground(ctx, rec, &api.Error{Type: api.ErrTypeServer, Code: "store_failed", Message: err.Error()})
		return nil, e.storeErr(err, r.resp.ID, "id")
	}
	return rec, nil
}

// StreamResponse follows a background response's stored events after
// sequence number `after` until its terminal event.
func (e *Engine) StreamResponse(ctx context.Context, id string, after int64, w ResponseWriter) error {
	rec, err := e.get(ctx, id, "id")
	if err != nil {
		return err
	}
	if rec.Job == nil || e.eventLog() == nil {
		return api.InvalidRequest("stream", "Only background responses can be streamed after they were created.")
	}
	return e.follow(ctx, id, after, w)
}

// follow writes stored events as they appear, polling the log. A buffering
// writer is flushed after each batch, before the next poll; the batch with
// the terminal event is left to the caller, who ends the stream.
func (e *Engine) follow(ctx context.Context, id string, after int64, w ResponseWriter) error {
	raw, ok := w.(rawEventWriter)
	if !ok {
		return errors.New("engine: the writer cannot forward stored events")
	}
	fl, _ := w.(Flusher)
	log := e.eventLog()
	idle := 0
	for {
		evs, err := log.Events(ctx, id, after)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return e.storeErr(err, id, "id")
		}
		for _, ev := range evs {
			if err := raw.WriteRawEvent(ev.Type, ev.Data); err != nil {
				return nil // the client went away
			}
			after = ev.Seq
			if api.IsTerminalEvent(ev.Type) {
				return nil
			}
		}
		if len(evs) > 0 {
			idle = 0
			if fl != nil {
				if err := fl.Flush(); err != nil {
					return nil // the client went away
				}
			}
		} else if idle++; idle%20 == 0 {
			// A terminal record without its terminal event (a worker
			// died between the two writes) still ends the stream.
			rec, err := e.get(ctx, id, "id")
			if err == nil && rec.Response.Status.Terminal() {
				ev := api.StreamEvent{Type: api.TerminalEvent(rec.Response.Status), SequenceNumber: after + 1, Response: rec.Response}
				data, _ := json.Marshal(&ev)
				return raw.WriteRawEvent(ev.Type, data)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.cfg.PollInterval):
		}
	}
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

// RunBackground runs (or resumes) the background response id: the worker's
// entry point. It is idempotent: a response that is finished, cancelled or
// leased by a live worker is left alone. Near the invocation deadline it
// checkpoints, releases its lease and enqueues its own continuation.
func (e *Engine) RunBackground(ctx context.Context, id string) error {
	log := e.eventLog()
	if e.cfg.Store == nil || log == nil {
		return errBackgroundUnavailable()
	}
	rec, err := e.cfg.Store.Get(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			e.log.Warn("background job for an unknown response", "response_id", id)
			return nil
		}
		return fmt.Errorf("engine: load %s: %w", id, err)
	}
	job := rec.Job
	if job == nil || rec.Response.Status.Terminal() {
		return nil
	}
	now := e.cfg.Now()
	if rec.Response.Status == api.StatusInProgress && job.Owner != "" && now.Before(job.LeaseUntil) {
		e.log.Info("background response leased by another worker", "response_id", id, "owner", job.Owner)
		return nil
	}
	req, err := e.openSecrets(job.Request, job.Secrets, id)
	if err != nil {
		return e.failBackground(ctx, rec, &api.Error{Type: api.ErrTypeServer, Code: "secrets_unavailable", Message: err.Error()})
	}
	r := &run{req: req, resp: rec.Response, history: rec.Context, input: rec.Input, turns: job.Turns, mcpItems: e.mcpItems()}
	if err := r.resolveTools(e); err != nil {
		return e.failBackground(ctx, rec, api.AsError(err))
	}
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true, seq: job.NextSeq}
	r.budget = newBudget(ctx, e.cfg.Now, e.cfg.DeadlineReserve)
	expect := rec.Response.Status
	claimed := *rec
	cj := *job
	cj.Owner, cj.LeaseUntil, cj.Invocations = e.cfg.WorkerID, now.Add(e.cfg.Lease), job.Invocations+1
	claimed.Job = &cj
	resp := rec.Response.Clone()
	resp.Status = api.StatusInProgress
	claimed.Response = resp
	r.resp = resp
	if expect == api.StatusQueued {
		r.em.lifecycle(api.EventResponseInProgress, resp)
	}
	if job.CancelRequested {
		return e.finishBackground(ctx, r, &claimed, expect, buf, outcome{status: api.StatusCancelled})
	}
	cj.NextSeq = r.em.seq
	if err := e.cfg.Store.Update(ctx, &claimed, expect); err != nil {
		if errors.Is(err, store.ErrConflict) {
			e.log.Info("background response claimed concurrently", "response_id", id)
			return nil
		}
		return fmt.Errorf("engine: claim %s: %w", id, err)
	}
	if err := log.AppendEvents(ctx, id, buf.take()); err != nil {
		return fmt.Errorf("engine: events of %s: %w", id, err)
	}
	return e.runClaimed(ctx, r, &claimed, buf)
}

// runClaimed runs the loop of a claimed background response with
// checkpoints, cancel polling and handoff.
func (e *Engine) runClaimed(ctx context.Context, r *run, rec *store.Record, buf *eventBuffer) error {
	id := r.resp.ID
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // guards rec against the cancel watcher
	lost := false     // another worker took the lease over
	checkpoint := func() error {
		mu.Lock()
		defer mu.Unlock()
		evs := buf.take()
		if len(evs) == 0 {
			return nil
		}
		if err := e.eventLog().AppendEvents(ctx, id, evs); err != nil {
			return fmt.Errorf("engine: checkpoint events of %s: %w", id, err)
		}
		next := *rec
		j := *rec.Job
		j.Turns, j.NextSeq, j.LeaseUntil = r.turns, r.em.seq, e.cfg.Now().Add(e.cfg.Lease)
		next.Job, next.Response = &j, r.resp.Clone()
		if err := e.cfg.Store.Update(ctx, &next, api.StatusInProgress); err != nil {
			if errors.Is(err, store.ErrConflict) {
				// Someone else wrote: a cancel request, or a worker that
				// took the lease over. Reload and decide.
				cur, gerr := e.cfg.Store.Get(ctx, id)
				if gerr == nil && cur.Job != nil && cur.Job.CancelRequested {
					*rec = *cur
					cancel()
					return nil
				}
				lost = true
				cancel()
				return nil
			}
			return fmt.Errorf("engine: checkpoint %s: %w", id, err)
		}
		*rec = next
		return nil
	}
	r.onTurn = checkpoint
	stopWatch := e.watchCancel(runCtx, id, cancel)
	out := e.loop(runCtx, r)
	stopWatch()
	if lost {
		e.log.Warn("background response taken over by another worker", "response_id", id)
		return nil
	}
	if out.status == api.StatusCancelled && ctx.Err() != nil {
		// The invocation itself ended: leave the lease to expire; the
		// redelivered job resumes from the last checkpoint.
		return ctx.Err()
	}
	if out.status == api.StatusIncomplete && out.reason == api.ReasonDeadline && r.turns < e.cfg.MaxTurns {
		return e.handOff(ctx, r, rec, buf)
	}
	mu.Lock()
	defer mu.Unlock()
	return e.finishBackground(ctx, r, rec, api.StatusInProgress, buf, out)
}

// watchCancel polls the record for a cancel request until stopped.
func (e *Engine) watchCancel(ctx context.Context, id string, cancel context.CancelFunc) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(e.cfg.PollInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				rec, err := e.cfg.Store.Get(ctx, id)
				if err == nil && rec.Job != nil && (rec.Job.CancelRequested || rec.Response.Status == api.StatusCancelled) {
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
	if err := e.cfg.Queue.Enqueue(sctx, Job{ResponseID: id, Tenant: tenant.From(ctx)}); err != nil {
		return fmt.Errorf("engine: hand-off %s: enqueue: %w", id, err)
	}
	e.log.Info("background response handed off", "response_id", id, "turns", r.turns, "invocation", j.Invocations)
	return nil
}

// finishBackground stores the terminal state, its terminal event, and
// publishes it.
func (e *Engine) finishBackground(ctx context.Context, r *run, rec *store.Record, expect api.Status, buf *eventBuffer, out outcome) error {
	id := r.resp.ID
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	e.finalize(r, out)
	r.em.lifecycle(api.TerminalEvent(r.resp.Status), r.resp)
	next := *rec
	j := *rec.Job
	j.Turns, j.NextSeq, j.Owner, j.LeaseUntil = r.turns, r.em.seq, "", time.Time{}
	next.Job, next.Response = &j, r.resp
	if err := e.eventLog().AppendEvents(sctx, id, buf.take()); err != nil {
		return fmt.Errorf("engine: final events of %s: %w", id, err)
	}
	for attempt := 0; ; attempt++ {
		err := e.cfg.Store.Update(sctx, &next, expect)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrConflict) || attempt == 3 {
			return fmt.Errorf("engine: finish %s: %w", id, err)
		}
		// A cancel request (or a checkpoint) bumped the version: retry on
		// the current one unless another worker now owns the response.
		cur, gerr := e.cfg.Store.Get(sctx, id)
		if gerr != nil {
			return fmt.Errorf("engine: finish %s: %w", id, gerr)
		}
		if cur.Response.Status.Terminal() {
			return nil
		}
		if cur.Job != nil && cur.Job.Owner != "" && cur.Job.Owner != e.cfg.WorkerID && e.cfg.Now().Before(cur.Job.LeaseUntil) {
			return nil
		}
		next.Version, expect = cur.Version, cur.Response.Status
		j.CancelRequested = cur.Job != nil && cur.Job.CancelRequested
	}
	*rec = next
	e.log.Info("background response done", "response_id", id, "status", r.resp.Status, "turns", r.turns, "invocations", j.Invocations)
	if e.cfg.Publisher != nil {
		if err := e.cfg.Publisher.Publish(sctx, r.resp); err != nil {
			e.log.Error("publish failed", "response_id", id, "err", err)
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
				return nil, err
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
	deadline := e.cfg.Now().Add(e.cfg.CancelWait)
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
		case <-time.After(e.cfg.PollInterval):
		}
	}
}
