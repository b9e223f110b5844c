// Package pacing paces the events of a streamed response for the transport
// that writes them: when a buffering writer sends what it holds, and the
// keep-alive comments of a stream on which nothing comes. The engine only
// emits events; the HTTP transport (package httpapi) wraps its SSE writer
// in a Writer, which is what the engine writes to.
//
// A Writer wraps a transport's writer, the sink. When the sink buffers
// events (it implements Flusher), the Writer decides when they go out: an
// event carrying model output (a delta) is flushed at once, with whatever
// waits before it, unless the model's next event is already at hand
// (WriteHeldEvent); any other event waits up to Config.FlushDelay for the
// events that follow it, so that events ready together (response.created,
// response.in_progress, output_item.added, content_part.added and the first
// delta; deltas the model sent together; the done events of a turn and the
// outputs of fast tools) share one write. When the sink takes comments (it implements Commenter), the Writer
// writes a "keep-alive" comment whenever nothing was written for
// Config.KeepAlive. The terminal event of a stream (api.IsTerminalEvent)
// ends the pacing: it stays buffered, with the events still waiting before
// it, for the transport to send when it ends the stream (the HTTP transport
// sends it with data: [DONE]).
//
// The engine may have the Writer hold the opening of a stream
// (HoldOpening): response.created and response.in_progress stay in the
// sink until the stream truly begins (Open: the first model call's
// provider accepted the call, or another event comes), at most
// Config.OpeningHold (a provider that sends its status only with its
// first token, after a long prompt or a long think, delays the opening by
// no more than that). A response that fails before then takes them back
// (Retract, when the sink is a Retracter and nothing reached the client),
// and its request gets an HTTP error instead of a stream.
//
// Pacing begins with the first call of the Writer's methods that stream
// (WriteEvent, WriteRawEvent, WriteComment, Flush), not before: a request
// refused before anything is streamed gets its error, never a comment.
// Close stops it. The pacer is a timer set for the next flush or keep-alive
// that is due, not a goroutine: a stream whose events go out with its deltas
// (the model answers within FlushDelay) starts none. Stored events forwarded as
// they are (WriteRawEvent, a background response's followers) are not
// paced: their writer flushes each batch.
package pacing

import (
	"errors"
	"sync"
	"time"

	"github.com/lambent/lambent/pkg/api"
)

// Defaults of Config.
const (
	DefaultKeepAlive   = 15 * time.Second
	DefaultFlushDelay  = time.Millisecond
	DefaultOpeningHold = 2 * time.Second
)

// Config paces a stream.
type Config struct {
	// KeepAlive is the interval of keep-alive comments while nothing is
	// written (default DefaultKeepAlive; negative disables).
	KeepAlive time.Duration
	// FlushDelay bounds how long a streamed event other than a delta waits
	// in a buffering sink for the events after it, so that events ready
	// together share one write: response.created, response.in_progress and
	// the first item events go out with the first delta when the model
	// answers within it, else when it has passed (default
	// DefaultFlushDelay; negative flushes after every event). Deltas are
	// flushed at once, but for held ones (WriteHeldEvent), which wait as
	// long at most.
	FlushDelay time.Duration
	// OpeningHold bounds how long a held opening (HoldOpening) waits for
	// the stream to begin before it goes out anyway (default
	// DefaultOpeningHold: a model provider refuses a call it will not run
	// well within it; negative: until Open, a flush or a keep-alive).
	OpeningHold time.Duration
}

// WithDefaults returns c with its zero values replaced by the defaults.
func (c Config) WithDefaults() Config {
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.FlushDelay == 0 {
		c.FlushDelay = DefaultFlushDelay
	}
	if c.OpeningHold == 0 {
		c.OpeningHold = DefaultOpeningHold
	}
	return c
}

// Sink is the transport's writer of a response: the engine's
// ResponseWriter.
type Sink interface {
	WriteEvent(ev *api.StreamEvent) error
	WriteResponse(r *api.Response) error
}

// Flusher is implemented by sinks whose WriteEvent only buffers events:
// Flush sends what was buffered, in one write that holds only whole events.
type Flusher interface {
	Flush() error
}

// Commenter is implemented by sinks that can send comments (SSE comment
// lines), which carry the keep-alives.
type Commenter interface {
	WriteComment(text string) error
}

// RawEventWriter is implemented by sinks that can forward a stored event's
// JSON as is.
type RawEventWriter interface {
	WriteRawEvent(typ string, data []byte) error
}

// Retracter is implemented by buffering sinks that can take back what they
// buffered: Retract drops the buffered events when nothing at all was
// written to the client yet (no event, no comment, no header), and
// reports whether it did; else it leaves them and reports false.
type Retracter interface {
	Retract() bool
}

// errNoRawEvents: the sink cannot forward stored events.
var errNoRawEvents = errors.New("pacing: the writer cannot forward stored events")

