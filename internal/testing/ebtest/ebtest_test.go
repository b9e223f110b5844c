package ebtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/ebtest"
	"github.com/lambent/lambent/pkg/awsjson"
)

func sdkClient(b *ebtest.Bus) *eventbridge.Client {
	return eventbridge.New(eventbridge.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(b.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""),
	})
}

// The SDK's client and pkg/awsjson's put the same entry, and the fake
// answers both as EventBridge does.
func TestSDKAndAWSJSONPutTheSameEntry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Unix(1700000000, 123456789)
	sdkBus, ourBus := ebtest.NewServer(t), ebtest.NewServer(t)
	out, err := sdkClient(sdkBus).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String("bus"), Source: aws.String("lambent"), DetailType: aws.String("lambent.response.completed"),
		Detail: aws.String(`{"id":"resp_1"}`), Resources: []string{}, Time: aws.Time(at),
	}}})
	require.NoError(t, err)
	require.Equal(t, "e-1", aws.ToString(out.Entries[0].EventId))
	ours, err := ourBus.Client.PutEvents(ctx, awsjson.PutEventsInput{Entries: []awsjson.PutEventsEntry{{
		EventBusName: "bus", Source: "lambent", DetailType: "lambent.response.completed", Detail: `{"id":"resp_1"}`, Time: at,
	}}})
	require.NoError(t, err)
	assert.Equal(t, &awsjson.PutEventsOutput{Entries: []awsjson.PutEventsResultEntry{{EventID: "e-1"}}}, ours)
	assert.Equal(t, sdkBus.All(), ourBus.All())
	assert.Len(t, ourBus.All(), 1)
}

// What EventBridge refuses, the fake refuses, through either client.
func TestFakeIsStrict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := ebtest.NewServer(t)
	_, err := sdkClient(b).PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		Source: aws.String("lambent"), DetailType: aws.String("t"), Detail: aws.String("not json"),
	}}})
	assert.ErrorContains(t, err, "ValidationException")
	_, err = b.Client.PutEvents(ctx, awsjson.PutEventsInput{Entries: []awsjson.PutEventsEntry{{Source: "lambent", Detail: "{}"}}})
	var ae *awsjson.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "ValidationException", ae.Code)
	_, err = b.Client.PutEvents(ctx, awsjson.PutEventsInput{})
	assert.ErrorContains(t, err, "0 entries")
	assert.Empty(t, b.All())
}
