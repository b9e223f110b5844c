package dynamodb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// Event items: one per AppendEvents call, under the response's partition
// key. The sort key orders them by their last sequence number, so that the
// events after a sequence number are one key range.
const (
	skEventPrefix = "event#"
	skEventEnd    = "event#~" // after every "event#<digits>..." key
)

var _ store.EventLog = (*Store)(nil)

// eventBatch is the item of one AppendEvents call: its events, compressed,
// inline or in chunks like a record's body.
type eventBatch struct {
	PK string `dynamodbav:"pk"`
	// SK is event#<last seq>#<first seq>, both as seqKey.
	SK    string `dynamodbav:"sk"`
	First int64  `dynamodbav:"first"`
	Last  int64  `dynamodbav:"last"`
	// Stamp (Unix nanoseconds of the write) orders writes: where two
	// batches hold the same sequence number, the later one wins.
	Stamp     int64  `dynamodbav:"stamp"`
	ExpiresAt int64  `dynamodbav:"expires_at"`
	Gen       string `dynamodbav:"gen"`
	Body      []byte `dynamodbav:"body,omitempty"`
	Chunks    int    `dynamodbav:"chunks,omitempty"`
}

// wireEvent is the stored form of a store.Event. Data that is compact JSON
// (what the engine writes) is stored as JSON; anything else as base64 in
// Raw, so that every event reads back byte for byte.
type wireEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
	Raw  []byte          `json:"raw,omitempty"`
}

func toWire(ev store.Event) wireEvent {
	w := wireEvent{Seq: ev.Seq, Type: ev.Type}
	var c bytes.Buffer
	if len(ev.Data) > 0 && json.Compact(&c, ev.Data) == nil && bytes.Equal(c.Bytes(), ev.Data) {
		w.Data = ev.Data
	} else {
		w.Raw = ev.Data
	}
	return w
}

func (w wireEvent) event() store.Event {
	data := []byte(w.Data)
	if data == nil {
		data = w.Raw
	}
	return store.Event{Seq: w.Seq, Type: w.Type, Data: data}
}

// seqKey formats seq so that keys sort as the numbers do, negative ones
// included.
func seqKey(seq int64) string {
	return fmt.Sprintf("%020d", uint64(seq)^(1<<63))
}

func eventSK(first, last int64) string {
	return skEventPrefix + seqKey(last) + "#" + seqKey(first)
}

// AppendEvents stores the stream events of the response id as one item
// (chunked like a record when large): a consistent read of the head (the
// response must exist; ErrNotFound otherwise) and one PutItem. An event
// written again with the same sequence number replaces the earlier one.
// The events expire with the response; Delete removes them.
func (s *Store) AppendEvents(ctx context.Context, id string, events []store.Event) error {
	if id == "" {
		return fmt.Errorf("dynamodb: append events: empty id: %w", store.ErrNotFound)
	}
	p := pk(tenant.From(ctx), id)
	h, err := s.readHead(ctx, p, id, true)
	if err != nil {
		return err
	}
	return s.appendEvents(ctx, p, id, h.ExpiresAt, events, s.unclaimed(ctx))
}

var _ store.KnownEventLog = (*Store)(nil)

// AppendEventsKnown is AppendEvents without its read of the head: the
// caller read the live response and passes its ExpiresAt, which the
// events take. One PutItem (more calls only for chunks).
func (s *Store) AppendEventsKnown(ctx context.Context, id string, expiresAt time.Time, events []store.Event) error {
	if id == "" {
		return fmt.Errorf("dynamodb: append events: empty id: %w", store.ErrNotFound)
	}
	if expiresAt.IsZero() {
		return s.AppendEvents(ctx, id, events)
	}
	return s.appendEvents(ctx, pk(tenant.From(ctx), id), id, expiresAt.Unix(), events, s.unclaimed(ctx))
}

var _ store.ClaimedEventLog = (*Store)(nil)

