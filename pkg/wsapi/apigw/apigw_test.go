package apigw_test

// The AWS front door of WebSocket mode, driven through Handler.Invoke with
// the events API Gateway and the SQS event source send, against a fake
// Management API speaking the real protocol (the SDK's
// apigatewaymanagementapi client posts to it), a fake SQS endpoint (the
// SDK's sqs client), DynamoDB Local for the connections table, and a fake
// Chat Completions model behind the real engine.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakeapigw"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/wsapi"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

func TestMain(m *testing.M) { os.Exit(dynamolocal.MainLeakChecked(m)) }

const (
	keyA  = "sk-apigw-acme-0123456789abcdef"
	keyB  = "sk-apigw-globex-0123456789abcdef"
	stage = "prod"
)

type env struct {
	t     *testing.T
	h     *apigw.Handler
	mgmt  *fakeapigw.Server
	queue *fakesqs.Server
	conns *apigw.Connections
	fake  *fakellm.Server
	app   *app.App
	// db and table are the connections table's client and name.
	db    *ddb.Client
	table string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvRule(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme", keyB: "globex"})})
}

// newEnvRule is newEnv with the tenant rule rule (the zero Rule: no API
// keys, the template's default with WebSocketAuthType AWS_IAM).
func newEnvRule(t *testing.T, rule tenant.Rule) *env {
	t.Helper()
	return newEnvStore(t, rule, false)
}

// newEnvStore is newEnvRule, with the engine's store on DynamoDB Local and
// the handler told so (Config.SharedStore) when shared.
func newEnvStore(t *testing.T, rule tenant.Rule, shared bool) *env {
	t.Helper()
	return newEnvModel(t, rule, shared, fakellm.NameModel("Hello from API Gateway."))
}

// newEnvModel is newEnvStore with the model fake.
func newEnvModel(t *testing.T, rule tenant.Rule, shared bool, fake *fakellm.Server) *env {
	t.Helper()
	return newEnvDB(t, rule, shared, fake, func(db dynamodb.API) dynamodb.API { return db })
}

// newEnvDB is newEnvModel with the connections table's client wrapped.
func newEnvDB(t *testing.T, rule tenant.Rule, shared bool, fake *fakellm.Server, wrap func(dynamodb.API) dynamodb.API) *env {
	t.Helper()
	t.Cleanup(fake.Close)
	vars := map[string]string{"LAMBENT_PROVIDER_URL": fake.URL, "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_STORE": "memory", "LAMBENT_LOG_LEVEL": "error"}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	var opts *app.Options
	if shared {
		opts = &app.Options{Store: dynamotest.NewStore(t, "")}
	}
	a, err := app.Build(t.Context(), cfg, app.Logger(cfg, io.Discard), opts)
	require.NoError(t, err)
	t.Cleanup(a.Close)

	mgmt := fakeapigw.Start()
	t.Cleanup(mgmt.Close)
	queue := fakesqs.Start()
	t.Cleanup(queue.Close)
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")

	db := dynamotest.Client(t)
	table := "lambent_ws_test_" + api.NewID("")[24:]
	conns, err := apigw.NewConnections(wrap(db), table)
	require.NoError(t, err)
	require.NoError(t, conns.Records().EnsureTable(t.Context()))
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})

	sqsClient, err := awsjson.NewSQS(aws.Config{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(queue.URL)})
	require.NoError(t, err)
	h, err := apigw.New(apigw.Config{
		Service:     a.Engine,
		Connections: conns,
		Management:  apigatewaymanagementapi.New(apigatewaymanagementapi.Options{Region: "us-east-1", Credentials: creds}),
		Queue:       sqsClient,
		QueueURL:    queue.URL + "/123456789012/lambent-websocket.fifo",
		Tenants:     rule,
		SharedStore: shared,
		Endpoint:    mgmt.URL + "/" + stage,
		Logger:      app.Logger(cfg, io.Discard),
	})
	require.NoError(t, err)
	return &env{t: t, h: h, mgmt: mgmt, queue: queue, conns: conns, fake: fake, app: a, db: db, table: table}
}

// invoke sends ev through the Lambda entry point as its JSON.
func (e *env) invoke(ev any) any {
	e.t.Helper()
	b, err := json.Marshal(ev)
	require.NoError(e.t, err)
	out, err := e.h.Invoke(e.t.Context(), b)
	require.NoError(e.t, err)
	return out
}

func routeEvent(eventType, route, conn, key, body string, connectedAt time.Time) events.APIGatewayWebsocketProxyRequest {
	ev := events.APIGatewayWebsocketProxyRequest{
		Body: body,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{
			RouteKey: route, EventType: eventType, ConnectionID: conn, Stage: stage,
			DomainName: "abc123.execute-api.us-east-1.amazonaws.com", APIID: "abc123",
			RequestID: api.NewID("req_"), ConnectedAt: connectedAt.UnixMilli(), MessageDirection: "IN",
		},
	}
	if key != "" {
		ev.Headers = map[string]string{"Authorization": "Bearer " + key}
		ev.MultiValueHeaders = map[string][]string{"Authorization": {"Bearer " + key}}
	}
	return ev
}

// connect opens a connection with key (through $connect) and returns its
// id.
func (e *env) connect(key string) string {
	e.t.Helper()
	return e.connectAs(key, events.APIGatewayRequestIdentity{})
}

// connectAs opens a connection with key and the caller identity that API
// Gateway puts in requestContext.identity of an AWS_IAM-authorized
// $connect, and returns its id.
func (e *env) connectAs(key string, identity events.APIGatewayRequestIdentity) string {
	e.t.Helper()
	return e.open(key, identity, time.Now())
}

// open opens a connection as API Gateway opened it at connectedAt (the
// event's requestContext.connectedAt) and returns its id.
func (e *env) open(key string, identity events.APIGatewayRequestIdentity, connectedAt time.Time) string {
	e.t.Helper()
	id := api.NewID("")[30:] + "="
	ev := routeEvent("CONNECT", "$connect", id, key, "", connectedAt)
	ev.RequestContext.Identity = identity
	res := e.invoke(ev).(events.APIGatewayProxyResponse)
	require.Equal(e.t, http.StatusOK, res.StatusCode, res.Body)
	e.mgmt.Connect(id)
	return id
}

// send is a client message: $default queues it and returns without
// running it; the queue then delivers it to the function. It returns the
// messages the client received for it.
func (e *env) send(conn, body string) [][]byte {
	e.t.Helper()
	before := len(e.mgmt.Messages(conn))
	calls := e.fake.Calls()
	res := e.invoke(routeEvent("MESSAGE", "$default", conn, "", body, time.Now())).(events.APIGatewayProxyResponse)
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	// $default answers within API Gateway's 29 s integration timeout
	// whatever the response takes: it ran no model call and sent nothing.
	require.Equal(e.t, calls, e.fake.Calls())
	require.Len(e.t, e.mgmt.Messages(conn), before)
	msgs := e.queue.Take()
	require.Len(e.t, msgs, 1)
	require.True(e.t, strings.HasPrefix(msgs[0].MessageGroupID, conn), "the FIFO message group of a lane of the connection: %s", msgs[0].MessageGroupID)
	require.NotEmpty(e.t, msgs[0].MessageDeduplicationID)
	out := e.invoke(fakesqs.Event(msgs...)).(events.SQSEventResponse)
	require.Empty(e.t, out.BatchItemFailures)
	return e.mgmt.Messages(conn)[before:]
}

