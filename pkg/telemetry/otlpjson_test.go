package telemetry

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lambent/lambent/internal/testing/conncount"
)

// collectorStub is an OTLP/HTTP traces endpoint that keeps what it is sent.
type collectorStub struct {
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
	status int
}

func (c *collectorStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, b)
	c.hdrs = append(c.hdrs, r.Header.Clone())
	status := c.status
	c.mu.Unlock()
	if status != 0 {
		http.Error(w, `{"code":3,"message":"bad spans"}`, status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{}`)
}

// decodeOTLP reads an OTLP/JSON body with the protobuf definitions of OTLP
// (opentelemetry-proto), strictly: OTLP/JSON writes ids in hex where
// protobuf's JSON mapping has base64, so they are turned into base64 first.
func decodeOTLP(t *testing.T, body []byte) *collector.ExportTraceServiceRequest {
	t.Helper()
	var raw map[string]any
	require.NoError(t, json.Unmarshal(body, &raw))
	var fix func(v any)
	fix = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					b, err := hex.DecodeString(s)
					require.NoError(t, err, "%s %q is not hex", k, s)
					v[k] = base64.StdEncoding.EncodeToString(b)
					continue
				}
				fix(x)
			}
		case []any:
			for _, x := range v {
				fix(x)
			}
		}
	}
	fix(raw)
	fixed, err := json.Marshal(raw)
	require.NoError(t, err)
	var req collector.ExportTraceServiceRequest
	require.NoError(t, protojson.UnmarshalOptions{DiscardUnknown: false}.Unmarshal(fixed, &req), "%s", body)
	return &req
}

// Spans reach an OTLP/HTTP endpoint in OTLP's JSON encoding, complete:
// what the OpenTelemetry Go exporter sent, read back with OTLP's own
// protobuf definitions.
func TestOTLPJSONExport(t *testing.T) {
	t.Parallel()
	stub := &collectorStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%201, x-team = ops", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "2500"}
	exp, err := newOTLPExporter(srv.URL+"/v1/traces", func(k string) string { return env[k] }, srv.Client())
	require.NoError(t, err)
	assert.Equal(t, int64(2500), exp.timeout.Milliseconds())
	res := resource.NewSchemaless(attribute.String("service.name", "lambent"))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	tr := tp.Tracer("lambent/test", trace.WithInstrumentationVersion("1.2.3"))

	remote := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled, Remote: true})
	ctx, parent := tr.Start(trace.ContextWithRemoteSpanContext(context.Background(), remote), "invoke_agent lambent", trace.WithSpanKind(trace.SpanKindServer))
	_, child := tr.Start(ctx, "execute_tool calc", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("gen_ai.tool.name", "calc"), attribute.Int64("n", 1<<40), attribute.Bool("ok", false),
			attribute.Float64("f", 0.5), attribute.StringSlice("ss", []string{"a", "b"}), attribute.Int64Slice("is", []int64{1, 2})))
	child.AddEvent("lambent.attempt.result", trace.WithAttributes(attribute.Int("lambent.attempt", 2)))
	child.SetStatus(codes.Error, "division by zero")
	child.End()
	parent.SetStatus(codes.Ok, "")
	parent.End()
	require.NoError(t, tp.Shutdown(context.Background()))

	require.Len(t, stub.bodies, 2)
	h := stub.hdrs[0]
	assert.Equal(t, "application/json", h.Get("Content-Type"))
	assert.Equal(t, "k 1", h.Get("X-Api-Key"))
	assert.Equal(t, "ops", h.Get("X-Team"))

	got := decodeOTLP(t, stub.bodies[0])
	require.Len(t, got.ResourceSpans, 1)
	rs := got.ResourceSpans[0]
	assert.Equal(t, "service.name", rs.Resource.Attributes[0].Key)
	assert.Equal(t, "lambent", rs.Resource.Attributes[0].Value.GetStringValue())
	require.Len(t, rs.ScopeSpans, 1)
	assert.Equal(t, "lambent/test", rs.ScopeSpans[0].Scope.Name)
	assert.Equal(t, "1.2.3", rs.ScopeSpans[0].Scope.Version)
	require.Len(t, rs.ScopeSpans[0].Spans, 1)
	s := rs.ScopeSpans[0].Spans[0]
	sc := child.SpanContext()
	assert.Equal(t, sc.TraceID().String(), hex.EncodeToString(s.TraceId))
	assert.Equal(t, remote.TraceID().String(), hex.EncodeToString(s.TraceId), "continues the remote trace")
	assert.Equal(t, sc.SpanID().String(), hex.EncodeToString(s.SpanId))
	assert.Equal(t, parent.SpanContext().SpanID().String(), hex.EncodeToString(s.ParentSpanId))
	assert.Equal(t, "execute_tool calc", s.Name)
	assert.Equal(t, tracepb.Span_SPAN_KIND_INTERNAL, s.Kind)
	assert.Positive(t, s.StartTimeUnixNano)
	assert.GreaterOrEqual(t, s.EndTimeUnixNano, s.StartTimeUnixNano)
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, s.Status.Code)
	assert.Equal(t, "division by zero", s.Status.Message)
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[kv.Key] = protojson.Format(kv.Value)
	}
	assert.JSONEq(t, `{"stringValue":"calc"}`, attrs["gen_ai.tool.name"])
	assert.JSONEq(t, `{"intValue":"1099511627776"}`, attrs["n"])
	assert.JSONEq(t, `{"boolValue":false}`, attrs["ok"])
	assert.JSONEq(t, `{"doubleValue":0.5}`, attrs["f"])
	assert.JSONEq(t, `{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}`, attrs["ss"])
	assert.JSONEq(t, `{"arrayValue":{"values":[{"intValue":"1"},{"intValue":"2"}]}}`, attrs["is"])
	require.Len(t, s.Events, 1)
	assert.Equal(t, "lambent.attempt.result", s.Events[0].Name)
	assert.Equal(t, int64(2), s.Events[0].Attributes[0].Value.GetIntValue())

	p := decodeOTLP(t, stub.bodies[1]).ResourceSpans[0].ScopeSpans[0].Spans[0]
	assert.Equal(t, tracepb.Span_SPAN_KIND_SERVER, p.Kind)
	assert.Equal(t, tracepb.Status_STATUS_CODE_OK, p.Status.Code)
	assert.Equal(t, "0405060000000000", hex.EncodeToString(p.ParentSpanId))
	assert.Equal(t, uint32(0x301), p.Flags, "sampled, with a remote parent")
}

// A collector's refusal is an error naming its status and reply; bad
// settings are errors at start.
func TestOTLPJSONErrors(t *testing.T) {
	t.Parallel()
	stub := &collectorStub{status: http.StatusBadRequest}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	exp, err := newOTLPExporter(srv.URL, func(string) string { return "" }, srv.Client())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider()
	_, sp := tp.Tracer("t").Start(context.Background(), "s")
	sp.End()
	err = exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{sp.(sdktrace.ReadOnlySpan)})
	require.ErrorContains(t, err, "400")
	require.ErrorContains(t, err, "bad spans")

	for _, bad := range []struct{ endpoint, env, val string }{
		{"127.0.0.1:4318", "", ""},
		{"http://x/v1/traces", "OTEL_EXPORTER_OTLP_HEADERS", "novalue"},
		{"http://x/v1/traces", "OTEL_EXPORTER_OTLP_TIMEOUT", "soon"},
	} {
		_, err := newOTLPExporter(bad.endpoint, func(k string) string {
			if k == bad.env {
				return bad.val
			}
			return ""
		}, http.DefaultClient)
		assert.Error(t, err, "%+v", bad)
	}
}

// OTEL_EXPORTER_OTLP_HEADERS that no HTTP request can carry (a CR/LF in a
// value, a space in a name) are refused at start-up, without quoting the
// value (a token): accepted, every export failed.
func TestOTLPHeadersCheckedAtStart(t *testing.T) {
	for _, v := range []string{"Authorization=Bearer%20secret%0D%0AX-Evil%3A%201", "bad key=v"} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": v}
		_, err := newOTLPExporter("http://127.0.0.1:4318", func(k string) string { return env[k] }, http.DefaultClient)
		if err == nil {
			t.Errorf("%q accepted", v)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error quotes the value: %v", v, err)
		}
	}
}

// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the service and its
// resource, as OpenTelemetry specifies they do (they take precedence over
// the SDK's default, "lambent" here): a staging and a production gateway
// reporting to one backend tell their spans apart.
func TestTracerProviderResourceFromEnvironment(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "gateway-staging")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
	stub := &collectorStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	tp, err := NewTracerProvider(srv.URL + "/v1/traces")
	require.NoError(t, err)
	_, sp := tp.Tracer("t").Start(context.Background(), "s")
	sp.End()
	require.NoError(t, tp.Shutdown(context.Background()))

	stub.mu.Lock()
	defer stub.mu.Unlock()
	require.Len(t, stub.bodies, 1)
	res := map[string]string{}
	for _, kv := range decodeOTLP(t, stub.bodies[0]).ResourceSpans[0].Resource.Attributes {
		res[kv.Key] = kv.Value.GetStringValue()
	}
	assert.Equal(t, "gateway-staging", res["service.name"])
	assert.Equal(t, "staging", res["deployment.environment.name"])
	assert.Equal(t, "go", res["telemetry.sdk.language"])
}

// flakyCollector is an OTLP/HTTP traces endpoint that answers its first
// requests with replies (a status and a Retry-After, "" for none), then
// accepts; it keeps the bodies and the arrival times.
type flakyCollector struct {
	mu      sync.Mutex
	replies []flakyReply
	bodies  [][]byte
	at      []time.Time
}

type flakyReply struct {
	status     int
	retryAfter string
}

func (c *flakyCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	n := len(c.bodies)
	c.bodies, c.at = append(c.bodies, b), append(c.at, time.Now())
	c.mu.Unlock()
	if n < len(c.replies) {
		if ra := c.replies[n].retryAfter; ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		http.Error(w, `{"code":8,"message":"busy"}`, c.replies[n].status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{}`)
}

