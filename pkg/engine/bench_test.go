package engine

import (
	"context"
	"testing"

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
