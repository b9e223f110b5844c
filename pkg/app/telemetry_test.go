package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/ebtest"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/localinvoke"
	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/calculator"
)

// lambdaTrace is the trace header of the Lambda invocation the requests
// run in (aws-lambda-go keeps it in the invocation's context).
const lambdaTrace = "Root=1-6759e988-bd862e3fe1be46a994272793;Parent=63995c3f42cd8ad8;Sampled=1"

// recording is an HTTP endpoint that records requests (headers and
// bodies) before its handler (nil: 204) answers.
type recording struct {
	mu      sync.Mutex
	headers []http.Header
	bodies  []string
	next    http.Handler
}

func (r *recording) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.headers = append(r.headers, req.Header.Clone())
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	if r.next == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	r.next.ServeHTTP(w, req)
}

func (r *recording) got() ([]http.Header, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]http.Header(nil), r.headers...), append([]string(nil), r.bodies...)
}

// twoCalls is the model of these tests: calculator (a Lambda function) and
// fetch_url (in-process; its call fails, the SSRF guard refuses loopback)
// in one turn, then the answer.
func twoCalls() []fakellm.Turn {
	return []fakellm.Turn{
		{ToolCalls: []fakellm.ToolCall{
			{ID: "c1", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			{ID: "c2", Name: "fetch_url", Arguments: `{"url":"http://127.0.0.1:9/"}`},
		}, Usage: fakellm.Usage{PromptTokens: 5, CompletionTokens: 2}},
		{Text: "It is 42.", Usage: fakellm.Usage{PromptTokens: 9, CompletionTokens: 3}},
	}
}

const manifest = `{"tools":[{"name":"calculator","backing":{"type":"lambda","function":"CalculatorToolFunction"}},{"name":"fetch_url","backing":{"type":"local"}}]}`

const createBody = `{"input":"6*7, and fetch","tools":[{"type":"lambent:calculator"},{"type":"lambent:fetch_url"}]}`

// gateway is a built app served over HTTP, each request inside a Lambda
// invocation's trace.
type gateway struct {
	app *app.App
	url string
}

func newGateway(t *testing.T, fake *fakellm.Server, env map[string]string, log *slog.Logger, opts *app.Options) *gateway {
	t.Helper()
	vars := map[string]string{"LAMBENT_PROVIDER_URL": fake.URL, "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_LOG_LEVEL": "error", "LAMBENT_TOOLS": manifest}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := app.FromEnv(func(k string) string { return vars[k] })
	require.NoError(t, err)
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	a, err := app.Build(context.Background(), cfg, log, opts)
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		//lint:ignore SA1029 the key aws-lambda-go uses
		ctx := context.WithValue(r.Context(), "x-amzn-trace-id", lambdaTrace)
		a.Handler.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return &gateway{app: a, url: srv.URL}
}

func (g *gateway) create(t *testing.T) map[string]any {
	t.Helper()
	return g.post(t, createBody)
}

func (g *gateway) flush(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, g.app.Flush(ctx))
}

