// Package store defines where responses are kept: the ResponseStore
// interface and its domain errors. Records are scoped to the tenant of the
// context (package tenant). Implementations: memory (this package) and
// dynamodb (sub-package).
package store

import (
	"context"
	"errors"
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// Domain errors. Implementations wrap them with %w.
var (
	// ErrNotFound: no such response (or it expired, or was deleted).
	ErrNotFound = errors.New("response not found")
	// ErrConflict: a create found the id taken, or a conditional update found
	// a different status than expected.
	ErrConflict = errors.New("response changed concurrently")
)

// Record is one stored response with what a continuation needs.
type Record struct {
	// Response is the response object as returned to the client.
	Response *api.Response
	// Input holds this request's own input items, with ids assigned.
	Input []api.Item
	// Context holds the conversation before Input (the whole previous chain:
	// its inputs and outputs), so continuing from this response needs one read.
	Context []api.Item
	// Cut is the id of the first item of the conversation (Context, Input
	// and the response's output) that the response's model still saw
	// after truncation "auto" cut the oldest items from its view
	// (docs/api.md, "Truncation"); empty when nothing was cut. A
	// continuation, and the run's next invocation, start their model's
	// view from it. Never on the wire.
	Cut string
	// Rendered is the size, in tokens, of what the response's model saw at
	// its end as server-side compaction measures it: its last model call's
	// input and output tokens as the provider counted them, plus an
	// estimate of the items added after that call (docs/api.md,
	// "Server-side compaction"); 0 when no model call was counted. A
	// continuation counts from it. Never on the wire.
	Rendered int
	// ExpiresAt is when the record stops being readable; zero means the
	// store's default retention. Create and Update set it to the expiry
	// they stored, so that the writer knows it without a read (an event
	// log's KnownEventLog, a run's signals).
	ExpiresAt time.Time
	// Version counts the record's writes: Create stores version 0, every
	// Update requires the stored version to equal rec.Version and stores
	// rec.Version+1 (updating rec on success). It is what makes concurrent
	// read-modify-write cycles safe (leases, cancel flags, checkpoints).
	Version int64
	// Job is the state of a background response; nil for others.
	Job *Job
}

// Job is the state of a background response that workers share.
type Job struct {
	// Request is the create request the worker runs, without the secrets
	// of its MCP tools.
	Request *api.CreateResponseRequest `json:"request"`
	// Secrets are those secrets, sealed by the engine (never plain text)
	// for the response's tenant and id: they open for no other.
	Secrets []byte `json:"secrets,omitempty"`
	// Owner is the worker holding the lease, empty when none does.
	Owner string `json:"owner,omitempty"`
	// LeaseUntil is when the owner's lease ends; a worker may take over a
	// response whose lease has ended (its owner crashed).
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// CancelRequested is set by POST /cancel; the running worker stops.
	CancelRequested bool `json:"cancel_requested,omitempty"`
	// Turns counts the model calls made so far, over every invocation.
	Turns int `json:"turns"`
	// HostedCalls counts the hosted tool calls executed so far, over every
	// invocation (the request's max_tool_calls bounds them).
	HostedCalls int `json:"hosted_calls,omitempty"`
	// NextSeq is the sequence number of the next stream event.
	NextSeq int64 `json:"next_seq"`
	// Invocations counts the worker invocations that ran the loop.
	Invocations int `json:"invocations"`
	// Claim is the token of the worker's claim that holds the lease
	// (random per claim; a worker claiming twice gets two): the claimed
	// run's event appends carry it (ClaimedEventLog), and a store refuses
	// them once another claim replaced it.
	Claim string `json:"claim,omitempty"`
	// RequestID is the id of the request that created the response
	// (package requestid): the worker's log lines repeat it.
	RequestID string `json:"request_id,omitempty"`
}

// Event is one stored stream event of a background response.
type Event struct {
	// Seq is the event's sequence_number.
	Seq int64
	// Type is the event type.
	Type string
	// Data is the event's JSON.
	Data []byte
}

// EventLog keeps the stream events of background responses so that a
// client can follow them and resume a dropped stream.
type EventLog interface {
	// AppendEvents stores events (a later write of the same Seq replaces
	// the earlier one, so a resumed worker can re-emit).
	AppendEvents(ctx context.Context, id string, events []Event) error
	// Events returns the stored events with Seq > after, in order.
	Events(ctx context.Context, id string, after int64) ([]Event, error)
}

// KnownEventLog is an EventLog that can append without first checking
// that the response exists: a caller that has just read the live record
// (a background run that polls it) or written it (Create and Update set
// its ExpiresAt) passes its ExpiresAt, which the events take, and saves
// the store a read per append. A response deleted since then may get
// events that nothing reads and that expire with it.
type KnownEventLog interface {
	EventLog
	// AppendEventsKnown is AppendEvents for a response the caller read
	// live, expiring at expiresAt (zero: unknown, AppendEvents).
	AppendEventsKnown(ctx context.Context, id string, expiresAt time.Time, events []Event) error
}

// ClaimedEventLog is an EventLog whose appends can be conditional on a
// worker's claim of the response (Job.Claim): a worker that ran past its
// lease while another claimed the response is refused, instead of writing
// sequence numbers the new owner writes too (docs/background.md, "lease
// overrun").
type ClaimedEventLog interface {
	EventLog
	// AppendEventsClaimed is AppendEvents for the worker holding claim,
	// for a response that expires at expiresAt (as its own claim or
	// checkpoint stored it): ErrLeaseLost when the stored record's claim
	// is another (another worker took the lease over; nothing is
	// written), ErrNotFound when the response is gone.
	AppendEventsClaimed(ctx context.Context, id, claim string, expiresAt time.Time, events []Event) error
}

// Conversation returns the full conversation of the record: Context, Input
// and the response's Output as a continuation carries on with it
// (api.Continued: without the items validated output set aside, nor the
// calls a model call cut: ItemHidden.Cut), in order.
func (r *Record) Conversation() []api.Item {
	output := api.Continued(r.Response.Output)
	out := make([]api.Item, 0, len(r.Context)+len(r.Input)+len(output))
	out = append(out, r.Context...)
	out = append(out, r.Input...)
	return append(out, output...)
}

// RunSignals is a ResponseStore that tells the worker running a
// background response about a cancel request, the response's deletion and
// whether anyone follows its events, without a read of the whole record:
// the worker polls it several times a second for as long as the run lasts,
// and a record grows with the run (docs/background.md, "What polling
// costs").
//
// Every write passes expiresAt, the response's expiry as the store holds
// it (Record.ExpiresAt after a Get, Create or Update): it tells the
// response the signals belong to from an earlier one of the same id, whose
// signals the writes replace (an expired response's cancel request is not
// the next one's). A write after the response's deletion may return
// ErrNotFound; it never makes the response look live again.
type RunSignals interface {
	// MarkRunning notes that a worker runs the response id, expiring at
	// expiresAt with the response; RequestCancel and Poll then see it.
	MarkRunning(ctx context.Context, id string, expiresAt time.Time) error
	// RequestCancel notes a cancel request for the running response id
	// (whose record the caller has just marked CancelRequested), expiring
	// at expiresAt.
	RequestCancel(ctx context.Context, id string, expiresAt time.Time) error
	// Follow notes that a client follows the events of the response id
	// until `until` (followers renew it while they follow), expiring at
	// expiresAt with the response.
	Follow(ctx context.Context, id string, until, expiresAt time.Time) error
	// Poll returns what is noted for the response id. ErrNotFound when
	// nothing is (the response was deleted, or no worker marked it
	// running): the caller reads the record to tell which.
	Poll(ctx context.Context, id string) (RunSignal, error)
}

// RunSignal is what RunSignals.Poll reports about a running background
// response.
type RunSignal struct {
	// Cancel: a cancel was requested.
	Cancel bool
	// ExpiresAt is the response's expiry.
	ExpiresAt time.Time
	// FollowedUntil is when the last follower's note ends (zero: nobody
	// followed): until then the worker appends its events as they come,
	// after it only at checkpoints.
	FollowedUntil time.Time
}

// InProcess is implemented by stores that keep their data in the
// process (Memory): their calls wait on nothing but their own locks, so a
// caller that bounds how long a store call may take (a write that must
// outlive its request) needs no deadline around theirs.
type InProcess interface {
	// InProcess reports whether the store's calls wait on nothing but its
	// locks.
	InProcess() bool
}

// ItemPage is one page of input items.
type ItemPage struct {
	Items   []api.Item
	HasMore bool
}

// ResponseStore keeps responses. Every method is safe for concurrent use.
type ResponseStore interface {
	// Create stores a new record; ErrConflict when the id exists. On
	// success rec.ExpiresAt is the stored expiry (the default retention's
	// when it was zero).
	Create(ctx context.Context, rec *Record) error
	// Get returns the record; ErrNotFound when absent or expired.
	Get(ctx context.Context, id string) (*Record, error)
	// Update replaces the record if its stored status is still expect, its
	// stored Version equals rec.Version, and the transition expect →
	// rec.Response.Status is allowed (or the status is unchanged and not
	// terminal, for progress checkpoints); else ErrConflict (ErrNotFound when
	// absent). On success rec.Version is incremented and rec.ExpiresAt is
	// the stored expiry (a zero one restarts the default retention).
	Update(ctx context.Context, rec *Record, expect api.Status) error
	// Delete removes the record and every part of it; ErrNotFound when
	// absent, an error wrapping ErrPartlyDeleted when the record is gone
	// but parts of it remain (they expire with it).
	Delete(ctx context.Context, id string) error
	// ListInputItems pages through the record's Input.
	ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*ItemPage, error)
}
