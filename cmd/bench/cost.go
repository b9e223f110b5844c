package main

// The cost of an agentic response (`make bench`, -cost): one response
// running a loop of costTurns turns, each a model call asking for
// costCalls hosted calls (an MCP server's work tool), then the answer,
// through the gateway (app.Build) on a DynamoDB table of DynamoDB Local,
// with scripted latencies for the model and the tools. Three ways:
//
//   - streamed: POST /v1/responses with stream:true, one Lambda
//     invocation of the gateway;
//   - background: POST with background:true (the gateway's invocation
//     stores it, queued), then the worker's invocation (pkg/worker's
//     handler on the SQS message the engine queued) runs it;
//   - WebSocket: a turn of WebSocket mode on AWS (pkg/wsapi/apigw): the
//     $default invocation queues the message, the SQS invocation runs the
//     turn and posts its events through the Management API (a fake).
//
// For each, what AWS bills: DynamoDB requests and the capacity units
// DynamoDB Local answered (ReturnConsumedCapacity, by a metering
// middleware on the store's SDK client, internal/testing/ddbmeter), the
// bytes the response leaves stored, and Lambda GB-s at 512 MB: in all (the
// invocations' wall time, scripted waits included) and without the wait on
// the model and the tools (lambent.timing's model_ms and tool_ms taken
// off: what the gateway itself costs). Beside each, its reference in the
// same run: the floor of one write and one read of the final record, its
// size, and the scripted waits alone.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambent/lambent/internal/testing/ddbmeter"
	"github.com/lambent/lambent/internal/testing/dynamolocal"
	"github.com/lambent/lambent/internal/testing/fakeapigw"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/fakesqs"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/store/dynamodb"
	"github.com/lambent/lambent/pkg/worker"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

const (
	costTurns = 5
	costCalls = 3
	// lambdaGB is the memory the GB-s are counted at (512 MB).
	lambdaGB = 0.5
	// costAnswer is the model's last answer.
	costAnswer = "All queues are nominal: the reports of the fifteen checks agree, and nothing needs doing."
)

// costOptions configure the cost mode.
type costOptions struct {
	modelLatency, toolLatency time.Duration
	toolBytes                 int
	reps                      int
}

func (co *costOptions) register(fs *flag.FlagSet) {
	fs.DurationVar(&co.modelLatency, "model-latency", 300*time.Millisecond, "cost mode: the fake model's latency per call (before it answers)")
	fs.DurationVar(&co.toolLatency, "tool-latency", 200*time.Millisecond, "cost mode: each hosted tool call's latency")
	fs.IntVar(&co.toolBytes, "tool-bytes", 2000, "cost mode: each hosted tool call's output, in bytes")
	fs.IntVar(&co.reps, "reps", 3, "cost mode: runs of each way (times: the median; DynamoDB: the last run)")
}

// delayed returns a channel closed after d: a fake model turn's Block.
func delayed(d time.Duration) <-chan struct{} {
	ch := make(chan struct{})
	time.AfterFunc(d, func() { close(ch) })
	return ch
}

// loopModel scripts the fake model of an agentic loop: while fewer than
// turns assistant messages with tool calls precede, it asks for calls
// calls of the tool named like tool (its arguments args), else it answers
// answer; each reply waits latency first.
func loopModel(turns, calls int, tool, args, answer string, latency time.Duration) func(fakellm.Request) fakellm.Turn {
	return func(req fakellm.Request) fakellm.Turn {
		done := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) > 0 {
				done++
			}
		}
		t := fakellm.Turn{Usage: fakellm.Usage{PromptTokens: 400 + 500*done, CompletionTokens: 40}}
		if latency > 0 {
			t.Block = delayed(latency)
		}
		if done >= turns {
			t.Text = answer
			return t
		}
		name := tool
		for _, tl := range req.Tools {
			if strings.HasSuffix(tl.Function.Name, tool) {
				name = tl.Function.Name
			}
		}
		for i := range calls {
			t.ToolCalls = append(t.ToolCalls, fakellm.ToolCall{ID: fmt.Sprintf("call_%d_%d", done, i), Name: name, Arguments: args})
		}
		return t
	}
}

