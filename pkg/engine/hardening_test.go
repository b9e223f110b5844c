package engine

import (
	"context"
	"encoding/json"
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
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
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

// leakyStore fails the operations named in fail with what an AWS SDK error
// says (an ARN, an account, a table).
type leakyStore struct {
	*store.Memory
	fail map[string]bool
}

const leakedARN = "arn:aws:dynamodb:us-east-1:123456789012:table/lambent-responses"

func (s *leakyStore) err(op string) error {
	if s.fail[op] {
		return fmt.Errorf("operation error DynamoDB: %s, api error AccessDeniedException: User: arn:aws:sts::123456789012:assumed-role/gw/x is not authorized on resource: %s", op, leakedARN)
	}
	return nil
}

func (s *leakyStore) Get(ctx context.Context, id string) (*store.Record, error) {
	if err := s.err("Get"); err != nil {
		return nil, err
	}
	return s.Memory.Get(ctx, id)
}

func (s *leakyStore) Create(ctx context.Context, rec *store.Record) error {
	if err := s.err("Create"); err != nil {
		return err
	}
	return s.Memory.Create(ctx, rec)
}

func (s *leakyStore) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	if err := s.err("Update"); err != nil {
		return err
	}
	return s.Memory.Update(ctx, rec, expect)
}

func (s *leakyStore) Delete(ctx context.Context, id string) error {
	if err := s.err("Delete"); err != nil {
		return err
	}
	return s.Memory.Delete(ctx, id)
}

func (s *leakyStore) ListInputItems(ctx context.Context, id string, opts api.ListOptions) (*store.ItemPage, error) {
	if err := s.err("ListInputItems"); err != nil {
		return nil, err
	}
	return s.Memory.ListInputItems(ctx, id, opts)
}

func (s *leakyStore) AppendEvents(ctx context.Context, id string, evs []store.Event) error {
	if err := s.err("AppendEvents"); err != nil {
		return err
	}
	return s.Memory.AppendEvents(ctx, id, evs)
}

func (s *leakyStore) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	if err := s.err("Events"); err != nil {
		return nil, err
	}
	return s.Memory.Events(ctx, id, after)
}

// A store failing with an AWS error on any one operation, on every entry
// point: what a client gets — the error the transport answers
// (api.AsError, ForClient), the events written, the stored response and
// its events — never holds the error's text.
func TestStoreFailuresNeverReachClients(t *testing.T) {
	for _, op := range []string{"Get", "Create", "Update", "Delete", "ListInputItems", "AppendEvents", "Events"} {
		t.Run(op, func(t *testing.T) {
			st := &leakyStore{Memory: store.NewMemory(store.MemoryConfig{}), fail: map[string]bool{}}
			q := newJobQueue()
			e, _ := newEngine(t, script(text("a", 1, 1), text("b", 1, 1), text("c", 1, 1), text("d", 1, 1), text("e", 1, 1), text("f", 1, 1)), nil,
				func(c *Config) {
					c.Store, c.Queue, c.PollInterval, c.CancelWait = st, q, time.Millisecond, time.Millisecond
				})
			ctx := context.Background()
			seeded, err := run1(t, e, `{"input":"seed"}`)
			require.NoError(t, err)
			seedID := decodeResponse(t, seeded.resp).ID
			bgRec := &recorder{}
			require.NoError(t, e.CreateBackground(ctx, decodeReq(t, `{"input":"later","background":true}`), bgRec))
			bgID := (<-q.c).ResponseID

			st.fail[op] = true
			var seen []string
			client := func(err error) {
				if err != nil {
					b, merr := json.Marshal(api.ErrorBody{Error: api.AsError(err).ForClient("req_test")})
					require.NoError(t, merr)
					seen = append(seen, string(b))
				}
			}
			_, err = e.GetResponse(ctx, seedID)
			client(err)
			_, err = e.ListInputItems(ctx, seedID, api.ListOptions{Limit: 10, Order: "asc"})
			client(err)
			for _, body := range []string{`{"input":"x"}`, `{"input":"x","stream":true}`, `{"input":"x","previous_response_id":"` + seedID + `"}`} {
				rec, err := run1(t, e, body)
				client(err)
				seen = append(seen, string(rec.resp))
				for _, ev := range rec.events {
					seen = append(seen, string(ev))
				}
			}
			rec := &recorder{}
			client(e.CreateBackground(ctx, decodeReq(t, `{"input":"x","background":true}`), rec))
			for _, ev := range rec.events {
				seen = append(seen, string(ev))
			}
			client(e.RunBackground(ctx, bgID))
			// Following a response that never ends here (its worker could
			// not run) stops after its first read: the follower's context
			// is done.
			follow := ctx
			if r, err := st.Memory.Get(ctx, bgID); err != nil || !r.Response.Status.Terminal() {
				done, cancel := context.WithCancel(ctx)
				cancel()
				follow = done
			}
			raw := &rawRecorder{}
			client(e.StreamResponse(follow, bgID, -1, raw))
			for _, ev := range raw.events {
				seen = append(seen, string(ev))
			}
			_, err = e.CancelResponse(ctx, bgID)
			client(err)
			client(func() error { _, err := e.DeleteResponse(ctx, seedID); return err }())

			// What is stored (read without the failure).
			st.fail = map[string]bool{}
			for _, id := range []string{seedID, bgID} {
				if r, err := st.Memory.Get(ctx, id); err == nil {
					b, _ := json.Marshal(r.Response)
					seen = append(seen, string(b))
				}
				evs, _ := st.Memory.Events(ctx, id, -1)
				for _, ev := range evs {
					seen = append(seen, string(ev.Data))
				}
			}
			failures := 0
			for _, s := range seen {
				assert.NotContains(t, s, "arn:aws")
				assert.NotContains(t, s, "AccessDenied")
				if strings.Contains(s, "req_test") || strings.Contains(s, "server_error") || strings.Contains(s, "store_failed") {
					failures++
				}
			}
			assert.Positive(t, failures, "the failure reached the client, in general terms")
		})
	}
}
