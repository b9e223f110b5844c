package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/net/http/httpguts"

	"github.com/lambent/lambent/internal/wait"
	"github.com/lambent/lambent/pkg/egress"
)

// otlpExporter sends spans to an OTLP/HTTP traces endpoint in OTLP's JSON
// encoding (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding),
// which every OpenTelemetry and ADOT collector accepts. It stands for the
// OpenTelemetry Go exporter (otlptracehttp), whose protobuf and gRPC
// dependencies would triple the size of every Lambda bootstrap
// (docs/observability.md, "Traces"). It honours OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TRACES_HEADERS, OTEL_EXPORTER_OTLP_TIMEOUT and
// OTEL_EXPORTER_OTLP_TRACES_TIMEOUT (the time of a whole export, its
// retries included), and retries a throttled export or one that could not
// reach the collector (ExportSpans). Shutdown ends the exports under way.
type otlpExporter struct {
	endpoint string
	headers  http.Header
	timeout  time.Duration
	client   *http.Client
	// backoff is the wait (jittered) before the first retry of a
	// retryable reply without Retry-After or of a broken connection,
	// doubled for each retry after it.
	backoff time.Duration
	// jitter turns a backoff into the wait made (wait.EqualJitter: exporters that failed together do not retry together).
	jitter func(time.Duration) time.Duration
	// wait waits before a retry (sleep; tests record the waits instead).
	wait func(context.Context, time.Duration) bool
	// stopped ends when the exporter shuts down (stop), and with it every
	// export under way.
	stopped context.Context
	stop    context.CancelFunc
}

// maxOTLPErrorBody bounds how much of a collector's error reply is read.
const maxOTLPErrorBody = 4 << 10

// newOTLPExporter returns an exporter to endpoint (a URL, e.g.
// http://127.0.0.1:4318/v1/traces) reading its OTEL_EXPORTER_OTLP_*
// settings with getenv.
func newOTLPExporter(endpoint string, getenv func(string) string, client *http.Client) (*otlpExporter, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telemetry: OTLP endpoint %q: want an http(s) URL", egress.ShownURL(endpoint))
	}
	e := &otlpExporter{endpoint: endpoint, headers: http.Header{}, timeout: 10 * time.Second, client: client, backoff: time.Second,
		jitter: wait.EqualJitter, wait: sleep}
	e.stopped, e.stop = context.WithCancel(context.Background())
	for _, env := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} {
		if err := addHeaders(e.headers, getenv(env)); err != nil {
			return nil, fmt.Errorf("telemetry: %s: %w", env, err)
		}
	}
	for _, env := range []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"} {
		if v := getenv(env); v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return nil, fmt.Errorf("telemetry: %s=%q: want milliseconds", env, v)
			}
			e.timeout = time.Duration(ms) * time.Millisecond
		}
	}
	return e, nil
}

// addHeaders adds the headers of an OTEL_EXPORTER_OTLP_HEADERS value
// ("k1=v1,k2=v2", values URL-encoded) to h.
func addHeaders(h http.Header, list string) error {
	for i, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		k, v, ok := strings.Cut(f, "=")
		k = strings.TrimSpace(k)
		// Checked here, at start-up, not by every export that would fail;
		// the messages name the header, never its value (a token).
		if !ok || !httpguts.ValidHeaderFieldName(k) {
			return fmt.Errorf("header %d: want name=value with a valid header name", i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("header %q: the value is not percent-encoded text", k)
		}
		if !httpguts.ValidHeaderFieldValue(dv) {
			return fmt.Errorf("header %q: the value holds characters a header cannot (CR, LF, controls)", k)
		}
		h.Set(k, dv)
	}
	return nil
}

// maxOTLPRetries bounds the retries of one export (a collector answering
// Retry-After: 0 again and again is not sent the spans more often).
const maxOTLPRetries = 5

// ExportSpans sends spans in one request, sent again while the collector
// answers with a status OTLP/HTTP lets a client retry (retryWait) or
// the connection broke before its reply (broken), the wait before the next attempt ends
// before the export's timeout, and fewer than maxOTLPRetries retries were
// made; else the export fails with the last attempt's error. The
// exporter's shutdown ends it too.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	if e.stopped.Err() != nil {
		return errors.New("telemetry: the OTLP exporter is shut down")
	}
	body, err := json.Marshal(otlpRequest(spans))
	if err != nil {
		return fmt.Errorf("telemetry: encode spans: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	defer context.AfterFunc(e.stopped, cancel)()
	for retry := 0; ; retry++ {
		status, retryAfter, err := e.post(ctx, body)
		if err == nil {
			return nil
		}
		wait, ok := e.nextWait(status, retryAfter, err, retry)
		if !ok || retry == maxOTLPRetries || !e.wait(ctx, wait) {
			return fmt.Errorf("telemetry: export %d spans: %w", len(spans), err)
		}
	}
}

// post sends body once and returns the collector's status and Retry-After
// header, and an error unless the status is 2xx (a request that got no
// reply: status 0).
func (e *otlpExporter) post(ctx context.Context, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("OTLP request: %w", err)
	}
	for k, v := range e.headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.client.Do(req)
	if err != nil {
		return 0, "", egress.ShownURLError(err)
	}
	defer func() { _ = egress.DrainClose(resp.Body) }()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxOTLPErrorBody))
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, resp.Header.Get("Retry-After"), fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return resp.StatusCode, "", nil
}

