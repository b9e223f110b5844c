package telemetry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/telemetry/prom"
	"github.com/lambent/lambent/pkg/tools"
)

// operatorNames are the model and tool names of these tests' gateway.
var operatorNames = telemetry.Names{Models: []string{"test-model"}, Tools: []string{"t", "bad"}}

// lambdaHeader is a Lambda invocation's trace header, as aws-lambda-go
// puts it in the invocation's context.
const lambdaHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1;Lineage=a87bd80c:0"

func lambdaContext() context.Context {
	//lint:ignore SA1029 the key aws-lambda-go uses
	return context.WithValue(context.Background(), "x-amzn-trace-id", lambdaHeader)
}

func attrs(kvs []attribute.KeyValue) map[string]any {
	out := map[string]any{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.AsInterface()
	}
	return out
}

// The response, each model call and each tool call get a span, named and
// attributed after the GenAI conventions, in one trace that continues the
// Lambda invocation's; each tool executor runs inside its call's span
// (which the tool Lambda's trace header carries on).
func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	var mu sync.Mutex
	inside := map[string]trace.SpanContext{}
	cat := catalog{seen: func(ctx context.Context, c tools.ToolCall) {
		mu.Lock()
		defer mu.Unlock()
		inside[c.Name] = trace.SpanContextFromContext(ctx)
	}}
	e := newEngine(t, toolLoop{batches: [][]api.Item{{toolCall("c1", "t", `{"x":1}`), toolCall("c2", "bad", `{}`)}}}, cat,
		telemetry.New(telemetry.Config{Tracer: tp, ProviderName: "openai"}))
	w := &capture{}
	require.NoError(t, e.CreateResponse(lambdaContext(), request(t, `{"input":"go","tools":[{"type":"lambent:t"},{"type":"lambent:bad"}]}`), w))
	require.Equal(t, api.StatusCompleted, w.resp.Status)

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
		byName[s.Name()] = s
	}
	sort.Strings(names)
	assert.Equal(t, []string{"chat test-model", "chat test-model", "execute_tool bad", "execute_tool t", "invoke_agent lambent"}, names)

	root := byName["invoke_agent lambent"]
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", root.SpanContext().TraceID().String(), "the Lambda invocation's trace")
	assert.Equal(t, "53995c3f42cd8ad8", root.Parent().SpanID().String())
	assert.True(t, root.Parent().IsRemote())
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "lambent", "gen_ai.request.model": "test-model",
		"gen_ai.response.id": w.resp.ID, "lambent.response.status": "completed", "lambent.response.turns": int64(2),
		"gen_ai.usage.input_tokens": int64(22), "gen_ai.usage.output_tokens": int64(5),
	}, attrs(root.Attributes()))
	for _, s := range spans {
		if s != root {
			assert.Equal(t, root.SpanContext().SpanID(), s.Parent().SpanID(), "%s is a child of the response", s.Name())
		}
	}

	var chats []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "chat test-model" {
			chats = append(chats, s)
		}
	}
	sort.Slice(chats, func(i, j int) bool { return chats[i].StartTime().Before(chats[j].StartTime()) })
	assert.Equal(t, trace.SpanKindClient, chats[0].SpanKind())
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model", "lambent.iteration": int64(1),
		"gen_ai.usage.input_tokens": int64(10), "gen_ai.usage.output_tokens": int64(2), "gen_ai.response.finish_reasons": []string{"tool_calls"},
	}, attrs(chats[0].Attributes()))

	good, bad := byName["execute_tool t"], byName["execute_tool bad"]
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t", "gen_ai.tool.call.id": w.resp.Output[0].ID, "gen_ai.tool.type": "extension",
		"lambent.tool.kind": "hosted", "lambent.attempt": int64(1), "lambent.iteration": int64(1),
	}, attrs(good.Attributes()))
	assert.Equal(t, codes.Unset, good.Status().Code)
	assert.Equal(t, "tool_error", attrs(bad.Attributes())["error.type"])
	assert.Equal(t, codes.Error, bad.Status().Code)
	assert.Equal(t, "Error: backend down", bad.Status().Description)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, good.SpanContext(), inside["t"], "the executor runs in its call's span")
	assert.Equal(t, bad.SpanContext(), inside["bad"])
}

