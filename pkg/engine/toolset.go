package engine

import (
	"fmt"
	"strings"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/tools"
)

// toolset is the tools of one response: what the model sees, who runs
// each tool's calls, the request's MCP servers and the count of executed
// hosted calls (max_tool_calls). prepare resolves it (resolveTools; the
// output tool: resolveOutput), startMCP adds the MCP servers' tools.
type toolset struct {
	// defs are the tools of the request by name: what the model sees and,
	// for hosted tools, the executor; defList is what the model sees, in
	// order.
	defs    map[string]requestTool
	defList []api.ToolDefinition
	filter  tools.Filter
	// allowedMCP are the allowed_tools references to MCP servers: their
	// tools join filter once listed (addMCPDefs).
	allowedMCP []api.ToolRef
	// mcpItems shows server-executed calls as mcp_call items
	// (Config.Loop.HostedToolItems).
	mcpItems bool
	// mcp are the request's MCP servers, in its order, and by label;
	// mcpNames maps their tools to the function names the model knows them
	// by, nameNext is the number freeName tries next per name stem.
	mcp        []*mcpServer
	mcpByLabel map[string]*mcpServer
	mcpNames   map[mcpKey]string
	nameNext   map[string]int
	// clientNames maps the client tools whose calls have items of their
	// own (custom tools, a namespace's tools, shell, apply_patch) to the
	// function names the model knows them by (clienttools.go).
	clientNames map[clientKey]string
	// unserved are the types of the request's built-in tools that Lambent
	// does not run (api.BuiltinKind), left out of what the model sees.
	unserved []string
	// hostedCalls counts executed hosted tool calls (max_tool_calls).
	hostedCalls int
}

// requestTool is one tool of a request: the definition the model sees and
// the executor of its calls, nil for a client-executed function tool; mcp
// is set for an MCP server's tool.
type requestTool struct {
	def  api.ToolDefinition
	exec tools.ToolExecutor
	// ends marks the output tool without reflection and submit: their
	// calls end an attempt's iterations (attempts.go).
	ends bool
	mcp  *mcpTool
	// client is set for the client tools of clientNames: how their calls
	// appear in output (clienttools.go).
	client *clientRoute
	// kind is what runs its calls (ToolCall.Kind).
	kind string
	// args checks its calls' arguments (argcheck.go); nil: unchecked.
	args *argCheck
}

// serves reports whether t is the tool a call item names. An mcp_call or
// mcp_approval_request names its server too: a server's tool serves only
// its own server's calls of its name, and the gateway's own tools only
// calls labelled as theirs. (A call whose tool the request no longer
// offers could otherwise run another tool that has its name.) Other items
// name their tool by name alone.
func (t *requestTool) serves(it *api.Item) bool {
	if it.Type != api.ItemMCPCall && it.Type != api.ItemMCPApprovalRequest {
		return true
	}
	if t.mcp == nil {
		return it.ServerLabel == api.HostedServerLabel
	}
	return it.ServerLabel == t.mcp.s.srv.Label && it.Name == t.mcp.tool.Name
}

func (ts *toolset) add(t requestTool) {
	ts.defs[t.def.Name] = t
	ts.defList = append(ts.defList, t.def)
}

// maxToolNamesBytes bounds the list of tool names an error gives.
const maxToolNamesBytes = 2048

// names lists the tools the model sees, for an error it reads: their
// names in order up to maxToolNamesBytes, then how many more there are.
func (t *toolset) names() string {
	if len(t.defList) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, d := range t.defList {
		if i > 0 && b.Len()+len(d.Name) > maxToolNamesBytes {
			fmt.Fprintf(&b, ", and %d more", len(t.defList)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Name)
	}
	return b.String()
}
