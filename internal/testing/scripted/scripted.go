// Package scripted is what the fake model servers (internal/testing/fakellm,
// internal/testing/fakebedrock) share: the replies they were scripted with, a fixed
// list served in order or a function of the request, and the log of the
// requests they received.
package scripted

import (
	"slices"
	"sync"
	"sync/atomic"
)

// Log picks the scripted reply T of each request R and records the
// requests. Its methods are safe for concurrent use.
type Log[R, T any] struct {
	script func(R) T
	turns  []T
	noRec  atomic.Bool

	mu    sync.Mutex
	calls int
	reqs  []R
}

// Turns returns a log whose replies are turns, one per request in order.
func Turns[R, T any](turns []T) *Log[R, T] { return &Log[R, T]{turns: slices.Clone(turns)} }

// Func returns a log whose replies fn computes from each request.
func Func[R, T any](fn func(R) T) *Log[R, T] { return &Log[R, T]{script: fn} }

// Next numbers req (setSeq receives its 0-based number), records it unless
// recording is off, and returns its reply; false when a fixed script is
// exhausted.
func (l *Log[R, T]) Next(req *R, setSeq func(*R, int)) (T, bool) {
	l.mu.Lock()
	seq := l.calls
	setSeq(req, seq)
	l.calls++
	if !l.noRec.Load() {
		l.reqs = append(l.reqs, *req)
	}
	l.mu.Unlock()
	if l.script != nil {
		return l.script(*req), true
	}
	if seq < len(l.turns) {
		return l.turns[seq], true
	}
	var zero T
	return zero, false
}

// Len is the number of scripted turns (0 for a script function).
func (l *Log[R, T]) Len() int { return len(l.turns) }

// Requests returns the recorded requests, in arrival order.
func (l *Log[R, T]) Requests() []R {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// Calls returns the number of requests so far, recorded or not.
func (l *Log[R, T]) Calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// SetRecording turns recording on (the default) or off; benchmarks making
// many calls turn it off so memory stays flat.
func (l *Log[R, T]) SetRecording(on bool) { l.noRec.Store(!on) }