// captureQueue is the background queue of the cost mode: it keeps the
// jobs for the worker invocation the bench makes itself.
type captureQueue struct{ jobs chan engine.Job }

func (q *captureQueue) Enqueue(_ context.Context, job engine.Job) error {
	select {
	case q.jobs <- job:
		return nil
	default:
		return errors.New("bench: background queue full")
	}
}

// invocation is what one Lambda invocation cost.
type invocation struct {
	wall time.Duration
	db   ddbmeter.Figures
}

// wayResult is one way of running the response, over its invocations.
type wayResult struct {
	invocations []invocation
	// wait is the response's model_ms + tool_ms (lambent.timing).
	wait time.Duration
	// stored: the items and bytes the response left in the tables.
	items int
	bytes int64
	// floor is one write and one read of the final record in a table of
	// its own; floorBytes its stored size.
	floor      ddbmeter.Figures
	floorBytes int64
	id         string
}

func (w wayResult) wall() time.Duration {
	var d time.Duration
	for _, i := range w.invocations {
		d += i.wall
	}
	return d
}

func (w wayResult) db() ddbmeter.Figures {
	f := ddbmeter.Figures{Calls: map[string]int{}, Attempts: map[string]int{}}
	for _, i := range w.invocations {
		for k, v := range i.db.Calls {
			f.Calls[k] += v
		}
		f.WCU += i.db.WCU
		f.RCU += i.db.RCU
	}
	return f
}

// gbs is the GB-s of d at 512 MB.
func gbs(d time.Duration) float64 { return d.Seconds() * lambdaGB }

// costEnv is what the ways share.
type costEnv struct {
	co           costOptions
	meter        *ddbmeter.Meter
	client, raw  *ddb.Client // metered, and not (scans, the floor)
	table        string
	wsTable      string
	floorTable   string
	app          *app.App
	base         string
	queue        *captureQueue
	mcp          *mcptest.Server
	model        *fakellm.Server
	httpc        *http.Client
	log          *slog.Logger
	stopHTTP     func()
	floorMeter   *ddbmeter.Meter
	floorStore   *dynamodb.Store
	wsMgmt       *fakeapigw.Server
	wsQueue      *fakesqs.Server
	ws           *apigw.Handler
	wsConnection string
}

func ddbClient(opts ...func(*ddb.Options)) *ddb.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	endpoint := os.Getenv(dynamolocal.EnvEndpoint)
	return dynamodb.NewClient(cfg, append([]func(*ddb.Options){func(o *ddb.Options) { o.BaseEndpoint = aws.String(endpoint) }}, opts...)...)
}

// ensureDynamoDBLocal starts DynamoDB Local unless AWS_ENDPOINT_URL_DYNAMODB
// names an endpoint; stop stops what it started.
func ensureDynamoDBLocal() (stop func(), err error) {
	if os.Getenv(dynamolocal.EnvEndpoint) != "" {
		return func() {}, nil
	}
	stop, err = dynamolocal.Start()
	if err != nil {
		return nil, fmt.Errorf("DynamoDB Local: %w", err)
	}
	return stop, nil
}

