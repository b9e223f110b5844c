package dynamodb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/ddbmeter"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/storetest"
	"github.com/lambent/lambent/pkg/tenant"
)

// newClient returns a client for DynamoDB Local with dummy credentials, the
// store's retryer, and optFns.
func newClient(tb testing.TB, optFns ...func(*ddb.Options)) *ddb.Client {
	tb.Helper()
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		BaseEndpoint: aws.String(endpoint(tb)),
	}
	return NewClient(cfg, optFns...)
}

var tableChars = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// newTable creates a fresh table for tb and deletes it afterwards.
func newTable(tb testing.TB) string {
	tb.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := tableChars.ReplaceAllString(tb.Name(), "-")
	if len(name) > 200 {
		name = name[len(name)-200:]
	}
	name = "lambent-" + name + "-" + hex.EncodeToString(b[:])
	c := newClient(tb)
	s, err := New(c, Config{Table: name})
	require.NoError(tb, err)
	require.NoError(tb, s.EnsureTable(tb.Context()))
	tb.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// newStore returns a store on a fresh table; optFns configure its client.
func newStore(tb testing.TB, optFns ...func(*ddb.Options)) *Store {
	tb.Helper()
	s, err := New(newClient(tb, optFns...), Config{Table: newTable(tb)})
	require.NoError(tb, err)
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.ResponseStore { return newStore(t) })
}

func TestConversations(t *testing.T) {
	t.Parallel()
	storetest.RunConversations(t, func(t *testing.T) store.ConversationStore { return newStore(t) })
}

// TestConversationsSmallRows runs the conversation suite with tiny rows
// and transactions: items in chunks, appends in several transactions.
func TestConversationsSmallRows(t *testing.T) {
	t.Parallel()
	storetest.RunConversations(t, func(t *testing.T) store.ConversationStore {
		s := newStore(t)
		s.inlineMax, s.chunkSize = 300, 1<<10
		return s
	})
}

// TestConformanceSmallChunks runs the suite with tiny items, so that the
// records of the suite's large tests have up to a few hundred chunks:
// several BatchWriteItem and BatchGetItem calls per record, and
// transactions of 3 chunks. (The 5 MB and 50-turn tests add nothing here
// but time.)
func TestConformanceSmallChunks(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.ResponseStore {
		s := newStore(t)
		s.inlineMax, s.chunkSize, s.maxTxChunks = 2<<10, 8<<10, 3
		return s
	}, storetest.Skip("BigOutput5MB", "Chain50Turns"))
}

// countItems returns the number of items in s's table (a Scan).
func countItems(t *testing.T, s *Store) int {
	t.Helper()
	pager := ddb.NewScanPaginator(s.api.(*ddb.Client), &ddb.ScanInput{TableName: s.table, Select: types.SelectCount, ConsistentRead: aws.Bool(true)})
	n := 0
	for pager.HasMorePages() {
		out, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		n += int(out.Count)
	}
	return n
}

func TestPartitionKeyEscapesTenant(t *testing.T) {
	require.Equal(t, "default#resp_1", pk("default", "resp_1"))
	require.Equal(t, "t%231#x", pk("t#1", "x"))
	require.Equal(t, "t%25231#x", pk("t%231", "x"))
	require.NotEqual(t, pk("a#b", "c"), pk("a", "b#c"))
}

// TestLayout checks which items each size of record becomes.
func TestLayout(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	rng := mrand.New(mrand.NewPCG(1, 2))
	cases := []struct {
		name   string
		text   int
		chunks int
	}{
		{"normal", 0, 0},
		{"tx", 1 << 20, 3}, // ~0.8 MB compressed: 3 chunks in one transaction
		// (5 MB of random text, ~4 MB compressed, is 12 chunks written
		// first and the head last: see TestCallBudget.)
	}
	for _, c := range cases {
		rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
		if c.text > 0 {
			rec.Response.Output = append(rec.Response.Output, api.Item{Type: api.ItemMessage, ID: "msg_big", Role: api.RoleAssistant,
				Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.RandomText(rng, c.text)}}})
		}
		rec.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Second)
		require.NoError(t, s.Create(ctx, rec))
		out, err := s.api.(*ddb.Client).GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(pk(tenant.Default, rec.Response.ID), skHead)})
		require.NoError(t, err)
		var h head
		require.NoError(t, attributevalue.UnmarshalMap(out.Item, &h))
		require.Equal(t, c.chunks, h.Chunks, c.name)
		require.Equal(t, rec.ExpiresAt.Unix(), h.ExpiresAt, "TTL attribute")
		require.Equal(t, string(api.StatusCompleted), h.Status)
		require.Equal(t, rec.Response.CreatedAt, h.CreatedAt)
		require.Equal(t, c.chunks == 0, len(h.Body) > 0)
		t.Logf("%s: %d bytes of JSON → %d items (%d chunks)", c.name, h.Size, h.Chunks+1, h.Chunks)
	}
	require.Equal(t, 1+(1+3), countItems(t, s))
}