// nextWait reports whether the attempt numbered retry (from 0), which
// failed with err and the collector's status and Retry-After (status 0: no
// reply), may be retried and after how long: a retryable reply's
// (retryWait) or a broken connection's wait (broken), the backoff doubled for
// each retry made and jittered.
func (e *otlpExporter) nextWait(status int, retryAfter string, err error, retry int) (time.Duration, bool) {
	backoff := e.jitter(e.backoff << retry)
	if status == 0 {
		return backoff, broken(err)
	}
	return retryWait(status, retryAfter, backoff, time.Now())
}

// broken reports whether err, a request's failure without a reply, is a
// connection to the collector broken before its reply (reset, aborted,
// closed): the collector was there, and a retry likely finds it. A
// collector that cannot be dialed at all (refused, no route, its name not
// resolved) is not retried: in Lambda every invocation flushes its spans
// before it ends (app.AfterInvocation), and a collector that is not
// running (an ADOT layer missing) would otherwise add the retries' waits
// to every invocation.
func broken(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// retryWait reports whether a reply of status may be retried (OTLP/HTTP,
// "Retryable Response Codes": 429, 502, 503 and 504; no other) and after
// how long: its Retry-After (delay-seconds or an HTTP-date, at now), else
// backoff.
func retryWait(status int, retryAfter string, backoff time.Duration, now time.Time) (time.Duration, bool) {
	switch status {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
	default:
		return 0, false
	}
	if d, ok := wait.RetryAfter(retryAfter, now); ok {
		return d, true
	}
	return backoff, true
}

// sleep waits d and reports true, or reports false at once when ctx ends
// before d has passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return false
	}
	return wait.Sleep(ctx, d)
}

// Shutdown ends the exports under way (their requests and waits) and
// fails those that come after it.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stop()
	return nil
}

// The OTLP JSON shapes (opentelemetry-proto, trace/v1 and common/v1):
// lowerCamelCase keys, trace and span ids in hex, enums as integers,
// 64-bit integers as decimal strings.
type (
	otlpTraces struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
		SchemaURL  string           `json:"schemaUrl,omitempty"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpScopeSpans struct {
		Scope     otlpScope  `json:"scope"`
		Spans     []otlpSpan `json:"spans"`
		SchemaURL string     `json:"schemaUrl,omitempty"`
	}
	otlpScope struct {
		Name    string `json:"name,omitempty"`
		Version string `json:"version,omitempty"`
	}
	otlpSpan struct {
		TraceID                string         `json:"traceId"`
		SpanID                 string         `json:"spanId"`
		TraceState             string         `json:"traceState,omitempty"`
		ParentSpanID           string         `json:"parentSpanId,omitempty"`
		Flags                  uint32         `json:"flags,omitempty"`
		Name                   string         `json:"name"`
		Kind                   int            `json:"kind"`
		StartTimeUnixNano      string         `json:"startTimeUnixNano"`
		EndTimeUnixNano        string         `json:"endTimeUnixNano"`
		Attributes             []otlpKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount int            `json:"droppedAttributesCount,omitempty"`
		Events                 []otlpEvent    `json:"events,omitempty"`
		DroppedEventsCount     int            `json:"droppedEventsCount,omitempty"`
		Links                  []otlpLink     `json:"links,omitempty"`
		DroppedLinksCount      int            `json:"droppedLinksCount,omitempty"`
		Status                 otlpStatus     `json:"status"`
	}
	otlpEvent struct {
		TimeUnixNano string         `json:"timeUnixNano"`
		Name         string         `json:"name"`
		Attributes   []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpLink struct {
		TraceID    string         `json:"traceId"`
		SpanID     string         `json:"spanId"`
		TraceState string         `json:"traceState,omitempty"`
		Attributes []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code,omitempty"`
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	otlpAnyValue struct {
		StringValue *string         `json:"stringValue,omitempty"`
		BoolValue   *bool           `json:"boolValue,omitempty"`
		IntValue    *string         `json:"intValue,omitempty"`
		DoubleValue *float64        `json:"doubleValue,omitempty"`
		ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
	}
	otlpArrayValue struct {
		Values []otlpAnyValue `json:"values"`
	}
)

