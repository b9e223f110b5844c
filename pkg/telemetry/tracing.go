package telemetry

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// ServiceName is the service.name of Lambent's spans.
const ServiceName = "lambent"

// NewTracerProvider returns a tracer provider that exports spans in batches
// to the OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces,
// an ADOT or OpenTelemetry collector; the exporter's OTEL_EXPORTER_OTLP_*
// variables, headers for one, apply too). Spans follow their parent's
// sampling decision (an X-Ray trace that is not sampled stays unsampled),
// else are all sampled. Shut it down (or ForceFlush it) to send what is
// buffered.
func NewTracerProvider(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint))
	if err != nil {
		return nil, fmt.Errorf("telemetry: OTLP exporter for %s: %w", endpoint, err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(ServiceName)))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
