package fakesqs_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/pkg/awsjson"
)

func clients(t *testing.T, url string) (*sqs.Client, *awsjson.SQS) {
	t.Helper()
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	ours, err := awsjson.NewSQS(cfg)
	require.NoError(t, err)
	return sqs.NewFromConfig(cfg), ours
}

// The SDK's client (which checks the MD5 of the body answered) and
// pkg/awsjson's send the same message, and the fake answers both as SQS
// does.
func TestSDKAndAWSJSONSendTheSameMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := fakesqs.Start()
	defer srv.Close()
	sdk, ours := clients(t, srv.URL)
	queue := srv.URL + "/000000000000/turns.fifo"
	_, err := sdk.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(`{"turn":"é"}`),
		MessageGroupId: aws.String("conn-1"), MessageDeduplicationId: aws.String("req-1")})
	require.NoError(t, err)
	id, err := ours.SendMessage(ctx, awsjson.SendMessageInput{QueueURL: queue, MessageBody: `{"turn":"é"}`, MessageGroupID: "conn-1", MessageDeduplicationID: "req-1"})
	require.NoError(t, err)
	assert.Equal(t, "00000000-0000-4000-8000-000000000002", id)
	msgs := srv.Take()
	require.Len(t, msgs, 2)
	assert.Equal(t, msgs[0], msgs[1])
	// A standard queue's message has no group.
	_, err = ours.SendMessage(ctx, awsjson.SendMessageInput{QueueURL: srv.URL + "/000000000000/jobs", MessageBody: "job"})
	require.NoError(t, err)
	_, err = sdk.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srv.URL + "/000000000000/jobs"), MessageBody: aws.String("job")})
	require.NoError(t, err)
	msgs = srv.Take()
	require.Len(t, msgs, 2)
	assert.Equal(t, msgs[0], msgs[1])
}

// What SQS refuses, the fake refuses, through either client.
func TestFakeIsStrict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := fakesqs.Start()
	defer srv.Close()
	sdk, ours := clients(t, srv.URL)
	fifo := srv.URL + "/000000000000/turns.fifo"
	_, err := sdk.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(fifo), MessageBody: aws.String("x")})
	assert.ErrorContains(t, err, "MissingParameter")
	_, err = ours.SendMessage(ctx, awsjson.SendMessageInput{QueueURL: fifo, MessageBody: "x", MessageGroupID: "g"})
	var ae *awsjson.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "MissingParameter", ae.Code)
	assert.Empty(t, srv.Take())
}
