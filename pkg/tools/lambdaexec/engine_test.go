package lambdaexec_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/provider/openai"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/calculator"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

type responseRecorder struct {
	mu   sync.Mutex
	resp *api.Response
}

func (r *responseRecorder) WriteEvent(*api.StreamEvent) error { return nil }

func (r *responseRecorder) WriteResponse(resp *api.Response) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resp = resp
	return nil
}

// TestEngineTurnThroughLambda runs the agentic loop with the executor wired
// as pkg/app wires it: a fake model calls calculator three times in one
// turn, the calls go through the real SDK client to the local Invoke
// endpoint at once, and their results come back in the order of the calls,
// followed by the final answer. A local tool (fetch_url, in-process) sits
// next to the Lambda-backed one.
func TestEngineTurnThroughLambda(t *testing.T) {
	const n = 3
	// The calculator function holds every call until all three have
	// started: proof that the turn's calls are in flight at once.
	var mu sync.Mutex
	started := 0
	allIn := make(chan struct{})
	calc := calculator.Tool()
	inner := calc.Handler
	calc.Handler = func(ctx context.Context, call tools.ToolCall) (string, error) {
		mu.Lock()
		started++
		if started == n {
			close(allIn)
		}
		mu.Unlock()
		select {
		case <-allIn:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return inner(ctx, call)
	}
	ep := newEndpoint(t, map[string]tools.Hosted{lambdaexec.FunctionLogicalID("calculator"): calc})

	manifest := lambdaexec.LocalManifest("calculator")
	manifest.Tools = append(manifest.Tools, tools.ManifestTool{Name: "fetch_url", Backing: tools.Backing{Type: tools.BackingLocal}})
	fallback := map[string]api.ToolDefinition{}
	for name, h := range builtin.Tools(builtin.Config{}) {
		fallback[name] = h.Definition
	}
	reg, err := builtin.Registry(manifest, builtin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := lambdaexec.New(ep.client, lambdaexec.Config{}, manifest.Tools, fallback)
	if err != nil {
		t.Fatal(err)
	}

	fake := fakellm.New(
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call_a", Name: "calculator", Arguments: `{"expression":"6*7"}`},
			{ID: "call_b", Name: "calculator", Arguments: `{"expression":"2^10"}`},
			{ID: "call_c", Name: "calculator", Arguments: `{"expression":"1/0"}`},
		}},
		fakellm.Turn{Text: "42, 1024, and 1/0 is undefined."},
	)
	defer fake.Close()
	eng, err := engine.New(engine.Config{
		Provider: openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: fake.Client()}),
		Store:    store.NewMemory(store.MemoryConfig{}),
		Hosted:   tools.Catalogs{reg, ex},
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	req, err := api.DecodeCreateRequest([]byte(`{"model":"m","input":"compute","tools":[{"type":"lambent:calculator"},{"type":"lambent:fetch_url"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &responseRecorder{}
	if err := eng.CreateResponse(context.Background(), req, rec); err != nil {
		t.Fatal(err)
	}
	r := rec.resp
	if r == nil || r.Status != api.StatusCompleted {
		t.Fatalf("response = %+v, want completed", r)
	}
	type out struct {
		typ, callID, output string
		isError             bool
	}
	var got []out
	for _, it := range r.Output {
		o := out{string(it.Type), it.Name, it.Output, it.Error != ""}
		if it.Error != "" {
			o.output = it.Error
		}
		got = append(got, o)
	}
	// Server-executed calls are mcp_call items (name in callID's place).
	want := []out{
		{"mcp_call", "calculator", "42", false},
		{"mcp_call", "calculator", "1024", false},
		{"mcp_call", "calculator", "division by zero", true},
		{"message", "", "", false},
	}
	if len(got) != len(want) {
		t.Fatalf("output = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("output[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if text := r.Output[len(r.Output)-1].Text(); text != "42, 1024, and 1/0 is undefined." {
		t.Errorf("answer = %q", text)
	}
	// The model saw the calculator as the built-in defines it (the manifest
	// gives only its backing).
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	found := false
	for _, tl := range reqs[0].Tools {
		if tl.Function.Name == "calculator" {
			found = tl.Function.Description == calculator.Tool().Definition.Description
		}
	}
	if !found {
		t.Errorf("the model was not offered the built-in calculator definition: %+v", reqs[0].Tools)
	}
	if st := ep.srv.Stats(); st.Invocations != n {
		t.Errorf("invocations = %d, want %d", st.Invocations, n)
	}
}
