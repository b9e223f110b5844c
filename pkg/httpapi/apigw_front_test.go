package httpapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/dynamotest"
	"github.com/lambent/lambent/internal/testing/fakeapigw"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

// apigwFront is an API Gateway WebSocket API in front of the apigw
// handler, for a real client: each client connection is a connection id;
// the upgrade is the $connect event (its headers; a refusal refuses the
// upgrade), each client message a $default event, the close a
// $disconnect event. What the handler posts to a connection through the
// (fake) Management API is relayed to its socket, in the order posted; a
// DeleteConnection closes the socket. The (fake) SQS FIFO queue's
// messages go to the handler as the event source mapping sends them: one
// message per invocation, the messages of a message group one at a time
// in order, different groups at once.
type apigwFront struct {
	t     *testing.T
	h     *apigw.Handler
	mgmt  *fakeapigw.Server
	queue *fakesqs.Server
	srv   *httptest.Server

	// wg counts the connections' and the queue's goroutines.
	wg sync.WaitGroup

	mu sync.Mutex
	// posted wakes the relay of a connection.
	posted map[string]chan struct{}
	// groups holds the undelivered messages of each group that has a
	// worker delivering them; failures the batch item failures.
	groups   map[string][]fakesqs.Message
	failures []string
	// seen counts the messages delivered of each group.
	seen map[string]int
}

const apigwStage = "prod"

// newAPIGWFront starts an apigwFront whose handler runs the turns on
// g's engine, with the connections table on DynamoDB Local and the tenants of
// keys (API key → tenant).
func newAPIGWFront(t *testing.T, g *gateway, keys map[string]string) *apigwFront {
	t.Helper()
	f := &apigwFront{t: t, posted: map[string]chan struct{}{}, groups: map[string][]fakesqs.Message{}, seen: map[string]int{}}
	f.mgmt = fakeapigw.Start()
	t.Cleanup(f.mgmt.Close)
	f.queue = fakesqs.Start()
	t.Cleanup(f.queue.Close)
	f.mgmt.OnPost(func(id string) {
		// Called with mgmt locked: a signal only.
		f.mu.Lock()
		defer f.mu.Unlock()
		if ch := f.posted[id]; ch != nil {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	})

	db := dynamotest.Client(t)
	table := "lambent_ws_front_" + api.NewID("")[24:]
	conns, err := apigw.NewConnections(db, table)
	require.NoError(t, err)
	require.NoError(t, conns.Records().EnsureTable(t.Context()))
	t.Cleanup(func() {
		_, _ = db.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: aws.String(table)})
	})
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	sqsClient, err := awsjson.NewSQS(aws.Config{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(f.queue.URL)})
	require.NoError(t, err)
	// The handler's errors are shown when the test fails.
	var logs logbuf.Buffer
	f.h, err = apigw.New(apigw.Config{
		Service:     g.app.Engine,
		Connections: conns,
		Management:  apigatewaymanagementapi.New(apigatewaymanagementapi.Options{Region: "us-east-1", Credentials: creds}),
		Queue:       sqsClient,
		QueueURL:    f.queue.URL + "/123456789012/lambent-websocket.fifo",
		Tenants:     tenant.Rule{Keys: tenant.NewKeyring(keys)},
		Endpoint:    f.mgmt.URL + "/" + apigwStage,
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	require.NoError(t, err)

	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.srv.Close()
		// The connections' goroutines and the queue's workers are done
		// before the servers they call close.
		f.wg.Wait()
		if t.Failed() {
			t.Logf("the handler's errors:\n%s", logs.String())
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		require.Empty(t, f.failures, "batch item failures")
	})
	return f
}

// URL is the front's base URL (the API's stage URL, as http).
func (f *apigwFront) URL() string { return f.srv.URL + "/" + apigwStage }

// invoke sends ev through the Lambda entry point as its JSON.
func (f *apigwFront) invoke(ev any) (any, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return f.h.Invoke(context.Background(), b)
}

func (f *apigwFront) route(eventType, route, conn string, r *http.Request, body string, binary bool) events.APIGatewayWebsocketProxyRequest {
	ev := events.APIGatewayWebsocketProxyRequest{
		Body: body, IsBase64Encoded: binary,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{
			RouteKey: route, EventType: eventType, ConnectionID: conn, Stage: apigwStage,
			DomainName: "abc123.execute-api.us-east-1.amazonaws.com", APIID: "abc123",
			RequestID: api.NewID("req_"), MessageDirection: "IN",
		},
	}
	if r != nil {
		ev.Headers, ev.MultiValueHeaders = map[string]string{}, map[string][]string{}
		for k, v := range r.Header {
			ev.Headers[k] = v[len(v)-1]
			ev.MultiValueHeaders[k] = v
		}
	}
	return ev
}

