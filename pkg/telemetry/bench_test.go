package telemetry_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/hooks"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/telemetry/prom"
)

// discardSink accepts every event.
type discardSink struct{}

func (discardSink) Name() string                                        { return "discard" }
func (discardSink) Deliver(context.Context, *hooks.Event, []byte) error { return nil }

// BenchmarkLoopTurnTelemetry measures what hooks, metrics and tracing add
// to an agentic turn (an instant model call + one hosted tool call + feeding
// back), as µs/turn and allocs/turn: "off" is the engine without an
// Observer (what every deployment that configures none runs), the others
// turn each part on, "all" everything at once. Hook events go through the
// real dispatcher to a sink that accepts them; EMF lines are encoded and
// discarded; spans go through the SDK's batch processor to an exporter
// that drops them.
func BenchmarkLoopTurnTelemetry(b *testing.B) {
	const turns = 5
	batches := make([][]api.Item, turns-1)
	for i := range batches {
		batches[i] = []api.Item{toolCall("call_x", "t", `{"a":1}`)}
	}
	model := toolLoop{batches: batches}
	log := slog.New(slog.DiscardHandler)
	parts := []struct {
		name string
		cfg  func(b *testing.B) telemetry.Config
	}{
		{"off", func(*testing.B) telemetry.Config { return telemetry.Config{} }},
		{"hooks", func(b *testing.B) telemetry.Config { return telemetry.Config{Hooks: dispatcher(b, log)} }},
		{"metrics", func(*testing.B) telemetry.Config {
			return telemetry.Config{EMF: telemetry.NewEMF(io.Discard, "", log), Recorders: []telemetry.Recorder{prom.New()}}
		}},
		{"tracing", func(b *testing.B) telemetry.Config { return telemetry.Config{Tracer: tracer(b)} }},
		{"all", func(b *testing.B) telemetry.Config {
			return telemetry.Config{Hooks: dispatcher(b, log), EMF: telemetry.NewEMF(io.Discard, "", log), Recorders: []telemetry.Recorder{prom.New()}, Tracer: tracer(b)}
		}},
	}
	for _, part := range parts {
		b.Run(part.name, func(b *testing.B) {
			var obs engine.Observer
			if cfg := part.cfg(b); cfg.Enabled() {
				obs = telemetry.New(cfg)
			}
			e := newEngine(b, model, catalog{}, obs)
			req := request(b, `{"input":"compute","tools":[{"type":"lambent:t"}]}`)
			w := &capture{}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if err := e.CreateResponse(context.Background(), req, w); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			// Allocations of every goroutine count: the hook workers' and
			// the span batcher's are the cost of turning them on.
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N*turns), "allocs/turn")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns)/1000, "µs/turn")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func dispatcher(b *testing.B, log *slog.Logger) *hooks.Dispatcher {
	d := hooks.New(hooks.Config{Sinks: []hooks.Sink{discardSink{}}, Logger: log})
	b.Cleanup(d.Close)
	return d
}

func tracer(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}
