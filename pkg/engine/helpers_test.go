package engine

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/lambent/lambent/internal/testing/schema"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/stretchr/testify/require"
)

// step is one scripted model call.
type step struct {
	res  provider.Result
	err  error
	hook func(ctx context.Context) // runs before answering
}

// scripted is a provider that answers from a script and records requests.
type scripted struct {
	mu    sync.Mutex
	steps []step
	reqs  []*provider.Request
}

func script(steps ...step) *scripted { return &scripted{steps: steps} }

// next answers req from the script: a step without an error is accepted
// first (accepted, nil: nothing to tell), before its hook runs, as a
// provider's 2xx status comes before the model's answer.
func (s *scripted) next(ctx context.Context, req *provider.Request, accepted func() error) (*provider.Result, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	if len(s.steps) == 0 {
		s.mu.Unlock()
		return nil, &api.Error{Status: 502, Type: api.ErrTypeUpstream, Code: "script_exhausted", Message: "the script has no more steps"}
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	s.mu.Unlock()
	if st.err == nil && accepted != nil {
		if err := accepted(); err != nil {
			return nil, err
		}
	}
	if st.hook != nil {
		st.hook(ctx)
	}
	if st.err != nil {
		return nil, st.err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	res := st.res
	return &res, nil
}

func (s *scripted) Complete(ctx context.Context, req *provider.Request) (*provider.Result, error) {
	return s.next(ctx, req, nil)
}

func (s *scripted) Stream(ctx context.Context, req *provider.Request, fn func(provider.Delta) error) (*provider.Result, error) {
	res, err := s.next(ctx, req, func() error { return fn(provider.Delta{Kind: provider.DeltaAccepted}) })
	if err != nil {
		return nil, err
	}
	if res.Reasoning != "" {
		if err := fn(provider.Delta{Kind: provider.DeltaReasoning, Text: res.Reasoning}); err != nil {
			return nil, err
		}
	}
	for _, w := range strings.SplitAfter(res.Text, " ") {
		if w == "" {
			continue
		}
		if err := fn(provider.Delta{Kind: provider.DeltaText, Text: w}); err != nil {
			return nil, err
		}
	}
	for i, c := range res.ToolCalls {
		half := len(c.Arguments) / 2
		if err := fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, ToolCallID: c.CallID, ToolName: c.Name, Text: c.Arguments[:half]}); err != nil {
			return nil, err
		}
		if err := fn(provider.Delta{Kind: provider.DeltaToolCall, ToolIndex: i, Text: c.Arguments[half:]}); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (s *scripted) requests() []*provider.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*provider.Request(nil), s.reqs...)
}

func text(t string, in, out int) step {
	return step{res: provider.Result{Text: t, FinishReason: provider.FinishStop, Usage: api.Usage{InputTokens: in, OutputTokens: out}}}
}

func calls(in, out int, cs ...api.Item) step {
	return step{res: provider.Result{ToolCalls: cs, FinishReason: provider.FinishToolCalls, Usage: api.Usage{InputTokens: in, OutputTokens: out}}}
}

func call(id, name, args string) api.Item {
	return api.Item{Type: api.ItemFunctionCall, CallID: id, Name: name, Arguments: args}
}

// mockExec is a hosted tool catalog of names whose calls it executes with fn.
type mockExec struct {
	names map[string]bool
	fn    func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error)
	mu    sync.Mutex
	seen  []tools.ToolCall
}

func newMock(fn func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error), names ...string) *mockExec {
	m := &mockExec{names: map[string]bool{}, fn: fn}
	for _, n := range names {
		m.names[n] = true
	}
	return m
}

func (m *mockExec) Lookup(name string) (api.ToolDefinition, tools.ToolExecutor, bool) {
	if !m.names[name] {
		return api.ToolDefinition{}, nil, false
	}
	return api.ToolDefinition{Name: name, Description: "hosted " + name, Parameters: json.RawMessage(`{"type":"object"}`)}, m, true
}
func (m *mockExec) Execute(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
	m.mu.Lock()
	m.seen = append(m.seen, c)
	m.mu.Unlock()
	return m.fn(ctx, c)
}
func (m *mockExec) calls() []tools.ToolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tools.ToolCall(nil), m.seen...)
}

func echoTool(_ context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
	return &tools.ToolResult{Output: "result of " + c.Name + " " + c.Arguments}, nil
}

// recorder is a ResponseWriter that keeps what it is given, as JSON.
type recorder struct {
	mu     sync.Mutex
	events []json.RawMessage
	resp   json.RawMessage
}

func (r *recorder) WriteEvent(ev *api.StreamEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.events = append(r.events, b)
	r.mu.Unlock()
	return nil
}

