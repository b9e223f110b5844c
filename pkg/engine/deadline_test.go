package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is a clock the scripted model advances: each model call "takes"
// a fixed time, so deadline tests need no real waiting. Tests on the memory
// store alone run in a testing/synctest bubble instead (time.Sleep advances
// its clock); the ones that run on DynamoDB Local too (forStores) keep this
// clock, as a bubble's clock waits for network I/O, which never durably blocks.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// taking returns a step's copy whose model call takes d on c (its hook
// advances c).
func (c *fakeClock) taking(d time.Duration) func(step) step {
	return func(s step) step {
		s.hook = func(context.Context) { c.advance(d) }
		return s
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A deadline that fits two model calls of a five-turn task ends
// incomplete/deadline with everything so far stored; a continuation without
// new input runs the remaining turns and ends with every item and the
// usage of its own turns.
func TestDeadlineStopsAndContinues(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDeadlineStopsAndContinues)
}

func testDeadlineStopsAndContinues(t *testing.T) {
	slow := func(s step) step {
		s.hook = func(context.Context) { time.Sleep(15 * time.Minute) }
		return s
	}
	m := newMock(echoTool, "t")
	p := script(
		slow(calls(10, 1, call("c1", "t", `{"n":1}`))),
		slow(calls(10, 1, call("c2", "t", `{"n":2}`))),
		slow(calls(10, 1, call("c3", "t", `{"n":3}`))),
		slow(calls(10, 1, call("c4", "t", `{"n":4}`))),
		slow(text("all five done", 10, 1)),
	)
	e, st := newEngine(t, p, m, func(c *Config) {
		c.Loop.DeadlineReserve = 10 * time.Second
	})
	tl := `"tools":[{"type":"lambent:t"}]`

	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(40*time.Minute))
	defer cancel()
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"do five steps",`+tl+`}`), rec))
	first := rec.response(t)
	assert.Equal(t, api.StatusIncomplete, first.Status)
	assert.Equal(t, api.ReasonDeadline, first.IncompleteDetails.Reason)
	assert.Len(t, p.requests(), 2, "two model calls fit")
	assert.Equal(t, []string{"function_call:t", "function_call_output", "function_call:t", "function_call_output"}, types(first.Output))
	stored, err := st.Get(context.Background(), first.ID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusIncomplete, stored.Response.Status)

	ctx2, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(60*time.Minute))
	defer cancel2()
	rec2 := &recorder{}
	require.NoError(t, e.CreateResponse(ctx2, decodeReq(t, `{"previous_response_id":"`+first.ID+`",`+tl+`}`), rec2))
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	assert.Equal(t, []string{"function_call:t", "function_call_output", "function_call:t", "function_call_output", "message"}, types(second.Output))
	assert.Len(t, p.requests(), 5)
	assert.Len(t, m.calls(), 4)
	// The whole conversation reached the model on the last call.
	last := p.requests()[4].Items
	assert.Equal(t, 1+4+4, len(last))
	total := first.Usage.InputTokens + second.Usage.InputTokens
	assert.Equal(t, 50, total, "usage over both invocations sums to every turn")
}

// A deadline reached while tools are due stops before the batch; the
// continuation runs the pending hosted calls first.
func TestDeadlineBeforeToolBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, testDeadlineBeforeToolBatch)
}

func testDeadlineBeforeToolBatch(t *testing.T) {
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		time.Sleep(30 * time.Minute)
		return &tools.ToolResult{Output: "ok"}, nil
	}, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), calls(1, 1, call("c2", "t", `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, m)
	tl := `"tools":[{"type":"lambent:t"}]`
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(45*time.Minute))
	defer cancel()
	rec := &recorder{}
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"x","stream":true,`+tl+`}`), rec))
	first := rec.checkStream(t)
	assert.Equal(t, api.StatusIncomplete, first.Status)
	assert.Equal(t, []string{"function_call:t", "function_call_output", "function_call:t"}, types(first.Output))
	ctx2, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(2*time.Hour))
	defer cancel2()
	rec2 := &recorder{}
	require.NoError(t, e.CreateResponse(ctx2, decodeReq(t, `{"previous_response_id":"`+first.ID+`",`+tl+`}`), rec2))
	second := rec2.response(t)
	assert.Equal(t, api.StatusCompleted, second.Status)
	assert.Equal(t, []string{"function_call_output", "message"}, types(second.Output))
	assert.Equal(t, "c2", second.Output[0].CallID)
}

// commentRecorder records keep-alive comments too.
type commentRecorder struct {
	recorder
	comments chan string
}

func (c *commentRecorder) WriteComment(text string) error {
	select {
	case c.comments <- text:
	default:
	}
	return nil
}

// While the model is silent, keep-alive comments are written (by the
// pacing the HTTP transport gives its writer).
func TestKeepAliveWhileWaiting(t *testing.T) {
	t.Parallel()
	rec := &commentRecorder{comments: make(chan string, 1)}
	p := script(step{res: text("hello", 1, 1).res, hook: func(ctx context.Context) {
		select {
		case <-rec.comments:
		case <-ctx.Done():
		}
	}})
	e, _ := newEngine(t, p, nil)
	w := paced(t, rec, pacing.Config{KeepAlive: time.Millisecond})
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w))
	w.Close()
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status, "the model answered only after a keep-alive was written")
}