// emfLine is one parsed EMF line.
type emfLine map[string]any

// checkEMF checks a line against the Embedded Metric Format
// specification: an _aws member with a millisecond Timestamp and
// CloudWatchMetrics directives, each with a Namespace, Dimensions whose
// every name is a string member of the line, and Metrics whose every name
// is a numeric member.
func checkEMF(t *testing.T, l emfLine) {
	t.Helper()
	meta, ok := l["_aws"].(map[string]any)
	require.True(t, ok, "no _aws member: %v", l)
	ts, ok := meta["Timestamp"].(float64)
	require.True(t, ok && ts > 1e12, "Timestamp in milliseconds: %v", meta["Timestamp"])
	dirs, ok := meta["CloudWatchMetrics"].([]any)
	require.True(t, ok && len(dirs) > 0)
	for _, d := range dirs {
		dir := d.(map[string]any)
		assert.Equal(t, "Lambent", dir["Namespace"])
		dimSets := dir["Dimensions"].([]any)
		require.NotEmpty(t, dimSets)
		for _, set := range dimSets {
			names := set.([]any)
			require.LessOrEqual(t, len(names), 30)
			for _, n := range names {
				_, isString := l[n.(string)].(string)
				assert.True(t, isString, "dimension %s is a string member", n)
			}
		}
		for _, m := range dir["Metrics"].([]any) {
			metric := m.(map[string]any)
			_, isNumber := l[metric["Name"].(string)].(float64)
			assert.True(t, isNumber, "metric %s is a numeric member", metric["Name"])
			assert.Contains(t, []any{"Seconds", "Count"}, metric["Unit"])
		}
	}
}

// One EMF line per tool call (duration and errors by tool) and one per
// response (duration, turns, attempts, tokens by model and by status).
func TestEMFLines(t *testing.T) {
	var buf bytes.Buffer
	e := newEngine(t, toolLoop{batches: [][]api.Item{{toolCall("c1", "t", `{}`), toolCall("c2", "bad", `{}`)}}}, catalog{},
		telemetry.New(telemetry.Config{EMF: telemetry.NewEMF(&buf, "", nil), Names: operatorNames}))
	w := &capture{}
	require.NoError(t, e.CreateResponse(context.Background(), request(t, `{"input":"go","tools":[{"type":"lambent:t"},{"type":"lambent:bad"}]}`), w))

	var lines []emfLine
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var l emfLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		checkEMF(t, l)
		lines = append(lines, l)
	}
	require.Len(t, lines, 3)
	byTool := map[any]emfLine{}
	for _, l := range lines[:2] {
		assert.Equal(t, "execute_tool", l["gen_ai.operation.name"])
		byTool[l["gen_ai.tool.name"]] = l
	}
	assert.Equal(t, float64(0), byTool["t"]["lambent.tool.errors"])
	assert.Equal(t, float64(1), byTool["bad"]["lambent.tool.errors"])
	assert.Equal(t, "tool_error", byTool["bad"]["error.type"])
	// Calls the server executes are mcp_call items: their id is the call's.
	require.Equal(t, "bad", w.resp.Output[1].Name)
	assert.Equal(t, w.resp.Output[1].ID, byTool["bad"]["gen_ai.tool.call.id"])
	assert.Equal(t, w.resp.ID, byTool["t"]["gen_ai.response.id"])
	assert.Equal(t, "hosted", byTool["t"]["lambent.tool.kind"])

	r := lines[2]
	assert.Equal(t, "invoke_agent", r["gen_ai.operation.name"])
	assert.Equal(t, "test-model", r["gen_ai.request.model"])
	assert.Equal(t, "completed", r["lambent.response.status"])
	assert.Equal(t, float64(2), r["lambent.response.turns"])
	assert.Equal(t, float64(1), r["lambent.response.attempts"])
	assert.Equal(t, float64(22), r["gen_ai.usage.input_tokens"])
	assert.Equal(t, float64(5), r["gen_ai.usage.output_tokens"])
	assert.Equal(t, w.resp.ID, r["gen_ai.response.id"])
}

