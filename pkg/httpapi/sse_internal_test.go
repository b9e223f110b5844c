package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
)

// writes records the size of each write.
type writes struct {
	header http.Header
	out    strings.Builder
	sizes  []int
}

func (w *writes) Header() http.Header { return w.header }
func (w *writes) WriteHeader(int)     {}
func (w *writes) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.out.Write(p)
}

// TestResponseEventStreamed: an event carrying a response of many long
// items (a long agentic loop's terminal event) is written item by item,
// no write holding more than about one, and its bytes are the event's
// JSON; an event with a short response waits in the buffer for the flush.
func TestResponseEventStreamed(t *testing.T) {
	t.Parallel()
	const item = 50 << 10
	resp := &api.Response{ID: "resp_1", Object: "response", Status: api.StatusCompleted}
	for i := range 30 {
		resp.Output = append(resp.Output, api.Item{Type: api.ItemMCPCall, ID: fmt.Sprintf("mcp_%d", i), Status: api.ItemCompleted,
			ServerLabel: "ops", Name: "work", Arguments: "{}", Output: fmt.Sprintf("<%d>", i) + strings.Repeat("row ok\n", item/7)})
	}
	for _, tc := range []struct {
		name  string
		resp  *api.Response
		flush bool
	}{{"long", resp, true}, {"short", &api.Response{ID: "resp_2", Object: "response"}, false}} {
		w := &writes{header: http.Header{}}
		rw := &responseWriter{w: w}
		ev := &api.StreamEvent{Type: api.EventResponseCompleted, SequenceNumber: 7, Response: tc.resp}
		require.NoError(t, rw.WriteEvent(ev), tc.name)
		data, err := wirejson.Marshal(ev)
		require.NoError(t, err)
		require.Equal(t, "event: response.completed\ndata: "+string(data)+"\n\n", w.out.String()+string(rw.buf), tc.name)
		require.Equal(t, tc.flush, len(w.sizes) > 0, "%s: written before the flush", tc.name)
		for _, n := range w.sizes {
			require.Less(t, n, item+maxPooledBuffer+1<<10, "%s: a write holds more than one item", tc.name)
		}
		rw.release()
	}
}
