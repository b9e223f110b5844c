package main

// The sample events under events/ (websocket-*.json: $connect, $default,
// $disconnect and the SQS delivery of a turn) go through the function's
// real handler, wired by newHandler from the environment as in Lambda: the
// SDK clients reach DynamoDB Local, a fake SQS endpoint and a fake
// Management API, all speaking the real protocols.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakeapigw"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

func TestMain(m *testing.M) { os.Exit(dynamolocal.MainLeakChecked(m)) }

// sample reads events/name, with the connection's times set to now (the
// connection limit and the table's expiry count from connectedAt).
func sample(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "events", name))
	require.NoError(t, err)
	var ev map[string]any
	require.NoError(t, json.Unmarshal(b, &ev), name)
	if rc, ok := ev["requestContext"].(map[string]any); ok {
		now := time.Now().UnixMilli()
		rc["connectedAt"], rc["requestTimeEpoch"] = now, now
	}
	out, err := json.Marshal(ev)
	require.NoError(t, err)
	return out
}

// function is the WebSocket function wired from the environment as in
// Lambda, over DynamoDB Local, a fake SQS endpoint and a fake Management API.
type function struct {
	app   *app.App
	h     *apigw.Handler
	mgmt  *fakeapigw.Server
	queue *fakesqs.Server
	table string
}

func newFunction(t *testing.T, fake *fakellm.Server, env map[string]string, logs io.Writer, opts *app.Options) *function {
	t.Helper()
	mgmt := fakeapigw.Start()
	t.Cleanup(mgmt.Close)
	queue := fakesqs.Start()
	t.Cleanup(queue.Close)
	table := "lambent_ws_fn_" + api.NewID("")[24:]
	dynamotest.NewStore(t, table) // creates the table (same key schema), deleted at cleanup

	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "SECRET")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamolocal.Endpoint(t))
	t.Setenv("AWS_ENDPOINT_URL_SQS", queue.URL)
	vars := map[string]string{
		"LAMBENT_PROVIDER_URL":        fake.URL,
		"LAMBENT_STORE":               "memory",
		"LAMBENT_LOG_LEVEL":           "error",
		"LAMBENT_API_KEYS":            "sk-lambent-example",
		"LAMBENT_WEBSOCKET_TABLE":     table,
		"LAMBENT_WEBSOCKET_QUEUE_URL": queue.URL + "/123456789012/lambent-WebSocketQueue.fifo",
		"LAMBENT_WEBSOCKET_ENDPOINT":  mgmt.URL + "/responses",
	}
	for k, v := range env {
		vars[k] = v
	}
	getenv := func(k string) string { return vars[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(t.Context(), &cfg, getenv))
	if logs == nil {
		logs = io.Discard
	}
	log := app.Logger(cfg, logs)
	a, err := app.Build(t.Context(), cfg, log, opts)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	h, err := newHandler(a, cfg, log)
	require.NoError(t, err)
	return &function{app: a, h: h, mgmt: mgmt, queue: queue, table: table}
}

func TestSampleEvents(t *testing.T) {
	fake := fakellm.New(fakellm.Turn{Text: "Hello over the WebSocket."}, fakellm.Turn{Text: "Hello again."})
	t.Cleanup(fake.Close)
	f := newFunction(t, fake, nil, nil, nil)
	h, mgmt, queue, table := f.h, f.mgmt, f.queue, f.table
	const conn = "J5mKDcXaoAMCJdA="

	out, err := h.Invoke(t.Context(), sample(t, "websocket-connect.json"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, out.(events.APIGatewayProxyResponse).StatusCode)
	mgmt.Connect(conn)

	// $default queues the message in the connection's FIFO group and
	// returns without running it.
	out, err = h.Invoke(t.Context(), sample(t, "websocket-default.json"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, out.(events.APIGatewayProxyResponse).StatusCode)
	require.Zero(t, fake.Calls())
	msgs := queue.Take()
	require.Len(t, msgs, 1)
	require.Equal(t, conn, msgs[0].MessageGroupID)
	require.Equal(t, "J5mKdG8JIAMFkRw=", msgs[0].MessageDeduplicationID)

	// The sample SQS delivery of that turn, then the queued message itself.
	turn := func(payload json.RawMessage, want string) {
		t.Helper()
		before := len(mgmt.Messages(conn))
		out, err := h.Invoke(t.Context(), payload)
		require.NoError(t, err)
		require.Empty(t, out.(events.SQSEventResponse).BatchItemFailures)
		var evs []ssecheck.Event
		for _, m := range mgmt.Messages(conn)[before:] {
			ev, err := ssecheck.Decode(m)
			require.NoError(t, err, "%s", m)
			evs = append(evs, ev)
		}
		require.NoError(t, ssecheck.Check(nil, evs))
		text, err := ssecheck.OutputText(evs)
		require.NoError(t, err)
		require.Equal(t, want, text)
	}
	turn(sample(t, "websocket-sqs-turn.json"), "Hello over the WebSocket.")
	b, err := json.Marshal(fakesqs.Event(msgs...))
	require.NoError(t, err)
	turn(b, "Hello again.")

	out, err = h.Invoke(t.Context(), sample(t, "websocket-disconnect.json"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, out.(events.APIGatewayProxyResponse).StatusCode)
	conns, err := apigw.NewConnections(dynamotest.Client(t), table)
	require.NoError(t, err)
	c, err := conns.Load(t.Context(), conn)
	require.NoError(t, err)
	require.Nil(t, c, "$disconnect forgets the connection")
}

// The function's Lambda handler (app.LambdaHandler, as main wires it)
// delivers a turn's hook events before the invocation returns: Lambda
// freezes the process between invocations. Its log lines carry the
// invocation's Powertools fields (cold_start false after the first).
func TestHandlerFlushesTelemetry(t *testing.T) {
	fake := fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`}}},
		fakellm.Turn{Text: "It is 42."},
	)
	t.Cleanup(fake.Close)
	var (
		mu     sync.Mutex
		hooked []string
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		hooked = append(hooked, string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	var logs logbuf.Buffer
	f := newFunction(t, fake, map[string]string{"LAMBENT_HOOKS": hook.URL, "LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(hook.URL, "http://"),
		"LAMBENT_LOG_LEVEL": "info"}, &logs, nil)
	handler := f.app.LambdaHandler(f.h.Invoke)
	invoke := func(id string, payload json.RawMessage) any {
		t.Helper()
		ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
		out, err := handler(ctx, payload)
		require.NoError(t, err)
		return out
	}
	const conn = "J5mKDcXaoAMCJdA="
	invoke("aws-connect", sample(t, "websocket-connect.json"))
	f.mgmt.Connect(conn)
	body, err := json.Marshal(map[string]string{"connection_id": conn, "endpoint": f.mgmt.URL + "/responses",
		"body": `{"type":"response.create","store":false,"model":"m","input":"6*7?","tools":[{"type":"lambent:calculator"}]}`})
	require.NoError(t, err)
	ev, err := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: string(body), EventSource: "aws:sqs"}}})
	require.NoError(t, err)
	out := invoke("aws-turn", ev)
	require.Empty(t, out.(events.SQSEventResponse).BatchItemFailures)
	mu.Lock()
	got := len(hooked)
	mu.Unlock()
	require.Equal(t, 2, got, "the tool call's two hook events were delivered before the invocation returned")

	cold := map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l), line)
		if id, ok := l["function_request_id"].(string); ok {
			cold[id] = l["cold_start"]
		}
	}
	require.Equal(t, false, cold["aws-turn"], "the turn's log lines: not the cold start (the connect was)")
}
