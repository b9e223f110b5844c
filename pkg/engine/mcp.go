package engine

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/net/http/httpguts"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/tools"
)

// MCP tools, with the wire format of OpenAI's hosted MCP tool.
//
// A request names MCP servers with {"type":"mcp","server_label",...} or,
// for servers of the manifest, {"type":"lambent:<name>"}: at most
// Limits.MCPServers of them, counted before anything connects. Before the
// first model call the loop lists the tools of every server whose list the
// conversation does not hold yet, concurrently (an mcp_list_tools item per
// server, with its events; a failure, a listing over
// Limits.MCPToolsPerServer or Limits.MCPReplyBytes included, is the item's
// error, never the response's), and offers the allowed ones to the model
// as ordinary functions (named as the tool, or "<label>_<tool>" when two
// would clash, then that numbered). A call of a tool that
// needs approval (require_approval, "always" by default as OpenAI) becomes
// an mcp_approval_request item and pauses the turn (requires_action, or
// completed under OpenAICompat); other calls are mcp_call items run with
// the turn's other calls, concurrently. A continuation answers with
// mcp_approval_response items: approved calls run as mcp_call items naming
// the request (approval_request_id), denied ones are reported to the model
// as denied, an approval request left unanswered as not approved.

// mcpServer is one MCP server of a response.
type mcpServer struct {
	srv  *tools.MCPServer
	sess tools.MCPSession
	// tools are the allowed tools once listed (or found listed in the
	// conversation).
	tools  []api.MCPTool
	listed bool
}

// mcpTool runs the calls of one MCP tool (tools.ToolExecutor).
type mcpTool struct {
	s    *mcpServer
	tool api.MCPTool
}

// Execute calls the tool on its server.
func (t *mcpTool) Execute(ctx context.Context, call tools.ToolCall) (*tools.ToolResult, error) {
	return t.s.sess.CallTool(ctx, t.tool.Name, call.Arguments)
}

// served returns the tool that serves t: the operator's tool a built-in
// type is mapped to (Builtin.Tools: web_search served by a manifest MCP
// server, say), else t.
func (e *Engine) served(t *api.Tool) *api.Tool {
	if name, ok := e.cfg.Builtin.Tools[t.Type]; ok {
		return &api.Tool{Type: api.HostedPrefix + name}
	}
	return t
}

// mcpKey names an MCP tool: its server's label and its own name.
type mcpKey struct{ label, name string }

// checkMCPServers refuses a request that enables more MCP servers (its
// {"type":"mcp"} tools and the manifest servers it names) than
// Limits.MCPServers, before any is read or connected to: each costs a
// connection, a listing and a goroutine while listing.
func (e *Engine) checkMCPServers(req *api.CreateResponseRequest) error {
	n := 0
	for i := range req.Tools {
		if t := e.served(&req.Tools[i]); t.Type == api.ToolMCP || t.IsHosted() && e.cfg.MCP.Servers[t.HostedName()] != nil {
			n++
		}
	}
	if limit := e.cfg.Limits.MCPServers; n > limit {
		return limits.Exceeded("tools", "MCP servers enabled by the request (mcp tools and manifest servers)", n, limit)
	}
	return nil
}

// addMCP adds the request's MCP server srv (tools[i], param p).
func (t *toolset) addMCP(e *Engine, p string, srv *tools.MCPServer) error {
	if e.cfg.MCP.Connector == nil {
		return api.InvalidRequestCode(p+".type", "unsupported_tool", "MCP tools are not supported by this gateway.")
	}
	if srv.Label == api.HostedServerLabel {
		return api.InvalidRequest(p+".server_label", "server_label %q is reserved for Lambent's hosted tools", srv.Label)
	}
	if t.mcpServer(srv.Label) != nil {
		return api.InvalidRequest(p+".server_label", "duplicate server_label %q", srv.Label)
	}
	if err := e.cfg.MCP.Connector.Check(srv); err != nil {
		return api.InvalidRequestCode(p+".server_url", "invalid_mcp_server", "MCP server %q: %v", srv.Label, err)
	}
	s := &mcpServer{srv: srv, sess: e.cfg.MCP.Connector.Open(srv, e.mcpBounds())}
	if t.mcpByLabel == nil {
		t.mcpByLabel = map[string]*mcpServer{}
	}
	t.mcpByLabel[srv.Label] = s
	t.mcp = append(t.mcp, s)
	return nil
}