func (r *recorder) WriteResponse(resp *api.Response) error {
	b, err := json.Marshal(resp)
	r.resp = b
	return err
}

func (r *recorder) parsed(t *testing.T) []ssecheck.Event {
	t.Helper()
	var evs []ssecheck.Event
	for _, raw := range r.events {
		ev, err := ssecheck.Decode(raw)
		require.NoError(t, err)
		evs = append(evs, ev)
	}
	return evs
}

func (r *recorder) types(t *testing.T) []string {
	var out []string
	for _, ev := range r.parsed(t) {
		out = append(out, ev.Type)
	}
	return out
}

// checkStream asserts the stream invariants and schema validity, and
// returns the final response from the terminal event.
func (r *recorder) checkStream(t *testing.T) *api.Response {
	t.Helper()
	v, err := schema.Shared()
	require.NoError(t, err)
	evs := r.parsed(t)
	require.NoError(t, ssecheck.Check(v, evs))
	var last struct {
		Response json.RawMessage `json:"response"`
	}
	require.NoError(t, json.Unmarshal(evs[len(evs)-1].Data, &last))
	return decodeResponse(t, last.Response)
}

func (r *recorder) response(t *testing.T) *api.Response {
	t.Helper()
	require.NotNil(t, r.resp, "no response written")
	v, err := schema.Shared()
	require.NoError(t, err)
	require.NoError(t, v.Validate("ResponseResource", r.resp))
	return decodeResponse(t, r.resp)
}

// decodeResponse reads a response body into api.Response (items through
// their input decoder).
func decodeResponse(t *testing.T, b []byte) *api.Response {
	t.Helper()
	var w struct {
		ID                string                 `json:"id"`
		Status            api.Status             `json:"status"`
		Output            []api.Item             `json:"output"`
		Usage             *api.Usage             `json:"usage"`
		IncompleteDetails *api.IncompleteDetails `json:"incomplete_details"`
		Error             *api.ResponseError     `json:"error"`
		CompletedAt       *int64                 `json:"completed_at"`
	}
	require.NoError(t, json.Unmarshal(b, &w), string(b))
	return &api.Response{ID: w.ID, Status: w.Status, Output: w.Output, Usage: w.Usage, IncompleteDetails: w.IncompleteDetails, Error: w.Error, CompletedAt: w.CompletedAt}
}

func types(items []api.Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Type
		if it.Type == api.ItemFunctionCall {
			out[i] += ":" + it.Name
		}
	}
	return out
}

// fieldOf is one field of each item, in order (f picks it).
func fieldOf(items []api.Item, f func(*api.Item) string) []string {
	out := make([]string, len(items))
	for i := range items {
		out[i] = f(&items[i])
	}
	return out
}

func role(it *api.Item) string   { return it.Role }
func itemID(it *api.Item) string { return it.ID }

// newEngine builds an engine over a memory store. A nil hosted catalog is
// the single-shot engine; a mock without names offers no hosted tools but
// runs the loop (client calls pause it).
func newEngine(t *testing.T, p provider.Provider, hosted tools.Catalog, mut ...func(*Config)) (*Engine, store.ResponseStore) {
	t.Helper()
	return newEngineB(t, p, hosted, mut...)
}

func newEngineB(t testing.TB, p provider.Provider, hosted tools.Catalog, mut ...func(*Config)) (*Engine, store.ResponseStore) {
	t.Helper()
	st := store.NewMemory(store.MemoryConfig{})
	// The loop tests assert function_call items; mcp_test.go covers the
	// default mcp_call items.
	cfg := Config{Provider: p, Store: st, Hosted: hosted, DefaultModel: "test-model", Logger: slog.New(slog.DiscardHandler), Loop: LoopConfig{HostedToolItems: HostedItemsFunctionCall}}
	for _, m := range mut {
		m(&cfg)
	}
	e, err := New(cfg)
	require.NoError(t, err)
	return e, st
}

func decodeReq(t *testing.T, body string) *api.CreateResponseRequest {
	t.Helper()
	req, err := api.DecodeCreateRequest([]byte(body))
	require.NoError(t, err)
	return req
}

func run1(t *testing.T, e *Engine, body string) (*recorder, error) {
	t.Helper()
	rec := &recorder{}
	err := e.CreateResponse(context.Background(), decodeReq(t, body), rec)
	return rec, err
}

// newConversation creates an empty conversation in st, a store that keeps
// conversations, and returns st as such a store, with the conversation.
func newConversation(t *testing.T, st store.ResponseStore) (store.ConversationStore, *store.Conversation) {
	t.Helper()
	cs := st.(store.ConversationStore)
	c := &store.Conversation{ID: api.NewID(api.PrefixConversation)}
	require.NoError(t, cs.CreateConversation(context.Background(), c, nil))
	return cs, c
}