// testBackoff is the exporters' backoff in exportOne (really waited).
const testBackoff = 20 * time.Millisecond

// exportOne exports one span to a new flakyCollector answering replies,
// with the export timeout timeoutMS, and returns the collector and the
// export's error.
func exportOne(t *testing.T, timeoutMS string, replies ...flakyReply) (*flakyCollector, error) {
	t.Helper()
	c := &flakyCollector{replies: replies}
	srv := httptest.NewServer(c)
	defer srv.Close()
	exp, err := newOTLPExporter(srv.URL+"/v1/traces", func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_TIMEOUT" {
			return timeoutMS
		}
		return ""
	}, srv.Client())
	require.NoError(t, err)
	exp.backoff = testBackoff
	_, sp := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "s")
	sp.End()
	return c, exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{sp.(sdktrace.ReadOnlySpan)})
}

// A collector that throttles (429, 503) or whose gateway fails (502, 504)
// gets the same spans again (OTLP/HTTP, "Retryable Response Codes"): after
// its Retry-After when it sends one (delay-seconds or an HTTP-date), else
// after an exponential backoff, within the export's timeout; a Retry-After
// beyond that timeout ends the export at once with the collector's error,
// and other errors (400) are never retried.
func TestOTLPRetries(t *testing.T) {
	t.Parallel()
	t.Run("retry-after seconds", func(t *testing.T) {
		t.Parallel()
		c, err := exportOne(t, "5000", flakyReply{http.StatusTooManyRequests, "0"}, flakyReply{http.StatusServiceUnavailable, "1"})
		require.NoError(t, err)
		require.Len(t, c.bodies, 3)
		require.Equal(t, c.bodies[0], c.bodies[2])
		require.GreaterOrEqual(t, c.at[2].Sub(c.at[1]), time.Second)
	})
	t.Run("retry-after date", func(t *testing.T) {
		t.Parallel()
		c, err := exportOne(t, "5000", flakyReply{http.StatusServiceUnavailable, time.Now().Add(-time.Minute).UTC().Format(http.TimeFormat)})
		require.NoError(t, err)
		require.Len(t, c.bodies, 2)
	})
	t.Run("backoff", func(t *testing.T) {
		t.Parallel()
		c := &flakyCollector{replies: []flakyReply{{http.StatusBadGateway, ""}, {http.StatusGatewayTimeout, ""}, {http.StatusServiceUnavailable, ""}}}
		srv := httptest.NewServer(c)
		defer srv.Close()
		w := &waitRecorder{}
		require.NoError(t, exportOneTo(t, srv.URL+"/v1/traces", srv.Client(), w))
		require.Len(t, c.bodies, 4)
		require.Len(t, w.waits, 3)
		for i, d := range w.waits {
			backoff := time.Second << i
			require.True(t, d >= backoff/2 && d <= backoff, "wait %d: %s, want the doubled backoff %s jittered to half of it at least", i, d, backoff)
		}
	})
	t.Run("retry-after beyond the timeout", func(t *testing.T) {
		t.Parallel()
		// An export that waited would end at its timeout, a minute on; one
		// that did not ends at once (the bound is far from both).
		start := time.Now()
		c, err := exportOne(t, "60000", flakyReply{http.StatusServiceUnavailable, "3600"})
		require.ErrorContains(t, err, "503")
		require.Len(t, c.bodies, 1)
		require.Less(t, time.Since(start), 30*time.Second, "it did not wait for a retry it could not make")
	})
	t.Run("retry-after beyond what a duration holds", func(t *testing.T) {
		t.Parallel()
		// Seconds that overflow a time.Duration (to a negative wait, and to
		// 0.29 s) or an int64 are as far beyond the timeout as any.
		for _, ra := range []string{"9223372037", "18446744074", "99999999999999999", "99999999999999999999"} {
			c, err := exportOne(t, "2000", flakyReply{http.StatusServiceUnavailable, ra})
			require.ErrorContains(t, err, "503", ra)
			require.Len(t, c.bodies, 1, ra)
		}
	})
	t.Run("not retryable", func(t *testing.T) {
		t.Parallel()
		c, err := exportOne(t, "5000", flakyReply{http.StatusBadRequest, "0"}, flakyReply{http.StatusInternalServerError, ""})
		require.ErrorContains(t, err, "400")
		require.Len(t, c.bodies, 1)
	})
}

