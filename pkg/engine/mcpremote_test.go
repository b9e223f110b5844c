package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/logbuf"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/internal/testing/ssecheck"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/store"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/mcp"
)

// Remote MCP servers (built with the official Go SDK, on loopback) through
// the engine: listing, calls, approval, errors, secrets.

// withMCP gives the engine an MCP connector that may reach loopback.
func withMCP(c *Config) { c.MCP.Connector = mcp.New(mcp.Config{AllowHosts: []string{"127.0.0.1"}}) }

func mcpServerTool(url, extra string) string {
	return fmt.Sprintf(`{"type":"mcp","server_label":"docs","server_url":%q%s}`, url, extra)
}

func startMCP(t *testing.T, opts mcptest.Options) *mcptest.Server {
	t.Helper()
	srv := mcptest.StartStreamable(opts)
	t.Cleanup(srv.Close)
	return srv
}

// openAIResponse checks the written response against OpenAI's types (MCP
// items are not in OpenResponses) and decodes it.
func (r *recorder) openAIResponse(t *testing.T) *api.Response {
	t.Helper()
	require.NotNil(t, r.resp, "no response written")
	require.NoError(t, ssecheck.CheckOpenAIResponse(r.resp))
	return decodeResponse(t, r.resp)
}

// toolNames are the names of the tools a model call offered.
func toolNames(defs []api.ToolDefinition) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.Name
	}
	return out
}

// A server's tools are listed once (mcp_list_tools), offered to the model,
// and its calls are mcp_call items with the server's label; a continuation
// that holds the list does not list again.
func TestMCPRemote_ListCallContinue(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "echo", `{"text":"hi"}`)), text("done", 1, 1), text("again", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["echo","add"]`)
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+tool+`]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
	list := r.Output[0]
	assert.Equal(t, "docs", list.ServerLabel)
	assert.Empty(t, list.Error)
	require.Len(t, list.Tools, 2, "allowed_tools applies to the list")
	// The server lists its tools by name.
	assert.Equal(t, "add", list.Tools[0].Name)
	assert.Contains(t, string(list.Tools[0].Annotations), `"readOnlyHint":true`)
	assert.Equal(t, "echo", list.Tools[1].Name)
	assert.Equal(t, "Echo the text.", list.Tools[1].Description)
	assert.Contains(t, string(list.Tools[1].InputSchema), `"text"`)
	c := r.Output[1]
	assert.Equal(t, "docs", c.ServerLabel)
	assert.Equal(t, "echo", c.Name)
	assert.Equal(t, "echo: hi", c.Output)
	assert.Equal(t, api.ItemCompleted, c.Status)
	evs := rec.types(t)
	assert.Contains(t, evs, api.EventMCPListToolsInProgress)
	assert.Contains(t, evs, api.EventMCPListToolsCompleted)
	assert.Contains(t, evs, api.EventMCPCallArgsDone)
	assert.Contains(t, evs, api.EventMCPCallCompleted)

	reqs := p.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, []string{"add", "echo"}, toolNames(reqs[0].Tools))
	assert.Equal(t, []string{"message", "function_call:echo", "function_call_output"}, types(reqs[1].Items))
	assert.Equal(t, "echo: hi", reqs[1].Items[2].Output)

	// The continuation holds the list: no new mcp_list_tools, same tools.
	rec, err = run1(t, e, `{"input":"more","previous_response_id":"`+r.ID+`","tools":[`+tool+`]}`)
	require.NoError(t, err)
	r2 := rec.openAIResponse(t)
	assert.Equal(t, []string{"message"}, types(r2.Output))
	reqs = p.requests()
	require.Len(t, reqs, 3)
	assert.Equal(t, []string{"add", "echo"}, toolNames(reqs[2].Tools))
	assert.Equal(t, []string{"message", "function_call:echo", "function_call_output", "message", "message"}, types(reqs[2].Items))
}

// An MCP tool's image content reaches the model as its JSON text within
// the output bound, never as an image: a run at LAMBENT_LIMIT_IMAGES
// whose tool returns images makes every model call with the images its
// input was counted for, no more.
func TestMCPRemote_ImageOutputIsText(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{Image: true})
	p := script(calls(1, 1, call("c1", "image", `{}`)), calls(1, 1, call("c2", "image", `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP, func(c *Config) { c.Limits.Images = 1 })
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["image"]`)
	rec, err := run1(t, e, `{"input":[{"role":"user","content":[{"type":"input_text","text":"look"},`+
		`{"type":"input_image","image_url":"https://images.invalid/a.png"}]}],"tools":[`+tool+`]}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	reqs := p.requests()
	require.Len(t, reqs, 3)
	for i, req := range reqs {
		assert.Equal(t, 1, countImages(req.Items), "model call %d", i)
	}
	out := reqs[2].Items[len(reqs[2].Items)-1]
	require.Equal(t, api.ItemFunctionCallOutput, out.Type)
	assert.Empty(t, out.OutputParts)
	assert.Contains(t, out.Output, `"type":"image"`)
}

// 16 calls of one turn run concurrently: the server's barrier releases
// them only when all are in flight.
func TestMCPRemote_ConcurrentCalls(t *testing.T) {
	t.Parallel()
	const n = 16
	srv := startMCP(t, mcptest.Options{Barrier: n})
	var cs []api.Item
	for i := range n {
		cs = append(cs, call(fmt.Sprintf("c%d", i), "wait", `{}`))
	}
	p := script(calls(1, 1, cs...), text("done", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	rec, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`]}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	require.Len(t, r.Output, n+2)
	for _, it := range r.Output[1 : n+1] {
		assert.Equal(t, "released", it.Output)
	}
}

