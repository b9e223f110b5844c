package dynamodb

import (
	"context"
	"fmt"
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
const (
	skSignals     = "signals"
	attrRunning   = "running"
	attrCancelled = "cancel"
	attrFollowed  = "followed_until"
)

var _ store.RunSignals = (*Store)(nil)

// signals is the signal item.
type signals struct {
	Cancel    bool  `dynamodbav:"cancel"`
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

// setSignal sets attr of id's signal item to v and its expiry, leaving the
// other attributes as they are: a worker marking its run, a cancel request
// and followers may cross without losing any.
func (s *Store) setSignal(ctx context.Context, id, attr string, v any, expiresAt time.Time) error {
	if id == "" {
		return fmt.Errorf("dynamodb: signal: empty id: %w", store.ErrNotFound)
	}
	upd := expression.Set(expression.Name(attr), expression.Value(v)).
		Set(expression.Name(attrExpiresAt), expression.Value(expiresAt.Unix()))
	ex, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("dynamodb: signal %s: %w", id, err)
	}
	_, err = s.api.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:                 s.table,
		Key:                       keyOf(pk(tenant.From(ctx), id), skSignals),
		UpdateExpression:          ex.Update(),
		ExpressionAttributeNames:  ex.Names(),
		ExpressionAttributeValues: ex.Values(),
	})
	if err != nil {
		return fmt.Errorf("dynamodb: signal %s: %w", id, err)
	}
	return nil
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
	if sig.ExpiresAt <= s.nowUnix() {
		return store.RunSignal{}, fmt.Errorf("dynamodb: poll %s: %w", id, store.ErrNotFound)
	}
	rs := store.RunSignal{Cancel: sig.Cancel, ExpiresAt: time.Unix(sig.ExpiresAt, 0)}
	if sig.FollowedUntil > 0 {
		rs.FollowedUntil = time.UnixMilli(sig.FollowedUntil)
	}
	return rs, nil
}

// signalsDelete is the request deleting partition p's signal item.
func signalsDelete(p string) types.WriteRequest {
	return types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: keyOf(p, skSignals)}}
}
