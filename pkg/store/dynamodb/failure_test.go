package dynamodb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
)

// Fault kinds the faulty HTTP client injects.
const (
	faultThrottle     = "throttle"     // a 400 ProvisionedThroughputExceededException
	faultUnprocessed  = "unprocessed"  // a batch answered with every item unprocessed
	faultLostResponse = "lostResponse" // the request reaches DynamoDB; its answer is lost
)

// fault injects kind into calls of op, after skipping skip of them, times
// times (-1: forever).
type fault struct {
	op    string
	kind  string
	skip  int
	times int
}

// faultyHTTP is an HTTP client in front of DynamoDB Local that injects
// faults by operation, speaking the real wire protocol (JSON 1.0).
type faultyHTTP struct {
	next     aws.HTTPClient
	mu       sync.Mutex
	faults   []*fault
	injected int
}

func (f *faultyHTTP) take(op string) *fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fl := range f.faults {
		if fl.op != op || fl.times == 0 {
			continue
		}
		if fl.skip > 0 {
			fl.skip--
			return nil
		}
		if fl.times > 0 {
			fl.times--
		}
		f.injected++
		return fl
	}
	return nil
}

func (f *faultyHTTP) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

func (f *faultyHTTP) Do(req *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	fl := f.take(op)
	if fl == nil {
		return f.next.Do(req)
	}
	switch fl.kind {
	case faultThrottle:
		drain(req)
		return jsonResponse(req, http.StatusBadRequest, "ProvisionedThroughputExceededException",
			`{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException","message":"injected: throughput exceeded"}`), nil
	case faultUnprocessed:
		var in struct {
			RequestItems json.RawMessage
		}
		body, _ := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err := json.Unmarshal(body, &in); err != nil {
			return nil, err
		}
		out := `{"UnprocessedItems":` + string(in.RequestItems) + `}`
		if op == "BatchGetItem" {
			out = `{"Responses":{},"UnprocessedKeys":` + string(in.RequestItems) + `}`
		}
		return jsonResponse(req, http.StatusOK, "", out), nil
	case faultLostResponse:
		resp, err := f.next.Do(req)
		if err == nil {
			drainBody(resp.Body)
		}
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer (injected)")}
	}
	return nil, errors.New("unknown fault " + fl.kind)
}

func drain(req *http.Request) {
	if req.Body != nil {
		drainBody(req.Body)
	}
}

func drainBody(b io.ReadCloser) {
	_, _ = io.Copy(io.Discard, b)
	_ = b.Close()
}

func jsonResponse(req *http.Request, status int, errType, body string) *http.Response {
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Requestid", "injected")
	if errType != "" {
		h.Set("X-Amzn-Errortype", errType)
	}
	return &http.Response{
		Status: http.StatusText(status), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Request: req,
	}
}

// faultyStore returns a store whose client goes through a faulty HTTP
// client, the store's own retryer unless fast is set (then 3 quick
// attempts), and a clean store on the same table to check the outcome.
func faultyStore(t *testing.T, fast bool, faults ...*fault) (faulty, clean *Store, f *faultyHTTP, c *counter) {
	t.Helper()
	table := newTable(t)
	f = &faultyHTTP{next: awshttp.NewBuildableClient(), faults: faults}
	c = newCounter()
	opts := []func(*ddb.Options){func(o *ddb.Options) { o.HTTPClient = f }, c.Options}
	if fast {
		opts = append(opts, func(o *ddb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts, so.MaxBackoff, so.RateLimiter = 3, 20*time.Millisecond, ratelimit.None
			})
		})
	}
	var err error
	faulty, err = New(newClient(t, opts...), Config{Table: table})
	require.NoError(t, err)
	clean, err = New(newClient(t), Config{Table: table})
	require.NoError(t, err)
	// Small items, so that small records take every write path (see
	// recordOfSize) and the tests stay quick.
	for _, s := range []*Store{faulty, clean} {
		s.inlineMax, s.chunkSize, s.maxTxChunks = 8<<10, 8<<10, 3
	}
	if fast {
		faulty.batchRounds = 3
	}
	return faulty, clean, f, c
}