// Approval "always" (the default): the turn pauses with an
// mcp_approval_request; an approval runs the call as an mcp_call naming
// the request; OpenAICompat reports the pause as completed.
func TestMCPRemote_ApproveAlways(t *testing.T) {
	t.Parallel()
	for _, compat := range []bool{false, true} {
		t.Run(fmt.Sprint("compat=", compat), func(t *testing.T) {
			srv := startMCP(t, mcptest.Options{})
			p := script(calls(1, 1, call("c1", "echo", `{"text":"ok?"}`)), text("approved and done", 1, 1))
			e, _ := newEngine(t, p, nil, withMCP, func(c *Config) { c.Loop.OpenAICompat = compat })
			tool := mcpServerTool(srv.Endpoint, "")
			rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+tool+`]}`)
			require.NoError(t, err)
			r := rec.checkOpenAIStream(t)
			want := api.StatusRequiresAction
			if compat {
				want = api.StatusCompleted
			}
			assert.Equal(t, want, r.Status)
			require.Equal(t, []string{"mcp_list_tools", "mcp_approval_request"}, types(r.Output))
			ar := r.Output[1]
			assert.Regexp(t, `^mcpr_`, ar.ID)
			assert.Equal(t, "docs", ar.ServerLabel)
			assert.Equal(t, "echo", ar.Name)
			assert.JSONEq(t, `{"text":"ok?"}`, ar.Arguments)
			assert.NotContains(t, rec.types(t), api.EventMCPCallArgsDelta, "approval requests have no argument events")

			rec, err = run1(t, e, `{"previous_response_id":"`+r.ID+`","stream":true,"tools":[`+tool+`],"input":[{"type":"mcp_approval_response","approval_request_id":"`+ar.ID+`","approve":true}]}`)
			require.NoError(t, err)
			r2 := rec.checkOpenAIStream(t)
			assert.Equal(t, api.StatusCompleted, r2.Status)
			require.Equal(t, []string{"mcp_call", "message"}, types(r2.Output))
			assert.Equal(t, ar.ID, r2.Output[0].ApprovalRequestID)
			assert.Equal(t, "echo: ok?", r2.Output[0].Output)
			reqs := p.requests()
			require.Len(t, reqs, 2)
			assert.Equal(t, []string{"message", "function_call:echo", "function_call_output"}, types(reqs[1].Items))
			// The model sees the call id it issued, kept through the
			// approval and the call that ran it.
			assert.Equal(t, "c1", reqs[1].Items[1].CallID)
			assert.Equal(t, "c1", reqs[1].Items[2].CallID)
			assert.Equal(t, "echo: ok?", reqs[1].Items[2].Output)

			// The approval is answered: answering it again is a 400.
			_, err = run1(t, e, `{"previous_response_id":"`+r2.ID+`","tools":[`+tool+`],"input":[{"type":"mcp_approval_response","approval_request_id":"`+ar.ID+`","approve":true}]}`)
			assertAPIError(t, err, 400, "approval_request_answered")
		})
	}
}

func assertAPIError(t *testing.T, err error, status int, code string) {
	t.Helper()
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, status, ae.Status)
	assert.Equal(t, code, ae.Code, ae.Message)
}

