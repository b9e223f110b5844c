package engine

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

// Retract drops what is buffered when nothing was flushed yet, as the HTTP
// transport's writer does before its first write (pacing.Retracter).
func (f *flushRecorder) Retract() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.flushes) > 0 {
		return false
	}
	f.pending = nil
	return true
}

// keepAliveRecorder is a flushRecorder that takes keep-alive comments, sent
// with what is buffered before them.
type keepAliveRecorder struct{ *flushRecorder }

func (c keepAliveRecorder) WriteComment(text string) error {
	c.mu.Lock()
	c.pending = append(c.pending, ": "+text)
	c.mu.Unlock()
	return c.Flush()
}

// providerRefusal is a model provider's 400 refusing a call.
var providerRefusal = api.InvalidRequest("temperature", "Unsupported parameter: 'temperature' is not supported with this model.")

// The opening of a stream (response.created, response.in_progress) is held
// until the first model call's provider accepted the call: a call the
// provider refuses, while nothing of the stream was sent, makes the
// request fail with the error a request that does not stream gets (the
// failed response stored), and the stream is taken back. A call accepted
// opens the stream, whose failure after that stays in the stream.
func TestOpeningHeldUntilTheProviderAccepts(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newFlushRecorder()
			var waiting [][]string
			p := script(step{err: providerRefusal, hook: func(context.Context) {
				time.Sleep(10 * time.Second)
				waiting, _ = rec.rest()
			}})
			e, st := newEngine(t, p, nil)
			w := paced(t, rec, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: time.Minute})
			err := e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w)
			w.Close()
			assert.Empty(t, waiting, "nothing is sent while the provider has not accepted the call")
			var ae *api.Error
			require.True(t, errors.As(err, &ae), "%v", err)
			assert.Equal(t, 400, ae.Status)
			assert.Equal(t, "temperature", ae.Param)
			id := regexp.MustCompile(`\(response (resp_\w+) failed\)`).FindStringSubmatch(ae.Message)
			require.Len(t, id, 2, ae.Message)
			batches, buffered := rec.rest()
			assert.Empty(t, batches)
			assert.Empty(t, buffered, "the opening is taken back")
			stored, err := st.Get(context.Background(), id[1])
			require.NoError(t, err)
			assert.Equal(t, api.StatusFailed, stored.Response.Status)
		})
	})
	t.Run("accepted", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rec := newFlushRecorder()
			var waiting [][]string
			cut := provider.StreamCut(nil, "the model provider's stream was cut")
			p := &acceptThenFail{err: cut, wait: func() {
				time.Sleep(10 * time.Second)
				waiting, _ = rec.rest()
			}}
			e, _ := newEngine(t, p, nil)
			w := paced(t, rec, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: time.Minute})
			require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w))
			w.Close()
			assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress}}, waiting, "the opening goes out once the call is accepted")
			_, buffered := rec.rest()
			assert.Equal(t, []string{api.EventResponseFailed}, buffered)
		})
	})
}

// acceptThenFail is a provider that accepts a streamed call, waits, and
// fails it.
type acceptThenFail struct {
	err  error
	wait func()
}

func (p *acceptThenFail) Complete(context.Context, *provider.Request) (*provider.Result, error) {
	return nil, p.err
}

func (p *acceptThenFail) Stream(_ context.Context, _ *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	if err := fn(provider.Delta{Kind: provider.DeltaAccepted}); err != nil {
		return nil, err
	}
	p.wait()
	return nil, p.err
}

// Events written before the first model call (the results of calls a
// continuation resolves) open the stream: the opening goes out with them,
// and a providerRefusal of the model call after them stays in the stream.
func TestOpeningSentWithTheFirstOtherEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newFlushRecorder()
		m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
			time.Sleep(time.Minute)
			return echoTool(ctx, c)
		}, "t")
		slow := func(context.Context) { time.Sleep(10 * time.Second) }
		e, _ := newEngine(t, script(step{err: providerRefusal, hook: slow}), m)
		// The hold outlasts the tool's minute: its end at the same instant
		// would race the tool's result to send the opening.
		w := paced(t, rec, pacing.Config{FlushDelay: time.Second, KeepAlive: -1, OpeningHold: time.Hour})
		require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"stream":true,"tools":[{"type":"lambent:t"}],"input":[
			{"role":"user","content":"x"},
			{"type":"function_call","call_id":"c1","name":"t","arguments":"{}"}]}`), w))
		w.Close()
		batches, buffered := rec.rest()
		require.NotEmpty(t, batches, "%v", buffered)
		assert.Equal(t, []string{api.EventResponseCreated, api.EventResponseInProgress, api.EventOutputItemAdded, api.EventOutputItemDone}, batches[0])
		require.NotEmpty(t, buffered)
		assert.Equal(t, api.EventResponseFailed, buffered[len(buffered)-1])
	})
}

// A provider that sends no status for the keep-alive interval, the
// opening's hold unbounded: the opening goes out with the keep-alive, so that the stream is never idle longer
// than the interval; its providerRefusal after that stays in the stream.
func TestOpeningSentWithTheKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := keepAliveRecorder{newFlushRecorder()}
		var before, after [][]string
		p := script(step{err: providerRefusal, hook: func(context.Context) {
			time.Sleep(59 * time.Second)
			before, _ = rec.rest()
			time.Sleep(2 * time.Second)
			after, _ = rec.rest()
		}})
		e, _ := newEngine(t, p, nil)
		w := paced(t, rec, pacing.Config{FlushDelay: time.Second, KeepAlive: time.Minute, OpeningHold: -1})
		require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w))
		w.Close()
		assert.Empty(t, before)
		assert.Equal(t, [][]string{{api.EventResponseCreated, api.EventResponseInProgress, ": keep-alive"}}, after)
		_, buffered := rec.rest()
		assert.Equal(t, []string{api.EventResponseFailed}, buffered)
	})
}

// The listing of an MCP server's tools before the first model call
// (mcp_list_tools) is the gateway's own step, not the stream's beginning:
// its events join the held opening, and a providerRefusal of the model call
// after it is the request's error, as without streaming, nothing of the
// stream sent.
func TestOpeningHeldThroughTheMCPListing(t *testing.T) {
	srv := startMCP(t, mcptest.Options{})
	e, _ := newEngine(t, script(step{err: providerRefusal}), nil, withMCP)
	rec := newFlushRecorder()
	w := paced(t, rec, pacing.Config{FlushDelay: time.Millisecond, KeepAlive: -1, OpeningHold: time.Minute})
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)
	err := e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true,"tools":[`+tool+`]}`), w)
	w.Close()
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, 400, ae.Status)
	batches, buffered := rec.rest()
	assert.Empty(t, batches)
	assert.Empty(t, buffered, "the opening and the listing are taken back")
}

