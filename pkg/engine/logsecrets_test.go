package engine

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/mcp"
)

// A request's server_url fragment is one of its secrets (tools.RedactMCPURL
// drops it): a server that cannot be reached names its URL without it, in
// the mcp_list_tools item, the stream and the logs.
func TestMCPUnreachableFragmentSecret(t *testing.T) {
	t.Parallel()
	down := mcptest.StartStreamable(mcptest.Options{})
	down.Close()
	var logs logbuf.Buffer
	p := script(text("no tools", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+mcpServerTool(down.Endpoint+"#frag-secret", "")+`]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	require.Equal(t, []string{"mcp_list_tools", "message"}, types(r.Output))
	assert.NotEmpty(t, r.Output[0].Error)
	for _, ev := range rec.events {
		assert.NotContains(t, string(ev), "frag-secret")
	}
	assert.NotContains(t, string(rec.resp), "frag-secret")
	assert.Contains(t, logs.String(), "mcp list tools failed")
	assert.NotContains(t, logs.String(), "frag-secret")
}

// An operator's (manifest) server that cannot be reached: the client sees
// what failed, the log how, but not the key in its URL's query.
func TestMCPManifestUnreachableQuerySecret(t *testing.T) {
	t.Parallel()
	down := mcptest.StartStreamable(mcptest.Options{})
	down.Close()
	var logs logbuf.Buffer
	manifest := &tools.MCPServer{Label: "calc", URL: down.Endpoint + "?key=manifest-secret", Transport: tools.MCPStreamableHTTP, Trusted: true,
		Approval: tools.MCPApproval{Mode: tools.MCPApproveNever}}
	p := script(text("no tools", 1, 1))
	e, _ := newEngine(t, p, nil, func(c *Config) {
		c.MCP.Connector = mcp.New(mcp.Config{})
		c.MCP.Servers = map[string]*tools.MCPServer{"calc": manifest}
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	assert.NotContains(t, string(rec.resp), "manifest-secret")
	assert.Contains(t, logs.String(), "mcp list tools failed")
	for _, l := range logs.Lines() {
		if strings.Contains(l, "manifest-secret") {
			t.Errorf("log line holds the key: %s", l)
		}
	}
}