func TestEnsureTable(t *testing.T) {
	t.Parallel()
	name := newTable(t)
	c := newClient(t)
	s, err := New(c, Config{Table: name})
	require.NoError(t, err)
	// Again, and concurrently: all succeed.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = s.EnsureTable(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	ttl, err := c.DescribeTimeToLive(t.Context(), &ddb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	require.NoError(t, err)
	require.Equal(t, attrExpiresAt, aws.ToString(ttl.TimeToLiveDescription.AttributeName))
	require.Equal(t, types.TimeToLiveStatusEnabled, ttl.TimeToLiveDescription.TimeToLiveStatus)
	d, err := c.DescribeTable(t.Context(), &ddb.DescribeTableInput{TableName: aws.String(name)})
	require.NoError(t, err)
	require.Equal(t, types.BillingModePayPerRequest, d.Table.BillingModeSummary.BillingMode)

	// A table created concurrently by several stores.
	fresh := "lambent-ensure-" + api.NewID("")[32:]
	t.Cleanup(func() {
		_, _ = c.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(fresh)})
	})
	for i := range errs {
		wg.Go(func() {
			st, err := New(c, Config{Table: fresh})
			if err == nil {
				err = st.EnsureTable(t.Context())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestNewValidates(t *testing.T) {
	_, err := New(nil, Config{Table: "x"})
	require.Error(t, err)
	_, err = New(&ddb.Client{}, Config{})
	require.Error(t, err)
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	s, err := New(newClient(t), Config{Table: newTable(t), MaxRecordBytes: 64 << 10})
	require.NoError(t, err)
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	rec.Input = append(rec.Input, api.Item{Type: api.ItemMessage, ID: "msg_x", Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: storetest.Words(mrand.New(mrand.NewPCG(1, 1)), 100<<10)}}})
	small := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	require.NoError(t, s.CheckSize(small), "a small record fits")
	checked := s.CheckSize(rec)
	require.ErrorIs(t, checked, store.ErrTooLarge, "CheckSize refuses what Create refuses, without a call")
	err = s.Create(t.Context(), rec)
	require.ErrorIs(t, err, ErrTooLarge)
	var tl, ctl *store.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.ErrorAs(t, checked, &ctl)
	require.Equal(t, *tl, *ctl, "both measure the same JSON")
	require.Equal(t, int64(64<<10), tl.Limit)
	require.Greater(t, tl.Size, int64(100<<10))
	require.Equal(t, 0, countItems(t, s))
}

// A conversation create whose first items cannot be appended (too large)
// fails whole: no conversation is left behind, whose id the client never
// learns. (Its head was written first and stayed, locked, until TTL.)
func TestCreateConversationTooLargeLeavesNothing(t *testing.T) {
	t.Parallel()
	s, err := New(newClient(t), Config{Table: newTable(t), MaxRecordBytes: 64 << 10})
	require.NoError(t, err)
	ctx := t.Context()
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation), CreatedAt: time.Now().Unix()}
	big := api.Item{Type: api.ItemMessage, ID: "msg_x", Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: storetest.Words(mrand.New(mrand.NewPCG(1, 1)), 100<<10)}}}
	err = s.CreateConversation(ctx, c, []api.Item{big})
	require.ErrorIs(t, err, store.ErrTooLarge)
	_, err = s.GetConversation(ctx, c.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "the failed create left no conversation")
	require.Equal(t, 0, countItems(t, s))
}

