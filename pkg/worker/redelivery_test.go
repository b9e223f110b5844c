package worker_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/worker"
)

// redeliveries is how often the figure's message is delivered (issue 25:
// "worker redelivery of one message 5 times").
const redeliveries = 5

// twoTurns scripts one response of two model turns: a calculator call,
// then the answer.
func twoTurns() []fakellm.Turn {
	return []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		{Text: "It is 42."},
	}
}

const createWithoutID = `{"input":"6*7?","tools":[{"type":"lambent:calculator"}]}`

// published counts the lambent.response.* events on the bus: one per
// response that ended.
func published(e *env) int { return len(e.bus.All()) }

// A create message without "id" delivered again (SQS redelivers a message
// whose visibility timeout lapsed, the event source retries a batch) gets
// the same response id every time, derived from the SQS message id: one
// response, one model call per turn, however often it arrives. This is the
// issue's figure, printed beside its reference (make worker-redelivery).
func TestRedeliveredMessageRunsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, twoTurns()...)
	const messageID = "4e5f3a1c-9d2b-4f7e-8a6c-1b2d3e4f5a6b"
	ev := mustMarshal(t, events.SQSEvent{Records: []events.SQSMessage{{MessageId: messageID, Body: createWithoutID, EventSource: "aws:sqs"}}})
	for i := 0; i < redeliveries; i++ {
		out, err := e.h.Invoke(context.Background(), ev)
		require.NoError(t, err)
		require.Empty(t, out.(events.SQSEventResponse).BatchItemFailures, "delivery %d", i+1)
	}
	id := worker.DeliveryID(worker.DeliveryMessage, messageID)
	require.Equal(t, "resp_sqs_"+messageID, id)
	got, err := e.app.Engine.GetResponse(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	responses, calls := published(e), e.fake.Calls()
	t.Logf("worker redelivery: one message delivered %d times -> %d response (reference 1), %d model calls for 2 turns = %.1f per turn (reference 1)",
		redeliveries, responses, calls, float64(calls)/2)
	assert.Equal(t, 1, responses, "one response")
	assert.Equal(t, 2, calls, "one model call per turn")
}

// An EventBridge event without "id", delivered twice (Lambda retries a
// failed asynchronous invocation with the same event), and a direct
// asynchronous invocation retried under its Lambda request id: each makes
// one response.
func TestRetriedEventAndInvocationRunOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, append(twoTurns(), twoTurns()...)...)
	const eventID = "6a7e8feb-b491-4cf7-a9f1-bf3703467718"
	ev := mustMarshal(t, events.EventBridgeEvent{Version: "0", ID: eventID, DetailType: "lambent.response.create", Source: "lambent.requests", Detail: json.RawMessage(createWithoutID)})
	for i := 0; i < 2; i++ {
		_, err := e.h.Invoke(context.Background(), ev)
		require.NoError(t, err)
	}
	_, err := e.app.Engine.GetResponse(context.Background(), "resp_evt_"+eventID)
	require.NoError(t, err)
	assert.Equal(t, 2, e.fake.Calls())

	const requestID = "c6af9ac6-7b61-11e6-9a41-93e812345678"
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID})
	for i := 0; i < 3; i++ { // MaximumRetryAttempts 2
		_, err := e.h.Invoke(ctx, json.RawMessage(createWithoutID))
		require.NoError(t, err)
	}
	got, err := e.app.Engine.GetResponse(context.Background(), "resp_inv_"+requestID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	assert.Equal(t, 4, e.fake.Calls())
	assert.Equal(t, 2, published(e))
}

// DeliveryID keeps an id that fits a response id as it is and hashes one
// that does not; a caller-chosen "id" still wins over it.
func TestDeliveryID(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "", worker.DeliveryID(worker.DeliveryMessage, ""))
	assert.Equal(t, "resp_inv_abc-1", worker.DeliveryID(worker.DeliveryInvocation, "abc-1"))
	h := worker.DeliveryID(worker.DeliveryEvent, "a/b c")
	assert.Regexp(t, `^resp_evt_[0-9a-f]{64}$`, h)
	assert.Equal(t, h, worker.DeliveryID(worker.DeliveryEvent, "a/b c"), "deterministic")
	assert.True(t, api.ValidResponseID(worker.DeliveryID(worker.DeliveryMessage, string(make([]byte, 500)))))
}