// A denied call does not run; the model reads the denial and its reason.
// An approval request left unanswered is "not approved" for the model.
func TestMCPRemote_DenyAndUnanswered(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "echo", `{"text":"no"}`)), text("ok, not doing it", 1, 1),
		calls(1, 1, call("c2", "echo", `{"text":"again"}`)), text("fine", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"always"`)
	rec, err := run1(t, e, `{"input":"x","tools":[`+tool+`]}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	ar := r.Output[1]
	rec, err = run1(t, e, `{"previous_response_id":"`+r.ID+`","tools":[`+tool+`],"input":[{"type":"mcp_approval_response","approval_request_id":"`+ar.ID+`","approve":false,"reason":"too risky"}]}`)
	require.NoError(t, err)
	r2 := rec.openAIResponse(t)
	assert.Equal(t, []string{"message"}, types(r2.Output))
	items := p.requests()[1].Items
	require.Equal(t, []string{"message", "function_call:echo", "function_call_output"}, types(items))
	assert.Contains(t, items[2].Output, "denied")
	assert.Contains(t, items[2].Output, "too risky")
	assert.True(t, items[2].IsError)

	// A new approval request, then a plain message instead of an answer.
	rec, err = run1(t, e, `{"previous_response_id":"`+r2.ID+`","input":"do it","tools":[`+tool+`]}`)
	require.NoError(t, err)
	r3 := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_approval_request"}, types(r3.Output))
	_, err = run1(t, e, `{"previous_response_id":"`+r3.ID+`","input":"never mind","tools":[`+tool+`]}`)
	require.NoError(t, err)
	items = p.requests()[3].Items
	last := items[len(items)-3:]
	require.Equal(t, []string{"function_call:echo", "function_call_output", "message"}, types(last))
	assert.Contains(t, last[1].Output, "not approved")
}

