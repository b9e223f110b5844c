package dynamodb

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/lambent/lambent/pkg/store"
)

// ambiguity watches the attempts of one call: whether one of them ended
// without a definite answer (a lost reply, a server error; see definite),
// after which the SDK's retryer sent the request again. The earlier
// attempt may then have done the write, and the retry fails the write's
// condition because of it. One per call, added by option; it makes no
// request (see docs/aws.md, "Retried conditional writes").
type ambiguity struct {
	lost bool // attempts run one after another
}

// ID names the middleware in the call's finalize step.
func (a *ambiguity) ID() string { return "lambent.ambiguity" }

// HandleFinalize runs one attempt and notes an answer that was lost.
func (a *ambiguity) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleFinalize(ctx, in)
	if err != nil && !definite(err) {
		a.lost = true
	}
	return out, md, err
}

// option adds a to one call's stack after the SDK's retry middleware, so
// that it sees every attempt.
func (a *ambiguity) option(o *ddb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Finalize.Insert(a, "Retry", middleware.After)
	})
}

// deleteLive deletes the item at key if it is live (there and not
// expired): one conditional DeleteItem. It returns the deleted item, or
// nil when an earlier attempt of the call, whose answer was lost, deleted
// it (the retry found no item); store.ErrNotFound when no live item was
// there.
func (s *Store) deleteLive(ctx context.Context, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	cond := expression.AttributeExists(expression.Name(attrPK)).
		And(expression.Name(attrExpiresAt).GreaterThan(expression.Value(s.nowUnix())))
	ex, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return nil, err
	}
	var amb ambiguity
	out, err := s.api.DeleteItem(ctx, &ddb.DeleteItemInput{
		TableName:                           s.table,
		Key:                                 key,
		ConditionExpression:                 ex.Condition(),
		ExpressionAttributeNames:            ex.Names(),
		ExpressionAttributeValues:           ex.Values(),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, amb.option)
	var ccf *types.ConditionalCheckFailedException
	switch {
	case err == nil:
		return out.Attributes, nil
	case !errors.As(err, &ccf):
		return nil, err
	case amb.lost && ccf.Item == nil:
		return nil, nil // deleted by the attempt whose answer was lost
	}
	return nil, store.ErrNotFound
}

// clearPartition deletes every item of partition p (a consistent Query of
// the keys, a BatchWriteItem per page), what remains once its head is
// deleted; a run's signal item is replaced by its tombstone instead, as
// deleteEvents does.
func (s *Store) clearPartition(ctx context.Context, p string) error {
	kx, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrPK).Equal(expression.Value(p))).
		WithProjection(expression.NamesList(expression.Name(attrPK), expression.Name(attrSK),
			expression.Name(attrExpiresAt), expression.Name(attrDeleted))).Build()
	if err != nil {
		return err
	}
	pager := ddb.NewQueryPaginator(s.api, &ddb.QueryInput{
		TableName: s.table, KeyConditionExpression: kx.KeyCondition(), ProjectionExpression: kx.Projection(),
		ExpressionAttributeNames: kx.Names(), ExpressionAttributeValues: kx.Values(), ConsistentRead: aws.Bool(true),
	})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return err
		}
		reqs := make([]types.WriteRequest, 0, len(page.Items))
		for _, item := range page.Items {
			req, err := clearRequest(p, item)
			if err != nil {
				return err
			}
			if req != nil {
				reqs = append(reqs, *req)
			}
		}
		if err := s.batchWrite(ctx, reqs); err != nil {
			return err
		}
	}
	return nil
}

// clearRequest is clearPartition's request for item of partition p: its
// deletion, or for a signal item its tombstone (none when it is one).
func clearRequest(p string, item map[string]types.AttributeValue) (*types.WriteRequest, error) {
	if sk, ok := item[attrSK].(*types.AttributeValueMemberS); !ok || sk.Value != skSignals {
		return &types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{attrPK: item[attrPK], attrSK: item[attrSK]}}}, nil
	}
	var sig signals
	if err := attributevalue.UnmarshalMap(item, &sig); err != nil {
		return nil, fmt.Errorf("%w: signal item: %v", store.ErrCorrupt, err)
	}
	if sig.Deleted {
		return nil, nil
	}
	req := signalsTombstone(p, sig.ExpiresAt)
	return &req, nil
}
