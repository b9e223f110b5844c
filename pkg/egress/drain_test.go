package egress_test

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/egress"
)

// stalledBody is a body whose server sends nothing more: Read waits until
// the body is closed.
type stalledBody struct {
	once   sync.Once
	closed chan struct{}
}

func (b *stalledBody) Read([]byte) (int, error) {
	<-b.closed
	return 0, io.ErrClosedPipe
}

func (b *stalledBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}

// DrainClose returns when the rest of a body does not come: it closes the
// body after MaxDrainWait. Without that bound an error answer sent slowly
// held the call that drained it (an MCP call until its operation's
// timeout, a model call without a deadline for ever).
func TestDrainCloseStalledBody(t *testing.T) {
	b := &stalledBody{closed: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = egress.DrainClose(b)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a guard against hanging, not a measure
		t.Fatal("DrainClose waited on a body whose rest never came")
	}
}