// AppendEventsClaimed is AppendEventsKnown conditional on the head's
// claim: the event item is put in one TransactWriteItems with a
// ConditionCheck of the head (claim = claim, and live), instead of a
// PutItem (still one call, more for chunks). ErrLeaseLost when the head
// holds another claim, ErrNotFound when there is no live head. A retried
// append of the same sequence numbers replaces the earlier item, whose
// chunks, if it had any, are left for TTL (a transaction returns no old
// item).
func (s *Store) AppendEventsClaimed(ctx context.Context, id, claim string, expiresAt time.Time, events []store.Event) error {
	if id == "" {
		return fmt.Errorf("dynamodb: append events: empty id: %w", store.ErrNotFound)
	}
	if claim == "" || expiresAt.IsZero() {
		return fmt.Errorf("dynamodb: append events of %s: no claim or expiry", id)
	}
	p := pk(tenant.From(ctx), id)
	return s.appendEvents(ctx, p, id, expiresAt.Unix(), events, func(item map[string]types.AttributeValue) error {
		return s.putClaimed(ctx, p, claim, item)
	})
}

// claimedAttempts bounds the tries of a claimed append that conflicts
// with another write of its head (a claim or a delete at the same moment):
// the next try reads what that write left.
const claimedAttempts = 3

// putClaimed puts the event item of partition p under the condition that
// the head is live and holds claim. A transaction that conflicted with
// another write of the head is tried again (the SDK does not retry a
// cancelled transaction): the other write then decides, ErrLeaseLost for
// another claim, ErrNotFound for a delete.
func (s *Store) putClaimed(ctx context.Context, p, claim string, item map[string]types.AttributeValue) error {
	for attempt := 1; ; attempt++ {
		err := s.putClaimedOnce(ctx, p, claim, item)
		if attempt == claimedAttempts || !conflicted(err) {
			return err
		}
	}
}

// conflicted reports whether err is a transaction cancelled because another
// write of one of its items was under way.
func conflicted(err error) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return false
	}
	for _, r := range tce.CancellationReasons {
		if aws.ToString(r.Code) == "TransactionConflict" {
			return true
		}
	}
	return false
}

// putClaimedOnce is one try of putClaimed.
func (s *Store) putClaimedOnce(ctx context.Context, p, claim string, item map[string]types.AttributeValue) error {
	cond := expression.Name(attrClaim).Equal(expression.Value(claim)).
		And(expression.Name(attrExpiresAt).GreaterThan(expression.Value(s.nowUnix())))
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return err
	}
	_, err = s.api.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{
			TableName:                 s.table,
			Key:                       keyOf(p, skHead),
			ConditionExpression:       ex.Condition(),
			ExpressionAttributeNames:  ex.Names(),
			ExpressionAttributeValues: ex.Values(),
			// The head that failed tells a deleted response from another
			// claim.
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{TableName: s.table, Item: item}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) == 0 || aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" {
		return err
	}
	var h head
	if old := tce.CancellationReasons[0].Item; old != nil {
		if err := attributevalue.UnmarshalMap(old, &h); err != nil {
			return fmt.Errorf("%w: head: %v", store.ErrCorrupt, err)
		}
	}
	if h.ExpiresAt <= s.nowUnix() {
		return store.ErrNotFound
	}
	return fmt.Errorf("the claim is %q, not %q: %w", h.Claim, claim, store.ErrLeaseLost)
}

