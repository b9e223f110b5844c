package hooks

import (
	"context"
	"testing"
	"time"
)

// blockingSink delivers once release is closed (or its context ends).
type blockingSink struct{ release chan struct{} }

func (blockingSink) Name() string { return "blocking" }
func (s blockingSink) Deliver(ctx context.Context, _ *Event, _ []byte) error {
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
