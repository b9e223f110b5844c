package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
)

// skSignals is the sort key of a background run's signal item (a cancel
// flag, when a follower's note ends, the expiry): a few dozen bytes beside
// the record, so that the worker's poll (several a
// second, for as long as the run lasts) costs half a read unit whatever
// the record's size, where reading the head would cost one unit per 4 KB
// of it (DynamoDB bills a read by the whole item's size, projections or
// not).
//
// The item belongs to one response: the one expiring at its expires_at
// (every writer passes the expiry of the response it read or wrote, which
// a response keeps from its creation to its end). An item with another
// expiry was left by an earlier response of the same id (expired, or
// deleted, and the id created again) and is replaced whole, so that its
// cancel flag never reaches the new one. Delete leaves a tombstone
// (deleted, with the response's expiry) rather than no item: a follower's
// note renewed just after the delete then fails with ErrNotFound instead
// of bringing the item back, and the worker's poll and the followers see
// the deletion.
const (
	skSignals     = "signals"
	attrRunning   = "running"
	attrCancelled = "cancel"
	attrFollowed  = "followed_until"
	attrDeleted   = "deleted"
)

var _ store.RunSignals = (*Store)(nil)

// signals is the signal item.
type signals struct {
	Cancel    bool  `dynamodbav:"cancel"`
	Deleted   bool  `dynamodbav:"deleted"`
	ExpiresAt int64 `dynamodbav:"expires_at"`
	// FollowedUntil is in Unix milliseconds.
	FollowedUntil int64 `dynamodbav:"followed_until"`
}

// MarkRunning upserts the signal item of id (one UpdateItem; a cancel
// already noted stays).
func (s *Store) MarkRunning(ctx context.Context, id string, expiresAt time.Time) error {
	return s.setSignal(ctx, id, attrRunning, true, expiresAt)
}

// RequestCancel sets the cancel flag of id's signal item (one UpdateItem).
func (s *Store) RequestCancel(ctx context.Context, id string, expiresAt time.Time) error {
	return s.setSignal(ctx, id, attrCancelled, true, expiresAt)
}

// Follow sets when the follow of id's run ends (one UpdateItem; a
// follower renews it while it follows).
func (s *Store) Follow(ctx context.Context, id string, until, expiresAt time.Time) error {
	return s.setSignal(ctx, id, attrFollowed, until.UnixMilli(), expiresAt)
}

