package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/requestid"
	"github.com/lambent/lambent/pkg/worker"
)

// idRunner records the request id each run gets, and fails resp_bad.
type idRunner struct {
	mu  sync.Mutex
	ids map[string]string
}

func (r *idRunner) RunBackground(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ids[id] = requestid.From(ctx)
	if id == "resp_bad" {
		return errors.New("store unavailable")
	}
	return nil
}

func (r *idRunner) StartBackground(ctx context.Context, _ *api.CreateResponseRequest, id string) (string, error) {
	return id, r.RunBackground(ctx, id)
}

// Each message of a batch runs with a request id of its own (a response
// it creates keeps it for its worker's log lines), which the log line of
// its failure repeats.
func TestMessagesHaveRequestIDs(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	r := &idRunner{ids: map[string]string{}}
	h := &worker.Handler{Runner: r, Logger: app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "info"}}, &logs)}
	out := h.SQS(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: `{"response_id":"resp_ok"}`, EventSource: "aws:sqs"},
		{MessageId: "m2", Body: `{"response_id":"resp_bad"}`, EventSource: "aws:sqs"},
		{MessageId: "m3", Body: `{"id":"resp_new","input":"hi"}`, EventSource: "aws:sqs"},
	}})
	require.Len(t, out.BatchItemFailures, 1)
	for _, id := range []string{"resp_ok", "resp_bad", "resp_new"} {
		assert.Regexp(t, `^req_[0-9a-f]{32}$`, r.ids[id], id)
	}
	assert.NotEqual(t, r.ids["resp_ok"], r.ids["resp_bad"])
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	found := false
	for sc.Scan() {
		var l map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		if l["msg"] == "message failed" {
			found = true
			assert.Equal(t, r.ids["resp_bad"], l["request_id"])
		}
	}
	assert.True(t, found)
}
