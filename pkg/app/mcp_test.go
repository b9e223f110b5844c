package app

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakessm"
	"github.com/lambent/lambent/pkg/awsjson"
	"github.com/lambent/lambent/pkg/tools"
)

func secretsClient(t *testing.T, srv *fakessm.Server) *awsjson.SecretsManager {
	t.Helper()
	c, err := awsjson.NewSecretsManager(srv.Config())
	require.NoError(t, err)
	return c
}

// The sealing key comes from LAMBENT_SECRET_KEY or the SSM parameter
// LAMBENT_SECRET_KEY_SSM names; it must be 32 bytes of base64.
func TestSecretKey(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	cfg, err := FromEnv(envOf(map[string]string{EnvSecretKey: key}))
	require.NoError(t, err)
	assert.Equal(t, []byte(strings.Repeat("k", 32)), cfg.Security.SecretKey)
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString([]byte("short"))} {
		_, err := FromEnv(envOf(map[string]string{EnvSecretKey: bad}))
		assert.ErrorContains(t, err, EnvSecretKey)
	}

	srv := newFakeSSM(t, map[string]string{"/lambent/secret-key": key + "\n", "/lambent/bad-key": "nope"})
	cfg = Config{}
	require.NoError(t, ResolveSecretsWith(context.Background(), &cfg, envOf(map[string]string{EnvSecretKeySSM: "/lambent/secret-key"}), ssmClient(t, srv)))
	assert.Equal(t, []byte(strings.Repeat("k", 32)), cfg.Security.SecretKey)
	cfg = Config{}
	err = ResolveSecretsWith(context.Background(), &cfg, envOf(map[string]string{EnvSecretKeySSM: "/lambent/bad-key"}), ssmClient(t, srv))
	assert.ErrorContains(t, err, EnvSecretKeySSM)
	assert.NotContains(t, err.Error(), "nope")
}

// The manifest's MCP secrets are read from SSM and Secrets Manager, each
// reference once; failures name the reference, never a value.
func TestMCPServersSecrets(t *testing.T) {
	srv := fakessm.Start(fakessm.Options{
		Params:  map[string]string{"/mcp/key": "ssm-value"},
		Secrets: map[string]string{"plain": "sm-value", "json": `{"token":"json-value","n":1}`},
	})
	defer srv.Close()
	opts := &Options{SSM: ssmClient(t, srv), SecretsManager: secretsClient(t, srv)}
	m, err := tools.ParseManifest([]byte(`{"tools":[
		{"name":"a","description":"A","backing":{"type":"mcp","url":"https://a.example/mcp","headers":{"X-Plain":"p"},
		 "secret_headers":{"X-Key":"ssm:/mcp/key","X-Other":"secretsmanager:plain"},"authorization":"secretsmanager:json#token"}},
		{"name":"b","backing":{"type":"mcp","url":"https://b.example/mcp","authorization":"ssm:/mcp/key"}},
		{"name":"calculator","backing":{"type":"local"}}]}`))
	require.NoError(t, err)
	servers, defs, err := mcpServers(context.Background(), m, opts, loadAWS(t))
	require.NoError(t, err)
	require.Len(t, servers, 2)
	a := servers["a"]
	assert.Equal(t, map[string]string{"X-Plain": "p", "X-Key": "ssm-value", "X-Other": "sm-value"}, a.Headers)
	assert.Equal(t, "json-value", a.Authorization)
	assert.True(t, a.Trusted)
	assert.Equal(t, tools.MCPStreamableHTTP, a.Transport)
	assert.Equal(t, "ssm-value", servers["b"].Authorization)
	assert.Equal(t, "A", defs[0].Description)
	assert.Len(t, srv.Requests(), 3, "each reference read once")

	for ref, want := range map[string]string{
		"ssm:/mcp/missing":           "not found",
		"secretsmanager:missing":     "ResourceNotFound",
		"secretsmanager:plain#token": "not a JSON object",
		"secretsmanager:json#n":      "no string field n",
	} {
		m, err := tools.ParseManifest([]byte(`{"tools":[{"name":"x","backing":{"type":"mcp","url":"https://x.example","authorization":"` + ref + `"}}]}`))
		require.NoError(t, err)
		_, _, err = mcpServers(context.Background(), m, opts, loadAWS(t))
		require.ErrorContains(t, err, want, ref)
		assert.Contains(t, err.Error(), ref)
		for _, v := range []string{"ssm-value", "sm-value", "json-value"} {
			assert.NotContains(t, err.Error(), v)
		}
	}
}