// mcpBounds bound every MCP session by the engine's limits.
func (e *Engine) mcpBounds() tools.MCPBounds {
	return tools.MCPBounds{Tools: e.cfg.Limits.MCPToolsPerServer, ReplyBytes: e.cfg.Limits.MCPReplyBytes}
}

// Bounds of a request's MCP server declaration (docs/configuration.md),
// checked before anything connects: its headers and authorization go with
// every request to the server, its label into every item of the server and
// the names of its tools.
const (
	maxMCPLabelBytes  = api.MaxMCPServerLabelBytes
	maxMCPURLBytes    = 8 << 10
	maxMCPHeaders     = 64
	maxMCPHeaderBytes = 16 << 10
)

// mcpRequestServer reads a request's {"type":"mcp"} tool. A URL whose
// path ends in /sse uses the HTTP+SSE transport, any other streamable HTTP.
// maxTools bounds the names of its allowed_tools (a server offers at most
// Limits.MCPToolsPerServer tools).
func mcpRequestServer(t *api.Tool, p string, maxTools int) (*tools.MCPServer, error) {
	if err := checkMCPDeclaration(t, p); err != nil {
		return nil, err
	}
	allowed, err := tools.ParseMCPAllowedTools(t.AllowedTools)
	if err != nil {
		return nil, api.InvalidRequest(p+".allowed_tools", "invalid allowed_tools: %v", err)
	}
	if n := len(allowed.Names); n > maxTools {
		return nil, limits.Exceeded(p+".allowed_tools", "tool names in allowed_tools", n, maxTools)
	}
	approval, err := tools.ParseMCPApproval(t.RequireApproval)
	if err != nil {
		return nil, api.InvalidRequest(p+".require_approval", "invalid require_approval: %v", err)
	}
	srv := &tools.MCPServer{Label: t.ServerLabel, Description: t.ServerDescription, URL: t.ServerURL, Transport: tools.MCPStreamableHTTP,
		Headers: t.Headers, Authorization: t.Authorization, Allowed: allowed, Approval: approval}
	if u, err := url.Parse(t.ServerURL); err == nil && strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/sse") {
		srv.Transport = tools.MCPSSE
	}
	return srv, nil
}

// checkMCPDeclaration bounds an MCP tool's label, URL and headers, and
// refuses a header no HTTP request can carry (without quoting its value,
// a secret).
func checkMCPDeclaration(t *api.Tool, p string) error {
	if n := len(t.ServerLabel); n > maxMCPLabelBytes {
		return limits.Exceeded(p+".server_label", "bytes of server_label", n, maxMCPLabelBytes)
	}
	if n := len(t.ServerURL); n > maxMCPURLBytes {
		return limits.Exceeded(p+".server_url", "bytes of server_url", n, maxMCPURLBytes)
	}
	if n := len(t.Headers); n > maxMCPHeaders {
		return limits.Exceeded(p+".headers", "headers of the MCP server", n, maxMCPHeaders)
	}
	size := len(t.Authorization)
	for k, v := range t.Headers {
		if !httpguts.ValidHeaderFieldName(k) {
			return api.InvalidRequest(p+".headers", "invalid header name %q", k)
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return api.InvalidRequest(p+".headers", "the value of header %q is not a valid HTTP header value", k)
		}
		size += len(k) + len(v)
	}
	if !httpguts.ValidHeaderFieldValue(t.Authorization) {
		return api.InvalidRequest(p+".authorization", "authorization is not a valid HTTP header value")
	}
	if size > maxMCPHeaderBytes {
		return limits.Exceeded(p+".headers", "bytes of the MCP server's headers and authorization", size, maxMCPHeaderBytes)
	}
	return nil
}

// mcpServer returns the response's server labelled label, or nil.
func (t *toolset) mcpServer(label string) *mcpServer { return t.mcpByLabel[label] }

