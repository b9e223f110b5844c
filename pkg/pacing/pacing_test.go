package pacing_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
)

// sink buffers events as the HTTP transport does and records each flush
// (the event types it sent) and each comment, in order.
type sink struct {
	mu      sync.Mutex
	pending []string
	ops     [][]string // a flush's event types, or {": <comment>"}
	resp    *api.Response
	failAt  int // the flush that fails, 1-based; 0: none
}

func (s *sink) WriteEvent(ev *api.StreamEvent) error {
	s.pending = append(s.pending, ev.Type)
	return nil
}

func (s *sink) WriteRawEvent(typ string, _ []byte) error {
	s.pending = append(s.pending, typ)
	return nil
}

func (s *sink) WriteResponse(r *api.Response) error {
	s.resp = r
	return nil
}

func (s *sink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		s.ops = append(s.ops, s.pending)
		s.pending = nil
	}
	if s.failAt > 0 && len(s.ops) >= s.failAt {
		return errors.New("the client went away")
	}
	return nil
}

func (s *sink) WriteComment(text string) error {
	if err := s.Flush(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = append(s.ops, []string{": " + text})
	return nil
}

// Retract drops the pending events when nothing was flushed yet.
func (s *sink) Retract() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ops) > 0 {
		return false
	}
	s.pending = nil
	return true
}

func (s *sink) written() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.ops...)
}

func ev(typ string) *api.StreamEvent { return &api.StreamEvent{Type: typ} }

func delta(typ string) *api.StreamEvent {
	d := "x"
	return &api.StreamEvent{Type: typ, Delta: &d}
}

// Events other than deltas wait FlushDelay for the ones after them; a delta
// is flushed at once with what waits before it; the terminal event stays
// buffered, with the events before it, for the caller.
func TestEventsReadyTogetherShareAWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: -1})
		defer w.Close()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Empty(t, s.written(), "within the delay nothing is written")
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}}, s.written())

		require.NoError(t, w.WriteEvent(ev(api.EventOutputItemAdded)))
		require.NoError(t, w.WriteEvent(delta(api.EventOutputTextDelta)))
		assert.Equal(t, []string{api.EventOutputItemAdded, api.EventOutputTextDelta}, s.written()[1], "a delta goes out at once")

		require.NoError(t, w.WriteEvent(ev(api.EventOutputItemDone)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCompleted)))
		time.Sleep(time.Hour)
		synctest.Wait()
		w.Close()
		assert.Len(t, s.written(), 2, "the end of the stream is the caller's to send")
		assert.Equal(t, []string{api.EventOutputItemDone, api.EventResponseCompleted}, s.pending)
	})
}

// A held delta (the model's next event is at hand) goes out with the delta
// after it that is not held, or once FlushDelay has passed; with a
// negative delay it goes out at once. The first delta of a stream is never
// held: the time to the first token is what a client feels.
func TestHeldDeltas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: -1})
		defer w.Close()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteHeldEvent(delta(api.EventOutputTextDelta)))
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventOutputTextDelta}}, s.written(), "the first delta goes out at once")

		require.NoError(t, w.WriteHeldEvent(delta(api.EventOutputTextDelta)))
		require.NoError(t, w.WriteHeldEvent(delta(api.EventOutputTextDelta)))
		synctest.Wait()
		assert.Len(t, s.written(), 1, "held deltas wait")
		require.NoError(t, w.WriteEvent(delta(api.EventOutputTextDelta)))
		assert.Equal(t, []string{api.EventOutputTextDelta, api.EventOutputTextDelta, api.EventOutputTextDelta}, s.written()[1], "together with the next delta")

		require.NoError(t, w.WriteHeldEvent(delta(api.EventOutputTextDelta)))
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Len(t, s.written(), 2, "within the delay")
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Equal(t, []string{api.EventOutputTextDelta}, s.written()[2], "once the delay has passed")
	})
	s := &sink{}
	w := pacing.New(s, pacing.Config{FlushDelay: -1})
	defer w.Close()
	require.NoError(t, w.WriteHeldEvent(delta(api.EventOutputTextDelta)))
	assert.Equal(t, [][]string{{api.EventOutputTextDelta}}, s.written())
}

// With a negative delay every event is flushed on its own, the terminal
// event too.
func TestNoDelayFlushesEachEvent(t *testing.T) {
	s := &sink{}
	w := pacing.New(s, pacing.Config{FlushDelay: -1})
	defer w.Close()
	for _, typ := range []string{api.EventResponseCreated, api.EventResponseInProgress, api.EventResponseCompleted} {
		require.NoError(t, w.WriteEvent(ev(typ)))
	}
	assert.Equal(t, [][]string{{api.EventResponseCreated}, {api.EventResponseInProgress}, {api.EventResponseCompleted}}, s.written())
	assert.Empty(t, s.pending)
}

// While nothing is written, a keep-alive comment goes out every KeepAlive,
// after the events that were waiting; none follows the terminal event.
func TestKeepAlives(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Hour, KeepAlive: time.Minute})
		defer w.Close()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated}, {": keep-alive"}}, s.written())
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, s.written(), 3)
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCompleted)))
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Len(t, s.written(), 3, "no keep-alive after the terminal event")
	})
}