func TestCorruptRecordIsAServerError(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	// A head whose body is not gzip.
	id := api.NewID(api.PrefixResponse)
	item, err := attributevalue.MarshalMap(head{PK: pk(tenant.Default, id), SK: skHead, Status: "completed",
		ExpiresAt: time.Now().Add(time.Hour).Unix(), Gen: "g", Format: formatJSONGzip, Body: []byte("not gzip")})
	require.NoError(t, err)
	_, err = s.api.PutItem(ctx, &ddb.PutItemInput{TableName: s.table, Item: item})
	require.NoError(t, err)
	_, err = s.Get(ctx, id)
	require.ErrorIs(t, err, store.ErrCorrupt)
	var ae *api.Error
	require.NotErrorAs(t, err, &ae, "a broken record must not look like a client error")

	// A chunked record missing a chunk.
	s.inlineMax, s.chunkSize = 1<<10, 1<<10
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
	rec.Response.Output = append(rec.Response.Output, api.Item{Type: api.ItemMessage, ID: "m", Role: api.RoleAssistant,
		Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.RandomText(mrand.New(mrand.NewPCG(1, 1)), 8<<10)}}})
	require.NoError(t, s.Create(ctx, rec))
	out, err := s.api.(*ddb.Client).GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(pk(tenant.Default, rec.Response.ID), skHead)})
	require.NoError(t, err)
	var h head
	require.NoError(t, attributevalue.UnmarshalMap(out.Item, &h))
	require.Greater(t, h.Chunks, 2)
	_, err = s.api.DeleteItem(ctx, &ddb.DeleteItemInput{TableName: s.table, Key: keyOf(h.PK, chunkSK(h.Gen, 1))})
	require.NoError(t, err)
	_, err = s.Get(ctx, rec.Response.ID)
	require.ErrorIs(t, err, store.ErrCorrupt)
}

// TestReadersDuringUpdates reads a large record while it is replaced again
// and again: every read returns one complete version, never an error, even
// though each update deletes the chunks of the version it replaces.
func TestReadersDuringUpdates(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	s.inlineMax, s.chunkSize = 4<<10, 4<<10
	ctx := t.Context()
	rng := mrand.New(mrand.NewPCG(3, 3))
	id := api.NewID(api.PrefixResponse)
	version := func(i int) *store.Record {
		rec := storetest.NewRecord(id, api.StatusInProgress)
		rec.Response.Metadata["version"] = fmt.Sprint(i)
		rec.Response.Output = append(rec.Response.Output, api.Item{Type: api.ItemMessage, ID: "m", Role: api.RoleAssistant,
			Content: []api.ContentPart{{Type: api.PartOutputText, Text: storetest.RandomText(rng, 40<<10)}}})
		return rec
	}
	const versions = 15
	recs := make([]*store.Record, versions)
	for i := range recs {
		recs[i] = version(i)
	}
	require.NoError(t, s.Create(ctx, recs[0]))
	done := make(chan struct{})
	var wg sync.WaitGroup
	reads := make([]int, 3)
	for r := range reads {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := s.Get(ctx, id)
				if err != nil {
					t.Errorf("reader %d: %v", r, err)
					return
				}
				var v int
				_, _ = fmt.Sscan(got.Response.Metadata["version"], &v)
				storetest.RequireSameRecord(t, recs[v], got)
				reads[r]++
			}
		})
	}
	var err error
	for i := 1; i < versions && err == nil; i++ {
		recs[i].Version = recs[i-1].Version
		err = s.Update(ctx, recs[i], api.StatusInProgress)
	}
	close(done)
	wg.Wait()
	require.NoError(t, err)
	t.Logf("reads during %d updates: %v", versions-1, reads)
	// Only the last version's items remain.
	got, err := s.Get(ctx, id)
	require.NoError(t, err)
	storetest.RequireSameRecord(t, recs[versions-1], got)
	out, err := s.api.(*ddb.Client).GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(pk(tenant.Default, id), skHead)})
	require.NoError(t, err)
	var h head
	require.NoError(t, attributevalue.UnmarshalMap(out.Item, &h))
	require.Equal(t, h.Chunks+1, countItems(t, s), "chunks of replaced versions are deleted")
}

