package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/dynamotest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/compaction"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/tenant"
)

// spyStore counts the calls that reach a store.
type spyStore struct {
	store.ResponseStore
	calls atomic.Int64
}

func (s *spyStore) Get(ctx context.Context, id string) (*store.Record, error) {
	s.calls.Add(1)
	return s.ResponseStore.Get(ctx, id)
}

func (s *spyStore) Delete(ctx context.Context, id string) error {
	s.calls.Add(1)
	return s.ResponseStore.Delete(ctx, id)
}

func (s *spyStore) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	s.calls.Add(1)
	return s.ResponseStore.ListInputItems(ctx, id, opts)
}

func (s *spyStore) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	s.calls.Add(1)
	return s.ResponseStore.Update(ctx, rec, expect)
}

// logCounter is a slog handler that keeps the messages of records at
// Error level and above.
type logCounter struct {
	mu     sync.Mutex
	errors []string
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCounter) WithGroup(string) slog.Handler            { return l }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		l.mu.Lock()
		l.errors = append(l.errors, msg)
		l.mu.Unlock()
	}
	return nil
}

func (l *logCounter) errs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// wantNotFound asserts err is the 404 of an unknown response id.
func wantNotFound(t *testing.T, err error, param, code string) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusNotFound, ae.Status, ae.Message)
	assert.Equal(t, param, ae.Param)
	assert.Equal(t, code, ae.Code)
	assert.LessOrEqual(t, len(ae.Message), 300, "the message quotes a bounded part of the id")
}

// Ids that are not well-formed response ids are unknown on every entry
// point and on both stores, without a store call; a well-formed id of the
// greatest length is an ordinary lookup (404 when absent).
func TestMalformedIDsNeverReachTheStore(t *testing.T) { forStores(t, testMalformedIDs) }

func testMalformedIDs(t *testing.T, mk storeMaker) {
	spy := &spyStore{ResponseStore: mk(t)}
	e, _ := newEngine(t, script(), nil, func(c *Config) { c.Store = spy })
	ctx := context.Background()
	for _, id := range []string{
		"resp_" + strings.Repeat("a", 3000), "resp_" + strings.Repeat("a", 2048), "msg_abc", "resp_", "resp_a#b",
		"resp_é", "resp_a\x00b", "resp_a/b", "RESP_abc", strings.Repeat("\xff", 40),
	} {
		_, err := e.GetResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.DeleteResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.ListInputItems(ctx, id, api.ListOptions{})
		wantNotFound(t, err, "id", "response_not_found")
		_, err = e.CancelResponse(ctx, id)
		wantNotFound(t, err, "id", "response_not_found")
		err = e.StreamResponse(ctx, id, -1, &rawRecorder{})
		wantNotFound(t, err, "id", "response_not_found")
		req := &api.CreateResponseRequest{Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}}, PreviousResponseID: id}
		err = e.CreateResponse(ctx, req, &recorder{})
		wantNotFound(t, err, "previous_response_id", "previous_response_not_found")
	}
	require.Zero(t, spy.calls.Load(), "no malformed id reached the store")

	longest := "resp_" + strings.Repeat("z", api.MaxResponseIDLen-len("resp_"))
	_, err := e.GetResponse(ctx, longest)
	wantNotFound(t, err, "id", "response_not_found")
	_, err = e.DeleteResponse(ctx, longest)
	wantNotFound(t, err, "id", "response_not_found")
	require.Equal(t, int64(2), spy.calls.Load(), "a well-formed id is looked up")
}

// A caller-chosen id of an event-started background response must be a
// well-formed response id.
func TestStartBackgroundRejectsMalformedID(t *testing.T) {
	e, _, _ := bgEngine(t, func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }, script(), nil)
	_, err := e.StartBackground(context.Background(), decodeReq(t, `{"input":"hi"}`), "resp_"+strings.Repeat("a", 200))
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusBadRequest, ae.Status)
	assert.Equal(t, "id", ae.Param)
}

// A caller that went away (its context is done) gets its context's error
// from every read and delete on DynamoDB, never a server error.
func TestCallerGoneIsNotAServerError(t *testing.T) {
	e, _ := newEngine(t, script(text("hi", 1, 1)), nil, func(c *Config) { c.Store = dynamotest.NewStore(t, "") })
	rec, err := run1(t, e, `{"input":"hello"}`)
	require.NoError(t, err)
	id := rec.response(t).ID
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	check := func(op string, err error) {
		t.Helper()
		require.ErrorIs(t, err, context.Canceled, op)
		var ae *api.Error
		assert.False(t, errors.As(err, &ae), "%s: %v is not an API error", op, err)
	}
	_, err = e.GetResponse(ctx, id)
	check("get", err)
	_, err = e.DeleteResponse(ctx, id)
	check("delete", err)
	_, err = e.ListInputItems(ctx, id, api.ListOptions{})
	check("input_items", err)
	_, err = e.CancelResponse(ctx, id)
	check("cancel", err)
	got, err := e.GetResponse(context.Background(), id)
	require.NoError(t, err, "nothing was deleted")
	assert.Equal(t, id, got.ID)
}