// events decodes and checks the messages of one successful turn.
func (e *env) events(msgs [][]byte) []ssecheck.Event {
	e.t.Helper()
	var evs []ssecheck.Event
	for _, m := range msgs {
		ev, err := ssecheck.Decode(m)
		require.NoError(e.t, err, "%s", m)
		evs = append(evs, ev)
	}
	require.NoError(e.t, ssecheck.Check(nil, evs))
	require.NoError(e.t, ssecheck.CheckOpenAI(evs))
	return evs
}

func (e *env) text(evs []ssecheck.Event) string {
	e.t.Helper()
	s, err := ssecheck.OutputText(evs)
	require.NoError(e.t, err)
	return s
}

// envelope decodes the one error envelope a turn answered with.
func (e *env) envelope(msgs [][]byte) wsapi.Envelope {
	e.t.Helper()
	require.Equal(e.t, 1, len(msgs), "want one error envelope")
	var env struct {
		wsapi.Envelope
		Error struct {
			Code, Message, Param, Type string
		} `json:"error"`
	}
	require.NoError(e.t, json.Unmarshal(msgs[0], &env), "%s", msgs[0])
	require.Equal(e.t, "error", env.Type)
	return wsapi.Envelope{Type: env.Type, Status: env.Status, Error: &api.Error{Code: env.Error.Code, Message: env.Error.Message, Param: env.Error.Param, Type: env.Error.Type},
		RequestID: env.RequestID, StreamID: env.StreamID}
}

func lastID(evs []ssecheck.Event) string { return evs[len(evs)-1].Response.ID }

func TestConnectAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, key := range []string{"", "sk-wrong"} {
		id := "refused" + key + "="
		res := e.invoke(routeEvent("CONNECT", "$connect", id, key, "", time.Now())).(events.APIGatewayProxyResponse)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, res.Body, "invalid_api_key")
		conn, err := e.conns.Load(t.Context(), id)
		require.NoError(t, err)
		require.Nil(t, conn)
	}
	id := e.connect(keyB)
	conn, err := e.conns.Load(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, "globex", conn.Tenant)
}

// iamIdentity is requestContext.identity of a $connect that API Gateway
// authorized with AWS_IAM (SigV4), as it sends it for a role session.
func iamIdentity(arn, callerID string) events.APIGatewayRequestIdentity {
	return events.APIGatewayRequestIdentity{AccountID: "111122223333", Caller: callerID, UserArn: arn,
		AccessKey: "ASIAEXAMPLE", SourceIP: "198.51.100.7", UserAgent: "test"}
}

const (
	arnA = "arn:aws:sts::111122223333:assumed-role/client-a/session-a"
	arnB = "arn:aws:sts::111122223333:assumed-role/client-b/session-b"
)

// With the template's default auth (WebSocketAuthType AWS_IAM, no API
// keys) each IAM principal is its own tenant, as on the HTTP front doors:
// principal B can neither continue nor read principal A's response.
func TestConnectIAMTenants(t *testing.T) {
	t.Parallel()
	e := newEnvRule(t, tenant.Rule{})
	ca := e.connectAs("", iamIdentity(arnA, "AROACLIENTA:session-a"))
	cb := e.connectAs("", iamIdentity(arnB, "AROACLIENTB:session-b"))
	for id, want := range map[string]string{ca: arnA, cb: arnB} {
		conn, err := e.conns.Load(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, want, conn.Tenant)
	}

	evs := e.events(e.send(ca, `{"type":"response.create","input":"My name is Ada"}`))
	first := lastID(evs)
	env := e.envelope(e.send(cb, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, first)))
	require.Equal(t, http.StatusNotFound, env.Status, "B must not continue A's response")
	require.Equal(t, "previous_response_not_found", env.Error.Code)
	_, err := e.app.Engine.GetResponse(tenantCtx(t, arnB), first)
	require.Error(t, err)

	evs = e.events(e.send(ca, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, first)))
	require.Equal(t, "Your name is Ada.", e.text(evs), "A continues its own response")
	_, err = e.app.Engine.GetResponse(tenantCtx(t, arnA), first)
	require.NoError(t, err, "the response belongs to A's ARN, as over HTTP")

	// Without userArn, the caller id is the tenant (as on the HTTP front
	// doors).
	cc := e.connectAs("", iamIdentity("", "AROACLIENTC:session-c"))
	conn, err := e.conns.Load(t.Context(), cc)
	require.NoError(t, err)
	require.Equal(t, "AROACLIENTC:session-c", conn.Tenant)
}

// LAMBENT_IAM_TENANT=role applies to $connect as to the HTTP front doors:
// the sessions of a role are one tenant.
func TestConnectIAMRole(t *testing.T) {
	t.Parallel()
	e := newEnvRule(t, tenant.Rule{IAM: tenant.IAMRole})
	c := e.connectAs("", iamIdentity(arnA, "AROACLIENTA:session-a"))
	conn, err := e.conns.Load(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, "arn:aws:sts::111122223333:assumed-role/client-a", conn.Tenant)
}

// With API keys configured too, an IAM-authorized $connect needs no key and
// its tenant is the caller's ARN; a $connect without an IAM caller needs a
// listed key, as on the HTTP front doors.
func TestConnectIAMWithKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connectAs("", iamIdentity(arnA, "AROACLIENTA:session-a"))
	conn, err := e.conns.Load(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, arnA, conn.Tenant)
	c = e.connectAs(keyB, iamIdentity(arnA, "AROACLIENTA:session-a"))
	conn, err = e.conns.Load(t.Context(), c)
	require.NoError(t, err)
	require.Equal(t, arnA, conn.Tenant, "the IAM caller wins over a key, as over HTTP")
	res := e.invoke(routeEvent("CONNECT", "$connect", "nokey=", "", "", time.Now())).(events.APIGatewayProxyResponse)
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