// An approval for a request the conversation does not hold is a 400.
func TestMCPRemote_UnknownApproval(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(text("hi", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	rec, err := run1(t, e, `{"input":"x"}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	_, err = run1(t, e, `{"previous_response_id":"`+r.ID+`","tools":[`+mcpServerTool(srv.Endpoint, "")+`],"input":[{"type":"mcp_approval_response","approval_request_id":"mcpr_nope","approve":true}]}`)
	assertAPIError(t, err, 400, "approval_request_not_found")
	_, err = run1(t, e, `{"input":[{"type":"mcp_approval_response","approval_request_id":"mcpr_nope","approve":true}]}`)
	assertAPIError(t, err, 400, "approval_request_not_found")
	_, err = api.DecodeCreateRequest([]byte(`{"input":[{"type":"mcp_approval_response","approve":true}]}`))
	require.ErrorContains(t, err, "approval_request_id")
}

// An approved call runs on the tool its request names, the server's: a
// continuation without that server (but with another tool of the name, the
// gateway's own) does not run the other tool in its place; the model reads
// that the tool is not available. Nor does a paused call of the gateway's
// tool run on a server's tool of its name.
func TestMCPRemote_ApprovedCallRunsOnlyItsServersTool(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	m := newMock(echoTool, "echo")
	p := script(calls(1, 1, call("c1", "echo", `{"text":"ok?"}`)), text("done", 1, 1),
		calls(1, 1, call("c2", "echo", `{"text":"mine"}`), call("c3", "get_weather", `{}`)), text("done too", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP, mcpMode, func(c *Config) { c.Hosted = m })
	rec, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, "")+`]}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_list_tools", "mcp_approval_request"}, types(r.Output))
	ar := r.Output[1]

	rec, err = run1(t, e, `{"previous_response_id":"`+r.ID+`","tools":[{"type":"lambent:echo"}],"input":[{"type":"mcp_approval_response","approval_request_id":"`+ar.ID+`","approve":true}]}`)
	require.NoError(t, err)
	r2 := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_call", "message"}, types(r2.Output))
	assert.Empty(t, m.calls(), "the gateway's echo is not the server's")
	assert.Equal(t, "docs", r2.Output[0].ServerLabel)
	assert.Equal(t, api.ItemFailed, r2.Output[0].Status)
	assert.Equal(t, `Error: tool "echo" of "docs" is not available in this request, so the call did not run.`, r2.Output[0].Error)

	// The gateway's echo, paused with a client call's turn, continued with
	// the server's echo instead.
	rec, err = run1(t, e, `{"previous_response_id":"`+r2.ID+`","input":"again","tools":[{"type":"lambent:echo"},`+clientTool+`]}`)
	require.NoError(t, err)
	r3 := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_call", "function_call:get_weather"}, types(r3.Output))
	rec, err = run1(t, e, `{"previous_response_id":"`+r3.ID+`","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`,`+clientTool+`],`+
		`"input":[{"type":"function_call_output","call_id":"c3","output":"sunny"}]}`)
	require.NoError(t, err)
	r4 := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_call", "message"}, types(r4.Output), "the conversation holds the server's list")
	assert.Equal(t, api.HostedServerLabel, r4.Output[0].ServerLabel)
	assert.Equal(t, api.ItemFailed, r4.Output[0].Status, "the server's echo did not run it: %s", r4.Output[0].Output)
	assert.Empty(t, m.calls())
}

// tool_choice allowed_tools names an MCP server as OpenAI's documentation
// does, {"type":"mcp","server_label":"docs"}: the server's tools may be
// called (with "name", that one tool), the request's others not; the
// gateway's own tools are the server "lambent", as the tools echo says.
func TestMCPRemote_AllowedToolsNamesAServer(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	args := map[string]string{"echo": `{"text":"hi"}`, "add": `{"a":1,"b":2}`, "calc": `{"x":1}`}
	for _, c := range []struct{ ref, allowed, refused string }{
		{`{"type":"mcp","server_label":"docs"}`, "echo", "calc"},
		{`{"type":"mcp","server_label":"docs","name":"add"}`, "add", "echo"},
		{`{"type":"mcp","server_label":"lambent"}`, "calc", "echo"},
	} {
		m := newMock(echoTool, "calc")
		p := script(calls(1, 1, call("c1", c.allowed, args[c.allowed]), call("c2", c.refused, args[c.refused])), text("done", 1, 1))
		e, _ := newEngine(t, p, m, withMCP, mcpMode)
		rec, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`,{"type":"lambent:calc"}],`+
			`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[`+c.ref+`]}}`)
		require.NoError(t, err)
		r := rec.openAIResponse(t)
		require.Equal(t, []string{"mcp_list_tools", "mcp_call", "mcp_call", "message"}, types(r.Output), c.ref)
		assert.Equal(t, api.ItemCompleted, r.Output[1].Status, "%s: %s %s", c.ref, r.Output[1].Name, r.Output[1].Error)
		assert.Equal(t, api.ItemFailed, r.Output[2].Status, c.ref)
		assert.Contains(t, r.Output[2].Error, "is not allowed", c.ref)
		assert.Equal(t, c.allowed == "calc", len(m.calls()) == 1, c.ref)
		var echoed struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		require.NoError(t, json.Unmarshal(rec.resp, &echoed))
		assert.Contains(t, string(echoed.ToolChoice), c.ref, "the tool_choice echo keeps the reference")
	}
}

// Per-tool approval: a turn with a call that needs approval, one that does
// not, a client function and a hosted tool pauses once; the continuation
// with the function's output and the approval runs every server-side call.
func TestMCPRemote_MixedTurn(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	m := newMock(echoTool, "calc")
	p := script(calls(1, 1, call("c1", "echo", `{"text":"needs ok"}`), call("c2", "add", `{"a":1,"b":2}`),
		call("c3", "get_weather", `{}`), call("c4", "calc", `{"x":1}`)), text("all done", 1, 1))
	e, _ := newEngine(t, p, m, withMCP, mcpMode)
	tools := `[` + mcpServerTool(srv.Endpoint, `,"require_approval":{"never":{"read_only":true}}`) +
		`,{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"lambent:calc"}]`
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":`+tools+`}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusRequiresAction, r.Status)
	require.Equal(t, []string{"mcp_list_tools", "mcp_approval_request", "mcp_call", "function_call:get_weather", "mcp_call"}, types(r.Output))
	assert.Equal(t, "add", r.Output[2].Name, "read-only: no approval")
	assert.Equal(t, api.ItemInProgress, r.Output[2].Status, "paused with its turn")
	assert.Equal(t, api.HostedServerLabel, r.Output[4].ServerLabel)
	assert.Empty(t, m.calls())

	ar, fc := r.Output[1], r.Output[3]
	rec, err = run1(t, e, `{"previous_response_id":"`+r.ID+`","stream":true,"tools":`+tools+`,"input":[`+
		`{"type":"function_call_output","call_id":"`+fc.CallID+`","output":"sunny"},`+
		`{"type":"mcp_approval_response","approval_request_id":"`+ar.ID+`","approve":true}]}`)
	require.NoError(t, err)
	r2 := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, r2.Status)
	require.Equal(t, []string{"mcp_call", "mcp_call", "mcp_call", "message"}, types(r2.Output))
	byName := map[string]api.Item{}
	for _, it := range r2.Output[:3] {
		byName[it.Name] = it
	}
	assert.Equal(t, "3", byName["add"].Output)
	assert.Equal(t, "echo: needs ok", byName["echo"].Output)
	assert.Equal(t, ar.ID, byName["echo"].ApprovalRequestID)
	assert.Contains(t, byName["calc"].Output, `{"x":1}`)
	items := p.requests()[1].Items
	assert.Equal(t, []string{"message", "function_call:echo", "function_call:add", "function_call:get_weather", "function_call:calc",
		"function_call_output", "function_call_output", "function_call_output", "function_call_output"}, types(items))
}

// Errors never fail the response: a server that cannot be reached is the
// list's error (the model answers without its tools); a tool's isError is
// a failed mcp_call the model reads.
func TestMCPRemote_Errors(t *testing.T) {
	t.Parallel()
	down := mcptest.StartStreamable(mcptest.Options{})
	down.Close()
	p := script(text("no tools", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+mcpServerTool(down.Endpoint, "")+`]}`)
	require.NoError(t, err)
	r := rec.checkOpenAIStream(t)
	assert.Equal(t, api.StatusCompleted, r.Status)
	require.Equal(t, []string{"mcp_list_tools", "message"}, types(r.Output))
	assert.Contains(t, r.Output[0].Error, `MCP server "docs"`)
	assert.Contains(t, rec.types(t), api.EventMCPListToolsFailed)
	assert.Empty(t, p.requests()[0].Tools)

	srv := startMCP(t, mcptest.Options{})
	p = script(calls(1, 1, call("c1", "fail", `{}`)), text("it failed", 1, 1))
	e, _ = newEngine(t, p, nil, withMCP)
	rec, err = run1(t, e, `{"input":"x","stream":true,"tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`]}`)
	require.NoError(t, err)
	r = rec.checkOpenAIStream(t)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
	assert.Equal(t, api.ItemFailed, r.Output[1].Status)
	assert.Equal(t, "the tool failed on purpose", r.Output[1].Error)
	assert.Contains(t, rec.types(t), api.EventMCPCallFailed)
	last := p.requests()[1].Items[2]
	assert.True(t, last.IsError)
	assert.Equal(t, "the tool failed on purpose", last.Output)
}

