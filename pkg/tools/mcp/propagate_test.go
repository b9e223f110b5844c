package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/tools"
)

// The trace context of the tool call reaches the MCP server (W3C
// traceparent and the X-Ray header), as it reaches tool Lambdas.
func TestTraceContextReachesTheServer(t *testing.T) {
	t.Parallel()
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	s := loopback(func(c *Config) { c.Propagate = telemetry.Transport }).Open(server("s", srv.Endpoint), tools.MCPBounds{})
	defer s.Close()
	_, err := s.CallTool(ctx, "echo", `{"text":"x"}`)
	require.NoError(t, err)
	hs := srv.Headers()
	require.NotEmpty(t, hs)
	last := hs[len(hs)-1]
	assert.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", last.Get("Traceparent"))
	assert.Contains(t, last.Get("X-Amzn-Trace-Id"), "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736")
}
