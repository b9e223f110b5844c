package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/limits"
	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// schemaCatalog is a mockExec whose tools declare the input schema of
// their name in schemas.
type schemaCatalog struct {
	*mockExec
	schemas map[string]string
}

func (c *schemaCatalog) Lookup(name string) (api.ToolDefinition, tools.ToolExecutor, bool) {
	def, exec, ok := c.mockExec.Lookup(name)
	if s, has := c.schemas[name]; ok && has {
		def.Parameters = json.RawMessage(s)
	}
	return def, exec, ok
}

const calcSchema = `{"type":"object","properties":{"expression":{"type":"string","maxLength":20}},"required":["expression"],"additionalProperties":false}`

// A hosted tool's calls whose arguments do not match its input schema are
// answered with an is_error result naming the violations, and the tool
// does not run; the turn's other calls run. Absent arguments count as {}.
func TestArguments_HostedToolCheckedBeforeItRuns(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc")
	cat := &schemaCatalog{mockExec: m, schemas: map[string]string{"calc": calcSchema}}
	p := script(
		calls(1, 1,
			call("c1", "calc", `{"expression":"6*7"}`),
			call("c2", "calc", `{"expr":"6*7"}`),
			call("c3", "calc", `{"expression":42}`),
			call("c4", "calc", ``),
			call("c5", "calc", `{"expression":`),
		),
		text("done", 1, 1),
	)
	e, _ := newEngine(t, p, cat)
	rec, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	assert.Equal(t, api.StatusCompleted, rec.response(t).Status)
	ran := m.calls()
	require.Len(t, ran, 1, "only the call with valid arguments ran")
	assert.Equal(t, "c1", ran[0].ID)

	next := p.requests()[1]
	assert.False(t, toolResult(t, next, "c1").IsError)
	for id, want := range map[string][]string{
		"c2": {"at '/': missing property 'expression'", "at '/': additional properties 'expr' not allowed"},
		"c3": {"at '/expression': got number, want string"},
		"c4": {"at '/': missing property 'expression'"},
		"c5": {"the input is not valid JSON"},
	} {
		res := toolResult(t, next, id)
		assert.True(t, res.IsError, id)
		assert.Contains(t, res.Output, `Error: the arguments do not match the input schema of "calc", so the tool did not run.`, id)
		for _, w := range want {
			assert.Contains(t, res.Output, w, id)
		}
	}
}

