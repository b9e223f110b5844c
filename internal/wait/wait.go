// Package wait is how the gateway pauses between attempts: a wait that a
// context's end cuts short, and the jitter that spreads the waits of
// callers that failed together.
package wait

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits d and reports true, or reports false as soon as ctx ends
// (at once when it has ended already). Its timer is stopped either way.
func Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Exponential is the backoff before retry n (0, 1, ...): base doubled n
// times, capped at ceiling (no overflow, however large n).
func Exponential(base, ceiling time.Duration, n int) time.Duration {
	d := min(base, ceiling)
	for i := 0; i < n && d > 0 && d < ceiling; i++ {
		if d > ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return d
}

// EqualJitter returns a random wait between d/2 and d (both included):
// half of the backoff fixed, half random ("equal jitter"). A d below 2 is
// returned as is.
func EqualJitter(d time.Duration) time.Duration {
	if d < 2 {
		return d
	}
	return d/2 + rand.N(d-d/2+1)
}