// waitRecorder stands for an exporter's wait between attempts: it records
// the waits and waits no time.
type waitRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (w *waitRecorder) wait(_ context.Context, d time.Duration) bool {
	w.mu.Lock()
	w.waits = append(w.waits, d)
	w.mu.Unlock()
	return true
}

// exportOneTo exports one span to endpoint with client, its waits
// recorded by w, and returns the export's error.
func exportOneTo(t *testing.T, endpoint string, client *http.Client, w *waitRecorder) error {
	t.Helper()
	exp, err := newOTLPExporter(endpoint, func(string) string { return "" }, client)
	require.NoError(t, err)
	exp.wait = w.wait
	_, sp := sdktrace.NewTracerProvider().Tracer("t").Start(context.Background(), "s")
	sp.End()
	return exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{sp.(sdktrace.ReadOnlySpan)})
}

// A collector that resets the connection before replying is sent the
// batch again after the backoff, within the export's timeout, as a
// throttling one is; one that refuses the connection (none listens) is
// not waited for: in Lambda every invocation would wait.
func TestOTLPRetriesBrokenConnection(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		w := &waitRecorder{}
		// A user name in the endpoint (a collector's token) is not in
		// the error, which is logged.
		err = exportOneTo(t, "http://s3cret-token@"+addr+"/v1/traces?key=k3y", &http.Client{Transport: &http.Transport{}}, w)
		require.ErrorContains(t, err, "connection refused")
		require.NotContains(t, err.Error(), "s3cret")
		require.NotContains(t, err.Error(), "k3y")
		require.Empty(t, w.waits, "a collector that cannot be dialed is not waited for")
	})
	t.Run("connection reset", func(t *testing.T) {
		stub := &collectorStub{}
		var mu sync.Mutex
		reset := false
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			mu.Lock()
			first := !reset
			reset = true
			mu.Unlock()
			if !first {
				stub.ServeHTTP(rw, r)
				return
			}
			_, _ = io.ReadAll(r.Body)
			conn, _, err := http.NewResponseController(rw).Hijack()
			if err != nil {
				return
			}
			_ = conn.(*net.TCPConn).SetLinger(0) // close with a reset
			_ = conn.Close()
		}))
		defer srv.Close()
		w := &waitRecorder{}
		err := exportOneTo(t, srv.URL+"/v1/traces", srv.Client(), w)
		require.NoError(t, err)
		require.Len(t, w.waits, 1)
		require.Len(t, stub.bodies, 1)
	})
}

