package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/internal/wait"
)

// tableWait bounds how long EnsureTable waits for a new table to be active.
const tableWait = 2 * time.Minute

// EnsureTable creates the table when it does not exist (on-demand
// capacity, key pk/sk), waits until it is active, and enables TTL on
// expires_at. It is safe to call from several processes at once and on a
// table that already exists. In AWS the table belongs to template.yaml;
// this is for local runs and tests (LAMBENT_CREATE_TABLE).
func (s *Store) EnsureTable(ctx context.Context) error {
	_, err := s.api.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: s.table})
	var notFound *types.ResourceNotFoundException
	switch {
	case errors.As(err, &notFound):
		_, err = s.api.CreateTable(ctx, &ddb.CreateTableInput{
			TableName:   s.table,
			BillingMode: types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{
				{AttributeName: aws.String(attrPK), AttributeType: types.ScalarAttributeTypeS},
				{AttributeName: aws.String(attrSK), AttributeType: types.ScalarAttributeTypeS},
			},
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(attrPK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(attrSK), KeyType: types.KeyTypeRange},
			},
		})
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: another process created it
			return fmt.Errorf("dynamodb: create table %s: %w", *s.table, err)
		}
	case err != nil:
		return fmt.Errorf("dynamodb: describe table %s: %w", *s.table, err)
	}
	w := ddb.NewTableExistsWaiter(s.api, func(o *ddb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 5*time.Second
	})
	if err := w.Wait(ctx, &ddb.DescribeTableInput{TableName: s.table}, tableWait); err != nil {
		return fmt.Errorf("dynamodb: wait for table %s: %w", *s.table, err)
	}
	return s.ensureTTL(ctx)
}

func (s *Store) ensureTTL(ctx context.Context) error {
	d, err := s.api.DescribeTimeToLive(ctx, &ddb.DescribeTimeToLiveInput{TableName: s.table})
	if err == nil && d.TimeToLiveDescription != nil &&
		aws.ToString(d.TimeToLiveDescription.AttributeName) == attrExpiresAt {
		switch d.TimeToLiveDescription.TimeToLiveStatus {
		case types.TimeToLiveStatusEnabled, types.TimeToLiveStatusEnabling:
			return nil
		}
	}
	_, err = s.api.UpdateTimeToLive(ctx, &ddb.UpdateTimeToLiveInput{
		TableName: s.table,
		TimeToLiveSpecification: &types.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	})
	// A concurrent EnsureTable may have enabled it first.
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "already enabled") {
		return fmt.Errorf("dynamodb: enable TTL on %s: %w", *s.table, err)
	}
	return nil
}

// NewClient returns a DynamoDB client for the store: cfg's settings (and
// so AWS_ENDPOINT_URL_DYNAMODB) with a retryer suited to throttling — the
// SDK's standard retryer (throttling, transient and connection errors)
// with 8 attempts, exponential backoff with full jitter from 50 ms up to
// 2 s (at most about 7 s of waiting in all), and no client-side retry
// quota, which would turn a burst of throttles into immediate failures.
// Retries stop when the request's context is done.
func NewClient(cfg aws.Config, optFns ...func(*ddb.Options)) *ddb.Client {
	opts := append([]func(*ddb.Options){func(o *ddb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 8
			so.MaxBackoff = 2 * time.Second
			so.Backoff = retry.BackoffDelayerFunc(jitterBackoff)
			so.RateLimiter = ratelimit.None
		})
	}}, optFns...)
	return ddb.NewFromConfig(cfg, opts...)
}

// jitterBackoff is the delay before retry attempt (1, 2, ...): a random
// duration up to min(2 s, 50 ms × 2^attempt).
func jitterBackoff(attempt int, _ error) (time.Duration, error) {
	return rand.N(wait.Exponential(50*time.Millisecond, 2*time.Second, attempt) + 1), nil
}