// A follower's poll that finds no new event of a running background
// response tells "nothing new" by the run's signal item, not by the head:
// half a read unit, where this head (300 KB of incompressible input)
// costs ~75.
func TestFollowerPollReadsSignalsNotTheHead(t *testing.T) {
	t.Parallel()
	c := newCounter()
	s := newStore(t, c.Options)
	ctx := t.Context()
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusInProgress)
	rec.Job = &store.Job{NextSeq: 1}
	rec.Input = append(rec.Input, api.Item{Type: api.ItemMessage, Role: api.RoleUser,
		Content: []api.ContentPart{{Type: api.PartInputText, Text: storetest.RandomText(mrand.New(mrand.NewPCG(3, 4)), 300_000)}}})
	rec.ExpiresAt = time.Now().Add(time.Hour)
	id := rec.Response.ID
	require.NoError(t, s.Create(ctx, rec))
	require.NoError(t, s.AppendEvents(ctx, id, []store.Event{{Seq: 0, Type: "response.created", Data: []byte(`{"type":"response.created","sequence_number":0}`)}}))

	c.Reset()
	_, err := s.Events(ctx, id, 0)
	require.NoError(t, err)
	headRead := c.Snapshot().RCU
	require.NoError(t, s.MarkRunning(ctx, id, rec.ExpiresAt))
	c.Reset()
	got, err := s.Events(ctx, id, 0)
	require.NoError(t, err)
	require.Empty(t, got)
	t.Logf("empty poll: %.1f read units by the head, %s by the signal item", headRead, c)
	require.LessOrEqual(t, c.Snapshot().RCU, 1.0)
	require.Greater(t, headRead, 10.0, "the head of this record is large")

	require.NoError(t, s.Delete(ctx, id))
	_, err = s.Events(ctx, id, 0)
	require.ErrorIs(t, err, store.ErrNotFound, "a deleted response's follower is told")
}

// counter counts DynamoDB calls per operation (and attempts, retries
// included) and sums the capacity units DynamoDB reports for them.
type counter = ddbmeter.Meter

func newCounter() *counter { return ddbmeter.New() }

// TestCallBudget counts the DynamoDB calls of every operation: issue 5's
// budget is create ≤ 2 calls and get ≤ 1 call for a normal response, and a
// continuation ≤ 1 read + the writes of the new response.
func TestCallBudget(t *testing.T) {
	t.Parallel()
	c := newCounter()
	s := newStore(t, c.Options)
	ctx := t.Context()

	measure := func(name string, budget int, fn func() error) {
		t.Helper()
		c.Reset()
		err := fn()
		t.Logf("%-28s %s", name+":", c)
		require.NoError(t, err, name)
		if budget > 0 {
			require.LessOrEqual(t, c.Total(), budget, name)
		}
	}
	normal := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusRequiresAction)
	id := normal.Response.ID
	measure("create (normal)", 2, func() error { return s.Create(ctx, normal) })
	measure("get (normal)", 1, func() error { _, err := s.Get(ctx, id); return err })
	measure("list input items (normal)", 1, func() error { _, err := s.ListInputItems(ctx, id, api.ListOptions{}); return err })
	var next *store.Record
	measure("continuation (get + create)", 2, func() error {
		prev, err := s.Get(ctx, id)
		if err != nil {
			return err
		}
		next = storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusCompleted)
		next.Context = prev.Conversation()
		return s.Create(ctx, next)
	})
	bg := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusQueued)
	require.NoError(t, s.Create(ctx, bg))
	measure("update (normal)", 1, func() error {
		return s.Update(ctx, storetest.NewRecord(bg.Response.ID, api.StatusInProgress), api.StatusQueued)
	})
	measure("delete (normal)", 2, func() error { return s.Delete(ctx, id) })

	// A background response: its job in the record, its stream events in
	// one item per AppendEvents.
	job := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusQueued)
	job.Job = &store.Job{NextSeq: 2, Claim: "claim_1"}
	jid := job.Response.ID
	measure("create (background)", 2, func() error { return s.Create(ctx, job) })
	var evs []store.Event
	for seq := range int64(50) {
		evs = append(evs, store.Event{Seq: seq, Type: "response.output_text.delta",
			Data: fmt.Appendf(nil, `{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"word "}`, seq)})
	}
	measure("append 50 events", 2, func() error { return s.AppendEvents(ctx, jid, evs) })
	measure("events: poll, 50 new", 1, func() error { _, err := s.Events(ctx, jid, -1); return err })
	// A background run that has just read the record appends without
	// reading it again: one PutItem, the events expiring with the record.
	live, err := s.Get(ctx, jid)
	require.NoError(t, err)
	more := []store.Event{{Seq: 50, Type: "response.completed", Data: []byte(`{"type":"response.completed","sequence_number":50}`)}}
	measure("append known (1 event)", 1, func() error { return s.AppendEventsKnown(ctx, jid, live.ExpiresAt, more) })
	require.Equal(t, 1, c.Calls("PutItem"))
	// A worker's append under its claim: the same one call, a
	// transaction checking the head's claim (AppendEventsClaimed).
	claimed := []store.Event{{Seq: 49, Type: more[0].Type, Data: []byte(`{"type":"response.output_text.delta","sequence_number":49}`)}}
	measure("append claimed (1 event)", 1, func() error {
		return s.AppendEventsClaimed(ctx, jid, "claim_1", live.ExpiresAt, claimed)
	})
	require.Equal(t, 1, c.Calls("TransactWriteItems"))
	// Its units count the head checked: a record holding 300 KB of
	// random text.
	big := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusInProgress)
	big.Input = append(big.Input, api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText,
		Text: storetest.RandomText(mrand.New(mrand.NewPCG(1, 2)), 300_000)}}})
	big.Job = &store.Job{Claim: "claim_big"}
	require.NoError(t, s.Create(ctx, big))
	measure("append claimed (300 KB record)", 1, func() error {
		return s.AppendEventsClaimed(ctx, big.Response.ID, "claim_big", big.ExpiresAt, claimed)
	})
	got, err := s.Events(ctx, jid, 49)
	require.NoError(t, err)
	require.Equal(t, more, got)
	out, err := s.api.Query(ctx, &ddb.QueryInput{TableName: s.table, KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :ev)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk(tenant.From(ctx), jid)},
			":ev": &types.AttributeValueMemberS{Value: "event#"}}})
	require.NoError(t, err)
	for _, it := range out.Items {
		require.Equal(t, &types.AttributeValueMemberN{Value: strconv.FormatInt(live.ExpiresAt.Unix(), 10)}, it["expires_at"])
	}
	measure("events: poll, none new (queued)", 3, func() error { _, err := s.Events(ctx, jid, 50); return err })
	require.NoError(t, s.MarkRunning(ctx, jid, live.ExpiresAt))
	measure("events: poll, none new (running)", 2, func() error { _, err := s.Events(ctx, jid, 50); return err })
	measure("delete (background)", 3, func() error { return s.Delete(ctx, jid) })

	for _, r := range benchRecords() {
		rec := r.rec
		budget := 2
		measure("create ("+r.name+")", budget, func() error { return s.Create(ctx, rec) })
		measure("get ("+r.name+")", budget, func() error { _, err := s.Get(ctx, rec.Response.ID); return err })
		measure("delete ("+r.name+")", budget+1, func() error { return s.Delete(ctx, rec.Response.ID) })
	}
}

