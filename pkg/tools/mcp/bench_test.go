package mcp

import (
	"context"
	"testing"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/tools"
)

// BenchmarkMCP measures the MCP executor against a local Go SDK server over
// streamable HTTP on loopback (client and server share this machine's CPU):
//
//   - call: one call of a no-op tool on an open session: the executor's
//     per-call cost, wire and server included (µs/call);
//   - list: what listing costs a response: connect (initialize), list the
//     server's tools, close (µs/list).
func BenchmarkMCP(b *testing.B) {
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	c := loopback()
	ctx := context.Background()
	b.Run("call", func(b *testing.B) {
		s := c.Open(server("s", srv.Endpoint), tools.MCPBounds{})
		defer s.Close()
		if _, err := s.CallTool(ctx, "noop", "{}"); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			res, err := s.CallTool(ctx, "noop", "{}")
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
	})
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := c.Open(server("s", srv.Endpoint), tools.MCPBounds{})
			list, err := s.ListTools(ctx)
			if err != nil || len(list) == 0 {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/list")
	})
}
