package wsapi

import (
	"context"
	"sync"

	"github.com/lambent/lambent/pkg/requestid"
)

// lanes runs the response.create messages of one local connection: each
// busy lane (stream_id; "" is the lane of the messages without one) on a
// goroutine of its own, which handles the lane's messages one at a time in
// order of arrival (FIFO), while the other lanes run too. At most
// MaxLanes+1 lanes are busy at once, with at most max messages queued
// behind the ones they run, on all lanes together (each message up to the
// read limit: the lanes do not multiply what a connection holds); offer
// refuses a message beyond those bounds, which the caller holds until a
// lane takes its next one (space).
type lanes struct {
	ctx  context.Context
	sess *Session
	// fail ends the connection: a lane can no longer send.
	fail context.CancelFunc
	max  int
	// space gets a token whenever a busy lane takes a queued message or
	// ends.
	space chan struct{}
	wg    sync.WaitGroup

	mu sync.Mutex
	// busy is the messages queued on each busy lane, behind the one it
	// runs; queued counts them on all lanes.
	busy   map[string][]Message
	queued int
	// dropped is set once the queued messages are to be dropped (drop).
	dropped bool
}

func newLanes(ctx context.Context, sess *Session, fail context.CancelFunc, maxQueued int) *lanes {
	return &lanes{ctx: ctx, sess: sess, fail: fail, max: maxQueued, space: make(chan struct{}, 1), busy: map[string][]Message{}}
}

// offer runs m on lane, at once when the lane is idle, else after the
// messages queued on it; false when the lane's queue is full, or the lane
// is idle and MaxLanes+1 lanes are busy. A message offered once the
// connection has ended (or the queued ones are dropped) is dropped: the
// caller may have taken it from the client just before the end.
func (l *lanes) offer(lane string, m Message) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	q, busy := l.busy[lane]
	switch {
	case l.dropped || l.ctx.Err() != nil:
		return true
	case busy && l.queued >= l.max, !busy && len(l.busy) > MaxLanes:
		return false
	case busy:
		l.busy[lane] = append(q, m)
		l.queued++
		return true
	}
	l.busy[lane] = nil
	l.wg.Add(1)
	go l.run(lane, m)
	return true
}

// run handles m and then the messages queued on lane, until there are
// none or the connection ends.
func (l *lanes) run(lane string, m Message) {
	defer l.wg.Done()
	for {
		if err := l.sess.Handle(requestid.With(l.ctx, requestid.New()), m); err != nil {
			l.fail()
		}
		var ok bool
		if m, ok = l.next(lane); !ok {
			return
		}
	}
}

// next takes the next message queued on lane; false when there is none
// (or the connection ended, or the queued ones are dropped): the lane is
// idle.
func (l *lanes) next(lane string) (Message, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.signal()
	q := l.busy[lane]
	if len(q) == 0 || l.dropped || l.ctx.Err() != nil {
		l.queued -= len(q)
		delete(l.busy, lane)
		return Message{}, false
	}
	l.busy[lane] = q[1:]
	l.queued--
	return q[0], true
}

// signal puts a token in space, unless one is there.
func (l *lanes) signal() {
	select {
	case l.space <- struct{}{}:
	default:
	}
}

// drop drops the queued messages: each lane ends after its running
// response (the caller offers no more).
func (l *lanes) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped = true
	for lane := range l.busy {
		l.busy[lane] = nil
	}
	l.queued = 0
}

// busyCount returns how many lanes are busy.
func (l *lanes) busyCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.busy)
}

// wait waits until no lane runs.
func (l *lanes) wait() { l.wg.Wait() }