// A refused call is no execution: the observer does not see it and it
// does not count against max_tool_calls.
func TestArguments_RefusedCallIsNoExecution(t *testing.T) {
	t.Parallel()
	w := &watcher{}
	m := newMock(echoTool, "calc")
	cat := &schemaCatalog{mockExec: m, schemas: map[string]string{"calc": calcSchema}}
	p := script(
		calls(1, 1, call("c1", "calc", `{}`)),
		calls(1, 1, call("c2", "calc", `{"expression":"1+1"}`)),
		text("done", 1, 1),
	)
	e, _ := newEngine(t, p, cat, func(c *Config) { c.Observer = w })
	_, err := run1(t, e, `{"input":"x","max_tool_calls":1,"tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	assert.NotContains(t, w.calls, "c1")
	require.Contains(t, w.calls, "c2")
	assert.False(t, w.calls["c2"].Result.IsError, "the refused call used none of max_tool_calls")
	assert.Len(t, m.calls(), 1)
}

// The schema is compiled once per definition, for every response; a
// schema that does not compile is logged once and skipped (the calls run
// unchecked); LAMBENT_VALIDATE_TOOL_ARGUMENTS=false (SkipArgumentCheck)
// runs every call unchecked.
func TestArguments_CompiledOnceSkippedOrOff(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "calc", "broken")
	cat := &schemaCatalog{mockExec: m, schemas: map[string]string{"calc": calcSchema, "broken": `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`}}
	logs := &logbuf.Buffer{}
	var steps []step
	for range 2 {
		steps = append(steps, calls(1, 1, call("c1", "calc", `{}`), call("c2", "broken", `{"a":1}`)), text("done", 1, 1))
	}
	p := script(steps...)
	e, _ := newEngine(t, p, cat, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	for range 2 {
		_, err := run1(t, e, `{"input":"x","tools":[{"type":"lambent:calc"},{"type":"lambent:broken"}]}`)
		require.NoError(t, err)
	}
	n := 0
	e.argChecks.Range(func(_, _ any) bool { n++; return true })
	assert.Equal(t, 2, n, "one compiled schema per definition")
	ran := m.calls()
	require.Len(t, ran, 2)
	assert.Equal(t, "broken", ran[0].Name)
	assert.Equal(t, "broken", ran[1].Name)
	assert.True(t, toolResult(t, p.requests()[3], "c1").IsError)
	recs, err := logs.Records()
	require.NoError(t, err)
	var skipped []map[string]any
	for _, r := range recs {
		if r["msg"] == "tool input schema skipped: the arguments of its calls are not checked" {
			skipped = append(skipped, r)
		}
	}
	require.Len(t, skipped, 1, "logged once")
	assert.Equal(t, "broken", skipped[0]["tool"])
	assert.Equal(t, "WARN", skipped[0]["level"])

	off := newMock(echoTool, "calc")
	e2, _ := newEngine(t, script(calls(1, 1, call("c1", "calc", `{}`)), text("done", 1, 1)),
		&schemaCatalog{mockExec: off, schemas: map[string]string{"calc": calcSchema}}, func(c *Config) { c.Loop.SkipArgumentCheck = true })
	_, err = run1(t, e2, `{"input":"x","tools":[{"type":"lambent:calc"}]}`)
	require.NoError(t, err)
	assert.Len(t, off.calls(), 1, "unchecked, the call ran")
}

// An MCP tool's calls are checked against the input schema its server
// lists: a call that does not match never reaches the server (which would
// answer "ok" to anything). A schema over the request limits, or one that
// does not compile, is logged and skipped.
func TestArguments_MCPToolChecked(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, schema string, l limits.Limits, args string) (api.Item, string) {
		t.Helper()
		srv := startHostile(t, mcptest.Hostile{InputSchema: json.RawMessage(schema)})
		logs := &logbuf.Buffer{}
		p := script(calls(1, 1, call("c1", "t0", args)), text("done", 1, 1))
		e, _ := newEngine(t, p, nil, withMCP, withLimits(l), func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
		_, err := run1(t, e, `{"input":"x","tools":[`+mcpServerTool(srv.Endpoint, `,"require_approval":"never"`)+`]}`)
		require.NoError(t, err)
		items := p.requests()[1].Items
		return items[len(items)-1], logs.String()
	}
	const schema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		res, _ := run(t, schema, limits.Limits{}, `{"n":"seven"}`)
		assert.True(t, res.IsError)
		assert.Contains(t, res.Output, `the input schema of "t0"`)
		assert.Contains(t, res.Output, "at '/n': got string, want integer")
	})
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		res, _ := run(t, schema, limits.Limits{}, `{"n":7}`)
		assert.False(t, res.IsError)
		assert.Equal(t, "ok", res.Output)
	})
	t.Run("does not compile", func(t *testing.T) {
		t.Parallel()
		res, logged := run(t, `{"type":"object","properties":{"n":{"type":"string","pattern":"("}}}`, limits.Limits{}, `{"n":7}`)
		assert.Equal(t, "ok", res.Output, "the call ran unchecked")
		assert.Contains(t, logged, "tool input schema skipped")
		assert.Contains(t, logged, `"tool":"t0"`)
	})
	t.Run("over the limits", func(t *testing.T) {
		t.Parallel()
		deep := `{"type":"object","properties":{"n":{"type":"object","properties":{"m":{"type":"object"}}}}}`
		res, logged := run(t, deep, limits.Limits{SchemaDepth: 3}, `{"n":7}`)
		assert.Equal(t, "ok", res.Output, "the call ran unchecked")
		assert.Contains(t, logged, "tool input schema skipped")
		assert.True(t, strings.Contains(logged, "nesting depth"), logged)
	})
}

// A call an approval let through is checked when it runs, too.
func TestArguments_ApprovedMCPCallChecked(t *testing.T) {
	t.Parallel()
	srv := startHostile(t, mcptest.Hostile{InputSchema: json.RawMessage(`{"type":"object","required":["n"]}`)})
	p := script(calls(1, 1, call("c1", "t0", `{}`)), text("done", 1, 1))
	e, _ := newEngine(t, p, nil, withMCP)
	tool := mcpServerTool(srv.Endpoint, "")
	rec, err := run1(t, e, `{"input":"x","tools":[`+tool+`]}`)
	require.NoError(t, err)
	first := rec.openAIResponse(t)
	require.Equal(t, api.StatusRequiresAction, first.Status)
	var approval string
	for _, it := range first.Output {
		if it.Type == api.ItemMCPApprovalRequest {
			approval = it.ID
		}
	}
	require.NotEmpty(t, approval)
	_, err = run1(t, e, `{"previous_response_id":"`+first.ID+`","input":[{"type":"mcp_approval_response","approval_request_id":"`+approval+`","approve":true}],"tools":[`+tool+`]}`)
	require.NoError(t, err)
	items := p.requests()[1].Items
	res := items[len(items)-1]
	assert.True(t, res.IsError)
	assert.Contains(t, res.Output, "missing property 'n'")
}

// A hosted tool's schema is compiled once for the engine's life, but the
// regular expressions its format "regex" validates in arguments are the
// calls': each call's values count against a budget of their own, not the
// schema's. They counted against the compiled schema's budget for the
// process's life (and stayed cached there): acme's calls with distinct
// regular expressions used it up, and globex's call with "globex-[a-z]+" was then
// refused ("the schema's regular expressions are too large").
func TestArguments_RegexFormatBudgetIsPerCall(t *testing.T) {
	t.Parallel()
	m := newMock(echoTool, "grep")
	cat := &schemaCatalog{mockExec: m, schemas: map[string]string{"grep": `{"type":"object","properties":{"re":{"type":"string","format":"regex"}}}`}}
	var steps []step
	for i := range 8 {
		steps = append(steps, calls(1, 1, call("c1", "grep", fmt.Sprintf(`{"re":"acme-%02d-[a-z]{10}"}`, i))), text("done", 1, 1))
	}
	steps = append(steps, calls(1, 1, call("c1", "grep", `{"re":"globex-[a-z]+"}`)), text("done", 1, 1))
	p := script(steps...)
	e, _ := newEngine(t, p, cat, func(c *Config) { c.Limits.SchemaPatterns = 64 })
	acme, globex := tenant.With(context.Background(), "acme"), tenant.With(context.Background(), "globex")
	for range 8 {
		require.NoError(t, e.CreateResponse(acme, decodeReq(t, `{"input":"x","tools":[{"type":"lambent:grep"}]}`), &recorder{}))
	}
	require.NoError(t, e.CreateResponse(globex, decodeReq(t, `{"input":"x","tools":[{"type":"lambent:grep"}]}`), &recorder{}))
	reqs := p.requests()
	for i := 1; i < len(reqs); i += 2 {
		res := toolResult(t, reqs[i], "c1")
		assert.False(t, res.IsError, "response %d: %s", i/2, res.Output)
	}
	assert.Len(t, m.calls(), 9)
}