func (f *apigwFront) serve(w http.ResponseWriter, r *http.Request) {
	f.wg.Add(1)
	defer f.wg.Done()
	id := api.NewID("")[30:] + "="
	out, err := f.invoke(f.route("CONNECT", "$connect", id, r, "", false))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if res := out.(events.APIGatewayProxyResponse); res.StatusCode != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(res.StatusCode)
		_, _ = io.WriteString(w, res.Body)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		_, _ = f.invoke(f.route("DISCONNECT", "$disconnect", id, nil, "", false))
		return
	}
	defer func() { _ = c.CloseNow() }()
	c.SetReadLimit(apigw.MaxMessage)
	posted := make(chan struct{}, 1)
	f.mu.Lock()
	f.posted[id] = posted
	f.mu.Unlock()
	f.mgmt.Connect(id)

	ctx, cancel := context.WithCancel(context.Background())
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		f.relay(ctx, c, id, posted)
	}()
	for {
		typ, data, err := c.Read(ctx)
		if err != nil {
			break
		}
		body, binary := string(data), typ == websocket.MessageBinary
		if binary {
			body = base64.StdEncoding.EncodeToString(data)
		}
		out, err := f.invoke(f.route("MESSAGE", "$default", id, nil, body, binary))
		if res, ok := out.(events.APIGatewayProxyResponse); err != nil || !ok || res.StatusCode != http.StatusOK {
			// What API Gateway tells the client of a failed integration.
			f.t.Errorf("$default of %s: %v %+v", id, err, out)
			_ = c.Write(ctx, websocket.MessageText, []byte(`{"message": "Internal server error"}`))
		}
		f.deliver()
	}
	f.mgmt.Disconnect(id)
	if _, err := f.invoke(f.route("DISCONNECT", "$disconnect", id, nil, "", false)); err != nil {
		f.t.Errorf("$disconnect of %s: %v", id, err)
	}
	cancel()
	<-relayed
	f.mu.Lock()
	delete(f.posted, id)
	f.mu.Unlock()
}

// relay writes what is posted to connection id to c, in order, and
// closes c once the connection is deleted.
func (f *apigwFront) relay(ctx context.Context, c *websocket.Conn, id string, posted <-chan struct{}) {
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-posted:
		}
		msgs := f.mgmt.Messages(id)
		for _, m := range msgs[sent:] {
			if err := c.Write(ctx, websocket.MessageText, m); err != nil {
				return
			}
		}
		sent = len(msgs)
		if slices.Contains(f.mgmt.Deleted(), id) {
			_ = c.Close(websocket.StatusGoingAway, "Going away")
			return
		}
	}
}

// deliver takes the queue's new messages and hands each to its group's
// worker, starting one for a group that has none.
func (f *apigwFront) deliver() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.queue.Take() {
		f.seen[m.MessageGroupID]++
		q, running := f.groups[m.MessageGroupID]
		f.groups[m.MessageGroupID] = append(q, m)
		if !running {
			f.wg.Add(1)
			go f.work(m.MessageGroupID)
		}
	}
}

// work delivers the messages of group one at a time, as SQS FIFO does,
// until the group has none left.
func (f *apigwFront) work(group string) {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		q := f.groups[group]
		if len(q) == 0 {
			delete(f.groups, group)
			f.mu.Unlock()
			return
		}
		m := q[0]
		f.mu.Unlock()
		out, err := f.invoke(fakesqs.Event(m))
		f.mu.Lock()
		f.groups[group] = f.groups[group][1:]
		if res, ok := out.(events.SQSEventResponse); err != nil || !ok || len(res.BatchItemFailures) > 0 {
			f.failures = append(f.failures, group+": "+strings.TrimSpace(m.MessageBody))
		}
		f.mu.Unlock()
	}
}

// The npm openai SDK's ResponsesWS through the AWS front door (API
// Gateway WebSocket API → the apigw handler, SQS FIFO per lane, the
// Management API back) as through the local server
// (TestWebSocketLanesOpenAINode): two lanes run in parallel, lane A's
// model call waiting for lane B's (their messages are in different
// message groups, delivered at once); store: false turns continue each
// their own lane from the connection's state in DynamoDB, a new lane
// forks from another's, an error envelope and a steer's
// response.steer.failed carry their lane, and a turn without stream_id
// none.
func TestAPIGatewayWebSocketLanesOpenAINode(t *testing.T) {
	dir := jsClients(t)
	model, waitedOut := overlapModel()
	g := newGateway(t, model, nil)
	f := newAPIGWFront(t, g, map[string]string{wsKeyA: "acme"})
	lanesOpenAINode(t, dir, f.URL(), waitedOut)

	// The seven response.create went to the queue (the steer was answered
	// by $default): lanes A, B and C each a message group of the
	// connection, the turn without stream_id the connection's own.
	f.mu.Lock()
	defer f.mu.Unlock()
	var counts []int
	var conn string
	for g, n := range f.seen {
		counts = append(counts, n)
		if !strings.Contains(g, "/") {
			conn = g
		}
	}
	slices.Sort(counts)
	require.Equal(t, []int{1, 1, 2, 3}, counts, "%v", f.seen)
	require.NotEmpty(t, conn, "%v", f.seen)
	for lane, n := range map[string]int{"lane-a": 3, "lane-b": 2, "lane-c": 1} {
		require.Equal(t, n, f.seen[conn+"/"+lane], "%v", f.seen)
	}
}