// Nothing is paced before the stream begins: a request refused before its
// first event gets its error, never a comment. A Flush begins the stream
// (a follower of stored events calls it when it starts), and stored events
// are not paced: their writer flushes each batch.
func TestPacingBeginsWithTheStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{KeepAlive: time.Minute})
		defer w.Close()
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Empty(t, s.written())

		require.NoError(t, w.Flush())
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, [][]string{{": keep-alive"}}, s.written())

		require.NoError(t, w.WriteRawEvent(api.EventResponseCreated, []byte(`{}`)))
		require.NoError(t, w.WriteRawEvent(api.EventOutputTextDelta, []byte(`{}`)))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, s.written(), 1, "stored events wait for their writer's flush")
		require.NoError(t, w.Flush())
		assert.Equal(t, []string{api.EventResponseCreated, api.EventOutputTextDelta}, s.written()[1])
	})
}

// After the first failed write (the client went away) nothing more is
// written and every call reports the error.
func TestFirstErrorSticks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{failAt: 1}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: time.Minute})
		defer w.Close()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Error(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated}}, s.written())
	})
}

// A response that is not streamed goes to the sink, and no pacing starts.
func TestWriteResponse(t *testing.T) {
	s := &sink{}
	w := pacing.New(s, pacing.Config{})
	r := &api.Response{ID: "resp_1"}
	require.NoError(t, w.WriteResponse(r))
	w.Close()
	assert.Same(t, r, s.resp)
	assert.Empty(t, s.written())
}

// A held opening without a bound (OpeningHold negative) waits, without a
// flush or a keep-alive being due, until Open; it then goes out like any
// event that is not a delta: with the first delta when that comes within
// FlushDelay, else once it has passed.
func TestHeldOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: -1})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Empty(t, s.written(), "the opening is held")
		w.Open()
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Empty(t, s.written(), "within the delay")
		time.Sleep(time.Second / 2)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}}, s.written())
		assert.False(t, w.Retract(), "an opened stream is not retracted")
	})
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: -1})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		w.Open()
		require.NoError(t, w.WriteEvent(delta(api.EventOutputTextDelta)))
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventOutputTextDelta}}, s.written(), "the first delta goes out with the opening")
	})
}

// A held opening goes out at the latest once OpeningHold has passed
// without the stream opening: a provider that sends its status only with
// its first token delays the opening by no more than that.
func TestHeldOpeningBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: time.Minute, OpeningHold: 3 * time.Second})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Empty(t, s.written())
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}}, s.written())
		assert.False(t, w.Retract(), "what reached the client is not retracted")
		w.Open()
		require.NoError(t, w.WriteEvent(ev(api.EventOutputItemAdded)))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}, {api.EventOutputItemAdded}}, s.written(), "paced as usual after it")
	})
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: time.Minute})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		time.Sleep(10 * time.Second)
		w.Open()
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated}}, s.written(), "Open brings the flush forward to FlushDelay")
	})
}

// A held opening without a bound goes out with the keep-alive once
// KeepAlive has passed without the stream opening: a proxy never sees the
// stream idle longer.
func TestHeldOpeningGoesOutWithTheKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: time.Minute, OpeningHold: -1})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		assert.Empty(t, s.written())
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}, {": keep-alive"}}, s.written())
		assert.False(t, w.Retract(), "what reached the client is not retracted")
	})
}

// Retract drops a held opening that nothing of reached the client, and
// the pacing stops: no keep-alive follows.
func TestRetractHeldOpening(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: time.Second, KeepAlive: time.Minute})
		defer w.Close()
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		require.True(t, w.Retract())
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Empty(t, s.written())
		assert.Empty(t, s.pending)
	})
}

// The hold's timer, the keep-alive's and the flush delay's race the
// writer's callers (real time, under -race): whatever the order, a retracted
// opening was never sent, one not retracted went out first, each event once
// and in order, and once Close returned nothing more reaches the sink and no
// timer runs.
func TestHeldOpeningInterleavings(t *testing.T) {
	defer goleak.VerifyNone(t)
	for i := range 300 {
		s := &sink{}
		w := pacing.New(s, pacing.Config{FlushDelay: 20 * time.Microsecond, KeepAlive: 150 * time.Microsecond,
			OpeningHold: time.Duration(i%7) * 30 * time.Microsecond})
		w.HoldOpening()
		require.NoError(t, w.WriteEvent(ev(api.EventResponseCreated)))
		require.NoError(t, w.WriteEvent(ev(api.EventResponseInProgress)))
		time.Sleep(time.Duration(i%11) * 20 * time.Microsecond)
		retracted := i%2 == 0 && w.Retract()
		if !retracted {
			w.Open()
			require.NoError(t, w.WriteEvent(delta(api.EventOutputTextDelta)))
			require.NoError(t, w.WriteEvent(ev(api.EventResponseCompleted)))
		}
		w.Close()
		got := s.written()
		time.Sleep(200 * time.Microsecond)
		require.Equal(t, got, s.written(), "iteration %d: written after Close", i)
		if retracted {
			require.Empty(t, got, "iteration %d", i)
			continue
		}
		// A timer may fire between two writes (a loaded machine): the
		// events go out in order, but not always in one flush.
		var events []string
		for _, op := range got {
			for _, typ := range op {
				if !strings.HasPrefix(typ, ": ") {
					events = append(events, typ)
				}
			}
		}
		require.Equal(t, []string{api.EventResponseCreated, api.EventResponseInProgress, api.EventOutputTextDelta}, events, "iteration %d: %v", i, got)
	}
}
