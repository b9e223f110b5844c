package apigw

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"time"
)

// DefaultKeepAlive is how long a turn may send nothing before a keep-alive
// goes to its connection: half of API Gateway's 10-minute idle timeout,
// which closes a connection nothing crossed for that long.
const DefaultKeepAlive = 5 * time.Minute

// KeepAliveMessage is the message sent to a connection while its turn is silent
// (a slow tool, a slow model): {"type":"keepalive","sequence_number":N}, N
// the sequence number of the last event sent (0 before any), with the
// "stream_id" of that event when its response has one (lane). It is the
// transport keep-alive event the official clients know and skip (the npm
// openai SDK's response accumulator leaves the response unchanged; the
// Agents SDK's WebSocket transport passes unknown event types through as
// raw model events); it is not an event of the response, so the response's
// sequence numbers stay contiguous.
func KeepAliveMessage(seq int64, lane string) []byte {
	b := make([]byte, 0, 48)
	b = append(b, `{"type":"keepalive","sequence_number":`...)
	b = strconv.AppendInt(b, seq, 10)
	if lane != "" {
		q, _ := json.Marshal(lane) // a string always encodes
		b = append(append(b, `,"stream_id":`...), q...)
	}
	return append(b, '}')
}

// keepAliveSender wraps a turn's sender: after every interval without a
// message it sends KeepAliveMessage. Send and the keep-alives never overlap. stop
// ends the keep-alives and waits for them.
type keepAliveSender struct {
	send     func(ctx context.Context, msg []byte) error
	interval time.Duration

	mu   sync.Mutex
	seq  int64
	lane string
	last time.Time
	// failed is set once a send failed: nothing more is sent.
	failed bool

	done chan struct{}
	wg   sync.WaitGroup
}

// startKeepAlive starts the keep-alives of a turn on ctx (until stop or
// ctx ends); interval <= 0 sends none.
func startKeepAlive(ctx context.Context, send func(ctx context.Context, msg []byte) error, interval time.Duration) *keepAliveSender {
	k := &keepAliveSender{send: send, interval: interval, last: time.Now(), done: make(chan struct{})}
	if interval <= 0 {
		return k
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		t := time.NewTimer(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-k.done:
				return
			case <-t.C:
			}
			t.Reset(k.tick(ctx))
		}
	}()
	return k
}

// tick sends a keep-alive when nothing was sent for the interval, and
// says when to look again.
func (k *keepAliveSender) tick(ctx context.Context) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	if wait := k.interval - time.Since(k.last); wait > 0 {
		return wait
	}
	if !k.failed {
		if err := k.send(ctx, KeepAliveMessage(k.seq, k.lane)); err != nil {
			k.failed = true
		}
	}
	k.last = time.Now()
	return k.interval
}

// Send sends msg, noting its sequence number and stream_id for the
// keep-alives.
func (k *keepAliveSender) Send(ctx context.Context, msg []byte) error {
	var ev struct {
		SequenceNumber *int64 `json:"sequence_number"`
		StreamID       string `json:"stream_id"`
	}
	known := json.Unmarshal(msg, &ev) == nil && ev.SequenceNumber != nil
	k.mu.Lock()
	defer k.mu.Unlock()
	if known {
		k.seq, k.lane = *ev.SequenceNumber, ev.StreamID
	}
	err := k.send(ctx, msg)
	if err != nil {
		k.failed = true
	}
	k.last = time.Now()
	return err
}

// stop ends the keep-alives and waits for the goroutine.
func (k *keepAliveSender) stop() {
	close(k.done)
	k.wg.Wait()
}