// Deleting a running (or queued) background response while a cancel
// request for it is on its way: each answers 200 or 404, the worker stops
// without an error, and nothing is logged as one. Five runs per store.
func TestCancelRacingDeleteOfBackground(t *testing.T) { forStores(t, testCancelRacingDelete) }

func testCancelRacingDelete(t *testing.T, mk storeMaker) {
	okOrNotFound := func(op string, err error) {
		t.Helper()
		if err == nil {
			return
		}
		var ae *api.Error
		require.ErrorAs(t, err, &ae, "%s: %v", op, err)
		require.Equal(t, http.StatusNotFound, ae.Status, "%s: %v", op, err)
	}
	for i := range 5 {
		for _, running := range []bool{true, false} {
			t.Run(fmt.Sprintf("run%d/running=%v", i, running), func(t *testing.T) {
				logs := &logCounter{}
				called := make(chan struct{})
				p := script(step{res: text("never", 1, 1).res, hook: func(ctx context.Context) {
					close(called)
					<-ctx.Done()
				}})
				e, _, q := bgEngine(t, mk, p, nil, func(c *Config) { c.Logger = slog.New(logs) })
				rec, err := runBackground(t, e, `{"input":"take your time","background":true}`)
				require.NoError(t, err)
				id := rec.response(t).ID
				<-q.c
				worker := make(chan error, 1)
				if running {
					go func() { worker <- e.RunBackground(context.Background(), id) }()
					<-called
				}
				var wg sync.WaitGroup
				var cancelErr, deleteErr error
				wg.Go(func() { _, cancelErr = e.CancelResponse(context.Background(), id) })
				wg.Go(func() { _, deleteErr = e.DeleteResponse(context.Background(), id) })
				wg.Wait()
				okOrNotFound("cancel", cancelErr)
				okOrNotFound("delete", deleteErr)
				if running {
					require.NoError(t, <-worker, "the worker stops without an error")
				}
				_, err = e.GetResponse(context.Background(), id)
				if deleteErr == nil {
					wantNotFound(t, err, "id", "response_not_found")
				}
				require.Empty(t, logs.errs(), "nothing is logged as an error")
			})
		}
	}
}

// A conversation that would be larger than the store keeps is refused
// with a 400 before the model is called, on both stores; the response it
// continues is intact, and a new conversation still works.
func TestContextTooLargeBeforeModelCall(t *testing.T) {
	const limit = 256 << 10
	makers := map[string]storeMaker{
		"memory": func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{MaxBytes: limit}) },
		"dynamodb": func(t *testing.T) store.ResponseStore {
			return dynamotest.NewStoreWith(t, dynamodb.Config{MaxRecordBytes: limit})
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			steps := make([]step, 20)
			for i := range steps {
				steps[i] = text("ok", 1, 1)
			}
			p := script(steps...)
			e, _, _ := bgEngine(t, mk, p, nil)
			chunk := strings.Repeat("lorem ipsum ", (60<<10)/12)
			body := func(prev string) string {
				if prev == "" {
					return fmt.Sprintf(`{"input":%q}`, chunk)
				}
				return fmt.Sprintf(`{"input":%q,"previous_response_id":%q}`, chunk, prev)
			}
			prev := ""
			var refused error
			for range 10 {
				rec, err := run1(t, e, body(prev))
				if err != nil {
					refused = err
					break
				}
				prev = rec.response(t).ID
			}
			var ae *api.Error
			require.ErrorAs(t, refused, &ae, "a conversation past %d bytes is refused", limit)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, "previous_response_id", ae.Param)
			assert.Equal(t, "context_too_large", ae.Code)
			assert.Contains(t, ae.Message, fmt.Sprint(limit))
			made := len(p.requests())
			assert.Greater(t, made, 1)
			got, err := e.GetResponse(context.Background(), prev)
			require.NoError(t, err, "the last stored response is intact")
			assert.Equal(t, api.StatusCompleted, got.Status)

			// Too large on its own: param input; background too.
			big := strings.Repeat("x", limit+1)
			_, err = run1(t, e, fmt.Sprintf(`{"input":%q}`, big))
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "input", ae.Param)
			assert.Equal(t, "context_too_large", ae.Code)
			_, err = runBackground(t, e, fmt.Sprintf(`{"input":%q,"background":true}`, big))
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, http.StatusBadRequest, ae.Status)
			assert.Equal(t, "context_too_large", ae.Code)
			assert.Equal(t, made, len(p.requests()), "no refused request reached the model")

			_, err = run1(t, e, `{"input":"a new conversation"}`)
			require.NoError(t, err)
		})
	}
}