// scrape reads the families an endpoint serves.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// sample finds the metric of fam whose labels include want.
func sample(t *testing.T, fam *dto.MetricFamily, want map[string]string) *dto.Metric {
	t.Helper()
	require.NotNil(t, fam)
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	t.Fatalf("%s has no sample with %v", fam.GetName(), want)
	return nil
}

// The Prometheus registry holds the GenAI conventions' histograms and
// Lambent's counters, served in the text format.
func TestPrometheusMetrics(t *testing.T) {
	p := prom.New()
	e := newEngine(t, toolLoop{batches: [][]api.Item{{toolCall("c1", "t", `{}`), toolCall("c2", "bad", `{}`)}, {toolCall("c3", "t", `{}`)}}}, catalog{},
		telemetry.New(telemetry.Config{Recorders: []telemetry.Recorder{p}, ProviderName: "openai", Names: operatorNames}))
	for range 2 {
		require.NoError(t, e.CreateResponse(context.Background(), request(t, `{"input":"go","tools":[{"type":"lambent:t"},{"type":"lambent:bad"}]}`), &capture{}))
	}
	fams := scrape(t, p.Handler())
	dur := fams["gen_ai_client_operation_duration_seconds"]
	assert.Equal(t, uint64(4), sample(t, dur, map[string]string{"gen_ai_operation_name": "execute_tool", "gen_ai_tool_name": "t", "error_type": ""}).GetHistogram().GetSampleCount())
	assert.Equal(t, uint64(2), sample(t, dur, map[string]string{"gen_ai_operation_name": "execute_tool", "gen_ai_tool_name": "bad", "error_type": "tool_error"}).GetHistogram().GetSampleCount())
	assert.Equal(t, uint64(6), sample(t, dur, map[string]string{"gen_ai_operation_name": "chat", "gen_ai_request_model": "test-model"}).GetHistogram().GetSampleCount())
	assert.Equal(t, uint64(2), sample(t, dur, map[string]string{"gen_ai_operation_name": "invoke_agent", "gen_ai_request_model": "test-model"}).GetHistogram().GetSampleCount())
	tokens := fams["gen_ai_client_token_usage"]
	in := sample(t, tokens, map[string]string{"gen_ai_token_type": "input", "gen_ai_provider_name": "openai", "gen_ai_request_model": "test-model"}).GetHistogram()
	assert.Equal(t, uint64(6), in.GetSampleCount())
	assert.Equal(t, float64(2*(10+10+12)), in.GetSampleSum())
	assert.Equal(t, float64(2), sample(t, fams["lambent_tool_errors_total"], map[string]string{"gen_ai_tool_name": "bad", "lambent_tool_kind": "hosted"}).GetCounter().GetValue())
	assert.Equal(t, float64(2), sample(t, fams["lambent_responses_total"], map[string]string{"lambent_response_status": "completed"}).GetCounter().GetValue())
	turns := sample(t, fams["lambent_response_turns"], nil).GetHistogram()
	assert.Equal(t, float64(6), turns.GetSampleSum())
	assert.NotNil(t, fams["go_goroutines"], "runtime metrics")
}