// setSignal sets attr of id's signal item to v, leaving the other
// attributes as they are: a worker marking its run, a cancel request and
// followers may cross without losing any. The item is the response's that
// expires at expiresAt (see skSignals): one UpdateItem, conditional on the
// item being absent or that response's; ErrNotFound when it is that
// response's tombstone; an item of an earlier response of the id is
// replaced (a conditional PutItem, then the update again when another
// writer replaced it first).
func (s *Store) setSignal(ctx context.Context, id, attr string, v any, expiresAt time.Time) error {
	if id == "" {
		return fmt.Errorf("dynamodb: signal: empty id: %w", store.ErrNotFound)
	}
	p, exp := pk(tenant.From(ctx), id), expiresAt.Unix()
	upd := expression.Set(expression.Name(attr), expression.Value(v)).
		Set(expression.Name(attrExpiresAt), expression.Value(exp))
	ours := expression.AttributeNotExists(expression.Name(attrExpiresAt)).
		Or(expression.Name(attrExpiresAt).Equal(expression.Value(exp)).And(expression.AttributeNotExists(expression.Name(attrDeleted))))
	ex, err := expression.NewBuilder().WithUpdate(upd).WithCondition(ours).Build()
	if err != nil {
		return fmt.Errorf("dynamodb: signal %s: %w", id, err)
	}
	for attempt := 1; ; attempt++ {
		_, err = s.api.UpdateItem(ctx, &ddb.UpdateItemInput{
			TableName:                           s.table,
			Key:                                 keyOf(p, skSignals),
			UpdateExpression:                    ex.Update(),
			ConditionExpression:                 ex.Condition(),
			ExpressionAttributeNames:            ex.Names(),
			ExpressionAttributeValues:           ex.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) || attempt == 3 {
			if err != nil {
				return fmt.Errorf("dynamodb: signal %s: %w", id, err)
			}
			return nil
		}
		var old signals
		if err := attributevalue.UnmarshalMap(ccf.Item, &old); err != nil {
			return fmt.Errorf("dynamodb: signal %s: %w: %v", id, store.ErrCorrupt, err)
		}
		if old.ExpiresAt == exp {
			return fmt.Errorf("dynamodb: signal %s: %w", id, store.ErrNotFound) // deleted
		}
		err = s.replaceSignal(ctx, p, attr, v, exp, old.ExpiresAt)
		if err == nil {
			return nil
		}
		if !errors.As(err, &ccf) {
			return fmt.Errorf("dynamodb: signal %s: %w", id, err)
		}
		// Another writer replaced it first: update what it wrote.
	}
}

// replaceSignal puts a new signal item in partition p holding attr = v,
// expiring at exp, in place of an earlier response's, which expires at
// stale (the condition: a *types.ConditionalCheckFailedException when
// another writer replaced it first).
func (s *Store) replaceSignal(ctx context.Context, p, attr string, v any, exp, stale int64) error {
	item := keyOf(p, skSignals)
	av, err := attributevalue.Marshal(v)
	if err != nil {
		return err
	}
	item[attr], item[attrExpiresAt] = av, &types.AttributeValueMemberN{Value: strconv.FormatInt(exp, 10)}
	ex, err := expression.NewBuilder().WithCondition(expression.Name(attrExpiresAt).Equal(expression.Value(stale))).Build()
	if err != nil {
		return err
	}
	_, err = s.api.PutItem(ctx, &ddb.PutItemInput{
		TableName:                 s.table,
		Item:                      item,
		ConditionExpression:       ex.Condition(),
		ExpressionAttributeNames:  ex.Names(),
		ExpressionAttributeValues: ex.Values(),
	})
	return err
}

// Poll reads id's signal item: one eventually consistent GetItem of
// under 1 KB (half a read unit). A cancel request or a follower is seen
// within a poll or two; ErrNotFound when there is no live signal item.
func (s *Store) Poll(ctx context.Context, id string) (store.RunSignal, error) {
	if id == "" {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll: empty id: %w", store.ErrNotFound)
	}
	return s.poll(ctx, pk(tenant.From(ctx), id), id)
}

// poll is Poll on partition p.
func (s *Store) poll(ctx context.Context, p, id string) (store.RunSignal, error) {
	out, err := s.api.GetItem(ctx, &ddb.GetItemInput{TableName: s.table, Key: keyOf(p, skSignals),
		ConsistentRead: aws.Bool(false)})
	if err != nil {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll %s: %w", id, err)
	}
	if out.Item == nil {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll %s: %w", id, store.ErrNotFound)
	}
	var sig signals
	if err := attributevalue.UnmarshalMap(out.Item, &sig); err != nil {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll %s: %w: %v", id, store.ErrCorrupt, err)
	}
	if sig.Deleted || sig.ExpiresAt <= s.nowUnix() {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll %s: %w", id, store.ErrNotFound)
	}
	rs := store.RunSignal{Cancel: sig.Cancel, ExpiresAt: time.Unix(sig.ExpiresAt, 0)}
	if sig.FollowedUntil > 0 {
		rs.FollowedUntil = time.UnixMilli(sig.FollowedUntil)
	}
	return rs, nil
}

// signalsTombstone is the request putting the tombstone of partition p's
// response, which expired at expiresAt, in place of its signal item.
func signalsTombstone(p string, expiresAt int64) types.WriteRequest {
	item := keyOf(p, skSignals)
	item[attrDeleted] = &types.AttributeValueMemberBOOL{Value: true}
	item[attrExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(expiresAt, 10)}
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: item}}
}