// Server URLs are held to https and the SSRF guard (400 before anything
// connects); a label may not be "lambent" nor repeat.
func TestMCPRemote_Refused(t *testing.T) {
	t.Parallel()
	p := script()
	strict, _ := newEngine(t, p, nil, func(c *Config) { c.MCP.Connector = mcp.New(mcp.Config{}) })
	for url, want := range map[string]string{
		"http://example.com/mcp":      "https",
		"https://127.0.0.1/mcp":       "loopback",
		"https://169.254.169.254/mcp": "metadata",
		"https://192.168.1.1/mcp":     "private",
	} {
		_, err := run1(t, strict, `{"input":"x","tools":[`+mcpServerTool(url, "")+`]}`)
		assertAPIError(t, err, 400, "invalid_mcp_server")
		assert.ErrorContains(t, err, want)
	}
	_, err := run1(t, strict, `{"input":"x","tools":[{"type":"mcp","server_label":"lambent","server_url":"https://example.com/mcp"}]}`)
	assertAPIError(t, err, 400, "")
	two := mcpServerTool("https://example.com/a", "") + "," + mcpServerTool("https://example.com/b", "")
	_, err = run1(t, strict, `{"input":"x","tools":[`+two+`]}`)
	assert.ErrorContains(t, err, "duplicate server_label")
	_, err = run1(t, strict, `{"input":"x","tools":[`+mcpServerTool("https://example.com/a", `,"require_approval":"sometimes"`)+`]}`)
	assert.ErrorContains(t, err, "require_approval")

	none, _ := newEngine(t, p, nil)
	_, err = run1(t, none, `{"input":"x","tools":[`+mcpServerTool("https://example.com/a", "")+`]}`)
	assertAPIError(t, err, 400, "unsupported_tool")
	assert.Empty(t, p.requests())
}

// A tool named like one of the request's functions is offered under
// "<label>_<name>"; its item keeps the server's name.
func TestMCPRemote_NameClash(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "docs_echo", `{"text":"x"}`)), text("ok", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"function","name":"echo"},`+mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":{"tool_names":["echo"]}`)+`]}`)
	require.NoError(t, err)
	r := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
	assert.Equal(t, "echo", r.Output[1].Name)
	assert.Equal(t, "echo: x", r.Output[1].Output)
	assert.Equal(t, []string{"echo", "docs_echo"}, toolNames(p.requests()[0].Tools))
	assert.Equal(t, "docs_echo", p.requests()[1].Items[1].Name)
}

// A manifest server is enabled by {"type":"lambent:<name>"}: its label is
// the name, its headers come from the manifest, the echo hides its URL.
func TestMCPRemote_ManifestServer(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "add", `{"a":2,"b":2}`)), text("4", 1, 1))
	manifest := &tools.MCPServer{Label: "calc", URL: srv.Endpoint, Transport: tools.MCPStreamableHTTP, Trusted: true,
		Headers: map[string]string{"X-Key": "manifest-secret"}, Approval: tools.MCPApproval{Mode: tools.MCPApproveNever}}
	e, _ := newEngine(t, p, nil, func(c *Config) {
		c.MCP.Connector = mcp.New(mcp.Config{})
		c.MCP.Servers = map[string]*tools.MCPServer{"calc": manifest}
	})
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	require.NoError(t, ssecheck.CheckOpenAIResponse(rec.resp))
	r := rec.openAIResponse(t)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
	assert.Equal(t, "calc", r.Output[1].ServerLabel)
	assert.Equal(t, "4", r.Output[1].Output)
	var body struct{ Tools []json.RawMessage }
	require.NoError(t, json.Unmarshal(rec.resp, &body))
	assert.JSONEq(t, `{"type":"mcp","server_label":"calc","require_approval":"never"}`, string(body.Tools[0]))
	for _, h := range srv.Headers() {
		assert.Equal(t, "manifest-secret", h.Get("X-Key"))
	}
	assert.NotContains(t, string(rec.resp), "manifest-secret")
}

