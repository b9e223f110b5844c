package apigw

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A turn that sends nothing for DefaultKeepAlive (a slow tool) sends a
// keep-alive, repeating the last event's sequence number, so API Gateway's
// 10-minute idle timeout never closes its connection; a turn that keeps
// sending sends none; after a failed send nothing more goes out; stop ends
// the goroutine.
func TestKeepAliveWhileATurnIsSilent(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			sent []string
			fail bool
		)
		send := func(_ context.Context, msg []byte) error {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				return errors.New("gone")
			}
			sent = append(sent, string(msg))
			return nil
		}
		got := func() []string {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), sent...)
		}
		ctx := t.Context()
		k := startKeepAlive(ctx, send, DefaultKeepAlive)
		require.NoError(t, k.Send(ctx, []byte(`{"type":"response.created","sequence_number":0}`)))
		require.NoError(t, k.Send(ctx, []byte(`{"type":"response.in_progress","sequence_number":1}`)))

		// Events every 4 minutes: no keep-alive.
		for seq := 2; seq < 5; seq++ {
			time.Sleep(4 * time.Minute)
			require.NoError(t, k.Send(ctx, []byte(`{"type":"response.output_text.delta","sequence_number":`+strconv.Itoa(seq)+`}`)))
		}
		assert.Len(t, got(), 5)

		// Then a silent tool call of 12 minutes: a keep-alive at 5 and at 10.
		time.Sleep(5*time.Minute - time.Second)
		assert.Len(t, got(), 5, "not before the interval")
		time.Sleep(time.Second)
		assert.Equal(t, `{"type":"keepalive","sequence_number":4}`, got()[5])
		time.Sleep(5 * time.Minute)
		assert.Len(t, got(), 7)
		assert.Equal(t, got()[5], got()[6])
		time.Sleep(2 * time.Minute)
		require.NoError(t, k.Send(ctx, []byte(`{"type":"response.completed","sequence_number":5}`)))
		assert.Len(t, got(), 8)

		// The client went away: no more keep-alives.
		mu.Lock()
		fail = true
		mu.Unlock()
		time.Sleep(6 * time.Minute)
		time.Sleep(6 * time.Minute)
		assert.Len(t, got(), 8)
		k.stop()
	})
}

// The keep-alive of a turn on a lane carries the lane's stream_id, as the
// events of its response do.
func TestKeepAliveCarriesTheLane(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var (
			mu   sync.Mutex
			sent []string
		)
		send := func(_ context.Context, msg []byte) error {
			mu.Lock()
			defer mu.Unlock()
			sent = append(sent, string(msg))
			return nil
		}
		k := startKeepAlive(t.Context(), send, DefaultKeepAlive)
		require.NoError(t, k.Send(t.Context(), []byte(`{"type":"response.created","sequence_number":0,"stream_id":"lane-a"}`)))
		time.Sleep(DefaultKeepAlive)
		synctest.Wait()
		k.stop()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, sent, 2)
		assert.Equal(t, `{"type":"keepalive","sequence_number":0,"stream_id":"lane-a"}`, sent[1])
	})
}

// A keep-alive interval of zero or less sends none.
func TestKeepAliveOff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		k := startKeepAlive(t.Context(), func(context.Context, []byte) error { calls++; return nil }, -1)
		time.Sleep(time.Hour)
		k.stop()
		assert.Zero(t, calls)
	})
}
