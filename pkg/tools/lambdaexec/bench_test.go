package lambdaexec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

// BenchmarkToolPhase measures a turn's tool phase through the real SDK
// client and the local Invoke endpoint on loopback: 16 concurrent calls
// (what the engine does with a turn of 16 calls) against one call, and the
// executor's own overhead per invocation. Every iteration runs, in turn:
//
//   - raw: one bare HTTP POST of the same payload to the endpoint (same
//     transport, no SDK, no executor): the wire + endpoint + handler cost;
//   - call: one Executor.Execute;
//   - phase: 16 Executor.Execute calls at once, waiting for all.
//
// Reported: call-µs, phase16-µs, ratio (phase16 / call; the target is ≤ 1.5
// when the tool's own latency dominates, as with a real Lambda), raw-µs and
// overhead-µs (call − raw: SDK serialization, SigV4 signing, middleware,
// reply decoding). "noop" is a tool that answers at once, so the phase is
// bound by the CPU of this machine (client and endpoint share it); "10ms"
// is a tool taking 10 ms, about a warm Lambda invocation's round trip.
func BenchmarkToolPhase(b *testing.B) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
	}{{"noop", 0}, {"10ms", 10 * time.Millisecond}} {
		b.Run(tc.name, func(b *testing.B) { benchToolPhase(b, tc.delay) })
	}
}

func benchToolPhase(b *testing.B, delay time.Duration) {
	const n = 16
	tool := hosted("noop", func(ctx context.Context, _ tools.ToolCall) (string, error) {
		if delay > 0 {
			t := time.NewTimer(delay)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		return "ok", nil
	})
	ep := newEndpoint(b, map[string]tools.Hosted{"NoopToolFunction": tool})
	ex := ep.executor(b, lambdaexec.Config{}, manifestOf(map[string]string{"noop": "NoopToolFunction"}))
	ctx := context.Background()
	call := tools.ToolCall{ID: "call_1", Name: "noop", Arguments: `{}`, ResponseID: "resp_1"}

	execute := func() {
		res, err := ex.Execute(ctx, call)
		if err != nil || res.IsError || res.Output != "ok" {
			b.Fatalf("Execute = %+v, %v", res, err)
		}
	}
	phase := func() {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				execute()
			}()
		}
		wg.Wait()
	}
	rawClient := lambdaexec.NewHTTPClient()
	defer rawClient.CloseIdleConnections()
	payload, _ := json.Marshal(call)
	url := ep.url + "/2015-03-31/functions/NoopToolFunction/invocations"
	raw := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
		if err != nil {
			b.Fatal(err)
		}
		resp, err := rawClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("raw POST: %d %s %v", resp.StatusCode, body, err)
		}
		var r tools.ToolResult
		if err := json.Unmarshal(body, &r); err != nil || r.Output != "ok" {
			b.Fatalf("raw POST reply %s", body)
		}
	}

	// Warm the connection pools (n connections) before measuring.
	phase()
	phase()
	raw()

	var tRaw, tCall, tPhase time.Duration
	iters := 0
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		raw()
		t1 := time.Now()
		execute()
		t2 := time.Now()
		phase()
		t3 := time.Now()
		tRaw += t1.Sub(t0)
		tCall += t2.Sub(t1)
		tPhase += t3.Sub(t2)
		iters++
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(iters) / float64(time.Microsecond) }
	b.ReportMetric(us(tCall), "call-µs")
	b.ReportMetric(us(tPhase), "phase16-µs")
	b.ReportMetric(float64(tPhase)/float64(tCall), "ratio")
	b.ReportMetric(us(tRaw), "raw-µs")
	b.ReportMetric(us(tCall-tRaw), "overhead-µs")
	if testing.Verbose() {
		fmt.Printf("tool phase %s: call %.0fµs, 16 concurrent %.0fµs (%.2fx), raw POST %.0fµs, executor overhead %.0fµs/invocation\n",
			b.Name(), us(tCall), us(tPhase), float64(tPhase)/float64(tCall), us(tRaw), us(tCall-tRaw))
	}
}