func runCost(co costOptions) error {
	if co.reps < 1 {
		return errors.New("-reps must be positive")
	}
	stop, err := ensureDynamoDBLocal()
	if err != nil {
		return err
	}
	defer stop()
	e, err := newCostEnv(co)
	if err != nil {
		return err
	}
	defer e.close()

	fmt.Printf("Cost of an agentic response: %d turns of %d hosted calls each (an MCP server's tool: %s, %d bytes of output a call),\n",
		costTurns, costCalls, co.toolLatency, co.toolBytes)
	fmt.Printf("then the answer (%d model calls, %s each before answering); the gateway (app.Build) on DynamoDB Local,\n", costTurns+1, co.modelLatency)
	fmt.Printf("capacity units as DynamoDB Local answers them (ReturnConsumedCapacity); Lambda GB-s at %.0f MB. Median of %d runs.\n", lambdaGB*1024, co.reps)
	fmt.Printf("Reference (in parentheses): one PutItem and one GetItem of the final record; its stored size; the scripted waits alone.\n\n")

	ways := []struct {
		name string
		run  func(context.Context) (wayResult, error)
	}{
		{"streamed", e.streamed},
		{"background", e.background},
		{"WebSocket turn", e.websocket},
	}
	fmt.Printf("%-15s %5s %-28s %15s %15s %19s %19s %s\n", "", "invoc", "DynamoDB requests", "WCU", "RCU", "stored bytes", "GB-s all", "GB-s without the wait")
	for _, w := range ways {
		var runs []wayResult
		for range co.reps {
			r, err := w.run(context.Background())
			if err != nil {
				return fmt.Errorf("%s: %w", w.name, err)
			}
			runs = append(runs, r)
		}
		e.print(w.name, runs)
	}
	fmt.Println()
	return nil
}

func (e *costEnv) print(name string, runs []wayResult) {
	last := runs[len(runs)-1]
	walls := make([]time.Duration, len(runs))
	owns := make([]time.Duration, len(runs))
	for i, r := range runs {
		walls[i], owns[i] = r.wall(), max(r.wall()-r.wait, 0)
	}
	slices.Sort(walls)
	slices.Sort(owns)
	wall, own := walls[len(walls)/2], owns[len(owns)/2]
	script := time.Duration(costTurns+1)*e.co.modelLatency + time.Duration(costTurns)*e.co.toolLatency
	db := last.db()
	fmt.Printf("%-15s %5d %-28s %6.0f (%6.0f) %6.1f (%6.1f) %8d (%8d) %8.4f (%8.4f) %8.5f\n", name, len(last.invocations),
		fmt.Sprintf("%d (%d)", db.Requests(), last.floor.Requests()), db.WCU, last.floor.WCU, db.RCU, last.floor.RCU,
		last.bytes, last.floorBytes, gbs(wall), gbs(script), gbs(own))
	fmt.Printf("%-15s       %s; %d items stored; wall %s, of it the gateway's own %s (medians)\n", "", db.Ops(), last.items,
		wall.Round(time.Millisecond), own.Round(time.Millisecond))
}

