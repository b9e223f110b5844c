package telemetry_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/telemetry"
	"github.com/lambent/lambent/pkg/telemetry/prom"
	"github.com/lambent/lambent/pkg/tools"
)

// observe runs one response of model through o: a model call, then one
// tool call of each name: the operator's calculator (a hosted tool), any
// other name an MCP server's tool.
func observe(o *telemetry.Observer, model string, toolNames ...string) {
	resp := &api.Response{ID: api.NewID("resp_"), Model: model, Usage: &api.Usage{InputTokens: 1, OutputTokens: 1}}
	ctx, ro := o.StartResponse(context.Background(), resp)
	m := &engine.ModelCall{ResponseID: resp.ID, Model: model, Iteration: 1, Start: time.Now()}
	ro.EndModelCall(ro.StartModelCall(ctx, m), m)
	for i, name := range toolNames {
		kind := engine.ToolKindMCP
		if name == "calculator" {
			kind = engine.ToolKindHosted
		}
		c := &engine.ToolCall{ResponseID: resp.ID, Kind: kind, Name: name, CallID: fmt.Sprint("mcp_", i), Arguments: "{}",
			Attempt: 1, Iteration: 1, Start: time.Now(), Result: &tools.ToolResult{Output: "x", IsError: i%2 == 0}}
		ro.EndToolCall(ro.StartToolCall(ctx, c), c)
	}
	ro.EndResponse(ctx, resp, &engine.ResponseEnd{Status: api.StatusCompleted, Turns: 1, Attempts: 1})
}

// scrapeText is what /metrics serves, and how many series it holds.
func scrapeText(t *testing.T, p *prom.Metrics) (body string, series int) {
	t.Helper()
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "gen_ai_") || strings.HasPrefix(line, "lambent_") {
			series++
		}
	}
	return string(b), series
}

// Model and tool names are labels (Prometheus) and dimensions (EMF) only
// when the operator configured them: a 2 MB model name and 1,000 tool
// names an MCP server chose count under "other", so the scrape does not
// grow with them (a series per name before: one 2 MB name made the next
// scrape 145 MB), nor does CloudWatch get a metric per name.
func TestMetricLabelsAreBounded(t *testing.T) {
	p := prom.New()
	var emf bytes.Buffer
	o := telemetry.New(telemetry.Config{Recorders: []telemetry.Recorder{p}, EMF: telemetry.NewEMF(&emf, "", nil),
		Names: telemetry.Names{Models: []string{"test-model", "us.anthropic.*", "us.*"}, Tools: []string{"calculator"}}})

	observe(o, "test-model", "calculator", "mine")
	observe(o, "us.anthropic.claude-sonnet-4", "calculator")
	observe(o, "us.amazon.nova-pro")
	observe(o, "someone-elses-model", "theirs", "theirs too") // "other": a failed and a good call
	bodyBefore, before := scrapeText(t, p)
	sizeBefore := len(bodyBefore)

	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%04d", i)
	}
	observe(o, strings.Repeat("m", 2<<20), names...)
	observe(o, "us.anthropic."+strings.Repeat("x", 1000))
	body, after := scrapeText(t, p)
	assert.Equal(t, before, after, "no new series")
	assert.Less(t, len(body), sizeBefore+1024, "the scrape did not grow (only counts changed)")
	assert.NotContains(t, body, "tool_0")
	assert.NotContains(t, body, "mmmm")
	for _, want := range []string{`gen_ai_request_model="test-model"`, `gen_ai_request_model="us.anthropic.*"`, `gen_ai_request_model="us.*"`,
		`gen_ai_request_model="other"`, `gen_ai_tool_name="calculator"`, `gen_ai_tool_name="other"`} {
		assert.Contains(t, body, want)
	}

	// EMF dimensions: the same folded names.
	sc := bufio.NewScanner(&emf)
	sc.Buffer(nil, 1<<20)
	dims := map[string]bool{}
	for sc.Scan() {
		var l map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		for _, k := range []string{telemetry.DimModel, telemetry.DimTool} {
			if v, ok := l[k].(string); ok {
				dims[v] = true
			}
		}
	}
	require.NoError(t, sc.Err())
	assert.Equal(t, map[string]bool{"test-model": true, "us.anthropic.*": true, "us.*": true, "other": true, "calculator": true}, dims)
}

// A tool name the operator configured is a label only for the calls of
// the operator's tools (hosted tools, validators): a tenant's MCP server
// listing a "calculator", or a validated output whose output tool is
// named so, counts as "other" (under "calculator" before: a tenant's
// failing calls moved the operator's calculator error metrics and
// alarms).
func TestTenantToolsNamedAsTheOperatorsCountAsOther(t *testing.T) {
	p := prom.New()
	var emf bytes.Buffer
	o := telemetry.New(telemetry.Config{Recorders: []telemetry.Recorder{p}, EMF: telemetry.NewEMF(&emf, "", nil),
		Names: telemetry.Names{Models: []string{"test-model"}, Tools: []string{"calculator", "check_report"}}})
	resp := &api.Response{ID: "resp_1", Model: "test-model"}
	ctx, ro := o.StartResponse(context.Background(), resp)
	for i, kind := range []string{engine.ToolKindMCP, engine.ToolKindOutput, engine.ToolKindReflection, engine.ToolKindHosted} {
		c := &engine.ToolCall{ResponseID: resp.ID, Kind: kind, Name: "calculator", CallID: fmt.Sprint("mcp_", i), Arguments: "{}",
			Attempt: 1, Iteration: 1, Start: time.Now(), Result: &tools.ToolResult{Output: "down", IsError: true}}
		ro.EndToolCall(ro.StartToolCall(ctx, c), c)
	}
	c := &engine.ToolCall{ResponseID: resp.ID, Kind: engine.ToolKindValidator, Name: "check_report", CallID: "v", Start: time.Now(), Result: &tools.ToolResult{Output: "ok"}}
	ro.EndToolCall(ro.StartToolCall(ctx, c), c)

	sc := bufio.NewScanner(&emf)
	byKind := map[string]string{}
	for sc.Scan() {
		var l map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l))
		byKind[l[telemetry.DimToolKind].(string)] = l[telemetry.DimTool].(string)
	}
	assert.Equal(t, map[string]string{"mcp": "other", "output": "other", "reflection": "other", "hosted": "calculator", "validator": "check_report"}, byKind)
	body, _ := scrapeText(t, p)
	assert.Contains(t, body, `lambent_tool_errors_total{gen_ai_tool_name="calculator",lambent_tool_kind="hosted"} 1`)
	assert.False(t, strings.Contains(body, `lambent_tool_errors_total{gen_ai_tool_name="calculator",lambent_tool_kind="mcp"}`), "an MCP tool's error is other's")
}
