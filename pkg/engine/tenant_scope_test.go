package engine

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"

	"github.com/lambent/lambent/pkg/tenant"
	"github.com/lambent/lambent/pkg/tools"
)

// prompt_cache_key and safety_identifier (or user) reach the provider's
// account, which every tenant shares, scoped to the tenant: two tenants
// sending the same values share no prompt-cache bucket and no end-user
// identity there; one tenant sending them again gets the same (its cache
// holds); the response echoes the client's own values.
func TestProviderValuesScopedToTheTenant(t *testing.T) {
	p := script(text("a", 1, 1), text("b", 1, 1), text("c", 1, 1))
	e, _ := newEngine(t, p, nil)
	body := `{"input":"hi","prompt_cache_key":"support-bot","safety_identifier":"user-42"}`
	for _, who := range []string{"acme", "globex", "acme"} {
		rec := &recorder{}
		require.NoError(t, e.CreateResponse(tenant.With(context.Background(), who), decodeReq(t, body), rec))
		rec.response(t)
		assert.Equal(t, "support-bot", gjson.GetBytes(rec.resp, "prompt_cache_key").String(), "echoed as sent")
		assert.Equal(t, "user-42", gjson.GetBytes(rec.resp, "safety_identifier").String())
	}
	reqs := p.requests()
	require.Len(t, reqs, 3)
	assert.NotEqual(t, reqs[0].PromptCacheKey, reqs[1].PromptCacheKey)
	assert.NotEqual(t, reqs[0].User, reqs[1].User)
	assert.Equal(t, reqs[0].PromptCacheKey, reqs[2].PromptCacheKey, "the same tenant keeps its cache bucket")
	assert.Equal(t, reqs[0].User, reqs[2].User)
	assert.NotContains(t, reqs[0].PromptCacheKey, "support-bot")
	assert.LessOrEqual(t, len(reqs[0].PromptCacheKey), 64, "OpenAI's limit")
}

// A hosted tool's function, and an output tool's validator, learn the
// tenant whose response calls them (tools.ToolCall.Tenant, the payload's
// "tenant"), so that a tool serving several tenants keeps their data
// apart; before, nothing told them.
func TestHostedCallsNameTheirTenant(t *testing.T) {
	m := newMock(func(ctx context.Context, c tools.ToolCall) (*tools.ToolResult, error) {
		if c.Name == "check_report" {
			return &tools.ToolResult{Output: `{"valid":true,"errors":[]}`}, nil
		}
		return echoTool(ctx, c)
	}, "calc", "check_report")
	p := script(
		calls(1, 1, call("c1", "calc", `{"expression":"1+1"}`)), text("2", 1, 1),
		calls(1, 1, call("c2", "report", validReport)),
	)
	e, _ := newEngine(t, p, m)
	for _, c := range []struct{ tenant, body string }{
		{"acme", `{"input":"x","tools":[{"type":"lambent:calc"}]}`},
		{"globex", `{"input":"assess","tools":[` + outputTool(`"validators":["lambent:check_report"]`) + `]}`},
	} {
		require.NoError(t, e.CreateResponse(tenant.With(context.Background(), c.tenant), decodeReq(t, c.body), &recorder{}))
	}
	got := m.calls()
	require.Len(t, got, 2)
	assert.Equal(t, "calc", got[0].Name)
	assert.Equal(t, "acme", got[0].Tenant)
	assert.Equal(t, "check_report", got[1].Name)
	assert.Equal(t, "globex", got[1].Tenant)
}
