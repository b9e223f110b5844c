package app

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// LAMBENT_BUILTIN_TOOLS and LAMBENT_UNSERVED_TOOLS are read and checked:
// a malformed entry or value fails at start, and so does a mapping to a
// tool the gateway does not have, or of a type Lambent runs itself.
func TestBuiltinToolsConfig(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := FromEnv(env(map[string]string{"LAMBENT_BUILTIN_TOOLS": "web_search=lambent:fetch_url, code_interpreter=lambent:calculator", "LAMBENT_UNSERVED_TOOLS": "refuse"}))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"web_search": "fetch_url", "code_interpreter": "calculator"}, c.Tools.Builtin)
	assert.True(t, c.Tools.RefuseUnserved)
	a, err := Build(context.Background(), c, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	a.Close()

	for _, bad := range []map[string]string{
		{"LAMBENT_BUILTIN_TOOLS": "web_search"},
		{"LAMBENT_BUILTIN_TOOLS": "web_search=fetch_url"},
		{"LAMBENT_BUILTIN_TOOLS": "web_search=lambent:"},
		{"LAMBENT_BUILTIN_TOOLS": "web_search=lambent:a,web_search=lambent:b"},
		{"LAMBENT_UNSERVED_TOOLS": "drop"},
	} {
		_, err := FromEnv(env(bad))
		assert.Error(t, err, "%v", bad)
	}
	for _, bad := range []string{"web_search=lambent:nope", "shell=lambent:calculator", "function=lambent:calculator"} {
		c, err := FromEnv(env(map[string]string{"LAMBENT_BUILTIN_TOOLS": bad}))
		require.NoError(t, err)
		_, err = Build(context.Background(), c, slog.New(slog.DiscardHandler), nil)
		assert.Error(t, err, bad)
	}
}
