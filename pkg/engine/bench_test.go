package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// loopProvider calls the tool until the conversation holds `turns` tool
// outputs, then answers: an instant model for measuring the engine itself.
type loopProvider struct{ turns int }

func (p loopProvider) Complete(_ context.Context, req *provider.Request) (*provider.Result, error) {
	outputs := 0
	for i := range req.Items {
		if req.Items[i].Type == api.ItemFunctionCallOutput {
			outputs++
		}
	}
	if outputs >= p.turns-1 {
		return &provider.Result{Text: "done", FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 10, OutputTokens: 2}}, nil
	}
	return &provider.Result{ToolCalls: []api.Item{call("call_x", "t", `{"a":1}`)}, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: 10, OutputTokens: 2}}, nil
}

func (p loopProvider) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := p.Complete(ctx, req)
	if res.Text != "" {
		_ = fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
	}
	for i, c := range res.ToolCalls {
		_ = fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments})
	}
	return res, nil
}

type discard struct{}

func (discard) WriteEvent(*api.StreamEvent) error { return nil }
func (discard) WriteResponse(*api.Response) error { return nil }

// BenchmarkLoopTurn measures the engine's own cost per agentic turn (model
// call + one hosted tool call + feeding back), with an instant provider and
// tool and the memory store; reported as ns/turn and allocs/turn.
func BenchmarkLoopTurn(b *testing.B) {
	const turns = 5
	m := newMock(func(context.Context, tools.ToolCall) (*tools.ToolResult, error) {
		return &tools.ToolResult{Output: "42"}, nil
	}, "t")
	for _, stream := range []bool{false, true} {
		name := "complete"
		if stream {
			name = "stream"
		}
		b.Run(name, func(b *testing.B) {
			e, _ := newEngineB(b, loopProvider{turns: turns}, m)
			body := `{"input":"compute","tools":[{"type":"lambent:t"}]}`
			if stream {
				body = `{"input":"compute","stream":true,"tools":[{"type":"lambent:t"}]}`
			}
			req, err := api.DecodeCreateRequest([]byte(body))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := e.CreateResponse(context.Background(), req, discard{}); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			perTurn := float64(b.Elapsed().Nanoseconds()) / float64(b.N*turns)
			b.ReportMetric(perTurn/1000, "µs/turn")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// mcpTurnProvider calls the MCP tool "sleep" n times in its first turn,
// then answers.
type mcpTurnProvider struct {
	n    int
	args string
}

func (p mcpTurnProvider) Complete(_ context.Context, req *provider.Request) (*provider.Result, error) {
	for i := range req.Items {
		if req.Items[i].Type == api.ItemFunctionCallOutput {
			return &provider.Result{Text: "done", FinishReason: provider.FinishStop}, nil
		}
	}
	cs := make([]api.Item, p.n)
	for i := range cs {
		cs[i] = call(fmt.Sprintf("call_%d", i), "sleep", p.args)
	}
	return &provider.Result{ToolCalls: cs, FinishReason: provider.FinishToolCalls}, nil
}

func (p mcpTurnProvider) Stream(ctx context.Context, req *provider.Request, _ func(provider.Delta) error) (*provider.Result, error) {
	return p.Complete(ctx, req)
}

// BenchmarkMCPTurn measures a response whose turn makes 16 concurrent
// calls of an MCP tool that takes L = 50 ms, against a Go SDK server on
// loopback, with an instant model: connect, list, the 16 calls, answer.
// Reported: ms/response and ratio = response time / L (≈ 1 when the calls
// run concurrently; 16 if they ran one after the other).
func BenchmarkMCPTurn(b *testing.B) {
	const n, latency = 16, 50 * time.Millisecond
	srv := mcptest.StartStreamable(mcptest.Options{})
	defer srv.Close()
	e, _ := newEngineB(b, mcpTurnProvider{n: n, args: fmt.Sprintf(`{"ms":%d}`, latency.Milliseconds())}, nil, withMCP)
	req, err := api.DecodeCreateRequest([]byte(`{"input":"go","tools":[{"type":"mcp","server_label":"s","server_url":"` + srv.Endpoint + `","require_approval":"never"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := e.CreateResponse(context.Background(), req, discard{}); err != nil {
			b.Fatal(err)
		}
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/1e6, "ms/response")
	b.ReportMetric(per/float64(latency.Nanoseconds()), "ratio")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkRequestLimits measures the per-request limit checks
// (limits.go) on an ordinary request (three function tools, a
// text.format json_schema, a short input), beside preparing the same
// request (which runs them, resolves the tools and compiles the schema),
// and refusing a text.format schema nested 2,000 levels.
func BenchmarkRequestLimits(b *testing.B) {
	e, _ := newEngineB(b, loopProvider{turns: 1}, nil)
	body := `{"input":[{"type":"message","role":"user","content":"What is the weather in Paris and Rome, and what is 6*7?"}],
		"text":{"format":{"type":"json_schema","name":"answer","schema":{"type":"object","properties":{"weather":{"type":"array","items":{"type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"number"}},"required":["city","celsius"]}},"product":{"type":"integer"}},"required":["weather","product"],"additionalProperties":false}}},
		"tools":[
		{"type":"function","name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}},
		{"type":"function","name":"calculator","description":"Evaluate arithmetic","parameters":{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}},
		{"type":"function","name":"fetch_url","description":"Fetch a page","parameters":{"type":"object","properties":{"url":{"type":"string","format":"uri"}},"required":["url"]}}]}`
	req, err := api.DecodeCreateRequest([]byte(body))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	r, err := e.prepare(ctx, req, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("checks", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := e.checkRequest(req); err != nil {
				b.Fatal(err)
			}
			if err := e.checkImages(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.prepare(ctx, req, "", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	deep, err := api.DecodeCreateRequest([]byte(`{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` +
		strings.Repeat(`{"items":`, 2000) + `{}` + strings.Repeat(`}`, 2000) + `}}}`))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("refuse_deep_2000", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.prepare(ctx, deep, "", nil); err == nil {
				b.Fatal("a schema 2,000 deep was prepared")
			}
		}
	})
}

// fragmentProvider streams one answer of n bytes in 4-byte fragments: as
// the arguments of a client function call "write" (asText false), or as
// text. A model writing a file through a tool sends its content so.
type fragmentProvider struct {
	n      int
	asText bool
}

func (p fragmentProvider) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	return p.Stream(ctx, req, func(provider.Delta) error { return nil })
}

func (p fragmentProvider) Stream(_ context.Context, _ *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	const frag = `"ab\n`
	d := provider.Delta{Kind: provider.DeltaToolCall, ToolCallID: "call_w", ToolName: "write", Text: frag, More: true}
	if p.asText {
		d = provider.Delta{Kind: provider.DeltaText, Text: frag, More: true}
	}
	for range p.n / len(frag) {
		if err := fn(d); err != nil {
			return nil, err
		}
	}
	whole := strings.Repeat(frag, p.n/len(frag))
	if p.asText {
		return &provider.Result{Text: whole, FinishReason: provider.FinishStop}, nil
	}
	return &provider.Result{ToolCalls: []api.Item{call("call_w", "write", whole)}, FinishReason: provider.FinishToolCalls}, nil
}

// BenchmarkFragments measures a streamed answer of 64 KB that comes in
// 4-byte fragments, as a function call's arguments beside the same bytes
// as text (the reference: a text's deltas are joined once). Before
// arguments were collected like text, every fragment copied all the
// arguments so far: measured 150 ms and 465 MB allocated a response, now
// about the text's (docs/performance.md).
func BenchmarkFragments(b *testing.B) {
	const size = 64 << 10
	for _, asText := range []bool{true, false} {
		name, body := "arguments", `{"input":"write it","stream":true,"tools":[{"type":"function","name":"write","parameters":{"type":"object"}}]}`
		if asText {
			name, body = "text", `{"input":"write it","stream":true}`
		}
		b.Run(name, func(b *testing.B) {
			e, _ := newEngineB(b, fragmentProvider{n: size, asText: asText}, nil)
			req, err := api.DecodeCreateRequest([]byte(body))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(size)
			for b.Loop() {
				if err := e.CreateResponse(context.Background(), req, discard{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