func TestXRayPropagator(t *testing.T) {
	ctx := telemetry.XRay{}.Extract(context.Background(), propagation.MapCarrier{telemetry.XRayHeader: lambdaHeader})
	sc := trace.SpanContextFromContext(ctx)
	require.True(t, sc.IsValid())
	assert.True(t, sc.IsRemote())
	assert.True(t, sc.IsSampled())
	assert.Equal(t, "5759e988bd862e3fe1be46a994272793", sc.TraceID().String())
	assert.Equal(t, "53995c3f42cd8ad8", sc.SpanID().String())

	out := propagation.MapCarrier{}
	telemetry.XRay{}.Inject(ctx, out)
	assert.Equal(t, "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1", out[telemetry.XRayHeader])

	for _, bad := range []string{"", "Root=1-5759e988-bd862e3fe1be46a994272793", "Root=2-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8", "Root=1-5759e988-bd862e3fe1be46a99427279z;Parent=53995c3f42cd8ad8",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=xyz"} {
		ctx := telemetry.XRay{}.Extract(context.Background(), propagation.MapCarrier{telemetry.XRayHeader: bad})
		assert.False(t, trace.SpanContextFromContext(ctx).IsValid(), bad)
	}
	unsampled := telemetry.XRay{}.Extract(context.Background(), propagation.MapCarrier{telemetry.XRayHeader: "Parent=53995c3f42cd8ad8;Sampled=0;Root=1-5759e988-bd862e3fe1be46a994272793"})
	assert.False(t, trace.SpanContextFromContext(unsampled).IsSampled())
	assert.True(t, trace.SpanContextFromContext(unsampled).IsValid(), "any order")
}

// headers records the trace headers of the requests it serves.
type headers struct {
	mu  sync.Mutex
	got []http.Header
}

