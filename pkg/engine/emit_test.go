package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// flushRecorder buffers events as the HTTP transport does (a Flusher) and
// hands the event types of each flush to the test. The tests pace it as the
// HTTP transport paces its writer (package pacing).
type flushRecorder struct {
	recorder
	pending []string
	flushes chan []string
}

func newFlushRecorder() *flushRecorder { return &flushRecorder{flushes: make(chan []string, 100)} }

func (f *flushRecorder) WriteEvent(ev *api.StreamEvent) error {
	if err := f.recorder.WriteEvent(ev); err != nil {
		return err
	}
	f.mu.Lock()
	f.pending = append(f.pending, ev.Type)
	f.mu.Unlock()
	return nil
}

func (f *flushRecorder) Flush() error {
	f.mu.Lock()
	batch := f.pending
	f.pending = nil
	f.mu.Unlock()
	if len(batch) > 0 {
		f.flushes <- batch
	}
	return nil
}

// next returns the next flushed batch; false when none came while ctx
// lived.
func (f *flushRecorder) next(ctx context.Context) ([]string, bool) {
	select {
	case b := <-f.flushes:
		return b, true
	case <-ctx.Done():
		return nil, false
	}
}

// rest returns the batches flushed so far and what is still buffered (the
// caller's to send when it ends the stream).
func (f *flushRecorder) rest() (batches [][]string, buffered []string) {
	for {
		select {
		case b := <-f.flushes:
			batches = append(batches, b)
		default:
			f.mu.Lock()
			defer f.mu.Unlock()
			return batches, f.pending
		}
	}
}

// paced wraps sink in the pacing the HTTP transport gives its writer; the
// pacing stops with the test, or when the test closes it.
func paced(t *testing.T, sink pacing.Sink, cfg pacing.Config) *pacing.Writer {
	w := pacing.New(sink, cfg)
	t.Cleanup(w.Close)
	return w
}

// While the engine waits on the model, the events written before the wait
// are flushed once the flush delay has passed: the scripted model answers
// only after it saw response.created and response.in_progress flushed
// together. Deltas are flushed at once; what follows the last one stays
// buffered for the transport to send with the end of the stream. The test
// runs in a synctest bubble: its clock moves only while every goroutine
// waits, so the delay passes exactly while the model waits.
func TestEventsFlushedWhileWaitingOnTheModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rec := newFlushRecorder()
		var first []string
		p := script(step{res: text("one two", 1, 1).res, hook: func(context.Context) { first, _ = rec.next(ctx) }})
		e, _ := newEngine(t, p, nil)
		w := paced(t, rec, pacing.Config{FlushDelay: time.Second})
		require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"x","stream":true}`), w))
		w.Close()
		assert.Equal(t, []string{"response.created", "response.in_progress"}, first)
		batches, buffered := rec.rest()
		// A delta is always flushed at once, so it ends its write, and
		// nothing after the last delta is written before the end.
		var flat []string
		for _, b := range batches {
			for i, typ := range b {
				if typ == "response.output_text.delta" {
					assert.Equal(t, len(b)-1, i, "a delta ends its write: %v", b)
				}
			}
			flat = append(flat, b...)
		}
		require.GreaterOrEqual(t, len(flat), 4)
		assert.Equal(t, []string{"response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta"}, flat[:4])
		for _, typ := range flat[4:] {
			assert.NotEqual(t, "response.output_text.delta", typ)
		}
		require.NotEmpty(t, buffered)
		assert.Equal(t, "response.completed", buffered[len(buffered)-1])
		assert.Equal(t, api.StatusCompleted, rec.checkStream(t).Status)
	})
}

// While hosted tools run, the events of the turn that asked for them are
// flushed: the tool answers only after it saw its call's
// output_item.done go out.
func TestEventsFlushedWhileToolsRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := newFlushRecorder()
	var seen []string
	m := newMock(func(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		for !containsDone(seen) {
			b, ok := rec.next(ctx)
			if !ok {
				return nil, errors.New("the turn's events were not flushed while the tool ran")
			}
			seen = append(seen, b...)
		}
		return echoTool(ctx, c)
	}, "t")
	p := script(calls(1, 1, call("c1", "t", `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, m)
	w := paced(t, rec, pacing.Config{FlushDelay: time.Nanosecond})
	require.NoError(t, e.CreateResponse(ctx, decodeReq(t, `{"input":"x","stream":true,"tools":[{"type":"lambent:t"}]}`), w))
	w.Close()
	assert.Contains(t, seen, "response.function_call_arguments.done")
	r := rec.checkStream(t)
	require.Len(t, r.Output, 3)
	assert.False(t, r.Output[1].IsError, r.Output[1].Output)
	assert.Equal(t, api.StatusCompleted, r.Status)
	assert.Equal(t, []string{"function_call:t", "function_call_output", "message"}, types(r.Output))
}

