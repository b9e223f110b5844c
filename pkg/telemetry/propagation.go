package telemetry

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// XRayHeader is the AWS X-Ray trace header, which Lambda passes on to the
// functions it invokes (as _X_AMZN_TRACE_ID).
const XRayHeader = "X-Amzn-Trace-Id"

// lambdaTraceKey is the context key under which aws-lambda-go keeps the
// invocation's trace header (the value of _X_AMZN_TRACE_ID).
const lambdaTraceKey = "x-amzn-trace-id"

// LambdaTraceHeader returns the trace header of the Lambda invocation ctx
// belongs to ("Root=1-…;Parent=…;Sampled=…"), or "".
func LambdaTraceHeader(ctx context.Context) string {
	v, _ := ctx.Value(lambdaTraceKey).(string)
	return v
}

// XRay is the AWS X-Ray propagator: the span context in the X-Amzn-Trace-Id
// header. (go.opentelemetry.io/contrib/propagators/aws is deprecated; the
// header's format is small and fixed.)
type XRay struct{}

var _ propagation.TextMapPropagator = XRay{}

// Inject writes ctx's span context as an X-Ray trace header.
func (XRay) Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	if h := xrayHeader(trace.SpanContextFromContext(ctx)); h != "" {
		carrier.Set(XRayHeader, h)
	}
}

// Extract returns ctx with the remote span context of carrier's X-Ray
// trace header; ctx when there is none or it is malformed.
func (XRay) Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	sc, ok := parseXRay(carrier.Get(XRayHeader))
	if !ok {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// Fields returns the header the propagator uses.
func (XRay) Fields() []string { return []string{XRayHeader} }

func xrayHeader(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	tid := sc.TraceID().String()
	sampled := "0"
	if sc.IsSampled() {
		sampled = "1"
	}
	return "Root=1-" + tid[:8] + "-" + tid[8:] + ";Parent=" + sc.SpanID().String() + ";Sampled=" + sampled
}

// parseXRay reads "Root=1-<8 hex>-<24 hex>;Parent=<16 hex>;Sampled=<0|1>"
// (any order, other keys ignored).
func parseXRay(h string) (trace.SpanContext, bool) {
	var cfg trace.SpanContextConfig
	for part := range strings.SplitSeq(h, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			ver, rest, ok := strings.Cut(v, "-")
			epoch, random, ok2 := strings.Cut(rest, "-")
			if !ok || !ok2 || ver != "1" || len(epoch) != 8 || len(random) != 24 {
				return trace.SpanContext{}, false
			}
			id, err := trace.TraceIDFromHex(epoch + random)
			if err != nil {
				return trace.SpanContext{}, false
			}
			cfg.TraceID = id
		case "Parent":
			id, err := trace.SpanIDFromHex(v)
			if err != nil {
				return trace.SpanContext{}, false
			}
			cfg.SpanID = id
		case "Sampled":
			if v == "1" {
				cfg.TraceFlags = trace.FlagsSampled
			}
		}
	}
	cfg.Remote = true
	sc := trace.NewSpanContext(cfg)
	return sc, sc.IsValid()
}

// Propagator is what Lambent propagates: W3C trace context and X-Ray.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, XRay{})
}

// Inject adds ctx's trace context to the headers of an outgoing request:
// the current span's (W3C traceparent and X-Ray), else the Lambda
// invocation's trace header as it came.
func Inject(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		Propagator().Inject(ctx, propagation.HeaderCarrier(h))
		return
	}
	if v := LambdaTraceHeader(ctx); v != "" {
		h.Set(XRayHeader, v)
	}
}

// Transport returns an http.RoundTripper that adds the trace context of
// each request's context (Inject) before base (nil: the default transport)
// sends it: for the clients of MCP servers.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{base}
}

type roundTripper struct{ base http.RoundTripper }

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !trace.SpanContextFromContext(ctx).IsValid() && LambdaTraceHeader(ctx) == "" {
		return t.base.RoundTrip(req)
	}
	req = req.Clone(ctx)
	Inject(ctx, req.Header)
	return t.base.RoundTrip(req)
}

// AWSTraceHeader returns the X-Amzn-Trace-Id of the span of ctx (empty
// without one): the Lambda clients' trace header (awsjson.WithTraceHeader),
// so that a tool Lambda's trace continues the tool call's span. Without a
// span the client passes _X_AMZN_TRACE_ID on unchanged inside Lambda, as
// the SDK's recursion detection does.
func AWSTraceHeader(ctx context.Context) string {
	return xrayHeader(trace.SpanContextFromContext(ctx))
}