// gate is a model whose calls block until released, keeping responses in
// flight for as long as a test needs: each call signals entered when it
// starts.
type gate struct {
	entered chan struct{}
	release chan struct{}
	calls   atomic.Int64
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 64), release: make(chan struct{})} }

func (g *gate) Complete(ctx context.Context, _ *provider.Request) (*provider.Result, error) {
	g.calls.Add(1)
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return &provider.Result{Text: "done", FinishReason: provider.FinishStop}, nil
	case <-ctx.Done():
		return nil, provider.ContextError(ctx)
	}
}

func (g *gate) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, err := g.Complete(ctx, req)
	if err != nil {
		return nil, err
	}
	return res, fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
}

// wantTenantBusy asserts err is the 429 of a tenant at its in-flight cap.
func wantTenantBusy(t *testing.T, err error) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusTooManyRequests, ae.Status, ae.Message)
	assert.Equal(t, api.ErrTypeRateLimit, ae.Type)
	assert.Equal(t, "rate_limit_exceeded", ae.Code)
	assert.NotEmpty(t, ae.RetryAfter, "a 429 says when to retry")
}

// A tenant may have Limits.TenantInFlight responses running at once on
// an engine: foreground creates (streamed or not), background runs and
// compactions all count; over the cap a create is refused at once with 429
// and Retry-After, before any model call or store write. Other tenants are
// not affected, and the slots free as responses end.
func TestTenantInFlightCap(t *testing.T) {
	g := newGate()
	q := newJobQueue()
	keys, err := compaction.NewDevKeyring()
	require.NoError(t, err)
	e, _ := newEngine(t, g, nil, func(c *Config) {
		c.Limits.TenantInFlight = 2
		c.Queue = q
		c.Compaction = keys
		c.PollInterval = time.Millisecond
	})
	ctx := t.Context()
	a, b := tenant.With(ctx, "tenant-a"), tenant.With(ctx, "tenant-b")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	// A: a background response run by a worker, and a streamed create, both
	// held at the model.
	require.NoError(t, e.CreateBackground(a, decodeReq(t, `{"input":"x","background":true}`), &recorder{}))
	job := <-q.c
	wg.Go(func() { errs <- e.RunBackground(tenant.With(ctx, job.Tenant), job.ResponseID) })
	<-g.entered
	wg.Go(func() { errs <- e.CreateResponse(a, decodeReq(t, `{"input":"x","stream":true}`), &recorder{}) })
	<-g.entered

	// A's next response of any kind is refused at once.
	calls := g.calls.Load()
	for _, body := range []string{`{"input":"x"}`, `{"input":"x","stream":true}`} {
		wantTenantBusy(t, e.CreateResponse(a, decodeReq(t, body), &recorder{}))
	}
	wantTenantBusy(t, e.CreateBackground(a, decodeReq(t, `{"input":"x","background":true}`), &recorder{}))
	_, err = e.Compact(a, &api.CompactRequest{Input: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "x"}}}}})
	wantTenantBusy(t, err)
	assert.Equal(t, calls, g.calls.Load(), "no model call for a refused response")
	assert.Empty(t, q.c, "no job queued for a refused background response")

	// B is not affected.
	wg.Go(func() { errs <- e.CreateResponse(b, decodeReq(t, `{"input":"x"}`), &recorder{}) })
	<-g.entered

	close(g.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// The slots are free again.
	require.NoError(t, e.CreateResponse(a, decodeReq(t, `{"input":"x"}`), &recorder{}))
	require.NoError(t, e.CreateResponse(a, decodeReq(t, `{"input":"x","stream":true}`), &recorder{}))
	assert.Zero(t, e.inflight.tenants(), "no tenant holds a slot")
}

// BenchmarkInflight is the in-flight cap's cost on a create: one slot
// taken and freed, by 1 or by many goroutines of 100 tenants at once.
func BenchmarkInflight(b *testing.B) {
	f := newInflight(64)
	ctx := tenant.With(b.Context(), "tenant-a")
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			t, err := f.enter(ctx)
			if err != nil {
				b.Fatal(err)
			}
			f.leave(t)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		var n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			ctx := tenant.With(b.Context(), fmt.Sprintf("tenant-%d", n.Add(1)%100))
			for pb.Next() {
				t, err := f.enter(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				f.leave(t)
			}
		})
	})
}