func containsDone(types []string) bool {
	for _, t := range types {
		if t == api.EventOutputItemDone {
			return true
		}
	}
	return false
}

// With a negative flush delay every event is flushed on its own, but for
// the held opening (response.created and response.in_progress, sent
// together once the provider accepted the call), and the sequence numbers
// still count up from 0 without a gap.
func TestNoFlushDelayFlushesEachEvent(t *testing.T) {
	t.Parallel()
	rec := newFlushRecorder()
	e, _ := newEngine(t, script(text("a b c", 1, 1)), nil)
	w := paced(t, rec, pacing.Config{FlushDelay: -1})
	require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w))
	w.Close()
	batches, buffered := rec.rest()
	assert.Empty(t, buffered)
	require.Len(t, batches, len(rec.events)-1)
	assert.Equal(t, []string{api.EventResponseCreated, api.EventResponseInProgress}, batches[0])
	for i, raw := range rec.events {
		if i > 1 {
			assert.Len(t, batches[i-1], 1)
		}
		var ev struct {
			Seq int64 `json:"sequence_number"`
		}
		require.NoError(t, json.Unmarshal(raw, &ev))
		assert.Equal(t, int64(i), ev.Seq)
	}
}

// seqWriter keeps the sequence number and JSON of the events written to it
// into a buffer it reuses, allocating nothing once grown.
type seqWriter struct {
	seqs []int64
	buf  []byte
}

func (w *seqWriter) WriteEvent(ev *api.StreamEvent) error {
	w.seqs = append(w.seqs, ev.SequenceNumber)
	w.buf = append(append(w.buf, ev.Type...), ev.ItemID...)
	return nil
}

func (w *seqWriter) WriteResponse(*api.Response) error { return nil }

// TestEventsReuseTheirScratch: the lifecycle, item, MCP, content part and
// text events of a stream are built in the emitter's and the assembler's
// reused events, allocating nothing, and still numbered one by one.
func TestEventsReuseTheirScratch(t *testing.T) {
	w := &seqWriter{seqs: make([]int64, 0, 1024), buf: make([]byte, 0, 64<<10)}
	r := &run{resp: &api.Response{ID: "resp_1", Output: []api.Item{{Type: api.ItemMessage, ID: "msg_1", Content: []api.ContentPart{{Type: api.PartOutputText}}}}},
		em: &emitter{w: w, stream: true}}
	a := newAssembler(r)
	a.message = 0
	allocs := testing.AllocsPerRun(20, func() {
		r.em.lifecycle(api.EventResponseInProgress, r.resp)
		r.em.itemEvent(api.EventOutputItemAdded, 0, &r.resp.Output[0])
		r.em.mcpEvent(api.EventMCPCallInProgress, 0, "mcp_1")
		a.part = 0
		a.partAdded(0, 0, api.PartOutputText)
		a.textEvent(api.EventOutputTextDelta, 0, 0, provider.Delta{Kind: provider.DeltaText, Text: "hi"})
		a.closePart()
	})
	assert.Zero(t, allocs, "allocations a round of events")
	for i, s := range w.seqs {
		require.Equal(t, int64(i), s)
	}
	require.Len(t, w.seqs, 21*7, "events written")
}