// The backoff's waits are jittered, each between half and all of the
// doubled backoff, so that exporters that failed together do not retry
// together.
func TestOTLPBackoffIsJittered(t *testing.T) {
	exp, err := newOTLPExporter("http://127.0.0.1:4318/v1/traces", func(string) string { return "" }, http.DefaultClient)
	require.NoError(t, err)
	seen := map[time.Duration]bool{}
	for range 64 {
		d := exp.jitter(time.Second)
		require.GreaterOrEqual(t, d, time.Second/2)
		require.LessOrEqual(t, d, time.Second)
		seen[d] = true
	}
	require.Greater(t, len(seen), 1, "64 waits, all the same")
}

// A provider's shutdown that gives up waiting for the last batch's export
// (its context ends) cancels that export: the request to a collector that
// never answers is abandoned instead of going on in the background until
// the export's timeout.
func TestTracerProviderShutdownCancelsExport(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "60000")
	received, cancelled, release := make(chan struct{}), make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // the server notices a closed connection once it has read the body
		close(received)
		select {
		case <-r.Context().Done():
			close(cancelled)
		case <-release:
		}
	}))
	ignore := goleak.IgnoreCurrent()
	tp, err := NewTracerProvider(srv.URL + "/v1/traces")
	require.NoError(t, err)
	_, sp := tp.Tracer("t").Start(context.Background(), "s")
	sp.End()

	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-received; cancel() }() // shutdown gives up once the export hangs
	require.ErrorIs(t, tp.Shutdown(ctx), context.Canceled)
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // a safety net: the export's own timeout is a minute
		t.Error("the export went on after the provider's shutdown")
	}
	close(release)
	srv.Close()
	goleak.VerifyNone(t, ignore)
}

// A collector's refusal longer than what is read of it (4 KiB, for the
// error) is drained up to egress.MaxDrain before its body is closed, so
// the next export reuses the connection: closed unread, net/http closed it
// and the next export dialed again.
func TestOTLPLongRefusalKeepsConnection(t *testing.T) {
	page := strings.Repeat("x", 16<<10)
	srv := conncount.Start(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, page, http.StatusBadRequest)
	}))
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	exp, err := newOTLPExporter(srv.URL, func(string) string { return "" }, hc)
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider()
	_, sp := tp.Tracer("t").Start(context.Background(), "s")
	sp.End()
	for range 2 {
		require.Error(t, exp.ExportSpans(context.Background(), []sdktrace.ReadOnlySpan{sp.(sdktrace.ReadOnlySpan)}))
	}
	assert.Equal(t, 1, srv.Opened(), "connections of 2 exports refused with a 400")
}
