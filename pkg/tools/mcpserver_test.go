package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

func TestMCPFilters(t *testing.T) {
	echo := &api.MCPTool{Name: "echo"}
	add := &api.MCPTool{Name: "add", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}

	all, err := tools.ParseMCPAllowedTools(nil)
	require.NoError(t, err)
	assert.True(t, all.Allows(echo) && all.Allows(add))
	list, err := tools.ParseMCPAllowedTools(json.RawMessage(`["echo"]`))
	require.NoError(t, err)
	assert.True(t, list.Allows(echo))
	assert.False(t, list.Allows(add))
	ro, err := tools.ParseMCPAllowedTools(json.RawMessage(`{"read_only":true}`))
	require.NoError(t, err)
	assert.False(t, ro.Allows(echo))
	assert.True(t, ro.Allows(add))
	_, err = tools.ParseMCPAllowedTools(json.RawMessage(`{"names":["x"]}`))
	assert.Error(t, err)
	_, err = tools.ParseMCPAllowedTools(json.RawMessage(`42`))
	assert.Error(t, err)

	for raw, want := range map[string][2]bool{ // echo, add
		``:                                  {true, true},
		`"always"`:                          {true, true},
		`"never"`:                           {false, false},
		`{"never":{"tool_names":["echo"]}}`: {false, true},
		`{"never":{"read_only":true}}`:      {true, false},
		`{"always":{"tool_names":["add"]},"never":{"tool_names":["add"]}}`: {true, true},
		`{}`: {true, true},
	} {
		a, err := tools.ParseMCPApproval(json.RawMessage(raw))
		require.NoError(t, err, raw)
		assert.Equal(t, want, [2]bool{a.Required(echo), a.Required(add)}, raw)
	}
	for _, bad := range []string{`"sometimes"`, `{"maybe":{}}`, `[]`} {
		_, err := tools.ParseMCPApproval(json.RawMessage(bad))
		assert.Error(t, err, bad)
	}

	a, err := tools.ParseMCPApproval(json.RawMessage(`{"never":{"tool_names":["echo"],"read_only":true}}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"never":{"tool_names":["echo"],"read_only":true}}`, string(a.Wire()))
	assert.JSONEq(t, `["echo"]`, string(list.Wire()))
	assert.JSONEq(t, `{"read_only":true}`, string(ro.Wire()))
	assert.Nil(t, all.Wire())
}

func TestManifestMCPBacking(t *testing.T) {
	ok := `{"tools":[{"name":"d","backing":{"type":"mcp","url":"https://d.example/mcp","secret_headers":{"K":"ssm:/k"},"authorization":"secretsmanager:t#v","require_approval":"never"}},
		{"name":"s","backing":{"type":"mcp","transport":"stdio","command":["srv"]}}]}`
	_, err := tools.ParseManifest([]byte(ok))
	require.NoError(t, err)
	for manifest, want := range map[string]string{
		`{"tools":[{"name":"d","backing":{"type":"mcp"}}]}`:                                          "needs a url",
		`{"tools":[{"name":"d","backing":{"type":"mcp","transport":"stdio"}}]}`:                      "needs a command",
		`{"tools":[{"name":"d","backing":{"type":"mcp","transport":"ws","url":"x"}}]}`:               "unknown mcp transport",
		`{"tools":[{"name":"d","backing":{"type":"mcp","url":"x","secret_headers":{"K":"plain"}}}]}`: "secret reference",
		`{"tools":[{"name":"d","backing":{"type":"mcp","url":"x","authorization":"sk-plain"}}]}`:     "secret reference",
		`{"tools":[{"name":"d","backing":{"type":"mcp","url":"x","require_approval":"sometimes"}}]}`: "require_approval",
		`{"tools":[{"name":"d","backing":{"type":"mcp","url":"x","allowed_tools":7}}]}`:              "allowed_tools",
		`{"tools":[{"name":"d","backing":{"type":"mcp","url":"x","authorization":"ssm:"}}]}`:         "secret reference",
	} {
		_, err := tools.ParseManifest([]byte(manifest))
		assert.ErrorContains(t, err, want, manifest)
	}
}

func TestRedactMCPURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://example.com/mcp":                  "https://example.com/mcp",
		"https://example.com/mcp?key=secret":       "https://example.com/mcp?REDACTED",
		"https://example.com/mcp?secret":           "https://example.com/mcp?REDACTED",
		"https://example.com/mcp?":                 "https://example.com/mcp?REDACTED",
		"https://example.com/mcp?key=s#frag":       "https://example.com/mcp?REDACTED",
		"https://example.com/mcp#frag?not-a-query": "https://example.com/mcp",
		"": "",
	} {
		assert.Equal(t, want, tools.RedactMCPURL(in), in)
	}
}
