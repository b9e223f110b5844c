package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/logbuf"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/app"
)

// getMetrics scrapes /metrics with the bearer key (none when empty).
func getMetrics(t *testing.T, url, key string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

// toolServer is a tenant's MCP server offering n tools named by it.
func toolServer(t *testing.T, n int) *httptest.Server {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "tenant", Version: "1"}, nil)
	for i := range n {
		sdk.AddTool(s, &sdk.Tool{Name: fmt.Sprintf("evil_%03d", i), Description: "a tool"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
		})
	}
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv
}

// Model and tool names that clients choose do not grow the scrape nor the
// EMF dimensions: a 2 MB model name (145 MB scrapes before) and an MCP
// server's tools count as "other"; the default model and the manifest's
// tools keep their names.
func TestMetricLabelsOnlyNameWhatTheOperatorConfigured(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const tenantTools = 40
	mcp := toolServer(t, tenantTools)
	calls := []fakellm.ToolCall{{ID: "calc", Name: "calculator", Arguments: `{"expression":"6*7"}`}}
	for i := range tenantTools {
		calls = append(calls, fakellm.ToolCall{ID: fmt.Sprint("m", i), Name: fmt.Sprintf("evil_%03d", i), Arguments: `{}`})
	}
	fake := fakellm.New(fakellm.Turn{Text: "hi"}, fakellm.Turn{ToolCalls: calls}, fakellm.Turn{Text: "done"}, fakellm.Turn{Text: "hi"})
	defer fake.Close()
	emf := &logbuf.Buffer{}
	// The model name limit is raised: the labels are bounded by themselves.
	g := newGateway(t, fake, map[string]string{"LAMBENT_TOOLS": "", "LAMBENT_METRICS": "prometheus,emf",
		"LAMBENT_LIMIT_MODEL_NAME":  "4194304",
		"LAMBENT_FETCH_ALLOW_HOSTS": strings.TrimPrefix(mcp.URL, "http://")}, nil, &app.Options{MetricsOutput: emf})
	post := func(body string) {
		t.Helper()
		resp, err := http.Post(g.url+"/v1/responses", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	}

	post(`{"input":"hi"}`)
	_, base := getMetrics(t, g.url, "")
	post(`{"input":"go","tools":[{"type":"lambent:calculator"},{"type":"mcp","server_label":"theirs","server_url":"` + mcp.URL + `","require_approval":"never"}]}`)
	post(`{"model":"` + strings.Repeat("m", 2<<20) + `","input":"hi"}`)
	resp, body := getMetrics(t, g.url, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// Bounded: the new series are calculator's and other's, whatever the
	// names (one series per name before: 145 MB after the 2 MB name).
	assert.Less(t, len(body), len(base)+32<<10)
	assert.NotContains(t, body, "evil_")
	assert.NotContains(t, body, "mmmm")
	assert.Contains(t, body, `gen_ai_tool_name="calculator"`)
	assert.Contains(t, body, `gen_ai_tool_name="other"`)
	assert.Contains(t, body, `gen_ai_request_model="test-model"`)
	assert.Contains(t, body, `gen_ai_request_model="other"`)

	dims := map[string]bool{}
	for _, l := range emf.Lines() {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		for _, k := range []string{"gen_ai.request.model", "gen_ai.tool.name"} {
			if v, ok := m[k].(string); ok {
				dims[v] = true
			}
		}
	}
	assert.Equal(t, map[string]bool{"test-model": true, "calculator": true, "other": true}, dims)
}

const (
	metricsKey = "mk-0123456789abcdef"
	acmeKey    = "ak-acme-0123456789"
	globexKey  = "ak-globex-0123456789"
)

// /metrics asks for LAMBENT_METRICS_KEY when it is set; else for an API
// key when the API needs keys (of one tenant: TestMetricsOfTwoTenants);
// else for nothing (local runs).
func TestMetricsKey(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New()
	defer fake.Close()
	for _, tc := range []struct {
		name      string
		env       map[string]string
		good, bad []string
	}{
		{"metrics key", map[string]string{"LAMBENT_METRICS_KEY": metricsKey, "LAMBENT_API_KEYS": "acme=" + acmeKey}, []string{metricsKey}, []string{"", acmeKey, "nope"}},
		{"metrics key, no API keys", map[string]string{"LAMBENT_METRICS_KEY": metricsKey}, []string{metricsKey}, []string{"", "nope"}},
		{"API keys of one tenant only", map[string]string{"LAMBENT_API_KEYS": "acme=" + acmeKey + ",acme=" + globexKey}, []string{acmeKey, globexKey}, []string{"", "nope"}},
		{"no keys", nil, []string{"", "anything"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LAMBENT_METRICS": "prometheus"}
			for k, v := range tc.env {
				env[k] = v
			}
			cfg, err := app.FromEnv(func(k string) string { return env[k] })
			require.NoError(t, err)
			require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, func(k string) string { return env[k] }))
			g := newGatewayCfg(t, fake, cfg)
			for _, key := range tc.good {
				resp, body := getMetrics(t, g, key)
				assert.Equal(t, http.StatusOK, resp.StatusCode, key)
				assert.Contains(t, body, "go_goroutines")
			}
			for _, key := range tc.bad {
				resp, body := getMetrics(t, g, key)
				require.Equal(t, http.StatusUnauthorized, resp.StatusCode, key)
				assert.Equal(t, `Bearer realm="lambent-metrics"`, resp.Header.Get("WWW-Authenticate"))
				assert.Regexp(t, requestIDRe, resp.Header.Get("X-Request-Id"))
				var e api.ErrorBody
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Equal(t, "invalid_api_key", e.Error.Code)
				assert.NotContains(t, body, "go_goroutines")
			}
		})
	}
}