// Secrets (headers, authorization, the server URL's query) reach the
// server but neither the response, its events, the store, the stored
// background job (sealed there) nor the logs, on both stores; the echo
// shows the URL with its query redacted.
func TestMCPRemote_Secrets(t *testing.T) { forStores(t, testMCPRemoteSecrets) }

func testMCPRemoteSecrets(t *testing.T, mk storeMaker) {
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "echo", `{"text":"a"}`)), text("done", 1, 1),
		calls(1, 1, call("c1", "echo", `{"text":"b"}`)), text("done in the background", 1, 1))
	var logs logbuf.Buffer
	e, st, q := bgEngine(t, mk, p, nil, withMCP, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	url := srv.Endpoint + "?key=query-secret&v=1"
	tool := mcpServerTool(url, `,"require_approval":"never","headers":{"X-Api-Key":"header-secret"},"authorization":"token-secret"`)
	secret := func(t *testing.T, b []byte) {
		t.Helper()
		for _, s := range []string{"header-secret", "token-secret", "query-secret"} {
			assert.NotContains(t, string(b), s)
		}
	}
	storedJSON := func(t *testing.T, id string) (*store.Record, []byte) {
		t.Helper()
		stored, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		b, err := json.Marshal(stored)
		require.NoError(t, err)
		return stored, b
	}
	rec, err := run1(t, e, `{"input":"x","stream":true,"tools":[`+tool+`]}`)
	require.NoError(t, err)
	for _, ev := range rec.events {
		secret(t, ev)
	}
	r := rec.checkOpenAIStream(t)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output))
	assert.Equal(t, "echo: a", r.Output[1].Output)
	stored, all := storedJSON(t, r.ID)
	secret(t, all)
	assert.Nil(t, stored.Response.Tools[0].Headers)
	assert.Empty(t, stored.Response.Tools[0].Authorization)
	assert.Equal(t, srv.Endpoint+"?REDACTED", stored.Response.Tools[0].ServerURL)
	got, err := e.GetResponse(context.Background(), r.ID)
	require.NoError(t, err)
	b, err := json.Marshal(got)
	require.NoError(t, err)
	secret(t, b)

	rec, err = runBackground(t, e, `{"input":"x","background":true,"tools":[`+tool+`]}`)
	require.NoError(t, err)
	secret(t, rec.resp)
	job := <-q.c
	stored, all = storedJSON(t, job.ResponseID)
	require.NotNil(t, stored.Job)
	assert.Nil(t, stored.Job.Request.Tools[0].Headers)
	assert.Empty(t, stored.Job.Request.Tools[0].Authorization)
	assert.NotEmpty(t, stored.Job.Secrets)
	secret(t, all)
	secret(t, stored.Job.Secrets)

	before := len(srv.Headers())
	require.NoError(t, e.RunBackground(context.Background(), job.ResponseID))
	got, err = e.GetResponse(context.Background(), job.ResponseID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(got.Output))
	assert.Equal(t, "echo: b", got.Output[1].Output)
	hs := srv.Headers()[before:]
	require.NotEmpty(t, hs)
	for _, h := range hs {
		assert.Equal(t, "header-secret", h.Get("X-Api-Key"))
		assert.Equal(t, "Bearer token-secret", h.Get("Authorization"))
	}
	for _, q := range srv.Queries() {
		assert.Equal(t, "key=query-secret&v=1", q, "the server gets the URL's query, in the background too")
	}
	_, all = storedJSON(t, job.ResponseID)
	secret(t, all)

	// Another process (another key) cannot open them: the response fails
	// with a clear error instead of calling the server without them.
	rec, err = runBackground(t, e, `{"input":"x","background":true,"tools":[`+tool+`]}`)
	require.NoError(t, err)
	job = <-q.c
	other, _ := newEngine(t, p, nil, withMCP, func(c *Config) { c.Store, c.Background.Queue = st, q })
	require.NoError(t, other.RunBackground(context.Background(), job.ResponseID))
	got, err = e.GetResponse(context.Background(), job.ResponseID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusFailed, got.Status)
	assert.Equal(t, "secrets_unavailable", got.Error.Code)
	_ = rec

	// A server that is down: its error (logged and in the list item)
	// names it without the query.
	down := mcptest.StartStreamable(mcptest.Options{})
	down.Close()
	p2 := script(text("no tools", 1, 1))
	e2, _, _ := bgEngine(t, mk, p2, nil, withMCP, func(c *Config) {
		c.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	rec, err = run1(t, e2, `{"input":"x","tools":[`+mcpServerTool(down.Endpoint+"?key=query-secret", "")+`]}`)
	require.NoError(t, err)
	secret(t, rec.resp)
	assert.Contains(t, logs.String(), "mcp list tools failed")
	secret(t, []byte(logs.String()))
}

// A background job's sealed MCP secrets open for its tenant only: acme's
// job stored again under globex with the same response id (a record
// replayed, an id reused) fails there with secrets_unavailable instead of
// sending acme's token to the server on globex's behalf; acme's own run
// still opens them.
func TestMCPRemote_SecretsOpenForTheirTenantOnly(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	p := script(calls(1, 1, call("c1", "echo", `{"text":"b"}`)), text("done", 1, 1))
	memory := func(*testing.T) store.ResponseStore { return store.NewMemory(store.MemoryConfig{}) }
	e, st, q := bgEngine(t, memory, p, nil, withMCP)
	acme, globex := tenant.With(context.Background(), "acme"), tenant.With(context.Background(), "globex")
	tool := mcpServerTool(srv.Endpoint, `,"require_approval":"never","authorization":"token-secret"`)
	require.NoError(t, e.CreateBackground(acme, decodeReq(t, `{"input":"x","background":true,"tools":[`+tool+`]}`), &recorder{}))
	job := <-q.c
	rec, err := st.Get(acme, job.ResponseID)
	require.NoError(t, err)
	require.NotEmpty(t, rec.Job.Secrets)
	require.NoError(t, st.Create(globex, rec))

	require.NoError(t, e.RunBackground(globex, job.ResponseID))
	for _, h := range srv.Headers() {
		assert.NotEqual(t, "Bearer token-secret", h.Get("Authorization"), "acme's token sent for globex")
	}
	got, err := e.GetResponse(globex, job.ResponseID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusFailed, got.Status)
	require.NotNil(t, got.Error)
	assert.Equal(t, "secrets_unavailable", got.Error.Code)

	require.NoError(t, e.RunBackground(acme, job.ResponseID))
	got, err = e.GetResponse(acme, job.ResponseID)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, got.Status)
	require.NotEmpty(t, srv.Headers())
	assert.Equal(t, "Bearer token-secret", srv.Headers()[len(srv.Headers())-1].Get("Authorization"))
}

