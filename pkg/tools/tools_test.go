package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func hosted(name string, h tools.Handler) tools.Hosted {
	return tools.Hosted{Definition: api.ToolDefinition{Name: name, Description: "d"}, Handler: h}
}

type life struct{ inits, shutdowns int }

func (l *life) Initialize(context.Context) error { l.inits++; return nil }
func (l *life) Shutdown(context.Context) error   { l.shutdowns++; return errors.New("closing failed") }

func TestRegistry(t *testing.T) {
	r := tools.NewRegistry()
	lc := &life{}
	ok := func(context.Context, tools.ToolCall) (string, error) { return "ok", nil }
	require.NoError(t, r.Register(hosted("b", ok), nil))
	require.NoError(t, r.Register(hosted("a", ok), lc))
	require.Error(t, r.Register(hosted("a", ok), nil), "duplicate")
	require.Error(t, r.Register(tools.Hosted{Definition: api.ToolDefinition{Name: "x"}}, nil), "no handler")
	h, found := r.Get("a")
	require.True(t, found)
	assert.Equal(t, "a", h.Definition.Name)
	def, exec, found := r.Lookup("a")
	require.True(t, found)
	assert.Equal(t, h.Definition, def)
	assert.Same(t, r, exec, "the registry runs its own tools")
	_, exec, found = r.Lookup("missing")
	assert.False(t, found)
	assert.Nil(t, exec)
	var names []string
	for _, d := range r.List() {
		names = append(names, d.Name)
	}
	assert.Equal(t, []string{"a", "b"}, names)
	require.NoError(t, r.Initialize(context.Background()))
	assert.Equal(t, 1, lc.inits)
	assert.ErrorContains(t, r.Shutdown(context.Background()), "closing failed")
	assert.Equal(t, 1, lc.shutdowns)
}

func TestRegistryExecute(t *testing.T) {
	r := tools.NewRegistry()
	require.NoError(t, r.Register(hosted("echo", func(_ context.Context, c tools.ToolCall) (string, error) { return c.Arguments, nil }), nil))
	require.NoError(t, r.Register(hosted("fail", func(context.Context, tools.ToolCall) (string, error) { return "", errors.New("bad input") }), nil))
	require.NoError(t, r.Register(hosted("boom", func(context.Context, tools.ToolCall) (string, error) { panic("kaboom") }), nil))
	var ex tools.ToolExecutor = r

	res, err := ex.Execute(context.Background(), tools.ToolCall{ID: "c1", Name: "echo", Arguments: `{"a":1}`})
	require.NoError(t, err)
	assert.Equal(t, &tools.ToolResult{CallID: "c1", Output: `{"a":1}`}, res)
	res, err = ex.Execute(context.Background(), tools.ToolCall{ID: "c2", Name: "fail"})
	require.NoError(t, err)
	assert.Equal(t, &tools.ToolResult{CallID: "c2", Output: "bad input", IsError: true}, res)
	res, err = ex.Execute(context.Background(), tools.ToolCall{ID: "c3", Name: "boom"})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "kaboom")
	_, err = ex.Execute(context.Background(), tools.ToolCall{ID: "c4", Name: "nope"})
	require.Error(t, err)
}

func TestCatalogs(t *testing.T) {
	ok := func(context.Context, tools.ToolCall) (string, error) { return "ok", nil }
	first, second := tools.NewRegistry(), tools.NewRegistry()
	require.NoError(t, first.Register(hosted("a", ok), nil))
	require.NoError(t, second.Register(tools.Hosted{Definition: api.ToolDefinition{Name: "a", Description: "shadowed"}, Handler: ok}, nil))
	require.NoError(t, second.Register(hosted("b", ok), nil))
	cs := tools.Catalogs{first, second}
	def, exec, found := cs.Lookup("a")
	require.True(t, found)
	assert.Equal(t, "d", def.Description, "the first catalog that knows a name wins")
	assert.Same(t, first, exec)
	_, exec, found = cs.Lookup("b")
	require.True(t, found)
	assert.Same(t, second, exec)
	_, exec, found = cs.Lookup("c")
	assert.False(t, found)
	assert.Nil(t, exec)
}

// TestPayloadJSON holds ToolCall and ToolResult to the tool Lambda payload
// of docs/architecture.md: request {"call_id","name","arguments","response_id","tenant"},
// reply {"output","is_error"}.
func TestPayloadJSON(t *testing.T) {
	b, err := json.Marshal(tools.ToolCall{ID: "c1", Name: "calc", Arguments: `{"x":1}`})
	require.NoError(t, err)
	assert.JSONEq(t, `{"call_id":"c1","name":"calc","arguments":"{\"x\":1}","response_id":""}`, string(b))
	b, err = json.Marshal(tools.ToolCall{ID: "c1", Name: "calc", Arguments: `{}`, ResponseID: "resp_1", Tenant: "acme"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"call_id":"c1","name":"calc","arguments":"{}","response_id":"resp_1","tenant":"acme"}`, string(b))
	b, err = json.Marshal(tools.ToolResult{CallID: "c1", Output: "2"})
	require.NoError(t, err)
	assert.Equal(t, `{"output":"2","is_error":false}`, string(b))
}

func TestFilter(t *testing.T) {
	all := tools.NewFilter(nil)
	assert.False(t, all.Restricted())
	assert.True(t, all.Allowed("anything"))
	f := tools.NewFilter([]string{"a"})
	assert.True(t, f.Restricted())
	assert.True(t, f.Allowed("a"))
	assert.False(t, f.Allowed("b"))
}

func TestManifest(t *testing.T) {
	m, err := tools.ParseManifest([]byte(`{"tools":[
		{"name":"calculator","backing":{"type":"local"}},
		{"name":"search","description":"Search","parameters":{"type":"object"},"backing":{"type":"lambda","function":"arn:aws:lambda:us-east-1:1:function:search","qualifier":"live"}}]}`))
	require.NoError(t, err)
	require.Len(t, m.Tools, 2)
	d := m.Tools[0].Definition(api.ToolDefinition{Description: "fallback", Parameters: []byte(`{"type":"object"}`)})
	assert.Equal(t, "fallback", d.Description)
	assert.Equal(t, "calculator", d.Name)
	assert.Equal(t, "live", m.Tools[1].Backing.Qualifier)

	for _, bad := range []string{
		`{"tools":[{"backing":{"type":"local"}}]}`,
		`{"tools":[{"name":"a","backing":{"type":"local"}},{"name":"a","backing":{"type":"local"}}]}`,
		`{"tools":[{"name":"a","backing":{"type":"lambda"}}]}`,
		`{"tools":[{"name":"a","backing":{"type":"ftp"}}]}`,
		`{"tools":[{"name":"a","backing":{"type":"local"},"extra":1}]}`,
		`not json`,
	} {
		_, err := tools.ParseManifest([]byte(bad))
		assert.Error(t, err, bad)
	}
	m, err = tools.LoadManifest(` {"tools":[]}`)
	require.NoError(t, err)
	assert.Empty(t, m.Tools)
	_, err = tools.LoadManifest("/nonexistent/manifest.json")
	assert.Error(t, err)
}