func (h *headers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.got = append(h.got, r.Header.Clone())
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"output":"ok","is_error":false}`))
}

func (h *headers) last() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.got[len(h.got)-1]
}

// MCP servers' clients (Transport) send the current span as W3C trace
// context and X-Ray; without a span, the Lambda invocation's header as it
// came; without either, nothing.
func TestTransportPropagates(t *testing.T) {
	h := &headers{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := &http.Client{Transport: telemetry.Transport(srv.Client().Transport)}
	get := func(ctx context.Context) http.Header {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return h.last()
	}
	plain := get(context.Background())
	assert.Empty(t, plain.Get("Traceparent"))
	assert.Empty(t, plain.Get(telemetry.XRayHeader))

	assert.Equal(t, lambdaHeader, get(lambdaContext()).Get(telemetry.XRayHeader))

	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := tp.Tracer("test").Start(lambdaContext(), "mcp call")
	defer span.End()
	sc := span.SpanContext()
	got := get(ctx)
	assert.Equal(t, "00-"+sc.TraceID().String()+"-"+sc.SpanID().String()+"-01", got.Get("Traceparent"))
	tid := sc.TraceID().String()
	assert.Equal(t, "Root=1-"+tid[:8]+"-"+tid[8:]+";Parent="+sc.SpanID().String()+";Sampled=1", got.Get(telemetry.XRayHeader))
}

// Tool Lambdas: the Lambda client sets X-Amzn-Trace-Id from the span of
// the Invoke's context (the tool call's), and leaves it alone without one.
func TestAWSTraceHeader(t *testing.T) {
	h := &headers{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client, err := awsjson.NewLambda(aws.Config{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", Retryer: func() aws.Retryer { return aws.NopRetryer{} },
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), HTTPClient: srv.Client()},
		awsjson.WithTraceHeader(telemetry.AWSTraceHeader))
	require.NoError(t, err)
	invoke := func(ctx context.Context) http.Header {
		_, err := client.Invoke(ctx, awsjson.InvokeInput{FunctionName: "CalculatorToolFunction", Payload: []byte(`{}`)})
		require.NoError(t, err)
		return h.last()
	}
	assert.Empty(t, invoke(context.Background()).Get(telemetry.XRayHeader))
	tp := sdktrace.NewTracerProvider()
	defer func() { _ = tp.Shutdown(context.Background()) }()
	ctx, span := tp.Tracer("test").Start(context.Background(), "execute_tool calculator")
	defer span.End()
	sc := span.SpanContext()
	tid := sc.TraceID().String()
	assert.Equal(t, "Root=1-"+tid[:8]+"-"+tid[8:]+";Parent="+sc.SpanID().String()+";Sampled=1", invoke(ctx).Get(telemetry.XRayHeader))
}

// Each attempt of a validated output is an event on the response's span:
// its start, and its result with the verdict.
func TestAttemptSpanEvents(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	e := newEngine(t, toolLoop{}, nil, telemetry.New(telemetry.Config{Tracer: tp}))
	w := &capture{}
	body := `{"input":"go","lambent":{"max_attempts":2},"text":{"format":{"type":"json_schema","name":"n","schema":{"type":"integer"}}}}`
	require.NoError(t, e.CreateResponse(context.Background(), request(t, body), w))
	require.Equal(t, api.StatusFailed, w.resp.Status, "the model answers \"done\", never an integer")
	var root sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "invoke_agent lambent" {
			root = s
		}
	}
	require.NotNil(t, root)
	var got []string
	for _, ev := range root.Events() {
		got = append(got, fmt.Sprint(ev.Name, " ", attrs(ev.Attributes)))
	}
	assert.Equal(t, []string{
		"lambent.attempt.start map[lambent.attempt:1]",
		"lambent.attempt.result map[lambent.attempt:1 lambent.attempt.code:validation_failed lambent.attempt.iterations:1 lambent.attempt.valid:false]",
		"lambent.attempt.start map[lambent.attempt:2]",
		"lambent.attempt.result map[lambent.attempt:2 lambent.attempt.code:validation_failed lambent.attempt.iterations:1 lambent.attempt.valid:false]",
	}, got)
}

// A background response's loop runs again in each invocation that
// continues it (StartResponse again), its response holding the usage of
// the invocations before: each invocation's EMF line and response span
// count the tokens of its own model calls, so that their sum is the
// response's (the line of every invocation counted all the earlier ones'
// again).
func TestContinuedResponseCountsEachInvocationsTokensOnce(t *testing.T) {
	var buf bytes.Buffer
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	o := telemetry.New(telemetry.Config{EMF: telemetry.NewEMF(&buf, "", nil), Tracer: tp, Names: operatorNames})
	resp := &api.Response{ID: "resp_1", Model: "test-model", Usage: &api.Usage{}}
	invocation := func(in, out int, end *engine.ResponseEnd) {
		ctx, ro := o.StartResponse(context.Background(), resp)
		resp.Usage.Add(api.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out})
		ro.EndResponse(ctx, resp, end)
	}
	invocation(20, 2, &engine.ResponseEnd{Status: api.StatusIncomplete, Reason: api.ReasonDeadline, Turns: 2, Attempts: 1})
	invocation(30, 3, &engine.ResponseEnd{Status: api.StatusCompleted, Turns: 5, Attempts: 1})

	var input, output float64
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var l emfLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		input += l["gen_ai.usage.input_tokens"].(float64)
		output += l["gen_ai.usage.output_tokens"].(float64)
	}
	assert.Equal(t, []float64{50, 5}, []float64{input, output}, "the response's tokens, once")
	var spanInput, spanOutput int64
	for _, s := range rec.Ended() {
		a := attrs(s.Attributes())
		spanInput += a["gen_ai.usage.input_tokens"].(int64)
		spanOutput += a["gen_ai.usage.output_tokens"].(int64)
	}
	assert.Equal(t, []int64{50, 5}, []int64{spanInput, spanOutput}, "the response's tokens, once")
}

// The summarising call of server-side compaction is a chat span like the
// model call it precedes, marked lambent.compaction.
func TestCompactionSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	o := telemetry.New(telemetry.Config{Tracer: tp, ProviderName: "openai"})
	resp := &api.Response{ID: api.NewID("resp_"), Model: "test-model"}
	ctx, ro := o.StartResponse(context.Background(), resp)
	m := &engine.ModelCall{ResponseID: resp.ID, Model: "test-model", Iteration: 1, Compaction: true, Start: time.Now()}
	ro.EndModelCall(ro.StartModelCall(ctx, m), m)
	spans := rec.Ended()
	require.Len(t, spans, 1)
	assert.Equal(t, "chat test-model", spans[0].Name())
	assert.Equal(t, true, attrs(spans[0].Attributes())["lambent.compaction"])
}
