package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ServiceName is the service.name of Lambent's spans.
const ServiceName = "lambent"

// NewTracerProvider returns a tracer provider that exports spans in batches
// to the OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces,
// an ADOT or OpenTelemetry collector) in OTLP's JSON encoding; the
// OTEL_EXPORTER_OTLP_* headers and timeout variables apply (otlpExporter).
// Its resource names the service ServiceName unless OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES name it otherwise.
// Spans follow their parent's sampling decision (an X-Ray trace that is not sampled stays unsampled),
// else are all sampled. Shut it down (or ForceFlush it) to send what is
// buffered; a shutdown whose context ends first cancels that export
// (abortOnShutdown).
func NewTracerProvider(endpoint string) (*sdktrace.TracerProvider, error) {
	exp, err := newOTLPExporter(endpoint, os.Getenv, &http.Client{})
	if err != nil {
		return nil, err
	}
	// The environment's (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES)
	// come last: OpenTelemetry gives them precedence over ServiceName.
	res, err := resource.New(context.Background(), resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(ServiceName)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	batcher := abortOnShutdown{SpanProcessor: sdktrace.NewBatchSpanProcessor(exp), abort: exp.stop}
	return sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(batcher), sdktrace.WithResource(res)), nil
}

// abortOnShutdown is a batch span processor whose shutdown ends its
// exporter's export under way once it returns. The SDK's processor exports
// what is buffered in the background and shuts its exporter down only
// after that export: a shutdown whose context ended first would leave the
// export (its retries, its request) going on until the export's timeout.
type abortOnShutdown struct {
	sdktrace.SpanProcessor
	abort func()
}

// Shutdown shuts the processor down (ctx bounds the wait for its last
// export), then ends any export still under way.
func (a abortOnShutdown) Shutdown(ctx context.Context) error {
	defer a.abort()
	return a.SpanProcessor.Shutdown(ctx)
}
