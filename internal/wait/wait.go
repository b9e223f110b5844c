// Package wait is how the gateway pauses between attempts: a wait that a
// context's end cuts short, and the jitter that spreads the waits of
// callers that failed together.
package wait

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
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

// RetryAfter is the delay a Retry-After value names (RFC 9110): a number
// of seconds (a fraction too, as some AWS services send; beyond what a
// Duration holds, its largest), or an HTTP-date, the time from now until
// it (0 when past). ok is false for anything else (negative, not finite,
// not a date).
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if s, err := strconv.ParseFloat(v, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s < 0 || math.IsNaN(s) || err == nil && math.IsInf(s, 0):
			// Negative, or NaN or Inf written out (ErrRange: a finite
			// number too large for a float, Inf here, is clamped).
			return 0, false
		case s >= math.MaxInt64/float64(time.Second):
			return math.MaxInt64, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
