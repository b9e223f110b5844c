package engine

import (
	"context"
	"time"
)

// budget tracks the time a response may still spend: the context deadline
// minus a reserve, against the longest model call and tool batch measured
// so far in this response.
type budget struct {
	now      func() time.Time
	deadline time.Time // zero when the context has none
	maxModel time.Duration
	maxTools time.Duration
}

func newBudget(ctx context.Context, now func() time.Time, reserve time.Duration) *budget {
	b := &budget{now: now}
	if d, ok := ctx.Deadline(); ok {
		b.deadline = d.Add(-reserve)
	}
	return b
}

// left is the time until the budget deadline (a large value without one).
func (b *budget) left() time.Duration {
	if b.deadline.IsZero() {
		return time.Duration(1<<62 - 1)
	}
	return b.deadline.Sub(b.now())
}

// fits reports whether a step whose longest measured run is est still fits.
func (b *budget) fits(est time.Duration) bool {
	l := b.left()
	return l > 0 && l >= est
}

// bound returns ctx limited to the budget deadline, for model and tool calls.
// Without a deadline it is ctx itself: every caller waits for the calls it
// starts and each call releases what it holds (a model stream its body),
// so a context of their own would only cost its allocations and its link
// in the request's context (5 allocations a model call).
func (b *budget) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if b.deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, b.deadline)
}

// measure records how long a step took.
func measure(max *time.Duration, d time.Duration) {
	if d > *max {
		*max = d
	}
}