// knowsServer reports whether label, a tool_choice's reference to an MCP
// server (allowed_tools' or a forced {"type":"mcp"}), names one of the
// request's servers or the gateway's hosted tools ("lambent").
func (t *toolset) knowsServer(label string) bool {
	return label == api.HostedServerLabel || t.mcpServer(label) != nil
}

// serverTools are the definitions of the tools the model sees of the MCP
// server label (the gateway's hosted tools: "lambent"), in the order it
// sees them: all of them, or with name the one of that name.
func (ts *toolset) serverTools(label, name string) []api.ToolDefinition {
	ref := []api.ToolRef{{Type: api.ToolMCP, ServerLabel: label, Name: name}}
	var out []api.ToolDefinition
	for _, d := range ts.defList {
		t := ts.defs[d.Name]
		switch {
		case t.mcp != nil && mcpRefAllows(ref, t.mcp.s.srv.Label, t.mcp.tool.Name),
			t.mcp == nil && t.kind == ToolKindHosted && mcpRefAllows(ref, api.HostedServerLabel, d.Name):
			out = append(out, d)
		}
	}
	return out
}

// forceMCP makes q, the first model call of a response whose tool_choice
// c is {"type":"mcp"}, call a tool of c's server: the tool c names
// (ForcedTool, the function name the model knows it by), or without a
// name one of the server's tools, which are then all q offers. A tool the
// server does not offer (its listing failed, say) is a 400.
func (ts *toolset) forceMCP(q *provider.Request, c *api.ToolChoice) error {
	defs := ts.serverTools(c.ServerLabel, c.Name)
	switch {
	case len(defs) == 0 && c.Name != "":
		return api.InvalidRequest("tool_choice.name", "tool_choice forces tool %q of MCP server %q, which the server does not offer (see its mcp_list_tools item)", c.Name, c.ServerLabel)
	case len(defs) == 0:
		return api.InvalidRequest("tool_choice.server_label", "tool_choice forces a tool of MCP server %q, which offers none (see its mcp_list_tools item)", c.ServerLabel)
	case c.Name != "":
		q.ForcedTool = defs[0].Name
	default:
		q.Tools = defs
	}
	return nil
}

// closeMCP ends the response's MCP sessions.
func (t *toolset) closeMCP() {
	for _, s := range t.mcp {
		_ = s.sess.Close()
	}
}