// otlpRequest groups spans by resource and instrumentation scope, in the
// order they come.
func otlpRequest(spans []sdktrace.ReadOnlySpan) otlpTraces {
	var out otlpTraces
	res := map[string]int{}   // resource key → index in out
	scope := map[string]int{} // resource key + scope → index in its ScopeSpans
	for _, s := range spans {
		rkey := ""
		var rattrs []attribute.KeyValue
		schema := ""
		if r := s.Resource(); r != nil {
			rkey, rattrs, schema = r.Encoded(attribute.DefaultEncoder()), r.Attributes(), r.SchemaURL()
		}
		ri, ok := res[rkey]
		if !ok {
			ri = len(out.ResourceSpans)
			res[rkey] = ri
			out.ResourceSpans = append(out.ResourceSpans, otlpResourceSpans{Resource: otlpResource{Attributes: otlpAttributes(rattrs)}, SchemaURL: schema})
		}
		rs := &out.ResourceSpans[ri]
		is := s.InstrumentationScope()
		skey := rkey + "\x00" + is.Name + "\x00" + is.Version
		si, ok := scope[skey]
		if !ok {
			si = len(rs.ScopeSpans)
			scope[skey] = si
			rs.ScopeSpans = append(rs.ScopeSpans, otlpScopeSpans{Scope: otlpScope{Name: is.Name, Version: is.Version}, SchemaURL: is.SchemaURL})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, otlpSpanOf(s))
	}
	return out
}

func otlpSpanOf(s sdktrace.ReadOnlySpan) otlpSpan {
	sc := s.SpanContext()
	o := otlpSpan{
		TraceID:                sc.TraceID().String(),
		SpanID:                 sc.SpanID().String(),
		TraceState:             sc.TraceState().String(),
		Flags:                  uint32(sc.TraceFlags()) | spanFlagHasIsRemote,
		Name:                   s.Name(),
		Kind:                   int(s.SpanKind()), // OpenTelemetry Go numbers kinds as OTLP does
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             otlpAttributes(s.Attributes()),
		DroppedAttributesCount: s.DroppedAttributes(),
		DroppedEventsCount:     s.DroppedEvents(),
		DroppedLinksCount:      s.DroppedLinks(),
		Status:                 otlpStatus{Message: s.Status().Description},
	}
	if p := s.Parent(); p.IsValid() {
		o.ParentSpanID = p.SpanID().String()
		if p.IsRemote() {
			o.Flags |= spanFlagIsRemote
		}
	}
	switch s.Status().Code {
	case codes.Ok:
		o.Status.Code = 1
	case codes.Error:
		o.Status.Code = 2
	}
	for _, ev := range s.Events() {
		o.Events = append(o.Events, otlpEvent{TimeUnixNano: unixNano(ev.Time), Name: ev.Name, Attributes: otlpAttributes(ev.Attributes)})
	}
	for _, l := range s.Links() {
		o.Links = append(o.Links, otlpLink{TraceID: l.SpanContext.TraceID().String(), SpanID: l.SpanContext.SpanID().String(),
			TraceState: l.SpanContext.TraceState().String(), Attributes: otlpAttributes(l.Attributes)})
	}
	return o
}

// OTLP span flags: bits 8 and 9 say whether the parent is remote.
const (
	spanFlagHasIsRemote = 0x100
	spanFlagIsRemote    = 0x200
)

func unixNano(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func otlpAttributes(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, otlpKeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)})
	}
	return out
}

func otlpValue(v attribute.Value) otlpAnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpAnyValue{BoolValue: &b}
	case attribute.INT64:
		i := strconv.FormatInt(v.AsInt64(), 10)
		return otlpAnyValue{IntValue: &i}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return otlpAnyValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return otlpArray(v.AsBoolSlice(), func(b bool) attribute.Value { return attribute.BoolValue(b) })
	case attribute.INT64SLICE:
		return otlpArray(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return otlpArray(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return otlpArray(v.AsStringSlice(), attribute.StringValue)
	}
	s := v.String()
	return otlpAnyValue{StringValue: &s}
}

func otlpArray[T any](vs []T, value func(T) attribute.Value) otlpAnyValue {
	a := &otlpArrayValue{Values: make([]otlpAnyValue, len(vs))}
	for i, v := range vs {
		a.Values[i] = otlpValue(value(v))
	}
	return otlpAnyValue{ArrayValue: a}
}