// toolLambdas serves the calculator function, the validator CheckReport
// (a report is valid with a score of at least 5) and the hook function
// AuditHook, whose payloads it keeps, on a local Lambda Invoke endpoint
// that AWS_ENDPOINT_URL_LAMBDA points the gateway at.
func toolLambdas(t *testing.T) (*recording, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var audits []string
	checkReport := tools.Hosted{Handler: func(_ context.Context, c tools.ToolCall) (string, error) {
		var in struct {
			Output struct {
				Score int `json:"score"`
			} `json:"output"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &in); err != nil {
			return "", err
		}
		if in.Output.Score < 5 {
			return `{"valid":false,"errors":["the score is below 5"]}`, nil
		}
		return `{"valid":true}`, nil
	}}
	srv := localinvoke.New(map[string]tools.Hosted{"CalculatorToolFunction": calculator.Tool(), "CheckReport": checkReport},
		localinvoke.WithFunction("AuditHook", func(_ context.Context, p []byte) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			audits = append(audits, string(p))
			return nil, nil
		}))
	rec := &recording{next: srv}
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", ts.URL)
	return rec, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), audits...)
	}
}

// outputShape is what a response says, without ids and times.
func outputShape(resp map[string]any) []string {
	var out []string
	for _, o := range resp["output"].([]any) {
		it := o.(map[string]any)
		s := it["type"].(string) + " " + it["status"].(string)
		if name, ok := it["name"].(string); ok {
			s += " " + name
		}
		if v, ok := it["output"].(string); ok && v != "" {
			s += " output=" + v
		}
		if e, ok := it["error"].(map[string]any); ok { // OpenAI's mcp_call error object
			s += " error=" + e["content"].([]any)[0].(map[string]any)["text"].(string)
		}
		if c, ok := it["content"].([]any); ok && len(c) > 0 {
			s += " " + c[0].(map[string]any)["text"].(string)
		}
		out = append(out, s)
	}
	return append(out, "status "+resp["status"].(string))
}

// Every part at once, as an operator configures it: hooks on an
// EventBridge bus (the real SDK client against a recording endpoint), a
// Lambda function invoked asynchronously and a webhook; EMF lines and
// /metrics; spans. One response with a Lambda-backed and an in-process
// hosted tool, one call failing.
func TestHooksMetricsAndTracesEndToEnd(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the app's cleanup
	fake := fakellm.New(twoCalls()...)
	defer fake.Close()
	lambdas, audits := toolLambdas(t)
	bus := ebtest.NewServer(t)
	webhook := &recording{}
	hookSrv := httptest.NewServer(webhook)
	defer hookSrv.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	emf := &logbuf.Buffer{}
	g := newGateway(t, fake, map[string]string{
		"LAMBENT_HOOKS":             "eventbridge:ops-bus, lambda:AuditHook, " + hookSrv.URL + "/hook",
		"LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(hookSrv.URL, "http://"),
		"LAMBENT_METRICS":           "emf,prometheus",
	}, nil, &app.Options{HookEventBridge: bus.Client, Tracer: tp, MetricsOutput: emf})

	resp := g.create(t)
	g.flush(t)
	require.Equal(t, "completed", resp["status"])
	assert.NotContains(t, resp["lambent"], "hook_errors", "no hook failed")
	shape := outputShape(resp)
	assert.Equal(t, "mcp_call completed calculator output=42", shape[0])
	assert.True(t, strings.HasPrefix(shape[1], "mcp_call failed fetch_url error="), shape[1])
	output := resp["output"].([]any)
	calcID, fetchID := output[0].(map[string]any)["id"].(string), output[1].(map[string]any)["id"].(string)

	// Each hook got both events of both calls, each call's in order.
	var fromBus []string
	for _, e := range bus.All() {
		assert.Equal(t, "ops-bus", e["EventBusName"])
		assert.Equal(t, "lambent", e["Source"])
		assert.Equal(t, e["DetailType"], eventType(t, e["Detail"].(string)))
		fromBus = append(fromBus, e["Detail"].(string))
	}
	_, fromWebhook := webhook.got()
	for name, events := range map[string][]string{"eventbridge": fromBus, "lambda": audits(), "webhook": fromWebhook} {
		require.Len(t, events, 4, name)
		byCall := map[string][]map[string]any{}
		for _, raw := range events {
			var ev map[string]any
			require.NoError(t, json.Unmarshal([]byte(raw), &ev))
			byCall[ev["call_id"].(string)] = append(byCall[ev["call_id"].(string)], ev)
		}
		require.Len(t, byCall[calcID], 2, name)
		call, result := byCall[calcID][0], byCall[calcID][1]
		assert.Equal(t, "lambent.tool.call", call["type"], name)
		assert.Equal(t, "lambent.tool.result", result["type"], name)
		for _, ev := range []map[string]any{call, result} {
			assert.Equal(t, resp["id"], ev["response_id"], name)
			assert.Equal(t, "default", ev["tenant"], name)
			assert.Equal(t, "hosted", ev["tool_kind"], name)
			assert.Equal(t, "calculator", ev["tool_name"], name)
			assert.Equal(t, `{"expression":"6*7"}`, ev["arguments"], name)
			assert.Equal(t, float64(1), ev["attempt"], name)
			assert.Equal(t, float64(1), ev["iteration"], name)
			_, err := time.Parse(time.RFC3339Nano, ev["timestamp"].(string))
			assert.NoError(t, err, name)
		}
		assert.NotContains(t, call, "output")
		assert.NotContains(t, call, "duration_ms")
		assert.Equal(t, "42", result["output"], name)
		assert.Contains(t, result, "duration_ms")
		fetchResult := byCall[fetchID][1]
		assert.Equal(t, "fetch_url", fetchResult["tool_name"])
		assert.Contains(t, fetchResult["error"], "not allowed", name)
		assert.NotContains(t, fetchResult, "output")
	}

	// EMF: a line per tool call and one for the response.
	lines := emf.Lines()
	require.Len(t, lines, 3)
	var last map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[2]), &last))
	assert.Equal(t, "completed", last["lambent.response.status"])
	assert.Equal(t, float64(14), last["gen_ai.usage.input_tokens"])

	// /metrics beside the API.
	mresp, err := http.Get(g.url + "/metrics")
	require.NoError(t, err)
	defer func() { _ = mresp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(mresp.Body)
	require.NoError(t, err)
	require.Contains(t, fams, "lambent_responses_total")
	assert.Equal(t, float64(1), fams["lambent_responses_total"].GetMetric()[0].GetCounter().GetValue())
	require.Contains(t, fams, "lambent_tool_errors_total")
	assert.Equal(t, "fetch_url", fams["lambent_tool_errors_total"].GetMetric()[0].GetLabel()[0].GetValue())
	assert.Equal(t, float64(0), fams["lambent_hook_events_dropped_total"].GetMetric()[0].GetCounter().GetValue())
	assert.Equal(t, float64(0), fams["lambent_hook_deliveries_failed_total"].GetMetric()[0].GetCounter().GetValue())

	// Spans: the response's continues the invocation's trace, and the
	// calculator Lambda was invoked with its tool call span's trace header.
	var calcSpan sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		assert.Equal(t, "6759e988bd862e3fe1be46a994272793", s.SpanContext().TraceID().String(), s.Name())
		if s.Name() == "execute_tool calculator" {
			calcSpan = s
		}
	}
	require.NotNil(t, calcSpan)
	headers, _ := lambdas.got()
	var toolHeaders []string
	for _, h := range headers {
		if h.Get("X-Amz-Invocation-Type") != "Event" { // not the hook's
			toolHeaders = append(toolHeaders, h.Get("X-Amzn-Trace-Id"))
		}
	}
	require.Len(t, toolHeaders, 1)
	toolHeader := toolHeaders[0]
	sc := calcSpan.SpanContext()
	assert.Equal(t, "Root=1-6759e988-bd862e3fe1be46a994272793;Parent="+sc.SpanID().String()+";Sampled=1", toolHeader)
}

func eventType(t *testing.T, detail string) string {
	t.Helper()
	var ev struct {
		Type string `json:"type"`
	}
	require.NoError(t, json.Unmarshal([]byte(detail), &ev))
	return ev.Type
}

// failures is a log handler that counts "hook delivery failed" records
// and closes seen once it has counted n; it keeps their err attributes.
type failures struct {
	mu   sync.Mutex
	n    int
	seen chan struct{}
	errs []string
}

func (f *failures) logged() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

func (f *failures) Enabled(context.Context, slog.Level) bool { return true }
func (f *failures) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f *failures) WithGroup(string) slog.Handler            { return f }
func (f *failures) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "hook delivery failed" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			f.errs = append(f.errs, a.Value.String())
		}
		return true
	})
	if f.n--; f.n == 0 {
		close(f.seen)
	}
	return nil
}

// A failing, a slow and a down hook never change the response: same
// output and status as without hooks. Failures known when the response
// ends are in lambent.hook_errors. No timing: the model's answer waits
// until the failures have been recorded (the log record follows the
// recording), and the slow hook holds its deliveries until the response
// is complete.
func TestFailingSlowOrDownHooksNeverChangeTheResponse(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the apps' cleanups
	toolLambdas(t)
	base := func() []string {
		fake := fakellm.New(twoCalls()...)
		defer fake.Close()
		return outputShape(newGateway(t, fake, nil, nil, nil).create(t))
	}()

	// Four events (two calls, each before and after) fail per webhook.
	const events = 4
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "hook broke", http.StatusInternalServerError)
	}))
	defer failing.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	// The operator's webhook URLs hold a token; tenants see neither them
	// nor the webhook's reply: the hook's kind and a code.
	const token = "?token=op-s3cret"
	for name, url := range map[string]string{"failing": failing.URL + "/hook" + token, "down": down + "/hook" + token} {
		host := strings.TrimPrefix(url, "http://")
		host = host[:strings.IndexByte(host, '/')]
		t.Run(name, func(t *testing.T) {
			f := &failures{n: events, seen: make(chan struct{})}
			turns := twoCalls()
			turns[1].Block = f.seen
			fake := fakellm.New(turns...)
			defer fake.Close()
			g := newGateway(t, fake, map[string]string{"LAMBENT_HOOKS": url, "LAMBENT_FETCH_ALLOW_HOSTS": host}, slog.New(f), nil)
			resp := g.create(t)
			assert.Equal(t, base, outputShape(resp))
			ext, ok := resp["lambent"].(map[string]any)
			require.True(t, ok, "hook errors reported: %v", resp)
			errs := ext["hook_errors"].([]any)
			require.Len(t, errs, events)
			code := map[string]string{"failing": "http_500", "down": "unreachable"}[name]
			for _, e := range errs {
				assert.Regexp(t, `^webhook hook: lambent\.tool\.(call|result) event for call mcp_\w+: `+code+`$`, e)
				for _, secret := range []string{host, "op-s3cret", "hook broke", "refused"} {
					assert.NotContains(t, e, secret)
				}
			}
			// The log lines have the detail, without the URL's token.
			logged := strings.Join(f.logged(), "\n")
			if name == "failing" {
				assert.Contains(t, logged, "500 Internal Server Error: hook broke")
			} else {
				assert.Contains(t, logged, "connection refused")
			}
			assert.Contains(t, logged, host+"/hook?…")
			assert.NotContains(t, logged, "op-s3cret")
			// The stored response keeps them.
			got, err := http.Get(g.url + "/v1/responses/" + resp["id"].(string))
			require.NoError(t, err)
			defer func() { _ = got.Body.Close() }()
			var stored map[string]any
			require.NoError(t, json.NewDecoder(got.Body).Decode(&stored))
			assert.Equal(t, resp["lambent"], stored["lambent"])
		})
	}

	t.Run("slow", func(t *testing.T) {
		release := make(chan struct{})
		slow := &recording{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusNoContent)
		})}
		srv := httptest.NewServer(slow)
		defer srv.Close()
		fake := fakellm.New(twoCalls()...)
		defer fake.Close()
		g := newGateway(t, fake, map[string]string{"LAMBENT_HOOKS": srv.URL, "LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(srv.URL, "http://")}, nil, nil)
		// The response completes while the hook holds its deliveries.
		resp := g.create(t)
		assert.Equal(t, base, outputShape(resp))
		assert.NotContains(t, resp["lambent"], "hook_errors")
		close(release)
		g.flush(t)
		_, bodies := slow.got()
		assert.Len(t, bodies, events)
	})
}

// In Lambda, the handler delivers the hook events of a request before it
// returns: Lambda freezes the process between invocations.
func TestLambdaDeliversHooksBeforeTheInvocationEnds(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	toolLambdas(t)
	hook := &recording{}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	fake := fakellm.New(twoCalls()...)
	defer fake.Close()
	g := newGateway(t, fake, map[string]string{"AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001", "LAMBENT_STORE": "memory",
		"LAMBENT_HOOKS": srv.URL, "LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(srv.URL, "http://")}, nil, nil)
	g.create(t)
	_, bodies := hook.got()
	assert.Len(t, bodies, 4, "delivered when the request returned, without a Flush")
}

// Nothing is on by default; bad settings fail at start-up.
func TestTelemetryConfiguration(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New()
	defer fake.Close()
	g := newGateway(t, fake, nil, nil, nil)
	resp, err := http.Get(g.url + "/metrics")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, "no /metrics unless LAMBENT_METRICS asks for it")

	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"LAMBENT_HOOKS": "sns:topic"}, "LAMBENT_HOOKS"},
		{map[string]string{"LAMBENT_METRICS": "statsd"}, "LAMBENT_METRICS"},
		{map[string]string{"LAMBENT_METRICS": "prometheus", "AWS_LAMBDA_RUNTIME_API": "127.0.0.1:9001"}, "in Lambda use emf"},
	} {
		_, err := app.FromEnv(func(k string) string { return c.env[k] })
		require.Error(t, err, c.env)
		assert.Contains(t, err.Error(), c.want)
	}
	cfg, err := app.FromEnv(func(k string) string {
		return map[string]string{"LAMBENT_HOOKS": "http://127.0.0.1:9/hook", "LAMBENT_PROVIDER_URL": fake.URL}[k]
	})
	require.NoError(t, err)
	_, err = app.Build(context.Background(), cfg, slog.New(slog.DiscardHandler), nil)
	require.Error(t, err, "the SSRF guard refuses a loopback webhook the allow-list does not name")
	assert.Contains(t, err.Error(), "loopback")
}

// hookEvents decodes each hook's events.
func hookEvents(t *testing.T, raw []string) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		require.NoError(t, json.Unmarshal([]byte(r), &out[i]))
	}
	return out
}

// Every call the server executes for a validated output reaches every
// hook — the output tool's calls with reflection (kind reflection) and
// without (kind output), submit, the validator — and each attempt's start
// and result (valid, code, errors, iterations, usage), through the real
// sinks: an EventBridge bus (the SDK client), a Lambda function invoked
// asynchronously and a webhook.
func TestHooksSeeValidatedOutputEndToEnd(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the app's cleanup
	const low, high = `{"score":2,"summary":"low"}`, `{"score":7,"summary":"fine"}`
	fake := fakellm.New(
		// With reflection: output, submit (the validator fails), output,
		// submit (valid).
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "report", Arguments: low}}, Usage: fakellm.Usage{PromptTokens: 3, CompletionTokens: 1}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "submit", Arguments: `{}`}}, Usage: fakellm.Usage{PromptTokens: 4, CompletionTokens: 1}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "report", Arguments: high}}, Usage: fakellm.Usage{PromptTokens: 5, CompletionTokens: 1}},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "submit", Arguments: `{}`}}, Usage: fakellm.Usage{PromptTokens: 6, CompletionTokens: 1}},
		// Without: one output call (valid).
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "report", Arguments: high}}, Usage: fakellm.Usage{PromptTokens: 3, CompletionTokens: 1}},
	)
	defer fake.Close()
	_, audits := toolLambdas(t)
	bus := ebtest.NewServer(t)
	webhook := &recording{}
	hookSrv := httptest.NewServer(webhook)
	defer hookSrv.Close()
	g := newGateway(t, fake, map[string]string{
		"LAMBENT_TOOLS":             `{"tools":[{"name":"check_report","description":"Checks a report.","parameters":{"type":"object","properties":{"output":{"type":"object"}},"required":["output"]},"backing":{"type":"lambda","function":"CheckReport"}}]}`,
		"LAMBENT_HOOKS":             "eventbridge:ops-bus, lambda:AuditHook, " + hookSrv.URL + "/hook",
		"LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(hookSrv.URL, "http://"),
	}, nil, &app.Options{HookEventBridge: bus.Client})

	output := func(extra string) string {
		return `{"input":"assess","tools":[{"type":"lambent:output","name":"report","parameters":{"type":"object","properties":{"score":{"type":"integer"},"summary":{"type":"string"}},"required":["score","summary"]},"validators":["lambent:check_report"]` + extra + `}]}`
	}
	var ids []string
	for _, body := range []string{output(`,"reflection":true`), output("")} {
		resp, err := http.Post(g.url+"/v1/responses", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		_ = resp.Body.Close()
		require.Equal(t, "completed", out["status"], out)
		ids = append(ids, out["id"].(string))
	}
	g.flush(t)

	var fromBus []string
	for _, e := range bus.All() {
		assert.Equal(t, e["DetailType"], eventType(t, e["Detail"].(string)))
		fromBus = append(fromBus, e["Detail"].(string))
	}
	_, fromWebhook := webhook.got()
	for name, raw := range map[string][]string{"eventbridge": fromBus, "lambda": audits(), "webhook": fromWebhook} {
		events := hookEvents(t, raw)
		// What each response's events are about, in a stable order.
		seen := map[string][]string{}
		results := map[string][]map[string]any{}
		for _, ev := range events {
			id := ev["response_id"].(string)
			s := fmt.Sprintf("%s attempt=%v", ev["type"], ev["attempt"])
			if k, ok := ev["tool_kind"]; ok {
				s += fmt.Sprintf(" %s %s", k, ev["tool_name"])
			} else {
				assert.NotContains(t, ev, "call_id", name)
			}
			seen[id] = append(seen[id], s)
			if ev["type"] == "lambent.attempt.result" {
				results[id] = append(results[id], ev)
			}
		}
		for _, l := range seen {
			sort.Strings(l)
		}
		assert.Equal(t, []string{
			"lambent.attempt.result attempt=1", "lambent.attempt.result attempt=2",
			"lambent.attempt.start attempt=1", "lambent.attempt.start attempt=2",
			"lambent.tool.call attempt=1 reflection report", "lambent.tool.call attempt=1 submit submit", "lambent.tool.call attempt=1 validator check_report",
			"lambent.tool.call attempt=2 reflection report", "lambent.tool.call attempt=2 submit submit", "lambent.tool.call attempt=2 validator check_report",
			"lambent.tool.result attempt=1 reflection report", "lambent.tool.result attempt=1 submit submit", "lambent.tool.result attempt=1 validator check_report",
			"lambent.tool.result attempt=2 reflection report", "lambent.tool.result attempt=2 submit submit", "lambent.tool.result attempt=2 validator check_report",
		}, seen[ids[0]], name)
		assert.Equal(t, []string{
			"lambent.attempt.result attempt=1", "lambent.attempt.start attempt=1",
			"lambent.tool.call attempt=1 output report", "lambent.tool.call attempt=1 validator check_report",
			"lambent.tool.result attempt=1 output report", "lambent.tool.result attempt=1 validator check_report",
		}, seen[ids[1]], name)
		require.Len(t, results[ids[0]], 2, name)
		sort.Slice(results[ids[0]], func(i, j int) bool {
			return results[ids[0]][i]["attempt"].(float64) < results[ids[0]][j]["attempt"].(float64)
		})
		failed, valid := results[ids[0]][0], results[ids[0]][1]
		assert.Equal(t, false, failed["valid"], name)
		assert.Equal(t, "validation_failed", failed["code"], name)
		assert.Equal(t, []any{"check_report: the score is below 5"}, failed["errors"], name)
		assert.Equal(t, float64(2), failed["iterations"], name)
		assert.Equal(t, float64(7), failed["usage"].(map[string]any)["input_tokens"], name)
		assert.Equal(t, float64(2), failed["iteration"], name, "the response's model calls so far")
		assert.Equal(t, true, valid["valid"], name)
		assert.NotContains(t, valid, "errors", name)
		assert.Equal(t, float64(11), valid["usage"].(map[string]any)["input_tokens"], name)
	}
}

// A model call's gen_ai.provider.name (its span, the token usage metric)
// names the provider the model is routed to, not the default provider:
// with Bedrock the default and test-model routed to the OpenAI-compatible
// API, the call is an OpenAI call.
func TestModelCallsNameTheProviderTheirModelIsRoutedTo(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	fake := fakellm.New(fakellm.Turn{Text: "hi", Usage: fakellm.Usage{PromptTokens: 5, CompletionTokens: 2}})
	defer fake.Close()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	g := newGateway(t, fake, map[string]string{"LAMBENT_TOOLS": "", "LAMBENT_METRICS": "prometheus",
		"LAMBENT_PROVIDER": "bedrock", "LAMBENT_MODEL_ROUTES": "test-model=openai"}, nil, &app.Options{Tracer: tp})
	require.Equal(t, "completed", g.post(t, `{"input":"hi"}`)["status"])

	var providers []string
	for _, s := range spans.Ended() {
		for _, kv := range s.Attributes() {
			if kv.Key == "gen_ai.provider.name" {
				providers = append(providers, s.Name()+": "+kv.Value.AsString())
			}
		}
	}
	assert.Equal(t, []string{"chat test-model: openai"}, providers)
	_, body := getMetrics(t, g.url, "")
	assert.True(t, strings.Contains(body, `gen_ai_client_token_usage_count{gen_ai_operation_name="chat",gen_ai_provider_name="openai",gen_ai_request_model="test-model",gen_ai_token_type="input"} 1`),
		"the token usage of the call is OpenAI's")
}