func newCostEnv(co costOptions) (*costEnv, error) {
	ctx := context.Background()
	e := &costEnv{co: co, meter: ddbmeter.New(), floorMeter: ddbmeter.New(), queue: &captureQueue{jobs: make(chan engine.Job, 4)}}
	e.client, e.raw = ddbClient(e.meter.Options), ddbClient()
	suffix := api.NewID("")[24:]
	e.table, e.wsTable, e.floorTable = "lambent_cost_"+suffix, "lambent_cost_ws_"+suffix, "lambent_cost_floor_"+suffix
	st, err := dynamodb.New(e.client, dynamodb.Config{Table: e.table})
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	if err := st.EnsureTable(ctx); err != nil {
		return nil, err
	}
	if e.floorStore, err = dynamodb.New(ddbClient(e.floorMeter.Options), dynamodb.Config{Table: e.floorTable}); err != nil {
		return nil, err
	}
	if err := e.floorStore.EnsureTable(ctx); err != nil {
		return nil, err
	}
	e.mcp = mcptest.StartStreamable(mcptest.Options{Work: true})
	args := fmt.Sprintf(`{"ms":%d,"bytes":%d}`, co.toolLatency.Milliseconds(), co.toolBytes)
	e.model = fakellm.NewHandler(loopModel(costTurns, costCalls, "work", args, costAnswer, co.modelLatency))
	e.model.SetRecording(false)
	env := map[string]string{
		"LAMBENT_PROVIDER_URL":      e.model.URL,
		"LAMBENT_DEFAULT_MODEL":     "cost-model",
		"LAMBENT_STORE":             "memory", // replaced by the DynamoDB store below
		"LAMBENT_LOG_LEVEL":         "error",
		"LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(e.mcp.URL, "http://"),
	}
	cfg, err := app.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		return nil, err
	}
	e.log = app.Logger(cfg, io.Discard)
	if e.app, err = app.Build(ctx, cfg, e.log, &app.Options{Store: st, Queue: e.queue}); err != nil {
		return nil, err
	}
	addr, stop, err := serve(e.app.Handler)
	if err != nil {
		return nil, err
	}
	e.base, e.stopHTTP = "http://"+addr, stop
	e.httpc = &http.Client{Timeout: 5 * time.Minute}

	// WebSocket mode on AWS: its connections table, the Management API and
	// the FIFO queue (fakes).
	conns, err := apigw.NewConnections(e.client, e.wsTable)
	if err != nil {
		return nil, err
	}
	if err := conns.Records().EnsureTable(ctx); err != nil {
		return nil, err
	}
	e.wsMgmt, e.wsQueue = fakeapigw.Start(), fakesqs.Start()
	creds := credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")
	queue, err := awsjson.NewSQS(aws.Config{Region: "us-east-1", Credentials: creds, BaseEndpoint: aws.String(e.wsQueue.URL)})
	if err != nil {
		return nil, err
	}
	if e.ws, err = apigw.New(apigw.Config{
		Service:     e.app.Engine,
		Connections: conns,
		Management:  apigatewaymanagementapi.New(apigatewaymanagementapi.Options{Region: "us-east-1", Credentials: creds}),
		Queue:       queue,
		QueueURL:    e.wsQueue.URL + "/123456789012/lambent-websocket.fifo",
		SharedStore: true,
		Endpoint:    e.wsMgmt.URL + "/bench",
		Logger:      e.log,
	}); err != nil {
		return nil, err
	}
	ok = true
	return e, nil
}

func (e *costEnv) close() {
	if e.stopHTTP != nil {
		e.stopHTTP()
	}
	if e.app != nil {
		e.app.Close()
	}
	if e.wsMgmt != nil {
		e.wsMgmt.Close()
		e.wsQueue.Close()
	}
	if e.mcp != nil {
		e.mcp.Close()
		e.model.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range []string{e.table, e.wsTable, e.floorTable} {
		if t != "" {
			_, _ = e.raw.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(t)})
		}
	}
}

// request is the create request of the loop, with extra fields.
func (e *costEnv) request(extra string) string {
	return `{"input":"Check every queue and report.",` + extra +
		`"tools":[{"type":"mcp","server_label":"ops","server_url":"` + e.mcp.Endpoint + `","require_approval":"never"}]}`
}

// measure runs fn as one invocation: its wall time and DynamoDB calls.
func (e *costEnv) measure(fn func() error) (invocation, error) {
	before := e.meter.Snapshot()
	t0 := time.Now()
	err := fn()
	return invocation{wall: time.Since(t0), db: e.meter.Snapshot().Sub(before)}, err
}