// newGatewayCfg serves the app of cfg (its provider fake's URL set).
func newGatewayCfg(t *testing.T, fake *fakellm.Server, cfg app.Config) string {
	t.Helper()
	cfg.Provider.URL = fake.URL
	a, err := app.Build(context.Background(), cfg, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard), nil)
	require.NoError(t, err)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return srv.URL
}

// A metrics key is a secret: 16 characters at least, like API keys.
func TestMetricsKeyTooShort(t *testing.T) {
	_, err := app.FromEnv(func(k string) string { return map[string]string{"LAMBENT_METRICS_KEY": "short"}[k] })
	require.ErrorContains(t, err, "LAMBENT_METRICS_KEY")
}

// /metrics is served through the API's checks: the Host check of a
// loopback listener, the request id, and refusals in the OpenAI error
// shape (no redirect of an unclean path).
func TestMetricsThroughTheAPIChecks(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New()
	defer fake.Close()
	env := map[string]string{"LAMBENT_METRICS": "prometheus", "LAMBENT_METRICS_KEY": metricsKey}
	cfg, err := app.FromEnv(func(k string) string { return env[k] })
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, func(k string) string { return env[k] }))
	url := newGatewayCfg(t, fake, cfg)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range []struct {
		method, path, host string
		status             int
		code               string
	}{
		{http.MethodGet, "/metrics", "", http.StatusOK, ""},
		{http.MethodGet, "/metrics/", "", http.StatusOK, ""},
		{http.MethodGet, "/metrics", "evil.example", http.StatusMisdirectedRequest, "host_not_allowed"},
		{http.MethodPost, "/metrics", "", http.StatusMethodNotAllowed, "method_not_allowed"},
		{http.MethodGet, "//metrics", "", http.StatusNotFound, "unknown_url"},
		{http.MethodGet, "/v1/../metrics", "", http.StatusNotFound, "unknown_url"},
	} {
		req, err := http.NewRequest(c.method, url+c.path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+metricsKey)
		if c.host != "" {
			req.Host = c.host
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, c.status, resp.StatusCode, "%s %s Host %s: %s", c.method, c.path, c.host, b)
		assert.Regexp(t, requestIDRe, resp.Header.Get("X-Request-Id"))
		if c.code == "" {
			assert.Contains(t, string(b), "go_goroutines")
			continue
		}
		var e api.ErrorBody
		require.NoError(t, json.Unmarshal(b, &e), "%s", b)
		assert.Equal(t, c.code, e.Error.Code)
	}
}

// gatewayOfEnv builds and serves the app of env (its provider fake's URL
// set), returning its URL, or Build's error.
func gatewayOfEnv(t *testing.T, fake *fakellm.Server, env map[string]string) (string, error) {
	t.Helper()
	getenv := func(k string) string { return env[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, getenv))
	cfg.Provider.URL = fake.URL
	a, err := app.Build(context.Background(), cfg, app.Logger(app.Config{Server: app.ServerConfig{LogLevel: "error"}}, io.Discard), nil)
	if err != nil {
		return "", err
	}
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return srv.URL, nil
}

// One tenant's provider error codes are no label: a code the provider
// returns for acme's request (its 4xx code, the provider's text) counts
// under its type, and the operator's scrape holds only the gateway's
// fixed set of error types. With API keys of two tenants, /metrics needs
// its own key: globex's key cannot read acme's aggregates, and the
// gateway does not start with /metrics open to every tenant.
func TestMetricsOfTwoTenants(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const secret = "acme_falcon_launch_q3"
	fake := fakellm.New(fakellm.Turn{Status: http.StatusBadRequest, ErrorCode: secret, ErrorMessage: "nope"})
	defer fake.Close()
	keys := "acme=" + acmeKey + ",globex=" + globexKey
	env := map[string]string{"LAMBENT_METRICS": "prometheus", "LAMBENT_DEFAULT_MODEL": "test-model", "LAMBENT_API_KEYS": keys}

	_, err := gatewayOfEnv(t, fake, env)
	require.ErrorContains(t, err, "LAMBENT_METRICS_KEY", "/metrics open to every tenant's key")

	env["LAMBENT_METRICS_KEY"] = metricsKey
	url, err := gatewayOfEnv(t, fake, env)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url+"/v1/responses", strings.NewReader(`{"input":"hi"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+acmeKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)

	resp, _ = getMetrics(t, url, globexKey)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp, body := getMetrics(t, url, metricsKey)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, body, secret)
	assert.Contains(t, body, `error_type="invalid_request_error"`)
}

// A single tenant's keys may read /metrics without a metrics key: there
// is no other tenant to read about.
func TestMetricsOfOneTenantWithTwoKeys(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	fake := fakellm.New()
	defer fake.Close()
	url, err := gatewayOfEnv(t, fake, map[string]string{"LAMBENT_METRICS": "prometheus", "LAMBENT_API_KEYS": "acme=" + acmeKey + ",acme=" + globexKey})
	require.NoError(t, err)
	for _, key := range []string{acmeKey, globexKey} {
		resp, _ := getMetrics(t, url, key)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
}
