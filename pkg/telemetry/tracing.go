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
// buffered.
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
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