// recordOfSize returns a record taking one write path of a faultyStore:
// one item ("normal"), one transaction of 3 chunks ("tx"), or 29 chunks in
// two BatchWriteItem calls, then the head ("batched").
func recordOfSize(kind string) *store.Record {
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusInProgress)
	size := map[string]int{"normal": 0, "tx": 20 << 10, "batched": 300 << 10}[kind]
	if size > 0 {
		rec.Response.Output = append(rec.Response.Output, api.Item{Type: api.ItemMessage, ID: "m", Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.RandomText(mrand.New(mrand.NewPCG(1, 9)), size)}}})
	}
	return rec
}

func TestThrottlingThenSuccess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind   string
		faults []*fault
	}{
		{"normal", []*fault{{op: "PutItem", kind: faultThrottle, times: 2}, {op: "GetItem", kind: faultThrottle, times: 2}}},
		{"tx", []*fault{{op: "TransactWriteItems", kind: faultThrottle, times: 2}, {op: "BatchGetItem", kind: faultThrottle, times: 2}}},
		{"batched", []*fault{{op: "BatchWriteItem", kind: faultThrottle, times: 2}, {op: "PutItem", kind: faultThrottle, times: 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			s, clean, f, c := faultyStore(t, false, tc.faults...)
			rec := recordOfSize(tc.kind)
			require.NoError(t, s.Create(t.Context(), rec))
			got, err := s.Get(t.Context(), rec.Response.ID)
			require.NoError(t, err)
			storetest.RequireSameRecord(t, rec, got)
			got, err = clean.Get(t.Context(), rec.Response.ID)
			require.NoError(t, err)
			storetest.RequireSameRecord(t, rec, got)
			require.Equal(t, 4, f.count(), "every injected fault was used")
			t.Logf("%s: %s; attempts %v", tc.kind, c, c.Snapshot().Attempts)
		})
	}
}

func TestUnprocessedItemsAreResent(t *testing.T) {
	t.Parallel()
	s, _, f, c := faultyStore(t, false,
		&fault{op: "BatchWriteItem", kind: faultUnprocessed, times: 2},
		&fault{op: "BatchGetItem", kind: faultUnprocessed, times: 2})
	rec := recordOfSize("batched")
	require.NoError(t, s.Create(t.Context(), rec))
	got, err := s.Get(t.Context(), rec.Response.ID)
	require.NoError(t, err)
	storetest.RequireSameRecord(t, rec, got)
	require.Equal(t, 4, f.count())
	t.Log(c)
}

// TestPersistentFailureLeavesNothing: when a write keeps failing, Create
// returns the error, no reader finds the response, and no item is left.
func TestPersistentFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		kind  string
		fault *fault
	}{
		{"normal", "normal", &fault{op: "PutItem", kind: faultThrottle, times: -1}},
		{"tx", "tx", &fault{op: "TransactWriteItems", kind: faultThrottle, times: -1}},
		{"batched/chunks", "batched", &fault{op: "BatchWriteItem", kind: faultThrottle, times: -1}},
		{"batched/head", "batched", &fault{op: "PutItem", kind: faultThrottle, times: -1}},
		{"batched/unprocessed", "batched", &fault{op: "BatchWriteItem", kind: faultUnprocessed, times: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, clean, _, c := faultyStore(t, true, tc.fault)
			rec := recordOfSize(tc.kind)
			err := s.Create(t.Context(), rec)
			require.Error(t, err)
			require.NotErrorIs(t, err, store.ErrConflict)
			t.Logf("%s: %v (%s)", tc.name, err, c)
			_, err = clean.Get(t.Context(), rec.Response.ID)
			require.ErrorIs(t, err, store.ErrNotFound)
			require.Equal(t, 0, countItems(t, clean), "no item of the failed write remains")
			// The id is still free.
			rec2 := recordOfSize("normal")
			rec2.Response.ID = rec.Response.ID
			require.NoError(t, clean.Create(t.Context(), rec2))
		})
	}
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		s, clean, _, _ := faultyStore(t, true, &fault{op: "PutItem", kind: faultThrottle, skip: 1, times: -1})
		rec := recordOfSize("normal")
		require.NoError(t, s.Create(t.Context(), rec))
		next := recordOfSize("batched")
		next.Response.ID = rec.Response.ID
		next.Response.Status = api.StatusCompleted
		require.Error(t, s.Update(t.Context(), next, api.StatusInProgress))
		got, err := clean.Get(t.Context(), rec.Response.ID)
		require.NoError(t, err)
		storetest.RequireSameRecord(t, rec, got) // the old version, intact
		require.Equal(t, 1, countItems(t, clean), "the new version's chunks are gone")
	})
}

