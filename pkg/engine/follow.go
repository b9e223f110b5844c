package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/store"
)

// Followers of a background response (StreamResponse, CreateBackground
// with stream): the events its worker stored, read from the event log as
// they are appended.

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
	// An open stream polls the store: it counts toward the tenant's
	// in-flight cap, as a create does.
	t, err := e.inflight.enter(ctx)
	if err != nil {
		return err
	}
	defer e.inflight.leave(t)
	return e.follow(ctx, rec, after, w)
}

// followCheckEvery is how many polls of the event log without a new event
// pass between two reads of the record (10 s at the default PollInterval).
// A follower learns that the response finished from its terminal event in
// the log; the record is the fallback for a terminal event whose append
// failed, and a read of it costs a DynamoDB read unit per 4 KB of a record
// that grows with the run, where a poll of the log costs half a unit.
const followCheckEvery = 40

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
// sent as stored, rebuilt from the record. A store failure after the
// first read of the log ends the stream with an error event
// (followFailed).
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
	noteFollower := e.followerNote(ctx, rec)
	idle := 0
	polled := false
	for {
		if end >= 0 && after >= end {
			return nil
		}
		noteFollower()
		evs, err := log.Events(ctx, id, after)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if polled {
				return e.followFailed(ctx, raw, id, after, e.storeErr(err, id, "id"))
			}
			return e.storeErr(err, id, "id")
		}
		polled = true
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
				return e.followFailed(ctx, raw, id, after, err)
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

// followFailed ends a followed stream that started (its first read of the
// log succeeded, so the client may have its first events) on err, a
// failure of the store: with an error event numbered after the last event
// sent, which the official SDKs report as an error where a stream that
// stopped short would read as one that ended, and nil, so that the
// transport ends the stream as usual (data: [DONE]). The client may
// resume from the last event it received.
func (e *Engine) followFailed(ctx context.Context, raw rawEventWriter, id string, after int64, err error) error {
	e.log.WarnContext(ctx, "following a background response failed", "response_id", id, "after", after, "err", err)
	ev := api.NewErrorEvent(api.AsError(err).ForClient(requestid.From(ctx)))
	ev.SequenceNumber = after + 1
	data, merr := wirejson.Marshal(ev.Wire())
	if merr != nil {
		return fmt.Errorf("engine: encode the error event of %s: %w", id, merr)
	}
	_ = raw.WriteRawEvent(ev.Type, data) // an error: the client went away
	return nil
}

// followNote is how long a follower's note lasts (store.RunSignals.Follow):
// a follower renews it every third of that while it follows; after it
// ends, the worker appends its events only at checkpoints.
const followNote = 30 * time.Second

// followerNote returns the function that tells the worker running rec,
// through the store's run signals, that a client follows its events, and
// renews the note when it is due: the worker appends its events as they
// come only while someone follows (docs/background.md). A response that
// has finished, or a store without run signals, needs no note. A failed
// note is logged and tried again when due; meanwhile the events come at
// the worker's checkpoints.
func (e *Engine) followerNote(ctx context.Context, rec *store.Record) func() {
	if _, ok := e.cfg.Store.(store.RunSignals); !ok || rec.Response.Status.Terminal() {
		return func() {}
	}
	id := rec.Response.ID
	var due time.Time
	return func() {
		now := e.cfg.Now()
		if now.Before(due) {
			return
		}
		due = now.Add(followNote / 3)
		e.signal(ctx, id, "noting a follower failed; the worker's events come at its checkpoints",
			func(sig store.RunSignals) error { return sig.Follow(ctx, id, now.Add(followNote), rec.ExpiresAt) })
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
