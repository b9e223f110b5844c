package telemetry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// toolLoop is an instant model: it calls the tools of calls (one batch per
// turn) until every batch has been fed back, then answers.
type toolLoop struct {
	batches [][]api.Item
}

func (p toolLoop) Complete(_ context.Context, req *provider.Request) (*provider.Result, error) {
	outputs := 0
	for i := range req.Items {
		if req.Items[i].Type == api.ItemFunctionCallOutput {
			outputs++
		}
	}
	done := 0
	for _, b := range p.batches {
		if outputs == done {
			return &provider.Result{ToolCalls: b, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: 10, OutputTokens: 2}}, nil
		}
		done += len(b)
	}
	return &provider.Result{Text: "done", FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: 12, OutputTokens: 3}}, nil
}

func (p toolLoop) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, _ := p.Complete(ctx, req)
	if res.Text != "" {
		_ = fn(provider.Delta{Kind: provider.DeltaText, Text: res.Text})
	}
	for i, c := range res.ToolCalls {
		_ = fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments})
	}
	return res, nil
}

func toolCall(id, name, args string) api.Item {
	return api.Item{Type: api.ItemFunctionCall, CallID: id, Name: name, Arguments: args}
}

// catalog is a hosted tool catalog: "t" answers 42, "bad" fails; seen
// (optional) sees each call with its context.
type catalog struct {
	seen func(ctx context.Context, c tools.ToolCall)
}

func (c catalog) Lookup(name string) (api.ToolDefinition, tools.ToolExecutor, bool) {
	if name != "t" && name != "bad" {
		return api.ToolDefinition{}, nil, false
	}
	return api.ToolDefinition{Name: name, Description: "tool " + name, Parameters: []byte(`{"type":"object"}`)}, c, true
}

func (c catalog) Execute(ctx context.Context, call tools.ToolCall) (*tools.ToolResult, error) {
	if c.seen != nil {
		c.seen(ctx, call)
	}
	if call.Name == "bad" {
		return nil, errors.New("backend down")
	}
	return &tools.ToolResult{Output: "42"}, nil
}

func newEngine(tb testing.TB, p provider.Provider, hosted tools.Catalog, obs engine.Observer) *engine.Engine {
	tb.Helper()
	cfg := engine.Config{Provider: p, Store: store.NewMemory(store.MemoryConfig{}), Hosted: hosted, DefaultModel: "test-model",
		Logger: slog.New(slog.DiscardHandler)}
	if obs != nil {
		cfg.Observer = obs
	}
	e, err := engine.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// capture keeps the final response.
type capture struct {
	mu   sync.Mutex
	resp *api.Response
}

func (c *capture) WriteEvent(*api.StreamEvent) error { return nil }
func (c *capture) WriteResponse(r *api.Response) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.resp = r.Clone()
	return nil
}

func request(tb testing.TB, body string) *api.CreateResponseRequest {
	tb.Helper()
	req, err := api.DecodeCreateRequest([]byte(body))
	if err != nil {
		tb.Fatal(err)
	}
	return req
}