// TestDeadlineBoundsRetries: retries stop at the request's deadline, and
// what was not stored is not readable.
func TestDeadlineBoundsRetries(t *testing.T) {
	t.Parallel()
	s, clean, _, c := faultyStore(t, false, &fault{op: "PutItem", kind: faultThrottle, times: -1})
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	rec := recordOfSize("normal")
	start := time.Now()
	err := s.Create(ctx, rec)
	elapsed := time.Since(start)
	require.Error(t, err)
	require.Less(t, elapsed, 5*time.Second)
	t.Logf("gave up after %v: %v (%v attempts)", elapsed.Round(time.Millisecond), err, c.Snapshot().Attempts)
	_, err = clean.Get(t.Context(), rec.Response.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestLostResponseIsIdempotent: a write that succeeded but whose answer was
// lost is retried by the SDK; the retry recognises the store's own write
// (its generation) instead of reporting a conflict.
func TestLostResponseIsIdempotent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind string
		op   string
	}{{"normal", "PutItem"}, {"tx", "TransactWriteItems"}, {"batched", "PutItem"}}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			t.Parallel()
			s, clean, f, c := faultyStore(t, false, &fault{op: tc.op, kind: faultLostResponse, times: 1})
			rec := recordOfSize(tc.kind)
			require.NoError(t, s.Create(t.Context(), rec))
			require.Equal(t, 1, f.count())
			got, err := clean.Get(t.Context(), rec.Response.ID)
			require.NoError(t, err)
			storetest.RequireSameRecord(t, rec, got)
			t.Logf("%s: %s; attempts %v", tc.kind, c, c.Snapshot().Attempts)
		})
	}
	t.Run("update", func(t *testing.T) {
		t.Parallel()
		s, clean, _, _ := faultyStore(t, false, &fault{op: "PutItem", kind: faultLostResponse, skip: 1, times: 1})
		rec := recordOfSize("normal")
		require.NoError(t, s.Create(t.Context(), rec))
		next := recordOfSize("normal")
		next.Response.ID, next.Response.Status = rec.Response.ID, api.StatusCompleted
		require.NoError(t, s.Update(t.Context(), next, api.StatusInProgress))
		got, err := clean.Get(t.Context(), rec.Response.ID)
		require.NoError(t, err)
		storetest.RequireSameRecord(t, next, got)
	})
}