func TestFuncName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "a_b_c", funcName("a.b/c"))
	assert.Equal(t, strings.Repeat("x", 64), funcName(strings.Repeat("x", 70)))
	assert.Equal(t, "tool", funcName(""))
}

// An allowed_tools reference to an MCP server names one of the request's
// servers (or lambent, the hosted tools): one without a server_label, or
// naming no server of the request, is a 400 naming it before anything
// connects. It used to be accepted and to allow nothing.
func TestMCPRemote_AllowedToolsNamesAKnownServer(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	for ref, param := range map[string]string{
		`{"type":"mcp"}`:                        "tool_choice.tools[0].server_label",
		`{"type":"mcp","server_label":"nope"}`:  "tool_choice.tools[0].server_label",
		`{"type":"mcp","server_label":"nope2"}`: "tool_choice.tools[0].server_label",
	} {
		p := script(text("done", 1, 1))
		e, _ := newEngine(t, p, newMock(echoTool, "calc"), withMCP, mcpMode)
		_, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`,{"type":"lambent:calc"}],`+
			`"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[`+ref+`]}}`)
		var ae *api.Error
		require.ErrorAs(t, err, &ae, ref)
		assert.Equal(t, http.StatusBadRequest, ae.Status, ref)
		assert.Equal(t, param, ae.Param, "%s: %s", ref, ae.Message)
		assert.Empty(t, p.requests(), "no model call")
		assert.Empty(t, srv.Headers(), "no server contacted")
	}
}