// unclaimed returns the put of an unconditional append: one PutItem,
// dropping the chunks of an item it replaced.
func (s *Store) unclaimed(ctx context.Context) func(map[string]types.AttributeValue) error {
	return func(item map[string]types.AttributeValue) error {
		out, err := s.api.PutItem(ctx, &ddb.PutItemInput{TableName: s.table, Item: item, ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			return err
		}
		s.dropReplaced(ctx, out.Attributes)
		return nil
	}
}

// appendEvents writes events as one item of partition p expiring at
// expiresAt (epoch seconds); put writes the item, after its chunks if any
// (unclaimed's PutItem, or a claimed append's putClaimed).
func (s *Store) appendEvents(ctx context.Context, p, id string, expiresAt int64, events []store.Event, put func(map[string]types.AttributeValue) error) error {
	if len(events) == 0 {
		return nil
	}
	// Sorted by sequence number; of repeated numbers the last one counts.
	evs := make([]wireEvent, 0, len(events))
	for _, ev := range events {
		evs = append(evs, toWire(ev))
	}
	slices.SortStableFunc(evs, func(a, b wireEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	for i := len(evs) - 1; i > 0; i-- {
		if evs[i].Seq == evs[i-1].Seq {
			evs = slices.Delete(evs, i-1, i)
		}
	}
	body, n, err := s.codec.compressJSON(evs)
	if err != nil {
		if errors.Is(err, errTooLargeRaw) {
			err = s.codec.tooLarge(n)
		}
		return fmt.Errorf("dynamodb: append events of %s: %w", id, err)
	}
	first, last := evs[0].Seq, evs[len(evs)-1].Seq
	b := eventBatch{PK: p, SK: eventSK(first, last), First: first, Last: last,
		Stamp: time.Now().UnixNano(), ExpiresAt: expiresAt, Gen: newGen()}
	var chunks [][]byte
	if len(body) <= s.inlineMax {
		b.Body = body
	} else {
		if chunks, err = s.split(body); err != nil {
			return fmt.Errorf("dynamodb: append events of %s: %w", id, err)
		}
		b.Chunks = len(chunks)
		if err := s.putChunks(ctx, p, b.Gen, b.ExpiresAt, chunks); err != nil {
			s.dropChunks(ctx, p, b.Gen, len(chunks))
			return fmt.Errorf("dynamodb: append events of %s: write chunks: %w", id, err)
		}
	}
	item, err := attributevalue.MarshalMap(b)
	if err != nil {
		return fmt.Errorf("dynamodb: append events of %s: %w", id, err)
	}
	if err := put(item); err != nil {
		if len(chunks) > 0 && definite(err) {
			s.dropChunks(ctx, p, b.Gen, len(chunks))
		}
		return fmt.Errorf("dynamodb: append events of %s: %w", id, err)
	}
	return nil
}

// Events returns the stored events of the response id with Seq > after, in
// order: one consistent Query of the event items that end after `after`
// (plus a read of the head when there are none, to tell "nothing new" from
// "no such response": ErrNotFound).
func (s *Store) Events(ctx context.Context, id string, after int64) ([]store.Event, error) {
	if id == "" {
		return nil, fmt.Errorf("dynamodb: events: empty id: %w", store.ErrNotFound)
	}
	p := pk(tenant.From(ctx), id)
	const attempts = 4
	for attempt := 1; ; attempt++ {
		evs, missing, err := s.readEvents(ctx, p, id, after)
		if err != nil {
			return nil, err
		}
		if missing == 0 {
			return evs, nil
		}
		// A batch was replaced while it was read: read again.
		if attempt == attempts {
			return nil, fmt.Errorf("dynamodb: events of %s: %w: %d chunks missing", id, store.ErrCorrupt, missing)
		}
	}
}

func (s *Store) readEvents(ctx context.Context, p, id string, after int64) (_ []store.Event, missing int, _ error) {
	if after == math.MaxInt64 {
		_, err := s.readHead(ctx, p, id, true)
		return nil, 0, err
	}
	batches, err := s.queryEvents(ctx, p, skEventPrefix+seqKey(after+1), false)
	if err != nil {
		return nil, 0, fmt.Errorf("dynamodb: events of %s: %w", id, err)
	}
	now := s.nowUnix()
	batches = slices.DeleteFunc(batches, func(b eventBatch) bool { return b.ExpiresAt <= now })
	if len(batches) == 0 {
		return nil, 0, s.exists(ctx, p, id)
	}
	type stamped struct {
		ev    store.Event
		stamp int64
	}
	bySeq := map[int64]stamped{}
	for _, b := range batches {
		body := b.Body
		if b.Chunks > 0 {
			parts, miss, err := s.readChunks(ctx, p, b.Gen, b.Chunks)
			if err != nil {
				return nil, 0, fmt.Errorf("dynamodb: events of %s: %w", id, err)
			}
			if miss > 0 {
				missing += miss
				continue
			}
			body = bytes.Join(parts, nil)
		}
		var evs []wireEvent
		if err := s.codec.decompressJSON(bytes.NewReader(body), &evs); err != nil {
			return nil, 0, fmt.Errorf("dynamodb: events of %s: %w", id, err)
		}
		for _, ev := range evs {
			if ev.Seq <= after {
				continue
			}
			if cur, ok := bySeq[ev.Seq]; ok && cur.stamp > b.Stamp {
				continue
			}
			bySeq[ev.Seq] = stamped{ev.event(), b.Stamp}
		}
	}
	out := make([]store.Event, 0, len(bySeq))
	for _, st := range bySeq {
		out = append(out, st.ev)
	}
	slices.SortFunc(out, func(a, b store.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, missing, nil
}

// exists tells "nothing new" (nil) from "no such response" (ErrNotFound)
// for a follower's poll: a running background response's signal item
// answers for half a read unit; without one, the head does, at one unit
// per 4 KB of it.
func (s *Store) exists(ctx context.Context, p, id string) error {
	if _, err := s.poll(ctx, p, id); err == nil {
		return nil
	}
	_, err := s.readHead(ctx, p, id, true)
	return err
}

// queryEvents returns the event items of partition p whose sort key is at
// least from (consistent, all pages); keysOnly leaves out the bodies.
func (s *Store) queryEvents(ctx context.Context, p, from string, keysOnly bool) ([]eventBatch, error) {
	kc := expression.Key(attrPK).Equal(expression.Value(p)).
		And(expression.Key(attrSK).Between(expression.Value(from), expression.Value(skEventEnd)))
	bld := expression.NewBuilder().WithKeyCondition(kc)
	if keysOnly {
		bld = bld.WithProjection(expression.NamesList(expression.Name(attrPK), expression.Name(attrSK),
			expression.Name(attrGen), expression.Name("chunks")))
	}
	ex, err := bld.Build()
	if err != nil {
		return nil, err
	}
	pager := ddb.NewQueryPaginator(s.api, &ddb.QueryInput{
		TableName:                 s.table,
		KeyConditionExpression:    ex.KeyCondition(),
		ProjectionExpression:      ex.Projection(),
		ExpressionAttributeNames:  ex.Names(),
		ExpressionAttributeValues: ex.Values(),
		ConsistentRead:            aws.Bool(true),
	})
	var out []eventBatch
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query events: %w", err)
		}
		for _, item := range page.Items {
			var b eventBatch
			if err := attributevalue.UnmarshalMap(item, &b); err != nil {
				return nil, fmt.Errorf("%w: event item: %v", store.ErrCorrupt, err)
			}
			out = append(out, b)
		}
	}
	return out, nil
}

// deleteEvents deletes every event item of partition p and their chunks,
// and puts the tombstone of a background run's signal item (expiring at
// expiresAt, with the deleted response) in its place: only background runs
// have events; others pay no write for it.
func (s *Store) deleteEvents(ctx context.Context, p string, expiresAt int64) error {
	batches, err := s.queryEvents(ctx, p, skEventPrefix, true)
	if err != nil {
		return err
	}
	if len(batches) == 0 {
		return nil
	}
	reqs := []types.WriteRequest{signalsTombstone(p, expiresAt)}
	for _, b := range batches {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(p, b.SK)}})
		for i := range b.Chunks {
			reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(p, chunkSK(b.Gen, i))}})
		}
	}
	return s.batchWrite(ctx, reqs)
}