// TestDeleteLeavingPartsIsADeletion: a Delete that removed the head but
// could not remove the chunks (throttled past every retry) reports
// store.ErrPartlyDeleted: the response is gone, and the caller must not
// take the delete for failed (a 500 there made clients retry into a 404).
func TestDeleteLeavingPartsIsADeletion(t *testing.T) {
	t.Parallel()
	s, clean, _, _ := faultyStore(t, true, &fault{op: "BatchWriteItem", kind: faultThrottle, times: -1})
	rec := recordOfSize("batched")
	require.NoError(t, clean.Create(t.Context(), rec))
	err := s.Delete(t.Context(), rec.Response.ID)
	require.ErrorIs(t, err, store.ErrPartlyDeleted)
	_, err = clean.Get(t.Context(), rec.Response.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// hookHTTP runs fn (once) before the first call of op goes on to DynamoDB.
type hookHTTP struct {
	next aws.HTTPClient
	op   string
	once sync.Once
	fn   func()
}

func (h *hookHTTP) Do(req *http.Request) (*http.Response, error) {
	if strings.TrimPrefix(req.Header.Get("X-Amz-Target"), "DynamoDB_20120810.") == h.op {
		h.once.Do(h.fn)
	}
	return h.next.Do(req)
}

// A paused mcp_call deleted by its conversation's client while the
// continuation appends its executed version (between the append's read of
// the call's id row and its transaction): the append still goes in, the
// call appended anew, as if the delete had come first. (The failed check
// of the call's id row was reported as a duplicate id: the continuation's
// items were appended nowhere.)
func TestReplacedItemDeletedDuringAppend(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	table := newTable(t)
	clean, err := New(newClient(t), Config{Table: table})
	require.NoError(t, err)
	hook := &hookHTTP{next: awshttp.NewBuildableClient(), op: "TransactWriteItems"}
	s, err := New(newClient(t, func(o *ddb.Options) { o.HTTPClient = hook }), Config{Table: table})
	require.NoError(t, err)
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
	open := api.Item{Type: api.ItemMCPCall, ID: "mcp_p", Status: api.ItemInProgress, ServerLabel: "lambent", Name: "search", Arguments: "{}"}
	require.NoError(t, clean.CreateConversation(ctx, c, []api.Item{open}))
	hook.fn = func() {
		_, err := clean.DeleteConversationItem(ctx, c.ID, "mcp_p")
		require.NoError(t, err)
	}
	_, err = s.LockConversation(ctx, c.ID, "r", time.Now().Add(time.Minute))
	require.NoError(t, err)
	done := open
	done.Status, done.Output = api.ItemCompleted, "found"
	msg := api.Item{Type: api.ItemMessage, ID: "msg_c", Role: api.RoleAssistant, Status: api.ItemCompleted,
		Content: []api.ContentPart{{Type: api.PartOutputText, Text: "done"}}}
	require.NoError(t, s.AppendConversationItems(ctx, c.ID, "r", []api.Item{done, msg}, ""))
	all, err := clean.LoadConversationItems(ctx, c.ID, 10)
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, []string{"mcp_p", "msg_c"}, []string{all[0].ID, all[1].ID})
	require.Equal(t, "found", all[0].Output)
	got, err := clean.GetConversation(ctx, c.ID)
	require.NoError(t, err)
	require.Empty(t, got.Lock)
}

// A conversation create whose PutItem reached DynamoDB but whose answer
// was lost is retried by the SDK; the retry recognises the create's own
// head instead of reporting a conflict (the client got a 409 for a
// conversation that was created, whose id it never learned).
func TestCreateConversationLostResponse(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 2} {
		s, clean, f, _ := faultyStore(t, false, &fault{op: "PutItem", kind: faultLostResponse, times: 1})
		c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix(), Metadata: map[string]string{"k": "v"}}
		items := []api.Item{{Type: api.ItemMessage, ID: "msg_1", Role: api.RoleUser, Status: api.ItemCompleted,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}, {Type: api.ItemMessage, ID: "msg_2", Role: api.RoleUser, Status: api.ItemCompleted,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "there"}}}}[:n]
		require.NoError(t, s.CreateConversation(t.Context(), c, items), "%d items", n)
		require.Equal(t, 1, f.count())
		got, err := clean.LoadConversationItems(t.Context(), c.ID, 10)
		require.NoError(t, err)
		require.Len(t, got, n)
	}
}

// TestDeleteConversationItemLeavingChunksIsADeletion: an item delete that
// removed the item but not all of its chunks (throttled past every retry)
// reports store.ErrPartlyDeleted, with the conversation: the item is gone
// (a plain error there was a 500, and a client's retry a 404).
func TestDeleteConversationItemLeavingChunksIsADeletion(t *testing.T) {
	t.Parallel()
	s, clean, _, _ := faultyStore(t, true, &fault{op: "BatchWriteItem", kind: faultThrottle, skip: 1, times: -1})
	ctx := t.Context()
	big := api.Item{Type: api.ItemMessage, ID: "msg_big", Role: api.RoleUser, Status: api.ItemCompleted,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: storetest.RandomText(mrand.New(mrand.NewPCG(1, 9)), 300<<10)}}}
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
	require.NoError(t, clean.CreateConversation(ctx, c, []api.Item{big}))
	got, err := s.DeleteConversationItem(ctx, c.ID, big.ID)
	require.ErrorIs(t, err, store.ErrPartlyDeleted)
	require.NotNil(t, got)
	require.Equal(t, c.ID, got.ID)
	items, err := clean.LoadConversationItems(ctx, c.ID, 10)
	require.NoError(t, err)
	require.Empty(t, items, "the item is gone")
}