// Writer paces the events written to its sink (see the package
// documentation). It is safe for concurrent use; the sink is only ever
// called with the Writer's lock held, so it need not be.
type Writer struct {
	sink      Sink
	fl        Flusher   // nil when the sink does not buffer
	cw        Commenter // nil when the sink takes no comments
	keepAlive time.Duration
	delay     time.Duration
	hold      time.Duration

	mu sync.Mutex
	// err is the first error of a write; after it nothing is written.
	err error
	// started is set once pacing began; ended once a terminal event was
	// written; delivered once a delta was flushed; closed by Close.
	started, ended, delivered, closed bool
	// holding is set while the opening of the stream is held
	// (HoldOpening): what is written waits for Open, or for due (the end
	// of Config.OpeningHold; zero when negative).
	holding bool
	// comments is set when keep-alives are paced.
	comments bool
	// last is the time of the last write that reached the client, for
	// keep-alives.
	last time.Time
	// due is when buffered events must be flushed, zero when none wait.
	due time.Time
	// timer runs tick at fire (zero: not set); nil until pacing needs it.
	timer *time.Timer
	fire  time.Time
}

// New returns a Writer pacing sink by cfg (zero values: the defaults).
func New(sink Sink, cfg Config) *Writer {
	cfg = cfg.WithDefaults()
	w := &Writer{sink: sink, keepAlive: cfg.KeepAlive, delay: cfg.FlushDelay, hold: cfg.OpeningHold}
	w.fl, _ = sink.(Flusher)
	w.cw, _ = sink.(Commenter)
	return w
}

// WriteEvent writes ev to the sink and decides when it is flushed.
func (w *Writer) WriteEvent(ev *api.StreamEvent) error { return w.write(ev, false) }

// WriteHeldEvent writes ev, a delta the model's next event follows at once
// (provider.Delta.More), to the sink: it is not flushed at once but with
// the events after it, like an event that is not a delta (at the latest
// after Config.FlushDelay), so that deltas the model sent together share
// one write.
func (w *Writer) WriteHeldEvent(ev *api.StreamEvent) error { return w.write(ev, true) }

func (w *Writer) write(ev *api.StreamEvent, held bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
	if w.err != nil {
		return w.err
	}
	if w.err = w.sink.WriteEvent(ev); w.err != nil || w.holding {
		return w.err
	}
	if w.fl == nil {
		w.last = time.Now()
		w.ended = w.ended || api.IsTerminalEvent(ev.Type)
		return nil
	}
	switch {
	case w.delay <= 0 || ev.Delta != nil && (!held || !w.delivered):
		// The first delta is never held: it is the time to the first
		// token that a client feels.
		w.delivered = w.delivered || ev.Delta != nil
		w.flushLocked()
	case api.IsTerminalEvent(ev.Type):
		// The end of the stream is the transport's to send: a timer set for
		// the events waiting before it is stopped.
		w.ended = true
		w.dropDueLocked()
	case !w.ended && w.due.IsZero():
		w.due = time.Now().Add(w.delay)
		w.scheduleLocked()
	}
	return w.err
}

// HoldOpening holds the events written from now on (the opening of a
// stream: response.created, response.in_progress) in the sink until the
// stream truly begins: until Open, until Config.OpeningHold has passed
// without it, or until something else is sent (a flush, a keep-alive
// comment); or Retract takes them back. It holds nothing when the sink
// does not buffer (it is not a Flusher).
func (w *Writer) HoldOpening() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.holding = w.fl != nil
	if w.holding && w.hold > 0 {
		w.due = time.Now().Add(w.hold)
		if w.started {
			w.scheduleLocked()
		}
	}
}

// Open ends the hold of HoldOpening: what was held goes out like events
// that are not deltas, with the first delta when that comes within
// Config.FlushDelay, else once it has passed.
func (w *Writer) Open() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.holding {
		return
	}
	w.holding = false
	if w.delay <= 0 {
		w.flushLocked()
		return
	}
	if due := time.Now().Add(w.delay); w.due.IsZero() || due.Before(w.due) {
		w.due = due
		w.scheduleLocked()
	}
}

// Retract takes back the held opening (HoldOpening) when nothing at all
// reached the client (the sink, a Retracter, says so), and reports
// whether it did: the pacing then stops, as by Close, and the caller may
// answer with an error instead of the stream. Once the stream opened it
// reports false and changes nothing.
func (w *Writer) Retract() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.sink.(Retracter)
	if !w.holding || !ok || !r.Retract() {
		return false
	}
	w.holding = false
	w.closeLocked()
	return true
}