// createFailing is a store whose every Create fails.
type createFailing struct{ store.ResponseStore }

func (createFailing) Create(context.Context, *store.Record) error {
	return errors.New("the table is gone")
}

// A stream whose opening is still held when its response could not be
// stored (the provider refused the call, then the store failed) is taken
// back: the request gets the 500 store_failed a request without streaming
// gets, not a stream of the opening and an error event.
func TestOpeningTakenBackWhenTheStoreFails(t *testing.T) {
	e, _ := newEngine(t, script(step{err: providerRefusal}), nil, func(c *Config) { c.Store = createFailing{c.Store} })
	rec := newFlushRecorder()
	w := paced(t, rec, pacing.Config{FlushDelay: time.Millisecond, KeepAlive: -1, OpeningHold: time.Minute})
	err := e.CreateResponse(context.Background(), decodeReq(t, `{"input":"x","stream":true}`), w)
	w.Close()
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, 500, ae.Status)
	assert.Equal(t, "store_failed", ae.Code)
	batches, buffered := rec.rest()
	assert.Empty(t, batches)
	assert.Empty(t, buffered)
}

// A create in a conversation that the provider refuses, streamed (taken
// back) or not, is the request's HTTP error: it releases the conversation
// and appends nothing, as a request refused before it ran, so that a
// client that sends it again (the SDKs retry a 429 on their own) does not
// find its input twice. The next create in it runs, the model seeing only
// its own input.
func TestOpeningRefusedInAConversation(t *testing.T) {
	p := script(step{err: providerRefusal}, step{err: providerRefusal}, text("done", 1, 1))
	e, st := newEngine(t, p, nil)
	cs, c := newConversation(t, st)
	w := paced(t, newFlushRecorder(), pacing.Config{FlushDelay: time.Millisecond, KeepAlive: -1, OpeningHold: time.Minute})
	err := e.CreateResponse(context.Background(), decodeReq(t, `{"conversation":"`+c.ID+`","input":"refused","stream":true}`), w)
	var ae *api.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, 400, ae.Status)
	_, err = run1(t, e, `{"conversation":"`+c.ID+`","input":"refused"}`)
	require.True(t, errors.As(err, &ae), "%v", err)
	assert.Equal(t, 400, ae.Status)
	rec, err := run1(t, e, `{"conversation":"`+c.ID+`","input":"again"}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, rec.response(t).Status)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	require.Len(t, reqs[2].Items, 1, "the refused input is not the conversation's")
	items, err := cs.LoadConversationItems(context.Background(), c.ID, 100)
	require.NoError(t, err)
	assert.Equal(t, []string{"message", "message"}, types(items))
}

// Truncation "auto" and the held opening: a call refused for its size, cut
// and then refused for another reason is the request's HTTP error, nothing
// sent; one refused for its size until nothing more may be dropped ends
// the stream with response.failed context_length_exceeded, as OpenAI
// streams it.
func TestOpeningHeldThroughTruncation(t *testing.T) {
	t.Run("cut, then refused", func(t *testing.T) {
		p := &windowed{scripted: script(step{err: providerRefusal}), limit: 2800}
		e, _ := newEngine(t, p, nil)
		rec := newFlushRecorder()
		w := paced(t, rec, pacing.Config{FlushDelay: time.Millisecond, KeepAlive: -1, OpeningHold: time.Minute})
		err := e.CreateResponse(context.Background(), decodeReq(t, `{"truncation":"auto","stream":true,"input":`+chatInput(2)+`}`), w)
		w.Close()
		var ae *api.Error
		require.True(t, errors.As(err, &ae), "%v", err)
		assert.Equal(t, "temperature", ae.Param)
		require.Len(t, p.refusals(), 1)
		batches, buffered := rec.rest()
		assert.Empty(t, batches)
		assert.Empty(t, buffered)
	})
	t.Run("too long", func(t *testing.T) {
		p := &windowed{scripted: script(text("ok", 10, 2)), limit: 100}
		e, _ := newEngine(t, p, nil)
		rec := newFlushRecorder()
		w := paced(t, rec, pacing.Config{FlushDelay: time.Millisecond, KeepAlive: -1, OpeningHold: time.Minute})
		require.NoError(t, e.CreateResponse(context.Background(), decodeReq(t, `{"truncation":"auto","stream":true,"input":`+chatInput(8)+`}`), w))
		w.Close()
		batches, buffered := rec.rest()
		var all []string
		for _, b := range batches {
			all = append(all, b...)
		}
		all = append(all, buffered...)
		assert.Equal(t, []string{api.EventResponseCreated, api.EventResponseInProgress, api.EventResponseFailed}, all)
		assert.Greater(t, len(p.refusals()), 1)
	})
}