// TestDeleteLostResponse: a delete whose DeleteItem reached DynamoDB but
// whose answer was lost is retried by the SDK; the retry fails the
// delete's condition (the head is gone) and must not report the response
// (or conversation) not found: the first attempt deleted it. (Delete
// answered store.ErrNotFound: the flake "delete (chain50): response not
// found" of TestCallBudget.)
func TestDeleteLostResponse(t *testing.T) {
	t.Parallel()
	t.Run("response", func(t *testing.T) {
		t.Parallel()
		s, clean, f, _ := faultyStore(t, false, &fault{op: "DeleteItem", kind: faultLostResponse, times: 1})
		ctx := t.Context()
		rec := recordOfSize("tx") // with chunks
		require.NoError(t, clean.Create(ctx, rec))
		id := rec.Response.ID
		require.NoError(t, clean.MarkRunning(ctx, id, rec.ExpiresAt))
		require.NoError(t, clean.AppendEvents(ctx, id, []store.Event{{Seq: 0, Type: "response.created", Data: []byte(`{"type":"response.created","sequence_number":0}`)}}))
		require.NoError(t, s.Delete(ctx, id))
		require.Equal(t, 1, f.count())
		_, err := clean.Get(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = clean.Poll(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, "the run's signal item is a tombstone")
		require.Equal(t, 1, countItems(t, clean), "only the tombstone remains")
		// A second delete finds nothing.
		require.ErrorIs(t, clean.Delete(t.Context(), rec.Response.ID), store.ErrNotFound)
	})
	t.Run("conversation", func(t *testing.T) {
		t.Parallel()
		s, clean, f, _ := faultyStore(t, false, &fault{op: "DeleteItem", kind: faultLostResponse, times: 1})
		c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
		msg := api.Item{Type: api.ItemMessage, ID: "msg_1", Role: api.RoleUser, Status: api.ItemCompleted,
			Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}
		require.NoError(t, clean.CreateConversation(t.Context(), c, []api.Item{msg}))
		require.NoError(t, s.DeleteConversation(t.Context(), c.ID))
		require.Equal(t, 1, f.count())
		require.Equal(t, 0, countItems(t, clean), "the conversation's rows are deleted too")
		require.ErrorIs(t, clean.DeleteConversation(t.Context(), c.ID), store.ErrNotFound)
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		// A retried delete of a head that is there but expired is still
		// not found: the first attempt did not delete it. The head is
		// expired by the faulty store's clock, not the real one, which
		// DynamoDB Local's TTL would soon delete it by.
		s, clean, f, _ := faultyStore(t, false, &fault{op: "DeleteItem", kind: faultLostResponse, times: 1})
		rec := recordOfSize("normal")
		require.NoError(t, clean.Create(t.Context(), rec))
		s.now = func() time.Time { return rec.ExpiresAt.Add(time.Minute) }
		require.ErrorIs(t, s.Delete(t.Context(), rec.Response.ID), store.ErrNotFound)
		require.Equal(t, 1, f.count())
	})
	t.Run("throttled", func(t *testing.T) {
		t.Parallel()
		// A throttled attempt was not applied: its retry finding no head
		// is not found.
		s, _, f, _ := faultyStore(t, false, &fault{op: "DeleteItem", kind: faultThrottle, times: 1})
		require.ErrorIs(t, s.Delete(t.Context(), api.NewID(api.PrefixResponse)), store.ErrNotFound)
		require.Equal(t, 1, f.count())
	})
}

// TestAppendLostResponse: an append whose transaction reached DynamoDB but
// whose answer was lost is retried by the SDK with the same idempotency
// token, so the retry succeeds instead of reporting the lock lost.
func TestAppendLostResponse(t *testing.T) {
	t.Parallel()
	s, clean, f, _ := faultyStore(t, false, &fault{op: "TransactWriteItems", kind: faultLostResponse, times: 1})
	ctx := t.Context()
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
	require.NoError(t, clean.CreateConversation(ctx, c, nil))
	_, err := s.LockConversation(ctx, c.ID, "r", time.Now().Add(time.Minute))
	require.NoError(t, err)
	msg := api.Item{Type: api.ItemMessage, ID: "msg_1", Role: api.RoleUser, Status: api.ItemCompleted,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}
	require.NoError(t, s.AppendConversationItems(ctx, c.ID, "r", []api.Item{msg}, ""))
	require.Equal(t, 1, f.count())
	got, err := clean.LoadConversationItems(ctx, c.ID, 10)
	require.NoError(t, err)
	require.Len(t, got, 1)
}