// textAcc joins its deltas, keeps a single one as it is, and starts empty
// again after take.
func TestTextAcc(t *testing.T) {
	var a textAcc
	if got := a.take(); got != "" {
		t.Errorf("empty: %q", got)
	}
	for _, deltas := range [][]string{{"one"}, {"a", "b"}, {"", "x", "", "yz"}, {""}, {"p", "q", "r"}} {
		want := ""
		for _, d := range deltas {
			a.add(d)
			want += d
		}
		if got := a.take(); got != want {
			t.Errorf("%q: %q", deltas, got)
		}
	}
	if got := a.take(); got != "" {
		t.Errorf("after take: %q", got)
	}
}

// interleaved streams two client function calls whose argument fragments
// alternate, as a model calling tools in parallel sends them.
type interleaved struct{ a, b []string }

func (p interleaved) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	return p.Stream(ctx, req, func(provider.Delta) error { return nil })
}

func (p interleaved) Stream(_ context.Context, _ *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	for i := range max(len(p.a), len(p.b)) {
		for n, frags := range [][]string{p.a, p.b} {
			if i >= len(frags) {
				continue
			}
			d := provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: n, Text: frags[i], More: true}
			if i == 0 {
				d.ToolCallID, d.ToolName = fmt.Sprintf("call_%d", n), "write"
			}
			if err := fn(d); err != nil {
				return nil, err
			}
		}
	}
	return &provider.Result{ToolCalls: []api.Item{call("call_0", "write", strings.Join(p.a, "")), call("call_1", "write", strings.Join(p.b, ""))},
		FinishReason: provider.FinishToolCalls}, nil
}

// Each call's arguments are joined from its own fragments, however they
// interleave: the items end with them, each argument delta event carries
// one fragment of its item (no content index), and the done event the
// whole.
func TestArgumentFragmentsJoinPerCall(t *testing.T) {
	t.Parallel()
	a := []string{`{"path":`, `"a.txt",`, `"text":"`, strings.Repeat("x", 300), `"}`}
	b := []string{`{"path":"b.txt"}`}
	e, _ := newEngine(t, interleaved{a: a, b: b}, nil)
	rec, err := run1(t, e, `{"input":"write","stream":true,"tools":[{"type":"function","name":"write","parameters":{"type":"object"}}]}`)
	require.NoError(t, err)
	r := rec.checkStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status, "a client call ends the response")
	require.Len(t, r.Output, 2)
	assert.Equal(t, strings.Join(a, ""), r.Output[0].Arguments)
	assert.Equal(t, strings.Join(b, ""), r.Output[1].Arguments)
	deltas, done := map[string]string{}, map[string]string{}
	for _, raw := range rec.events {
		var ev struct {
			Type         string  `json:"type"`
			ItemID       string  `json:"item_id"`
			ContentIndex *int    `json:"content_index"`
			Delta        string  `json:"delta"`
			Arguments    *string `json:"arguments"`
		}
		require.NoError(t, json.Unmarshal(raw, &ev))
		switch ev.Type {
		case api.EventFunctionCallArgsDelta:
			assert.Nil(t, ev.ContentIndex, "an argument delta has no content index")
			deltas[ev.ItemID] += ev.Delta
		case api.EventFunctionCallArgsDone:
			require.NotNil(t, ev.Arguments, "arguments of the done event")
			done[ev.ItemID] = *ev.Arguments
		}
	}
	for _, it := range r.Output {
		assert.Equal(t, it.Arguments, deltas[it.ID], "deltas of %s", it.ID)
		assert.Equal(t, it.Arguments, done[it.ID], "done of %s", it.ID)
	}
}
