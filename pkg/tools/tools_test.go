package tools_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func hosted(name string, h tools.Handler) tools.Hosted {
	return tools.Hosted{Definition: tools.Definition{Name: name, Description: "d"}, Handler: h}
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
	require.Error(t, r.Register(tools.Hosted{Definition: tools.Definition{Name: "x"}}, nil), "no handler")
	h, found := r.Get("a")
	require.True(t, found)
	assert.Equal(t, tools.KindHosted, h.Definition.Kind)
	_, found = r.Lookup("missing")
	assert.False(t, found)
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

func TestLocalExecutor(t *testing.T) {
	r := tools.NewRegistry()
	require.NoError(t, r.Register(hosted("echo", func(_ context.Context, c tools.ToolCall) (string, error) { return c.Arguments, nil }), nil))
	require.NoError(t, r.Register(hosted("fail", func(context.Context, tools.ToolCall) (string, error) { return "", errors.New("bad input") }), nil))
	require.NoError(t, r.Register(hosted("boom", func(context.Context, tools.ToolCall) (string, error) { panic("kaboom") }), nil))
	ex := tools.LocalExecutor{Registry: r}
	assert.True(t, ex.CanExecute(tools.Definition{Name: "echo", Kind: tools.KindHosted}))
	assert.False(t, ex.CanExecute(tools.Definition{Name: "echo", Kind: tools.KindFunction}))
	assert.False(t, ex.CanExecute(tools.Definition{Name: "nope", Kind: tools.KindHosted}))

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

func TestFunctionExecutor(t *testing.T) {
	var fe tools.FunctionExecutor
	assert.Equal(t, tools.KindFunction, fe.Kind())
	assert.True(t, fe.CanExecute(tools.Definition{Name: "f", Kind: tools.KindFunction}))
	assert.False(t, fe.CanExecute(tools.Definition{Name: "f", Kind: tools.KindHosted}))
	_, err := fe.Execute(context.Background(), tools.ToolCall{})
	require.ErrorIs(t, err, tools.ErrClientExecuted)
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
	d := m.Tools[0].Definition(tools.Definition{Description: "fallback", Parameters: []byte(`{"type":"object"}`)})
	assert.Equal(t, "fallback", d.Description)
	assert.Equal(t, tools.KindHosted, d.Kind)
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
