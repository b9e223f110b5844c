package hooks

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// blockingSink delivers once release is closed (or its context ends).
// blockingSink delivers once release is closed or its context ends,
// counting in reached (when set) the deliveries it began.
type blockingSink struct {
	release chan struct{}
	reached *atomic.Int64
}

func (blockingSink) Name() string { return "blocking" }
func (s blockingSink) Deliver(ctx context.Context, _ *Event, _ []byte) error {
	if s.reached != nil {
		s.reached.Add(1)
	}
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	return nil
}

// A Flush that gives up (its context ended) leaves nothing behind: while
// deliveries stay pending (a slow sink under steady traffic, each Lambda
// invocation's flush timing out), its waiter would otherwise be kept until
// the queue empties.
func TestFlushGivenUpForgetsItsWaiter(t *testing.T) {
	s := blockingSink{release: make(chan struct{})}
	d := New(Config{Sinks: []Sink{s}, Timeout: time.Minute})
	defer d.Close()
	defer close(s.release)
	d.Send(context.Background(), &Event{Type: EventToolCall, ResponseID: "resp_1"}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 1000 {
		if err := d.Flush(ctx); err == nil {
			t.Fatal("Flush returned nil with a delivery pending")
		}
	}
	d.mu.Lock()
	n := len(d.idle)
	d.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d waiters of flushes that gave up are kept", n)
	}
}

// countingSink counts its deliveries.
type countingSink struct{ n *atomic.Int64 }

func (countingSink) Name() string { return "counting" }
func (s countingSink) Deliver(context.Context, *Event, []byte) error {
	s.n.Add(1)
	return nil
}

// An event sent while the dispatcher closes is delivered or dropped, never
// left in a queue no worker reads: stranded, it stayed pending, and every
// later Flush waited out its timeout. Each round sends one event and
// closes at once; a flush with an ended context then finds nothing
// pending.
func TestSendRacingCloseStrandsNothing(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	const rounds = 20000
	stranded := 0
	for range rounds {
		var delivered atomic.Int64
		d := New(Config{Sinks: []Sink{countingSink{&delivered}}, Workers: 1, Logger: slog.New(slog.DiscardHandler)})
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			<-start
			d.Send(context.Background(), &Event{Type: EventToolCall, ResponseID: "resp_1"}, nil)
		})
		close(start)
		d.Close()
		wg.Wait()
		if d.Flush(ended) != nil {
			stranded++
			continue
		}
		if got := delivered.Load() + int64(d.Dropped()); got != 1 {
			t.Fatalf("1 event sent: %d delivered, %d dropped", delivered.Load(), d.Dropped())
		}
	}
	if stranded > 0 {
		t.Fatalf("%d events of %d sent while closing were stranded (pending, never delivered)", stranded, rounds)
	}
}

// Close drops the events its flush's timeout left queued: pending, every
// later Flush waited out its timeout.
func TestCloseDropsWhatItLeftQueued(t *testing.T) {
	var reached atomic.Int64
	s := blockingSink{release: make(chan struct{}), reached: &reached} // never released: each delivery takes its timeout
	d := New(Config{Sinks: []Sink{s}, Workers: 1, Timeout: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	for range 5 {
		d.Send(context.Background(), &Event{Type: EventToolCall, ResponseID: "resp_1"}, nil)
	}
	d.Close()
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Flush(ended); err != nil {
		t.Fatalf("events left pending after Close: %v", err)
	}
	// Each event reached the sink (its delivery timed out, or Close
	// cancelled it) or was dropped, left queued: none is lost.
	if got := reached.Load() + int64(d.Dropped()); got != 5 {
		t.Fatalf("5 events sent: %d reached the sink, %d dropped", reached.Load(), d.Dropped())
	}
}
