package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// Background responses (background=true): queue them (CreateBackground),
// start one that arrived as an event (StartBackground), cancel them. A
// worker runs them (lease.go); followers stream their stored events
// (follow.go).

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

// appendKnown appends evs to the log of response id, without the store's
// read of the response when expiresAt, its expiry, is known from a live
// read or this worker's own write of the record (store.KnownEventLog).
func (e *Engine) appendKnown(ctx context.Context, id string, expiresAt time.Time, evs []store.Event) error {
	if kl, ok := e.cfg.Store.(store.KnownEventLog); ok && !expiresAt.IsZero() {
		return kl.AppendEventsKnown(ctx, id, expiresAt, evs)
	}
	return e.eventLog().AppendEvents(ctx, id, evs)
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
	// The stream counts toward the cap while it is open, as a followed
	// one does (StreamResponse); its create was admitted already.
	defer e.inflight.leave(e.inflight.hold(ctx))
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
		// A queue's refusal of the client (its share of the queue is
		// full: a 429) is the client's answer; any other failure a 500.
		if ae, ok := errors.AsType[*api.Error](err); ok && ae.Status < 500 {
			_ = e.failBackground(ctx, rec, ae)
			return nil, ae
		}
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
	if id != "" {
		// A delivery again of a response that exists (the usual
		// redelivery) prepares nothing: prepare would lock the
		// conversation for the id again (the lock is re-entrant for its
		// owner, the running response) and the refusal release it.
		switch _, err := e.cfg.Store.Get(ctx, id); {
		case err == nil:
			return nil, fmt.Errorf("engine: response %s exists: %w", id, store.ErrConflict)
		case !errors.Is(err, store.ErrNotFound):
			return nil, e.storeErr(err, id, "id")
		}
	}
	r, err := e.prepare(ctx, req, id, nil)
	if err != nil {
		return nil, err
	}
	// Until the response is stored, a refusal releases its conversation;
	// from then on the response holds it to its end (finishBackground).
	stored := false
	defer func() {
		if !stored {
			e.endConversation(ctx, r)
		}
	}()
	r.resp.Status = api.StatusQueued
	buf := &eventBuffer{}
	r.em = &emitter{w: buf, stream: true}
	r.em.lifecycle(api.EventResponseCreated, r.resp)
	r.em.lifecycle(api.EventResponseQueued, r.resp)
	sealed, secrets, err := e.sealSecrets(ctx, req, r.resp.ID)
	if err != nil {
		return nil, api.ServerError(err, "The request's secrets could not be sealed.")
	}
	rec := &store.Record{Response: r.resp, Input: r.input, Context: r.storedContext(), Cut: r.cut,
		Job: &store.Job{Request: sealed, Secrets: secrets, NextSeq: r.em.seq, RequestID: requestid.From(ctx)}}
	if err := e.cfg.Store.Create(ctx, rec); err != nil {
		if errors.Is(err, store.ErrConflict) {
			// Delivered twice at once: the response created first holds
			// the conversation (the same owner), which stays locked for it.
			stored = id != ""
			return nil, fmt.Errorf("engine: response %s exists: %w", r.resp.ID, err)
		}
		return nil, e.storeErr(tooLarge(req, err), r.resp.ID, "id")
	}
	stored = true
	// Create has just stored the record live: the append needs no read.
	if err := e.appendKnown(ctx, r.resp.ID, rec.ExpiresAt, buf.take()); err != nil {
		se := api.ServerError(err, "The response's events could not be stored.")
		se.Code = "store_failed"
		_ = e.failBackground(ctx, rec, se)
		return nil, e.storeErr(err, r.resp.ID, "id")
	}
	return rec, nil
}

// signalCancel tells the worker running id about the cancel request just
// stored in its record, through the store's run signals when it keeps
// them. A failure delays the stop only until the run's next checkpoint,
// which finds the record changed.
func (e *Engine) signalCancel(ctx context.Context, id string, expiresAt time.Time) {
	e.signal(ctx, id, "signalling the cancel request failed; the worker sees it at its next checkpoint",
		func(sig store.RunSignals) error { return sig.RequestCancel(ctx, id, expiresAt) })
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
				e.signalCancel(ctx, id, next.ExpiresAt)
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
		if !wait.Sleep(ctx, e.cfg.Background.PollInterval) {
			return rec.Response, nil
		}
	}
}