// conflictingAPI cancels the first n transactions as DynamoDB does when
// another write of one of their items is under way.
type conflictingAPI struct {
	API
	n atomic.Int32
}

func (c *conflictingAPI) TransactWriteItems(ctx context.Context, in *ddb.TransactWriteItemsInput, optFns ...func(*ddb.Options)) (*ddb.TransactWriteItemsOutput, error) {
	if c.n.Add(-1) >= 0 {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		for i := range reasons {
			reasons[i].Code = aws.String("None")
		}
		reasons[0].Code = aws.String("TransactionConflict")
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
	}
	return c.API.TransactWriteItems(ctx, in, optFns...)
}

// A claimed append whose transaction conflicted with another write of the
// head (a claim or a delete at the same moment) is tried again, and the
// other write decides: before, the conflict was an error of its own, and a
// worker's checkpoint failed the response for it.
func TestClaimedAppendConflictRetried(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := &conflictingAPI{API: s.api}
	s.api = c
	ctx := t.Context()
	rec := storetest.NewRecord(api.NewID(api.PrefixResponse), api.StatusInProgress)
	rec.Job = &store.Job{Owner: "w", LeaseUntil: time.Now().Add(time.Minute), Claim: "claim-w"}
	require.NoError(t, s.Create(ctx, rec))
	evs := []store.Event{{Seq: 0, Type: "response.created", Data: []byte(`{"type":"response.created","sequence_number":0}`)}}
	c.n.Store(claimedAttempts - 1)
	require.NoError(t, s.AppendEventsClaimed(ctx, rec.Response.ID, "claim-w", rec.ExpiresAt, evs), "conflicts short of the bound are tried again")
	c.n.Store(claimedAttempts)
	err := s.AppendEventsClaimed(ctx, rec.Response.ID, "claim-w", rec.ExpiresAt, evs)
	var tce *types.TransactionCanceledException
	require.ErrorAs(t, err, &tce, "as many conflicts as tries: the last one's error")
	got, err := s.Events(ctx, rec.Response.ID, -1)
	require.NoError(t, err)
	require.Len(t, got, 1)
}