// finish reads the final response (not metered), checks it and fills
// the result's wait, stored bytes and floor.
func (e *costEnv) finish(ctx context.Context, w *wayResult, resp []byte, tables ...string) error {
	var r struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Output  []json.RawMessage
		Lambent struct {
			Timing api.Timing `json:"timing"`
		} `json:"lambent"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return err
	}
	if r.Status != string(api.StatusCompleted) || !bytes.Contains(resp, []byte(costAnswer)) {
		return fmt.Errorf("response %s: status %s, %d output items: %.300s", r.ID, r.Status, len(r.Output), resp)
	}
	if want := costTurns*costCalls + 2; len(r.Output) < want {
		return fmt.Errorf("response %s: %d output items, want at least %d", r.ID, len(r.Output), want)
	}
	w.id = r.ID
	w.wait = time.Duration(r.Lambent.Timing.ModelMS+r.Lambent.Timing.ToolMS) * time.Millisecond
	for _, t := range append([]string{e.table}, tables...) {
		var keep func(map[string]types.AttributeValue) bool
		if t == e.table {
			keep = ofResponse(r.ID)
		}
		n, b, err := ddbmeter.Stored(ctx, e.raw, t, keep)
		if err != nil {
			return err
		}
		w.items += n
		w.bytes += b
	}
	return e.floor(ctx, w)
}

// ofResponse selects the items of response id in the store's table.
func ofResponse(id string) func(map[string]types.AttributeValue) bool {
	return func(it map[string]types.AttributeValue) bool {
		pk, _ := it["pk"].(*types.AttributeValueMemberS)
		return pk != nil && strings.HasSuffix(pk.Value, "#"+id)
	}
}

// floor stores the final record once under a new id in a table of its
// own and reads it once: the least storing the response can cost.
func (e *costEnv) floor(ctx context.Context, w *wayResult) error {
	rec, err := e.app.Store.Get(ctx, w.id)
	if err != nil {
		return err
	}
	rec.Response.ID = api.NewID(api.PrefixResponse)
	rec.Job, rec.Version = nil, 0
	e.floorMeter.Reset()
	if err := e.floorStore.Create(ctx, rec); err != nil {
		return err
	}
	if _, err := e.floorStore.Get(ctx, rec.Response.ID); err != nil {
		return err
	}
	w.floor = e.floorMeter.Snapshot()
	_, w.floorBytes, err = ddbmeter.Stored(ctx, e.raw, e.floorTable, ofResponse(rec.Response.ID))
	return err
}

func (e *costEnv) streamed(ctx context.Context) (wayResult, error) {
	var w wayResult
	var body []byte
	inv, err := e.measure(func() error {
		res, err := e.httpc.Post(e.base+"/v1/responses", "application/json", strings.NewReader(e.request(`"stream":true,`)))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		body, err = io.ReadAll(res.Body)
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("status %d: %s", res.StatusCode, body)
		}
		return err
	})
	if err != nil {
		return w, err
	}
	w.invocations = append(w.invocations, inv)
	evs, done, err := ssecheck.Parse(bytes.NewReader(body))
	if err != nil || !done {
		return w, fmt.Errorf("stream (done %v): %w", done, err)
	}
	var last struct {
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(evs[len(evs)-1].Data, &last); err != nil {
		return w, err
	}
	return w, e.finish(ctx, &w, last.Response)
}

func (e *costEnv) background(ctx context.Context) (wayResult, error) {
	var w wayResult
	inv, err := e.measure(func() error {
		res, err := e.httpc.Post(e.base+"/v1/responses", "application/json", strings.NewReader(e.request(`"background":true,`)))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", res.StatusCode, b)
		}
		return nil
	})
	if err != nil {
		return w, err
	}
	w.invocations = append(w.invocations, inv)
	// The worker's invocations: one per message the engine queues (a run
	// that hands off queues its continuation).
	h := &worker.Handler{Runner: e.app.Engine, Logger: e.log}
	for {
		var job engine.Job
		select {
		case job = <-e.queue.jobs:
		default:
		}
		if job.ResponseID == "" {
			break
		}
		msg, _ := json.Marshal(job)
		inv, err := e.measure(func() error {
			out := h.SQS(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: api.NewID(""), Body: string(msg)}}})
			if len(out.BatchItemFailures) > 0 {
				return errors.New("the worker failed the message")
			}
			return nil
		})
		if err != nil {
			return w, err
		}
		w.invocations = append(w.invocations, inv)
	}
	if len(w.invocations) < 2 {
		return w, errors.New("nothing was queued")
	}
	return w, e.getAndFinish(ctx, &w, e.lastCreated())
}

// lastCreated is the id of the newest response in the table (the
// background one the bench created), read without the meter.
func (e *costEnv) lastCreated() string {
	var id string
	var newest int64
	in := &ddb.ScanInput{TableName: aws.String(e.table), ConsistentRead: aws.Bool(true)}
	out, err := e.raw.Scan(context.Background(), in)
	if err != nil {
		return ""
	}
	for _, it := range out.Items {
		sk, _ := it["sk"].(*types.AttributeValueMemberS)
		pk, _ := it["pk"].(*types.AttributeValueMemberS)
		ca, _ := it["created_at"].(*types.AttributeValueMemberN)
		if sk == nil || sk.Value != "response" || pk == nil || ca == nil {
			continue
		}
		if v, _ := strconv.ParseInt(ca.Value, 10, 64); v >= newest {
			newest, id = v, pk.Value[strings.LastIndexByte(pk.Value, '#')+1:]
		}
	}
	return id
}

// getAndFinish reads the response over HTTP (not metered) and finishes.
func (e *costEnv) getAndFinish(ctx context.Context, w *wayResult, id string) error {
	res, err := e.httpc.Get(e.base + "/v1/responses/" + id)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	return e.finish(ctx, w, b)
}

func (e *costEnv) websocket(ctx context.Context) (wayResult, error) {
	var w wayResult
	if e.wsConnection == "" {
		// $connect, once: the connection serves many turns.
		id := api.NewID("")[30:] + "="
		ev := wsEvent("CONNECT", "$connect", id, "")
		if _, err := e.invokeWS(ctx, ev); err != nil {
			return w, err
		}
		e.wsMgmt.Connect(id)
		e.wsConnection = id
	}
	conn := e.wsConnection
	before := len(e.wsMgmt.Messages(conn))
	inv, err := e.measure(func() error {
		_, err := e.invokeWS(ctx, wsEvent("MESSAGE", "$default", conn, `{"type":"response.create",`+strings.TrimPrefix(e.request(""), "{")))
		return err
	})
	if err != nil {
		return w, err
	}
	w.invocations = append(w.invocations, inv)
	msgs := e.wsQueue.Take()
	if len(msgs) != 1 {
		return w, fmt.Errorf("%d messages queued, want 1", len(msgs))
	}
	inv, err = e.measure(func() error {
		out, err := e.invokeWS(ctx, fakesqs.Event(msgs...))
		if err != nil {
			return err
		}
		if r, ok := out.(events.SQSEventResponse); ok && len(r.BatchItemFailures) > 0 {
			return errors.New("the turn failed")
		}
		return nil
	})
	if err != nil {
		return w, err
	}
	w.invocations = append(w.invocations, inv)
	sent := e.wsMgmt.Messages(conn)[before:]
	if len(sent) == 0 {
		return w, errors.New("no event was posted")
	}
	var last struct {
		Type     string          `json:"type"`
		Response json.RawMessage `json:"response"`
	}
	if err := json.Unmarshal(sent[len(sent)-1], &last); err != nil {
		return w, err
	}
	if last.Type != api.EventResponseCompleted {
		return w, fmt.Errorf("the turn ended with %s: %.300s", last.Type, sent[len(sent)-1])
	}
	return w, e.finish(ctx, &w, last.Response, e.wsTable)
}

// wsEvent is an API Gateway WebSocket route event.
func wsEvent(eventType, route, conn, body string) events.APIGatewayWebsocketProxyRequest {
	return events.APIGatewayWebsocketProxyRequest{
		Body: body,
		RequestContext: events.APIGatewayWebsocketProxyRequestContext{
			RouteKey: route, EventType: eventType, ConnectionID: conn, Stage: "bench",
			DomainName: "abc123.execute-api.us-east-1.amazonaws.com", APIID: "abc123",
			RequestID: api.NewID("req_"), ConnectedAt: time.Now().UnixMilli(), MessageDirection: "IN",
		},
	}
}

// invokeWS sends ev through the WebSocket function's entry point.
func (e *costEnv) invokeWS(ctx context.Context, ev any) (any, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	return e.ws.Invoke(ctx, b)
}
