package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/store"
)

// awsErr is what an AWS SDK error says: an ARN, an account, a table.
const awsErr = "operation error DynamoDB: PutItem, https response error StatusCode: 400, RequestID: Q2R3, api error AccessDeniedException: " +
	"User: arn:aws:sts::123456789012:assumed-role/lambent-GatewayRole/gw is not authorized to perform: dynamodb:PutItem on resource: " +
	"arn:aws:dynamodb:us-east-1:123456789012:table/lambent-responses"

// failingStore is the memory store whose chosen operations fail with
// awsErr.
type failingStore struct {
	*store.Memory
	mu sync.Mutex
	// get, create fail every call; updates fails the update calls whose
	// (1-based) number it holds.
	get, create bool
	updates     map[int]bool
	nUpdates    int
}

func (s *failingStore) fail() error { return errors.New(awsErr) }

func (s *failingStore) Get(ctx context.Context, id string) (*store.Record, error) {
	if s.get {
		return nil, s.fail()
	}
	return s.Memory.Get(ctx, id)
}

func (s *failingStore) Create(ctx context.Context, rec *store.Record) error {
	if s.create {
		return s.fail()
	}
	return s.Memory.Create(ctx, rec)
}

func (s *failingStore) Update(ctx context.Context, rec *store.Record, expect api.Status) error {
	s.mu.Lock()
	s.nUpdates++
	fail := s.updates[s.nUpdates]
	s.mu.Unlock()
	if fail {
		return s.fail()
	}
	return s.Memory.Update(ctx, rec, expect)
}

// logLines are the JSON log records written so far.
func logLines(t *testing.T, b *logbuf.Buffer) []map[string]any {
	t.Helper()
	out, err := b.Records()
	require.NoError(t, err)
	return out
}

var requestIDRe = regexp.MustCompile(`^req_[0-9a-f]{32}$`)

// generic checks a server error's message as a tenant sees it: general
// terms and the request id, never the cause.
func generic(t *testing.T, msg, id string) {
	t.Helper()
	assert.NotContains(t, msg, "arn:aws")
	assert.NotContains(t, msg, "lambent-responses")
	assert.NotContains(t, msg, "AccessDenied")
	assert.True(t, strings.HasSuffix(msg, "Please retry; if the error persists, contact the operator with the request ID "+id+"."), msg)
}

// causeLogged finds the log line of the request id id holding the cause.
func causeLogged(t *testing.T, logs *logbuf.Buffer, id string) {
	t.Helper()
	for _, l := range logLines(t, logs) {
		if l["request_id"] == id && strings.Contains(l["err"].(string), "arn:aws:dynamodb:us-east-1:123456789012:table/lambent-responses") {
			return
		}
	}
	t.Fatalf("no log line of %s holds the cause:\n%s", id, strings.Join(logs.Lines(), "\n"))
}

// A store failing with an AWS error (an ARN, a table name): the 500 body,
// the stream's error event and the stored error of a failed background
// response say what happened in general terms and name the request id
// (the x-request-id header); the log line with that request id has the
// cause.
func TestServerErrorsHideTheirCause(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New(
		fakellm.Turn{Text: "stored? no"}, fakellm.Turn{Text: "streamed, not stored"},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"1+1"}`}}}, fakellm.Turn{Text: "2"},
	)
	defer fake.Close()
	st := &failingStore{Memory: store.NewMemory(store.MemoryConfig{})}
	logs := &logbuf.Buffer{}
	g := newGateway(t, fake, map[string]string{"LAMBENT_TOOLS": ""}, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "info"}}, logs), &app.Options{Store: st})

	post := func(body string) (*http.Response, string) {
		resp, err := http.Post(g.url+"/v1/responses", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	errorMessage := func(body string) string {
		var e api.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		return e.Error.Message
	}

	t.Run("read", func(t *testing.T) {
		st.get = true
		defer func() { st.get = false }()
		resp, err := http.Get(g.url + "/v1/responses/resp_abc")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
		id := resp.Header.Get("X-Request-Id")
		require.Regexp(t, requestIDRe, id)
		generic(t, errorMessage(string(b)), id)
		assert.Contains(t, errorMessage(string(b)), "The response store failed.")
		causeLogged(t, logs, id)
	})

	t.Run("create", func(t *testing.T) {
		st.create = true
		defer func() { st.create = false }()
		resp, body := post(`{"input":"hi"}`)
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
		id := resp.Header.Get("X-Request-Id")
		generic(t, errorMessage(body), id)
		assert.Contains(t, errorMessage(body), "was generated but could not be stored.")
		causeLogged(t, logs, id)

		resp, body = post(`{"input":"hi","stream":true}`)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		id = resp.Header.Get("X-Request-Id")
		require.Contains(t, body, "event: error\n")
		var ev struct {
			Error struct{ Message, Code string } `json:"error"`
		}
		for _, line := range strings.Split(body, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"type":"error"`) {
				require.NoError(t, json.Unmarshal([]byte(data), &ev))
			}
		}
		assert.Equal(t, "store_failed", ev.Error.Code)
		generic(t, ev.Error.Message, id)
		causeLogged(t, logs, id)
	})

	t.Run("background", func(t *testing.T) {
		// Update 1 claims the job, 2 checkpoints after the tool turn
		// (fails), 3 stores the failure.
		st.mu.Lock()
		st.updates, st.nUpdates = map[int]bool{2: true}, 0
		st.mu.Unlock()
		resp, body := post(`{"input":"1+1","background":true,"tools":[{"type":"lambent:calculator"}]}`)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		id := resp.Header.Get("X-Request-Id")
		var queued api.Response
		require.NoError(t, json.Unmarshal([]byte(body), &queued))
		var stored *store.Record
		require.Eventually(t, func() bool {
			rec, err := st.Memory.Get(context.Background(), queued.ID)
			stored = rec
			return err == nil && rec.Response.Status.Terminal()
		}, 10*time.Second, 10*time.Millisecond)
		require.Equal(t, api.StatusFailed, stored.Response.Status)
		generic(t, stored.Response.Error.Message, id)
		// The worker's log lines carry the id of the request that created
		// the response.
		causeLogged(t, logs, id)

		// Its stored events: response.failed says the same.
		evs, err := st.Memory.Events(context.Background(), queued.ID, -1)
		require.NoError(t, err)
		last := evs[len(evs)-1]
		require.Equal(t, api.EventResponseFailed, last.Type)
		assert.NotContains(t, string(last.Data), "arn:aws")
		assert.Contains(t, string(last.Data), id)
	})
}