// tool_choice {"type":"mcp","server_label","name"} (OpenAI's ToolChoiceMcp)
// forces a call of that MCP tool on the first model call, by the function
// name the model knows it by; without name, one of the server's tools:
// only they are offered, and a call is required. The gateway's own tools
// are the server "lambent". As a forced function, it holds for the first
// model call only: the next one offers every tool, choice auto. The
// response echoes the choice as given.
func TestMCPRemote_ToolChoiceForcesAServersTool(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	args := map[string]string{"echo": `{"text":"hi"}`, "add": `{"a":1,"b":2}`, "calc": `{"x":1}`}
	for _, c := range []struct {
		choice, call, forced string
		offered              []string
	}{
		{`{"type":"mcp","server_label":"docs","name":"add"}`, "add", "add", []string{"calc", "add", "echo"}},
		{`{"type":"mcp","server_label":"docs"}`, "echo", "", []string{"add", "echo"}},
		{`{"type":"mcp","server_label":"lambent","name":"calc"}`, "calc", "calc", []string{"calc", "add", "echo"}},
		{`{"type":"mcp","server_label":"lambent"}`, "calc", "", []string{"calc"}},
	} {
		p := script(calls(1, 1, call("c1", c.call, args[c.call])), text("done", 1, 1))
		e, _ := newEngine(t, p, newMock(echoTool, "calc"), withMCP, mcpMode)
		rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"},`+mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["echo","add"]`)+`],`+
			`"tool_choice":`+c.choice+`}`)
		require.NoError(t, err, c.choice)
		r := rec.openAIResponse(t)
		require.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, types(r.Output), c.choice)
		assert.Equal(t, api.ItemCompleted, r.Output[1].Status, c.choice)
		reqs := p.requests()
		require.Len(t, reqs, 2, c.choice)
		assert.Equal(t, c.forced, reqs[0].ForcedTool, c.choice)
		assert.Equal(t, api.ToolChoiceRequired, reqs[0].ToolChoice, c.choice)
		assert.Equal(t, c.offered, toolNames(reqs[0].Tools), c.choice)
		assert.Empty(t, reqs[1].ForcedTool, c.choice)
		assert.Equal(t, api.ToolChoiceAuto, reqs[1].ToolChoice, c.choice)
		assert.Equal(t, []string{"calc", "add", "echo"}, toolNames(reqs[1].Tools), c.choice)
		var echoed struct {
			ToolChoice json.RawMessage `json:"tool_choice"`
		}
		require.NoError(t, json.Unmarshal(rec.resp, &echoed))
		assert.JSONEq(t, c.choice, string(echoed.ToolChoice), "the tool_choice echo")
	}
}

// tool_choice {"type":"mcp"} names one of the request's MCP servers (or
// lambent), as an allowed_tools reference does: another label is a 400
// naming tool_choice.server_label before anything connects. A tool the
// server does not offer (known once it is listed) is a 400 naming
// tool_choice.name, before any model call.
func TestMCPRemote_ToolChoiceNamesAKnownServer(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	for _, c := range []struct{ choice, param string }{
		{`{"type":"mcp","server_label":"nope"}`, "tool_choice.server_label"},
		{`{"type":"mcp","server_label":"nope","name":"add"}`, "tool_choice.server_label"},
		{`{"type":"mcp","server_label":"docs","name":"nope"}`, "tool_choice.name"},
		{`{"type":"mcp","server_label":"lambent","name":"nope"}`, "tool_choice.name"},
	} {
		p := script(text("done", 1, 1))
		e, _ := newEngine(t, p, newMock(echoTool, "calc"), withMCP, mcpMode)
		_, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`,{"type":"lambent:calc"}],`+
			`"tool_choice":`+c.choice+`}`)
		var ae *api.Error
		require.ErrorAs(t, err, &ae, c.choice)
		assert.Equal(t, http.StatusBadRequest, ae.Status, c.choice)
		assert.Equal(t, c.param, ae.Param, "%s: %s", c.choice, ae.Message)
		assert.Empty(t, p.requests(), "no model call")
	}
	other := startMCP(t, mcptest.Options{})
	e, _ := newEngine(t, script(text("done", 1, 1)), nil, withMCP)
	_, err := run1(t, e, `{"input":"x","tools":[{"type":"function","name":"f"},`+
		fmt.Sprintf(`{"type":"mcp","server_label":"other","server_url":%q}`, other.Endpoint)+`],"tool_choice":{"type":"mcp","server_label":"docs"}}`)
	var ae *api.Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "tool_choice.server_label", ae.Param)
	assert.Empty(t, other.Headers(), "no server contacted")
}

// A forced MCP tool the server does not offer is a 400 before any model
// call also when the response has no tool at all to offer the model: a
// server whose allowed_tools filter out every tool it lists, or the
// gateway's hosted tools ("lambent") named by a request that enables none.
func TestMCPRemote_ToolChoiceWithNothingOffered(t *testing.T) {
	t.Parallel()
	srv := startMCP(t, mcptest.Options{})
	for _, c := range []struct{ tools, choice, param string }{
		{mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["nope"]`), `{"type":"mcp","server_label":"docs","name":"echo"}`, "tool_choice.name"},
		{mcpServerTool(srv.Endpoint, `,"require_approval":"never","allowed_tools":["nope"]`), `{"type":"mcp","server_label":"docs"}`, "tool_choice.server_label"},
		{``, `{"type":"mcp","server_label":"lambent"}`, "tool_choice.server_label"},
	} {
		p := script(text("done", 1, 1))
		e, _ := newEngine(t, p, nil, withMCP, mcpMode)
		_, err := run1(t, e, `{"input":"x","tools":[`+c.tools+`],"tool_choice":`+c.choice+`}`)
		var ae *api.Error
		require.ErrorAs(t, err, &ae, c.choice)
		assert.Equal(t, http.StatusBadRequest, ae.Status, c.choice)
		assert.Equal(t, c.param, ae.Param, "%s: %s", c.choice, ae.Message)
		assert.Empty(t, p.requests(), "no model call")
	}
}