// startMCP lists the tools of the servers whose list the conversation does
// not hold yet (or holds one longer than Limits.MCPToolsPerServer: a client
// may send any list; for an operator's server, one the gateway did not
// make itself of an operator's server — not of a request's server of its
// label: api.ItemHidden.Listed), concurrently, one goroutine per
// server (at most Limits.MCPServers), as mcp_list_tools items, and adds
// every server's allowed tools to the model's tools.
func (e *Engine) startMCP(ctx context.Context, r *run) {
	if len(r.tools.mcp) == 0 {
		return
	}
	for _, list := range [][]api.Item{r.history, r.input, r.resp.Output} {
		for i := range list {
			if it := &list[i]; it.Type == api.ItemMCPListTools && it.Error == "" && len(it.Tools) <= e.cfg.Limits.MCPToolsPerServer {
				if s := r.tools.mcpServer(it.ServerLabel); s != nil && (it.Hidden.Listed || !s.srv.Trusted) {
					s.tools, s.listed = it.Tools, true
				}
			}
		}
	}
	type listing struct {
		s     *mcpServer
		idx   int
		tools []api.MCPTool
		err   error
	}
	var todo []*listing
	for _, s := range r.tools.mcp {
		if s.listed {
			continue
		}
		idx := len(r.resp.Output)
		r.resp.Output = append(r.resp.Output, api.Item{Type: api.ItemMCPListTools, ID: r.newItemID(api.PrefixMCPListTools), Status: api.ItemInProgress, ServerLabel: s.srv.Label,
			Hidden: api.ItemHidden{Listed: s.srv.Trusted}})
		r.em.itemEvent(api.EventOutputItemAdded, idx, &r.resp.Output[idx])
		r.em.mcpEvent(api.EventMCPListToolsInProgress, idx, r.resp.Output[idx].ID)
		todo = append(todo, &listing{s: s, idx: idx})
	}
	lctx, cancel := r.budget.bound(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range todo {
		wg.Go(func() { l.tools, l.err = l.s.sess.ListTools(lctx) })
	}
	wg.Wait()
	for _, l := range todo {
		it := &r.resp.Output[l.idx]
		it.Status = api.ItemCompleted
		if l.err != nil {
			e.log.WarnContext(ctx, "mcp list tools failed", "server_label", l.s.srv.Label, "response_id", r.resp.ID, "err", l.err)
			it.Error = l.err.Error()
			r.em.mcpEvent(api.EventMCPListToolsFailed, l.idx, it.ID)
		} else {
			for _, t := range l.tools {
				if l.s.srv.Allowed.Allows(&t) {
					it.Tools = append(it.Tools, t)
				}
			}
			l.s.tools, l.s.listed = it.Tools, true
			r.em.mcpEvent(api.EventMCPListToolsCompleted, l.idx, it.ID)
		}
		r.em.itemEvent(api.EventOutputItemDone, l.idx, it)
	}
	r.tools.addMCPDefs(!e.cfg.Loop.SkipArgumentCheck)
}

// addMCPDefs offers every listed server's allowed tools to the model, in
// the request's order of servers and the servers' order of tools; check
// has their calls' arguments checked against their input schemas. The
// tools an allowed_tools reference to their server names join the filter.
func (ts *toolset) addMCPDefs(check bool) {
	ts.mcpNames = map[mcpKey]string{}
	ts.nameNext = map[string]int{}
	for _, s := range ts.mcp {
		for i := range s.tools {
			t := &s.tools[i]
			if !s.srv.Allowed.Allows(t) {
				continue
			}
			name := ts.freeName(funcName(t.Name), funcName(s.srv.Label+"_"+t.Name))
			mt := &mcpTool{s: s, tool: *t}
			def := api.ToolDefinition{Name: name, Description: t.Description, Parameters: t.InputSchema}
			rt := requestTool{def: def, exec: mt, mcp: mt, kind: ToolKindMCP}
			if check {
				rt.args = newArgCheck(t.InputSchema)
			}
			ts.defs[name] = rt
			ts.defList = append(ts.defList, def)
			ts.mcpNames[mcpKey{s.srv.Label, t.Name}] = name
			if mcpRefAllows(ts.allowedMCP, s.srv.Label, t.Name) {
				ts.filter.Allow(name)
			}
		}
	}
}

// mcpRefAllows reports whether an allowed_tools reference of refs names
// the tool name of the MCP server label (the gateway's own tools are the
// server "lambent"): the server's, without a name, or that tool.
func mcpRefAllows(refs []api.ToolRef, label, name string) bool {
	for _, r := range refs {
		if r.ServerLabel == label && (r.Name == "" || r.Name == name) {
			return true
		}
	}
	return false
}

// numberedStem is how much of a name numbered names keep: room for "_"
// and six digits within a function name's 64 characters.
const numberedStem = 64 - 7

// freeName is the first of the names no tool of the response has yet,
// numbering the last one when all are taken: its first numberedStem
// characters, "_" and the least number from 2 up that is free. The number
// to try next is kept per stem (r.tools.nameNext; names are never freed), so
// naming n tools of one name costs O(n), not O(n²).
func (t *toolset) freeName(names ...string) string {
	for _, n := range names {
		if _, taken := t.defs[n]; !taken {
			return n
		}
	}
	stem := names[len(names)-1]
	if t.nameNext == nil {
		t.nameNext = map[string]int{}
	}
	if len(stem) > numberedStem {
		stem = stem[:numberedStem]
	}
	for k := max(t.nameNext[stem], 2); ; k++ {
		n := stem + "_" + strconv.Itoa(k)
		if len(n) > 64 {
			n = stem[:64-(len(n)-len(stem))] + n[len(stem):]
		}
		if _, taken := t.defs[n]; !taken {
			t.nameNext[stem] = k + 1
			return n
		}
	}
}

// funcName makes s a valid function name: a-z, A-Z, 0-9, _ and -, at most
// 64 characters.
func funcName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b)
}