// WriteRawEvent forwards a stored event to the sink (a RawEventWriter).
// It is not paced: the caller flushes.
func (w *Writer) WriteRawEvent(typ string, data []byte) error {
	raw, ok := w.sink.(RawEventWriter)
	if !ok {
		return errNoRawEvents
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
	if w.err != nil {
		return w.err
	}
	if w.err = raw.WriteRawEvent(typ, data); w.err != nil {
		return w.err
	}
	if w.fl == nil {
		w.last = time.Now()
	}
	w.ended = w.ended || api.IsTerminalEvent(typ)
	return nil
}

// WriteComment sends a comment (the sink's, a Commenter; else nothing).
func (w *Writer) WriteComment(text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
	if w.err != nil || w.cw == nil {
		return w.err
	}
	w.holding = false
	w.err = w.cw.WriteComment(text)
	w.last = time.Now()
	return w.err
}

// Flush sends what the sink buffered. The first call begins the stream's
// pacing, with nothing buffered too: a follower of stored events calls it
// when it starts, so that keep-alives flow before the first event comes.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.startLocked()
	w.flushLocked()
	return w.err
}

// WriteResponse writes the final response of a request that does not
// stream.
func (w *Writer) WriteResponse(r *api.Response) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sink.WriteResponse(r)
}

// Close stops the pacing. What the sink still buffers (the terminal event,
// with what waited before it) is the caller's to send when it ends the
// stream: once Close has returned, the Writer writes to the sink only when
// called.
func (w *Writer) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeLocked()
}

// closeLocked stops the pacing (w.mu held).
func (w *Writer) closeLocked() {
	w.closed, w.due = true, time.Time{}
	if w.timer != nil {
		w.timer.Stop()
	}
}

// flushLocked sends the buffered events, a held opening with them (w.mu
// held).
func (w *Writer) flushLocked() {
	w.holding = false
	if w.fl != nil && w.err == nil {
		w.err = w.fl.Flush()
		w.last = time.Now()
	}
	w.dropDueLocked()
}

// dropDueLocked forgets the flush that was due, the buffered events having
// gone out or being the caller's to send; a timer set for it is set for
// what is next instead (w.mu held).
func (w *Writer) dropDueLocked() {
	due := w.due
	w.due = time.Time{}
	if !due.IsZero() && due.Equal(w.fire) {
		w.setTimerLocked(w.nextLocked())
	}
}

// startLocked begins pacing, once (w.mu held): buffered events are flushed
// when their delay has passed, and a keep-alive comment is written
// whenever nothing was written for keepAlive. Without a sink that takes
// comments there are no keep-alives.
func (w *Writer) startLocked() {
	if w.started {
		return
	}
	w.started = true
	w.comments = w.cw != nil && w.keepAlive > 0
	w.last = time.Now()
	w.scheduleLocked()
}

// nextLocked is when the pacer must run next: the flush that is due, else
// the next keep-alive; zero when nothing is to be paced (w.mu held). After
// the first failed write (the client went away), after the terminal event
// and once closed there is nothing more to pace.
func (w *Writer) nextLocked() time.Time {
	if w.closed || w.err != nil {
		return time.Time{}
	}
	var next time.Time
	if w.comments && !w.ended {
		next = w.last.Add(w.keepAlive)
	}
	if !w.due.IsZero() && (next.IsZero() || w.due.Before(next)) {
		next = w.due
	}
	return next
}

// scheduleLocked sets the timer for nextLocked when it is set later than
// that, or not at all (w.mu held). A timer set earlier than needed (for
// the next keep-alive, before a write) is left alone: tick sets it again.
func (w *Writer) scheduleLocked() {
	if next := w.nextLocked(); w.fire.IsZero() || !next.IsZero() && next.Before(w.fire) {
		w.setTimerLocked(next)
	}
}

// setTimerLocked sets the timer to run tick at next, or stops it when next
// is zero (w.mu held).
func (w *Writer) setTimerLocked(next time.Time) {
	w.fire = next
	switch {
	case next.IsZero():
		if w.timer != nil {
			w.timer.Stop()
		}
	case w.timer == nil:
		w.timer = time.AfterFunc(time.Until(next), w.tick)
	default:
		w.timer.Reset(time.Until(next))
	}
}

// tick is the pacer: it flushes the events whose delay has passed and
// writes a keep-alive when nothing was written for keepAlive, then sets
// the timer for what is next.
func (w *Writer) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fire = time.Time{}
	if w.closed {
		return
	}
	now := time.Now()
	if !w.due.IsZero() && !now.Before(w.due) {
		w.flushLocked()
	}
	if w.comments && !w.ended && w.err == nil && now.Sub(w.last) >= w.keepAlive {
		if !w.due.IsZero() {
			w.flushLocked()
		}
		if w.err == nil {
			// A held opening goes out with it.
			w.holding = false
			w.err = w.cw.WriteComment("keep-alive")
		}
		w.last = now
	}
	w.scheduleLocked()
}