// Create, continuation, store=false continuation on the same connection
// (through the DynamoDB connection cache, from any Lambda instance) and
// its failure on another, eviction after a failed continuation.
func TestTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c1 := e.connect(keyA)
	evs := e.events(e.send(c1, `{"type":"response.create","store":false,"input":"My name is Ada"}`))
	require.Equal(t, "response.completed", evs[len(evs)-1].Type)
	first := lastID(evs)
	evs = e.events(e.send(c1, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, first)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	second := lastID(evs)

	// Not readable over HTTP, nor from another connection.
	_, err := e.app.Engine.GetResponse(t.Context(), second)
	require.Error(t, err)
	c2 := e.connect(keyA)
	env := e.envelope(e.send(c2, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, second)))
	require.Equal(t, http.StatusNotFound, env.Status)
	require.Equal(t, "previous_response_not_found", env.Error.Code)

	// Only the latest response is kept: the first is gone from the table.
	_, err = e.conns.Records().Get(t.Context(), first)
	require.Error(t, err)

	// A failed continuation evicts what it continued from (the model
	// provider refused its call: the refusal's envelope, as OpenAI's
	// WebSocket mode answers a response.create it refuses).
	env = e.envelope(e.send(c1, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"Please fail"}`, second)))
	require.Equal(t, http.StatusBadRequest, env.Status)
	env = e.envelope(e.send(c1, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, second)))
	require.Equal(t, "previous_response_not_found", env.Error.Code)

	// Bad messages get the envelope, from $default at once; binary frames
	// arrive base64-encoded.
	env = e.envelope(e.answer(c1, `not json`))
	require.Equal(t, "invalid_json", env.Error.Code)
	// Each message has a request id of its own, given by $default: its
	// envelope names it.
	again := e.envelope(e.answer(c1, `not json`))
	require.Regexp(t, `^req_[0-9a-f]{32}$`, env.RequestID)
	require.Regexp(t, `^req_[0-9a-f]{32}$`, again.RequestID)
	require.NotEqual(t, env.RequestID, again.RequestID)
	bin := routeEvent("MESSAGE", "$default", c1, "", "AAEC", time.Now())
	bin.IsBase64Encoded = true
	e.invoke(bin)
	require.Empty(t, e.queue.Take())
	msgs := e.mgmt.Messages(c1)
	env = e.envelope(msgs[len(msgs)-1:])
	require.Equal(t, wsapi.CodeBinaryMessage, env.Error.Code)

	// $disconnect forgets the connection and its response.
	evs = e.events(e.send(c1, `{"type":"response.create","store":false,"input":"Hi"}`))
	kept := lastID(evs)
	_, err = e.conns.Records().Get(tenantCtx(t, "acme"), kept)
	require.NoError(t, err)
	e.invoke(routeEvent("DISCONNECT", "$disconnect", c1, "", "", time.Now()))
	conn, err := e.conns.Load(t.Context(), c1)
	require.NoError(t, err)
	require.Nil(t, conn)
	_, err = e.conns.Records().Get(tenantCtx(t, "acme"), kept)
	require.Error(t, err)
}

// Messages of one connection are processed one at a time in order: the
// FIFO group delivers them one by one, and each turn's events end before
// the next turn's begin.
func TestSequentialTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	for i := range 3 {
		e.invoke(routeEvent("MESSAGE", "$default", c, "", fmt.Sprintf(`{"type":"response.create","store":false,"input":"Message %d"}`, i), time.Now()))
	}
	msgs := e.queue.Take()
	require.Len(t, msgs, 3)
	for _, m := range msgs {
		require.Equal(t, c, m.MessageGroupID)
		out := e.invoke(fakesqs.Event(m)).(events.SQSEventResponse)
		require.Empty(t, out.BatchItemFailures)
	}
	var evs []ssecheck.Event
	turns := 0
	for _, m := range e.mgmt.Messages(c) {
		ev, err := ssecheck.Decode(m)
		require.NoError(t, err)
		evs = append(evs, ev)
		if ev.Type == "response.completed" {
			require.NoError(t, ssecheck.Check(nil, evs))
			evs, turns = nil, turns+1
		}
	}
	require.Equal(t, 3, turns)
	require.Empty(t, evs)
}

// An event over API Gateway's 128 KB message limit is never sent cut or
// dropped silently: the client gets the events before it, then an error
// envelope naming it; the response ran to its end and continues.
func TestEventOverMessageLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	// The message fits API Gateway's limit; response.created, which
	// carries the instructions and the rest of the response, does not.
	big := strings.Repeat("x", apigw.MaxMessage-300)
	msgs := e.send(c, fmt.Sprintf(`{"type":"response.create","store":false,"instructions":%q,"input":"My name is Ada"}`, big))
	require.Equal(t, 1, len(msgs), "response.created is over the limit: not sent, nor anything after it")
	env := e.envelope(msgs)
	require.Equal(t, wsapi.CodeMessageTooLarge, env.Error.Code)
	require.Equal(t, http.StatusInternalServerError, env.Status)
	require.Contains(t, env.Error.Message, "response.created")
	conn, err := e.conns.Load(t.Context(), c)
	require.NoError(t, err)
	require.NotEmpty(t, conn.Latest[""].ID)
	require.Contains(t, env.Error.Message, conn.Latest[""].ID)
	evs := e.events(e.send(c, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, conn.Latest[""].ID)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
}

// After 60 minutes a message gets websocket_connection_limit_reached and
// the connection is closed (DeleteConnection): the age is the one API
// Gateway gives $connect (requestContext.connectedAt), so a connection it
// opened 60 minutes ago is past the limit while a new one is served.
func TestConnectionLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	e.events(e.send(c, `{"type":"response.create","store":false,"input":"Hi"}`))
	old := e.open(keyA, events.APIGatewayRequestIdentity{}, time.Now().Add(-wsapi.DefaultMaxAge))
	env := e.envelope(e.send(old, `{"type":"response.create","store":false,"input":"Hi"}`))
	require.Equal(t, wsapi.CodeConnectionLimit, env.Error.Code)
	require.Equal(t, []string{old}, e.mgmt.Deleted())
}

// A client gone before its turn: the post fails with GoneException, the
// turn ends, nothing is retried.
func TestClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	e.mgmt.Disconnect(c)
	require.Empty(t, e.send(c, `{"type":"response.create","store":false,"input":"Hi"}`))
}

// An error envelope is never dropped for its size either: an error that
// quotes the message (an unknown parameter's name, twice: message and
// param) would be over API Gateway's 128 KB; it is sent shortened.
func TestLongErrorFitsTheMessageLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	key := strings.Repeat("k", 100<<10)
	env := e.envelope(e.send(c, fmt.Sprintf(`{"type":"response.create","input":"Hi",%q:1}`, key)))
	require.Equal(t, http.StatusBadRequest, env.Status)
	require.Equal(t, "unknown_parameter", env.Error.Code)
	require.True(t, strings.HasPrefix(env.Error.Param, "kkk"), env.Error.Param)
	require.Contains(t, env.Error.Message, "Unknown parameter: 'kkk")
}

// sqsAllows reports whether SQS accepts r in a message body: #x9, #xA,
// #xD, #x20 to #xD7FF, #xE000 to #xFFFD, #x10000 to #x10FFFF (SQS refuses
// or replaces any other character).
func sqsAllows(r rune) bool {
	return r == 0x9 || r == 0xA || r == 0xD || (r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// A client message may hold characters an SQS message body may not (the
// noncharacters U+FFFE and U+FFFF, which JSON and a WebSocket text frame
// allow and JSON.stringify sends raw): the queued turn carries them
// escaped, and the model gets the client's text unchanged.
func TestQueuedTurnHasOnlySQSCharacters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	const input = "odd \uffff and \ufffe <b>"
	res := e.invoke(routeEvent("MESSAGE", "$default", c, "", `{"type":"response.create","store":false,"input":"`+input+`"}`, time.Now())).(events.APIGatewayProxyResponse)
	require.Equal(t, http.StatusOK, res.StatusCode)
	msgs := e.queue.Take()
	require.Len(t, msgs, 1)
	for i, r := range msgs[0].MessageBody {
		require.True(t, sqsAllows(r), "character %U at byte %d of the queued body", r, i)
	}
	out := e.invoke(fakesqs.Event(msgs...)).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	e.events(e.mgmt.Messages(c))
	reqs := e.fake.Requests()
	require.NotEmpty(t, reqs)
	sent := reqs[len(reqs)-1].Messages
	require.Equal(t, input, sent[len(sent)-1].Content.String())
}

// A message that cannot be queued (SQS unavailable) is answered with the
// spec's error envelope on the connection, not with a failed $default,
// which API Gateway would answer with its own {"message":"Internal server
// error"}: the client learns that its turn will not run.
func TestQueueFailureIsAnErrorEnvelope(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	e.queue.Close()
	b, err := json.Marshal(routeEvent("MESSAGE", "$default", c, "", `{"type":"response.create","input":"Hi","stream_id":"A"}`, time.Now()))
	require.NoError(t, err)
	out, err := e.h.Invoke(t.Context(), b)
	require.NoError(t, err, "$default answers; its failure would reach the client as API Gateway's own message")
	require.Equal(t, http.StatusOK, out.(events.APIGatewayProxyResponse).StatusCode)
	env := e.envelope(e.mgmt.Messages(c))
	require.Equal(t, "A", env.StreamID, "the envelope answers the lane's response.create")
	require.Equal(t, http.StatusInternalServerError, env.Status)
	require.Equal(t, "server_error", env.Error.Code)
	require.Regexp(t, `^req_[0-9a-f]{32}$`, env.RequestID)
	require.Contains(t, env.Error.Message, env.RequestID)
}

// A turn whose invocation died after it started (out of memory, a crash:
// SQS never learned that it ran) is delivered again after the visibility
// timeout. It is not run again (a second response, its tools called
// twice, long after the first): the client gets an error envelope saying
// so, and the connection goes on.
func TestInterruptedTurnIsNotRunAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	e.invoke(routeEvent("MESSAGE", "$default", c, "", `{"type":"response.create","store":false,"input":"Hi"}`, time.Now()))
	ev := fakesqs.Event(e.queue.Take()...)
	out := e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	calls, before := e.fake.Calls(), len(e.mgmt.Messages(c))

	// The same message again, as SQS delivers it when the invocation that
	// ran it never returned.
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	out = e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures, "not retried again")
	require.Equal(t, calls, e.fake.Calls(), "the turn did not run again")
	env := e.envelope(e.mgmt.Messages(c)[before:])
	require.Equal(t, http.StatusInternalServerError, env.Status)
	require.Equal(t, "server_error", env.Error.Code)
	require.Contains(t, env.Error.Message, "interrupted")

	evs := e.events(e.send(c, `{"type":"response.create","store":false,"input":"Hi"}`))
	require.Equal(t, "Hello from API Gateway.", e.text(evs))
}

// With a shared store, a stored response is not copied into the
// connections table: the connection points at it and a continuation reads
// it from the store; responses not stored are kept there whole, and only
// the latest.
func TestSharedStoreTurns(t *testing.T) {
	t.Parallel()
	e := newEnvStore(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme", keyB: "globex"})}, true)
	ctx := tenantCtx(t, "acme")
	c1 := e.connect(keyA)
	evs := e.events(e.send(c1, `{"type":"response.create","input":"My name is Ada"}`))
	require.Equal(t, "response.completed", evs[len(evs)-1].Type)
	first := lastID(evs)
	_, err := e.conns.Records().Get(ctx, first)
	require.ErrorIs(t, err, store.ErrNotFound, "no second copy of a stored response")
	_, err = e.app.Store.Get(ctx, first)
	require.NoError(t, err)

	evs = e.events(e.send(c1, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, first)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	second := lastID(evs)

	// Not stored: kept whole in the connections table, and continued.
	evs = e.events(e.send(c1, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, second)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	third := lastID(evs)
	_, err = e.conns.Records().Get(ctx, third)
	require.NoError(t, err)
	evs = e.events(e.send(c1, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, third)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	fourth := lastID(evs)
	_, err = e.conns.Records().Get(ctx, third)
	require.ErrorIs(t, err, store.ErrNotFound, "only the latest response is kept")
	env := e.envelope(e.send(c1, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, third)))
	require.Equal(t, "previous_response_not_found", env.Error.Code)

	// Another connection continues the stored one from the store.
	c2 := e.connect(keyA)
	evs = e.events(e.send(c2, fmt.Sprintf(`{"type":"response.create","previous_response_id":%q,"input":"What is my name?"}`, fourth)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
}

func tenantCtx(t *testing.T, name string) context.Context {
	return tenant.With(t.Context(), name)
}

// laneEvents decodes and checks the messages of one successful turn on
// lane: each carries its stream_id.
func (e *env) laneEvents(msgs [][]byte, lane string) []ssecheck.Event {
	e.t.Helper()
	for _, m := range msgs {
		var probe struct {
			StreamID *string `json:"stream_id"`
		}
		require.NoError(e.t, json.Unmarshal(m, &probe))
		require.NotNil(e.t, probe.StreamID, "no stream_id: %s", m)
		require.Equal(e.t, lane, *probe.StreamID)
	}
	return e.events(msgs)
}

// laneCreate is a response.create on lane continuing prev ("": none).
func laneCreate(lane, prev, input string, store bool) string {
	return fmt.Sprintf(`{"type":"response.create","stream_id":%q,"store":%t,"previous_response_id":%q,"input":%q}`, lane, store, prev, input)
}

// Lanes (stream_id) on API Gateway: every event and error envelope echoes
// the lane; the connection keeps the latest response of each lane, so two
// interleaved store: false lanes continue, and a new lane forks from
// another's; a steer is answered with response.steer.failed; $disconnect
// forgets every lane's response.
func TestLanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	a1 := lastID(e.laneEvents(e.send(c, laneCreate("A", "", "My name is Ann", false)), "A"))
	b1 := lastID(e.laneEvents(e.send(c, laneCreate("B", "", "My name is Bob", false)), "B"))
	d1 := lastID(e.events(e.send(c, `{"type":"response.create","store":false,"input":"My name is Dan"}`)))
	evs := e.laneEvents(e.send(c, laneCreate("A", a1, "What is my name?", false)), "A")
	require.Equal(t, "Your name is Ann.", e.text(evs))
	a2 := lastID(evs)
	evs = e.laneEvents(e.send(c, laneCreate("B", b1, "What is my name?", false)), "B")
	require.Equal(t, "Your name is Bob.", e.text(evs))
	b2 := lastID(evs)
	evs = e.events(e.send(c, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, d1)))
	require.Equal(t, "Your name is Dan.", e.text(evs))
	evs = e.laneEvents(e.send(c, laneCreate("C", a2, "What is my name?", false)), "C")
	require.Equal(t, "Your name is Ann.", e.text(evs), "lane C forks from lane A")
	// Each lane keeps its latest response only.
	_, err := e.conns.Records().Get(ctx, a1)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = e.conns.Records().Get(ctx, a2)
	require.NoError(t, err)

	// An error envelope echoes the lane.
	msgs := e.send(c, laneCreate("B", "resp_missing", "What is my name?", false))
	env := e.envelope(msgs)
	require.Equal(t, "previous_response_not_found", env.Error.Code)
	require.Contains(t, string(msgs[0]), `"stream_id":"B"`)

	// A steer: response.steer.failed on the target's lane, nothing run.
	calls := e.fake.Calls()
	msgs = e.answer(c, fmt.Sprintf(`{"type":"response.steer","previous_response_id":%q,"input":"Be brief."}`, b2))
	require.Len(t, msgs, 1)
	var steer wsapi.SteerFailed
	require.NoError(t, json.Unmarshal(msgs[0], &steer))
	require.Equal(t, wsapi.TypeSteerFailed, steer.Type)
	require.Equal(t, wsapi.CodeSteeringNotSupported, steer.Error.Code)
	require.Equal(t, "B", steer.StreamID)
	require.JSONEq(t, `"Be brief."`, string(steer.Steer.Input))
	require.Equal(t, calls, e.fake.Calls())

	evs = e.laneEvents(e.send(c, laneCreate("B", b2, "What is my name?", false)), "B")
	require.Equal(t, "Your name is Bob.", e.text(evs))
	kept := lastID(evs)

	e.invoke(routeEvent("DISCONNECT", "$disconnect", c, "", "", time.Now()))
	for _, id := range []string{a2, kept} {
		_, err = e.conns.Records().Get(ctx, id)
		require.ErrorIs(t, err, store.ErrNotFound, "%s outlived its connection", id)
	}
}

// With a shared store, a lane whose latest response is stored points at it
// while another lane keeps its store: false response whole; both continue.
func TestSharedStoreLanes(t *testing.T) {
	t.Parallel()
	e := newEnvStore(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme"})}, true)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	a1 := lastID(e.laneEvents(e.send(c, laneCreate("A", "", "My name is Ann", true)), "A"))
	b1 := lastID(e.laneEvents(e.send(c, laneCreate("B", "", "My name is Bob", false)), "B"))
	_, err := e.conns.Records().Get(ctx, a1)
	require.ErrorIs(t, err, store.ErrNotFound, "no second copy of a stored response")
	evs := e.laneEvents(e.send(c, laneCreate("A", a1, "What is my name?", false)), "A")
	require.Equal(t, "Your name is Ann.", e.text(evs))
	evs = e.laneEvents(e.send(c, laneCreate("B", b1, "What is my name?", true)), "B")
	require.Equal(t, "Your name is Bob.", e.text(evs))
	_, err = e.conns.Records().Get(ctx, b1)
	require.ErrorIs(t, err, store.ErrNotFound, "lane B's latest replaced its store: false one")
}

// A connection whose item was written before lanes (its latest response in
// "latest", no version) continues that response as its lane without
// stream_id, and its next turn writes the item anew.
func TestConnectionItemBeforeLanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	first := lastID(e.events(e.send(c, `{"type":"response.create","store":false,"input":"My name is Ada"}`)))
	now := time.Now()
	_, err := e.db.PutItem(t.Context(), &ddb.PutItemInput{TableName: aws.String(e.table), Item: map[string]types.AttributeValue{
		"pk":           &types.AttributeValueMemberS{Value: "connection#" + c},
		"sk":           &types.AttributeValueMemberS{Value: "connection"},
		"tenant":       &types.AttributeValueMemberS{Value: "acme"},
		"connected_at": &types.AttributeValueMemberN{Value: strconv.FormatInt(now.UnixMilli(), 10)},
		"expires_at":   &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(apigw.MaxConnectionDuration).Unix(), 10)},
		"latest":       &types.AttributeValueMemberS{Value: first},
	}})
	require.NoError(t, err)
	evs := e.events(e.send(c, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, first)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	second := lastID(evs)
	evs = e.events(e.send(c, fmt.Sprintf(`{"type":"response.create","store":false,"previous_response_id":%q,"input":"What is my name?"}`, second)))
	require.Equal(t, "Your name is Ada.", e.text(evs))
	_, err = e.conns.Records().Get(tenantCtx(t, "acme"), first)
	require.ErrorIs(t, err, store.ErrNotFound, "the record the old item pointed at was replaced")
}

// The lane without stream_id is written as the release before lanes wrote
// and reads its connection item ("latest", "pointer"), so that both
// releases continue a connection's responses during a gradual deployment;
// other lanes go in "lanes".
func TestConnectionItemReadableBeforeLanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	first := lastID(e.events(e.send(c, `{"type":"response.create","store":false,"input":"My name is Ada"}`)))
	a1 := lastID(e.laneEvents(e.send(c, laneCreate("A", "", "My name is Ann", false)), "A"))
	out, err := e.db.GetItem(t.Context(), &ddb.GetItemInput{TableName: aws.String(e.table), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "connection#" + c},
		"sk": &types.AttributeValueMemberS{Value: "connection"},
	}})
	require.NoError(t, err)
	latest, ok := out.Item["latest"].(*types.AttributeValueMemberS)
	require.True(t, ok, "%v", out.Item)
	require.Equal(t, first, latest.Value)
	lanes, ok := out.Item["lanes"].(*types.AttributeValueMemberM)
	require.True(t, ok, "%v", out.Item)
	require.Len(t, lanes.Value, 1)
	laneA, ok := lanes.Value["lane:A"].(*types.AttributeValueMemberM)
	require.True(t, ok, "%v", lanes.Value)
	id, ok := laneA.Value["id"].(*types.AttributeValueMemberS)
	require.True(t, ok, "%v", laneA.Value)
	require.Equal(t, a1, id.Value)
}

// answer is a client message $default answers itself (not a
// response.create): nothing is queued. It returns the messages the client
// received for it.
func (e *env) answer(conn, body string) [][]byte {
	e.t.Helper()
	before := len(e.mgmt.Messages(conn))
	res := e.invoke(routeEvent("MESSAGE", "$default", conn, "", body, time.Now())).(events.APIGatewayProxyResponse)
	require.Equal(e.t, http.StatusOK, res.StatusCode)
	require.Empty(e.t, e.queue.Take(), "queued")
	return e.mgmt.Messages(conn)[before:]
}

// Each lane of a connection is a FIFO message group of its own, so lanes
// run in parallel on separate invocations while each stays FIFO; the lane
// without stream_id keeps the connection's own group. A group is at most
// 128 characters of those SQS allows.
func TestLaneMessageGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	long := strings.Repeat("z", 64)
	for _, lane := range []string{"A", "B", "A", "", long, "a.b:c_d-e"} {
		body := `{"type":"response.create","input":"Hi"}`
		if lane != "" {
			body = laneCreate(lane, "", "Hi", false)
		}
		e.invoke(routeEvent("MESSAGE", "$default", c, "", body, time.Now()))
	}
	// Messages that are not a response.create are not queued (answered by
	// $default); an invalid one still has the connection's group.
	e.invoke(routeEvent("MESSAGE", "$default", c, "", `{"type":"response.create","stream_id":"bad id","input":"Hi"}`, time.Now()))
	msgs := e.queue.Take()
	require.Len(t, msgs, 7)
	groups := make([]string, len(msgs))
	for i, m := range msgs {
		groups[i] = m.MessageGroupID
		require.LessOrEqual(t, len(m.MessageGroupID), 128)
		for _, r := range m.MessageGroupID {
			require.True(t, r >= '!' && r <= '~', "%q", m.MessageGroupID)
		}
	}
	require.Equal(t, groups[0], groups[2], "one lane, one group")
	require.NotEqual(t, groups[0], groups[1], "two lanes, two groups")
	require.Equal(t, c, groups[3], "the lane without stream_id keeps the connection's group")
	require.Equal(t, c, groups[6])
	require.Len(t, map[string]bool{groups[0]: true, groups[1]: true, groups[3]: true, groups[4]: true, groups[5]: true}, 5)
}

// $default answers a response.steer itself, at once (it needs only the
// connection item), while a response may run on the target's lane.
func TestSteerAnsweredByDefaultRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	a1 := lastID(e.laneEvents(e.send(c, laneCreate("A", "", "My name is Ann", false)), "A"))
	msgs := e.answer(c, fmt.Sprintf(`{"type":"response.steer","previous_response_id":%q,"input":"Be brief."}`, a1))
	require.Len(t, msgs, 1)
	var steer wsapi.SteerFailed
	require.NoError(t, json.Unmarshal(msgs[0], &steer))
	require.Equal(t, wsapi.TypeSteerFailed, steer.Type)
	require.Equal(t, "A", steer.StreamID)
	// Invalid JSON is answered there too.
	env := e.envelope(e.answer(c, `{not json`))
	require.Equal(t, "invalid_json", env.Error.Code)
}

// Turns of two lanes of one connection, run by concurrent invocations from
// the same state of its item, both keep their latest response: a lane's
// write does not overwrite another's.
func TestConcurrentLaneUpdatesSurvive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	d1 := lastID(e.events(e.send(c, `{"type":"response.create","store":false,"input":"My name is Dan"}`)))
	c1, err := e.conns.Load(ctx, c)
	require.NoError(t, err)
	c2, err := e.conns.Load(ctx, c)
	require.NoError(t, err)
	require.NoError(t, c1.PutLatest(ctx, "A", completed("resp_a1")))
	require.NoError(t, c2.PutLatest(ctx, "B", completed("resp_b1")))
	require.NoError(t, c1.PutLatest(ctx, "", completed("resp_d2")))
	got, err := e.conns.Load(ctx, c)
	require.NoError(t, err)
	lanes, err := got.Lanes(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"A": "resp_a1", "B": "resp_b1", "": "resp_d2"}, lanes)
	_, err = e.conns.Records().Get(ctx, d1)
	require.ErrorIs(t, err, store.ErrNotFound, "the lane's replaced response is dropped")
}

// Two turns opening a 17th and an 18th lane run at once on a connection
// with 15 lanes: one gets the 16th lane, the other too_many_stream_ids
// before any model call (each model call waits for the other invocation
// to return, so both reaching the model fails at the guard).
func TestLaneLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	returned, once := make(chan struct{}), sync.Once{}
	var waitedOut atomic.Bool
	racing := func(last string) bool { return strings.HasPrefix(last, "race") }
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if racing(req.Messages[len(req.Messages)-1].Content.String()) {
			select {
			case <-returned:
			case <-time.After(20 * time.Second):
				waitedOut.Store(true)
			}
		}
		return fakellm.Turn{Text: "ok"}
	})
	e := newEnvModel(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme"})}, false, fake)
	c := e.connect(keyA)
	for i := range wsapi.MaxLanes - 1 {
		e.laneEvents(e.send(c, laneCreate(fmt.Sprintf("L%d", i), "", "Hi", false)), fmt.Sprintf("L%d", i))
	}
	for _, lane := range []string{"P", "Q"} {
		e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate(lane, "", "race "+lane, false), time.Now()))
	}
	msgs := e.queue.Take()
	require.Len(t, msgs, 2)
	calls := e.fake.Calls()
	before := len(e.mgmt.Messages(c))
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Go(func() {
			b, _ := json.Marshal(fakesqs.Event(m))
			_, _ = e.h.Invoke(context.Background(), b)
			once.Do(func() { close(returned) })
		})
	}
	wg.Wait()
	require.False(t, waitedOut.Load(), "both turns reached the model")
	require.Equal(t, calls+1, e.fake.Calls())
	var refused int
	for _, m := range e.mgmt.Messages(c)[before:] {
		if strings.Contains(string(m), wsapi.CodeTooManyLanes) {
			refused++
		}
	}
	require.Equal(t, 1, refused)
	got, err := e.conns.Load(tenantCtx(t, "acme"), c)
	require.NoError(t, err)
	lanes, err := got.Lanes(t.Context())
	require.NoError(t, err)
	require.Len(t, lanes, wsapi.MaxLanes)
}

// A turn delivered again is known per lane: the turns another lane started
// meanwhile do not make a redelivered turn of lane A run twice.
func TestInterruptedLaneTurnIsNotRunAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.connect(keyA)
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("A", "", "Hi", false), time.Now()))
	ev := fakesqs.Event(e.queue.Take()...)
	out := e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	e.laneEvents(e.send(c, laneCreate("B", "", "Hi", false)), "B")
	e.events(e.send(c, `{"type":"response.create","store":false,"input":"Hi"}`))
	calls, before := e.fake.Calls(), len(e.mgmt.Messages(c))
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	out = e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	require.Equal(t, calls, e.fake.Calls(), "the turn did not run again")
	env := e.envelope(e.mgmt.Messages(c)[before:])
	require.Contains(t, env.Error.Message, "interrupted")
	require.Equal(t, "A", env.StreamID, "the refusal carries its lane's stream_id")
}

// A message $default answers itself (a response.steer, an invalid one) on
// a connection past the 60-minute limit gets
// websocket_connection_limit_reached and closes the connection, as a
// response.create does: the limit is checked when any message arrives.
func TestConnectionLimitOnAnsweredMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := e.open(keyA, events.APIGatewayRequestIdentity{}, time.Now().Add(-wsapi.DefaultMaxAge))
	env := e.envelope(e.answer(old, `{"type":"response.steer","previous_response_id":"resp_x","input":"Be brief."}`))
	require.Equal(t, wsapi.CodeConnectionLimit, env.Error.Code)
	require.Equal(t, []string{old}, e.mgmt.Deleted())
}

// A failed continuation on lane B evicts the response it continued, the
// latest of lane A, while a turn of lane A runs (invocations of two
// lanes): lane A still counts towards wsapi.MaxLanes while its turn runs
// (no new lane takes its place), its turn is still known (a redelivery of
// it is not run again), and its new response is kept.
func TestEvictWhileLaneRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	load := fullLanes(t, e, ctx, c)

	laneA := load()
	ok, err := laneA.Begin(ctx, "A", "req_a2", "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	laneB := load()
	require.NoError(t, laneB.Evict(ctx, "resp_a1"))

	_, err = load().Begin(ctx, "Q", "req_q", "resp_run")
	require.ErrorIs(t, err, apigw.ErrTooManyLanes, "lane A runs: it counts")
	require.True(t, load().Interrupted("A", "req_a2"), "lane A's turn is still known")

	require.NoError(t, laneA.PutLatest(ctx, "A", completed("resp_a2")))
	require.NoError(t, laneA.Settle(ctx, "A"))
	lanes, err := load().Lanes(ctx)
	require.NoError(t, err)
	require.Equal(t, "resp_a2", lanes["A"])
	require.Len(t, lanes, wsapi.MaxLanes)
	_, err = e.conns.Records().Get(ctx, "resp_a2")
	require.NoError(t, err, "lane A's new response is kept")
}

// A lane whose latest response another lane's failed continuation evicted
// while its turn ran, and whose turn then failed too (no new response),
// leaves the lanes map when that turn ends: it no longer counts.
func TestEvictedRunningLaneLeavesAfterItsTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	load := func() *apigw.Connection { return e.load(t, ctx, c) }
	require.NoError(t, load().PutLatest(ctx, "A", completed("resp_a1")))
	laneA := load()
	ok, err := laneA.Begin(ctx, "A", "req_a2", "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, load().Evict(ctx, "resp_a1"))
	require.NoError(t, laneA.Settle(ctx, "A"))
	lanes, err := load().Lanes(ctx)
	require.NoError(t, err)
	require.Empty(t, lanes)
}

// Past the 60-minute limit, a message of lane A does not close the
// connection while lane B's response runs (as the local server lets the
// responses in flight finish): lane B's response completes, and its turn,
// the last to end, sends websocket_connection_limit_reached and closes
// the connection.
func TestConnectionLimitWaitsForRunningLanes(t *testing.T) {
	t.Parallel()
	release, reached := make(chan struct{}), make(chan struct{}, 1)
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if req.Messages[len(req.Messages)-1].Content.String() == "slow" {
			reached <- struct{}{}
			return fakellm.Turn{Text: "Slow.", Block: release}
		}
		return fakellm.Turn{Text: "ok"}
	})
	e := newEnvModel(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme"})}, false, fake)
	limitAt := time.Now().Add(2 * time.Second)
	c := e.open(keyA, events.APIGatewayRequestIdentity{}, limitAt.Add(-wsapi.DefaultMaxAge))
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("B", "", "slow", false), time.Now()))
	slow, err := json.Marshal(fakesqs.Event(e.queue.Take()...))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.h.Invoke(context.Background(), slow)
	}()
	select {
	case <-reached:
	case <-time.After(20 * time.Second):
		t.Fatal("lane B's response did not reach the model")
	}
	time.Sleep(time.Until(limitAt))
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("A", "", "Hi", false), time.Now()))
	e.invoke(fakesqs.Event(e.queue.Take()...))
	require.Empty(t, e.mgmt.Deleted(), "lane B's response still runs")
	close(release)
	<-done
	require.Equal(t, []string{c}, e.mgmt.Deleted())
	msgs := e.mgmt.Messages(c)
	var completed bool
	for _, m := range msgs {
		completed = completed || (strings.Contains(string(m), `"type":"response.completed"`) && strings.Contains(string(m), `"stream_id":"B"`))
	}
	require.True(t, completed, "lane B's response completed")
	require.Contains(t, string(msgs[len(msgs)-1]), wsapi.CodeConnectionLimit)
}

// A message $default answers itself past the 60-minute limit does not
// close the connection while a turn runs on any lane, the lane without
// stream_id included: the turn that ends last does.
func TestConnectionLimitOnAnsweredMessageWaitsForRunningLanes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old := e.open(keyA, events.APIGatewayRequestIdentity{}, time.Now().Add(-wsapi.DefaultMaxAge))
	conn, err := e.conns.Load(tenantCtx(t, "acme"), old)
	require.NoError(t, err)
	ok, err := conn.Begin(tenantCtx(t, "acme"), "", "req_running", "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, e.answer(old, `{"type":"response.steer","previous_response_id":"resp_x","input":"Be brief."}`))
	require.Empty(t, e.mgmt.Deleted(), "the lane without stream_id runs")
}

// load reads connection id's item as a turn does.
func (e *env) load(t *testing.T, ctx context.Context, id string) *apigw.Connection {
	t.Helper()
	conn, err := e.conns.Load(ctx, id)
	require.NoError(t, err)
	return conn
}

// A turn whose invocation died counts as running until SQS delivers it
// again; delivered again past the 60-minute limit while another lane
// runs, it is dropped, and its lane no longer runs: the turn that ends
// last (here: the message answered after it) closes the connection.
func TestInterruptedTurnPastLimitLeavesItsLane(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.open(keyA, events.APIGatewayRequestIdentity{}, time.Now().Add(-wsapi.DefaultMaxAge))
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("A", "", "Hi", false), time.Now()))
	msgs, reqID := e.takeOne(t)
	// Lane A's turn began and its invocation died; lane B's runs.
	conn := e.load(t, ctx, c)
	ok, err := conn.Begin(ctx, "A", reqID, "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = conn.Begin(ctx, "B", "req_b", "resp_run")
	require.NoError(t, err)
	require.True(t, ok)

	ev := fakesqs.Event(msgs...)
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	out := e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	require.Empty(t, e.mgmt.Deleted(), "lane B runs")
	require.False(t, e.load(t, ctx, c).Latest["A"].Running, "lane A's turn no longer runs")

	// Lane B's turn ends: nothing runs, so the next message past the limit
	// closes the connection.
	conn = e.load(t, ctx, c)
	require.NoError(t, conn.Settle(ctx, "B"))
	e.answer(c, `{"type":"response.steer","previous_response_id":"resp_x","input":"Be brief."}`)
	require.Equal(t, []string{c}, e.mgmt.Deleted())
}

// failSettle is a connections table client whose writes removing a
// running mark (Connection.Settle) fail.
type failSettle struct{ dynamodb.API }

func (f failSettle) UpdateItem(ctx context.Context, in *ddb.UpdateItemInput, optFns ...func(*ddb.Options)) (*ddb.UpdateItemOutput, error) {
	if strings.HasPrefix(aws.ToString(in.UpdateExpression), "REMOVE running") || strings.HasPrefix(aws.ToString(in.UpdateExpression), "REMOVE lanes.#k.running") {
		return nil, errors.New("settle refused")
	}
	return f.API.UpdateItem(ctx, in, optFns...)
}

// A turn whose Settle fails leaves its lane marked running, but only for
// as long as a turn can run (Connections.TurnTimeout): then the lane no
// longer runs, and the 60-minute limit no longer waits for it. (The mark
// stayed for the connection's life, and past the limit every message of
// another lane was dropped while the connection stayed open.)
func TestFailedSettleMarkExpires(t *testing.T) {
	t.Parallel()
	e := newEnvDB(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme"})}, false,
		fakellm.NameModel("ok"), func(db dynamodb.API) dynamodb.API { return failSettle{db} })
	e.conns.TurnTimeout = time.Second
	ctx := tenantCtx(t, "acme")
	limitAt := time.Now().Add(4 * time.Second)
	c := e.open(keyA, events.APIGatewayRequestIdentity{}, limitAt.Add(-wsapi.DefaultMaxAge))
	e.send(c, laneCreate("B", "", "Hi", false))
	require.True(t, e.load(t, ctx, c).Latest["B"].Running, "the failed Settle left the mark")
	require.Eventually(t, func() bool { return !e.load(t, ctx, c).Latest["B"].Running }, 10*time.Second, 50*time.Millisecond,
		"lane B's mark lasts no longer than a turn can run")

	time.Sleep(time.Until(limitAt))
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("A", "", "Hi", false), time.Now()))
	e.invoke(fakesqs.Event(e.queue.Take()...))
	require.Equal(t, []string{c}, e.mgmt.Deleted(), "no lane runs: the limit closes the connection")
}

// A turn whose client went away (its post fails with GoneException, which
// cancels the turn's context) still ends its lane's running mark: Settle
// does not run on the cancelled context. (It did, and failed: the mark
// stayed until running_until lapsed, 15 minutes, and the 60-minute limit
// counted the lane as running meanwhile.)
func TestSettleAfterClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	e.mgmt.Disconnect(c)
	require.Empty(t, e.send(c, laneCreate("B", "", "Hi", false)))
	l, ok := e.load(t, ctx, c).Latest["B"]
	require.True(t, ok, "lane B's response is kept")
	require.False(t, l.Running, "lane B's turn ended")
}

// A turn delivered again after its invocation died, whose client went
// away meanwhile (the error message's post fails with GoneException),
// settles its lane all the same, and is not delivered again.
func TestInterruptedTurnSettlesAfterClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("A", "", "Hi", false), time.Now()))
	msgs, reqID := e.takeOne(t)
	ok, err := e.load(t, ctx, c).Begin(ctx, "A", reqID, "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	e.mgmt.Disconnect(c)
	ev := fakesqs.Event(msgs...)
	ev.Records[0].Attributes["ApproximateReceiveCount"] = "2"
	out := e.invoke(ev).(events.SQSEventResponse)
	require.Empty(t, out.BatchItemFailures)
	require.False(t, e.load(t, ctx, c).Latest["A"].Running, "lane A's turn no longer runs")
}

// takeOne takes the one message queued, and its turn's request id.
func (e *env) takeOne(t *testing.T) ([]fakesqs.Message, string) {
	t.Helper()
	msgs := e.queue.Take()
	require.Len(t, msgs, 1)
	var queued struct {
		RequestID string `json:"request_id"`
	}
	require.NoError(t, json.Unmarshal([]byte(msgs[0].MessageBody), &queued))
	require.NotEmpty(t, queued.RequestID)
	return msgs, queued.RequestID
}

// completed is the record of a completed response id.
func completed(id string) *store.Record {
	return &store.Record{Response: &api.Response{ID: id, Object: "response", Status: api.StatusCompleted}}
}

// fullLanes gives connection c wsapi.MaxLanes lanes, each with a latest
// response: L0… and lane A's, resp_a1; it returns what reads c's item.
func fullLanes(t *testing.T, e *env, ctx context.Context, c string) func() *apigw.Connection {
	t.Helper()
	load := func() *apigw.Connection { return e.load(t, ctx, c) }
	setup := load()
	for i := range wsapi.MaxLanes - 1 {
		require.NoError(t, setup.PutLatest(ctx, fmt.Sprintf("L%d", i), completed(fmt.Sprintf("resp_l%d", i))))
	}
	require.NoError(t, setup.PutLatest(ctx, "A", completed("resp_a1")))
	return load
}

// A lane whose turn's running mark has lapsed (its Settle failed) is not
// running for Evict either: evicting its latest response removes the
// lane, which no longer counts towards wsapi.MaxLanes. (Evict kept it, as
// running, until its next turn.)
func TestEvictLapsedRunningLane(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Every mark lapses as soon as it is written.
	e.conns.TurnTimeout = time.Nanosecond
	ctx := tenantCtx(t, "acme")
	c := e.connect(keyA)
	load := fullLanes(t, e, ctx, c)
	ok, err := load().Begin(ctx, "A", "req_a2", "resp_run")
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, load().Latest["A"].Running, "lane A's mark has lapsed")

	require.NoError(t, load().Evict(ctx, "resp_a1"))
	_, kept := load().Latest["A"]
	require.False(t, kept, "lane A left")
	ok, err = load().Begin(ctx, "Q", "req_q", "resp_run")
	require.NoError(t, err, "lane A no longer counts")
	require.True(t, ok)
}

// A response.steer that targets a response still running on a lane gets
// response.steer.failed on that lane at once, as on the local server: the
// turn notes its response's id on the connection item as it begins.
func TestSteerWhileLaneRuns(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Text: "Slow answer.", Block: release, HoldAfterChunks: 1}
	})
	e := newEnvModel(t, tenant.Rule{Keys: tenant.NewKeyring(map[string]string{keyA: "acme"})}, false, fake)
	posted := make(chan struct{}, 1)
	e.mgmt.OnPost(func(string) {
		select {
		case posted <- struct{}{}:
		default:
		}
	})
	c := e.connect(keyA)
	e.invoke(routeEvent("MESSAGE", "$default", c, "", laneCreate("B", "", "Take your time.", false), time.Now()))
	queued := e.queue.Take()
	require.Len(t, queued, 1)
	body, err := json.Marshal(fakesqs.Event(queued...))
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() {
		_, err := e.h.Invoke(context.WithoutCancel(t.Context()), body)
		ran <- err
	}()
	// The response has begun once its response.created is posted.
	var running string
	for running == "" {
		select {
		case <-posted:
		case <-time.After(20 * time.Second):
			t.Fatal("the turn posted no response.created")
		}
		for _, m := range e.mgmt.Messages(c) {
			var ev struct {
				Type     string `json:"type"`
				Response struct {
					ID string `json:"id"`
				} `json:"response"`
			}
			require.NoError(t, json.Unmarshal(m, &ev))
			if ev.Type == "response.created" {
				running = ev.Response.ID
			}
		}
	}
	// The turn's next events may come meanwhile: the steer's answer is
	// the one response.steer.failed among them.
	msgs := e.answer(c, fmt.Sprintf(`{"type":"response.steer","previous_response_id":%q,"input":"Be brief."}`, running))
	close(release)
	require.NoError(t, <-ran)
	var answers []wsapi.SteerFailed
	for _, m := range msgs {
		var steer wsapi.SteerFailed
		require.NoError(t, json.Unmarshal(m, &steer))
		if steer.Type == wsapi.TypeSteerFailed {
			answers = append(answers, steer)
		}
	}
	require.Len(t, answers, 1)
	require.Equal(t, "B", answers[0].StreamID, "the steer of a running response is not on its lane")
}