// modelName is the function name the model knows an item's tool by: an MCP
// tool's name as offered to it, any other tool's own name.
func (t *toolset) modelName(it *api.Item) string {
	if n, ok := t.clientModelName(it); ok {
		return n
	}
	if it.ServerLabel != "" && it.ServerLabel != api.HostedServerLabel {
		if n, ok := t.mcpNames[mcpKey{it.ServerLabel, it.Name}]; ok {
			return n
		}
	}
	return it.Name
}

// serverItem says how the model's call of the function name appears in
// output: as an mcp_approval_request (an MCP tool that needs approval), an
// mcp_call (another MCP tool; in mcp_call mode any tool but the request's
// client functions), or, typ "", as a function_call. label and tool are
// the item's server_label and name.
func (r *run) serverItem(name string) (typ, label, tool string) {
	if r.toolChoiceMode() == api.ToolChoiceNone {
		return "", "", ""
	}
	t, ok := r.tools.defs[name]
	switch {
	case ok && t.mcp != nil:
		typ = api.ItemMCPCall
		if t.mcp.s.srv.Approval.Required(&t.mcp.tool) && r.tools.filter.Allowed(name) {
			typ = api.ItemMCPApprovalRequest
		}
		return typ, t.mcp.s.srv.Label, t.mcp.tool.Name
	case r.tools.mcpItems && (!ok || t.exec != nil || t.ends):
		return api.ItemMCPCall, api.HostedServerLabel, name
	}
	return "", "", ""
}

// approvedCall is the mcp_call that runs the approved request req.
func (r *run) approvedCall(req *api.Item) api.Item {
	return api.Item{Type: api.ItemMCPCall, ID: r.newItemID(api.PrefixMCPCall), Status: api.ItemInProgress, ServerLabel: req.ServerLabel,
		Name: req.Name, Arguments: req.Arguments, ApprovalRequestID: req.ID, Hidden: api.ItemHidden{ModelCallID: req.Hidden.ModelCallID}}
}

// checkApprovals checks the input's mcp_approval_response items: each
// answers an mcp_approval_request of the conversation, once.
func (r *run) checkApprovals() error {
	requests := map[string]bool{}
	answered := map[string]bool{}
	for _, list := range [][]api.Item{r.history, r.input} {
		for i := range list {
			switch it := &list[i]; it.Type {
			case api.ItemMCPApprovalRequest:
				requests[it.ID] = true
			}
		}
	}
	for i := range r.history {
		if it := &r.history[i]; it.Type == api.ItemMCPApprovalResponse {
			answered[it.ApprovalRequestID] = true
		}
	}
	for i := range r.input {
		it := &r.input[i]
		if it.Type != api.ItemMCPApprovalResponse {
			continue
		}
		p := inputParam(i, "approval_request_id")
		if !requests[it.ApprovalRequestID] {
			return api.InvalidRequestCode(p, "approval_request_not_found", "No MCP approval request with id '%s' in this conversation.", it.ApprovalRequestID)
		}
		if answered[it.ApprovalRequestID] {
			return api.InvalidRequestCode(p, "approval_request_answered", "The MCP approval request '%s' was answered already.", it.ApprovalRequestID)
		}
		answered[it.ApprovalRequestID] = true
	}
	return nil
}

// echo is how the response's tools show a manifest MCP server: OpenAI's
// mcp tool without its URL and secrets.
func (s *mcpServer) echo() api.Tool {
	return api.Tool{Type: api.ToolMCP, ServerLabel: s.srv.Label, ServerDescription: s.srv.Description,
		AllowedTools: s.srv.Allowed.Wire(), RequireApproval: s.srv.Approval.Wire()}
}

// deniedText is what the model reads for an MCP call that did not run.
func deniedText(resp *api.Item) string {
	if resp == nil {
		return "Error: this call was not approved (no approval was given), so it did not run."
	}
	msg := "Error: the user denied this call, so it did not run."
	if resp.Reason != "" {
		msg += fmt.Sprintf(" Reason: %s", resp.Reason)
	}
	return msg
}
