package httpapi_test

import (
	"context"
	"io"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/pkg/app"
)

// bedrockClaude is the Bedrock model Codex asks for.
const bedrockClaude = "us.anthropic.claude-sonnet-4-20250514-v1:0"

// newBedrockGateway builds the gateway with the Bedrock provider in front
// of fake (a fake Bedrock Runtime, reached with fake AWS credentials) and
// returns its base URL. It sets the process's AWS environment: its test
// cannot run in parallel.
func newBedrockGateway(t *testing.T, fake *fakebedrock.Server) string {
	t.Helper()
	return newBedrockGatewayWith(t, fake, nil)
}

// newBedrockGatewayWith is newBedrockGateway with the settings of env
// added.
func newBedrockGatewayWith(t *testing.T, fake *fakebedrock.Server, env map[string]string) string {
	t.Helper()
	return newBedrockServer(t, fake, env, io.Discard).URL + "/v1"
}

// newBedrockServer is newBedrockGatewayWith's server, logging to logs.
func newBedrockServer(t testing.TB, fake *fakebedrock.Server, env map[string]string, logs io.Writer) *httptest.Server {
	t.Helper()
	t.Cleanup(fake.Close)
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": fake.URL, "AWS_REGION": fakebedrock.Region,
		"AWS_ACCESS_KEY_ID": "AKIDFAKEBEDROCK", "AWS_SECRET_ACCESS_KEY": "fake-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "",
	} {
		t.Setenv(k, v)
	}
	vars := map[string]string{"LAMBENT_PROVIDER": "bedrock", "LAMBENT_DEFAULT_MODEL": bedrockClaude,
		"LAMBENT_STORE": "memory", "LAMBENT_LOG_LEVEL": "error"}
	maps.Copy(vars, env)
	getenv := func(k string) string { return vars[k] }
	cfg, err := app.FromEnv(getenv)
	require.NoError(t, err)
	require.NoError(t, app.ResolveSecrets(context.Background(), &cfg, getenv))
	a, err := app.Build(context.Background(), cfg, app.Logger(cfg, logs), nil)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	srv := httptest.NewServer(a.Handler)
	t.Cleanup(srv.Close)
	return srv
}

// Codex on Claude through Bedrock: the signed thinking of the tool turn
// comes back to Codex as the reasoning item's encrypted_content (Codex
// asks for reasoning.encrypted_content, store: false) and Codex replays it
// with the call's output; the fake refuses thinking that is not the
// signed block it sent. The turn's usage reaches Codex whole, the tokens
// Bedrock wrote to its prompt cache included (OpenAI's
// usage.input_tokens_details.cache_write_tokens, which Codex reads).
func TestCodexCLIOnBedrock(t *testing.T) {
	fake := fakebedrock.New(
		fakebedrock.Turn{Reasoning: "The user wants the command run.",
			ToolUses: []fakebedrock.ToolUse{{ID: "tooluse_1", Name: "exec_command", Input: `{"cmd":"echo lambent-$((6*7))"}`}}},
		fakebedrock.Turn{Reasoning: "It ran.", Text: "It printed lambent-42."},
	)
	codex := newCodex(t, newBedrockGateway(t, fake), nil)
	cfg := filepath.Join(codex.home, "config.toml")
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(string(b), `model = "test-model"`, `model = "`+bedrockClaude+`"`, 1)), 0o600))

	evs := codex.exec("run the command")
	require.Equal(t, "It printed lambent-42.", answer(evs))
	reqs := fake.Requests()
	require.Len(t, reqs, 2)
	replayed := reqs[1].Messages[len(reqs[1].Messages)-2]
	require.Equal(t, "assistant", replayed.Role)
	require.NotNil(t, replayed.Content[0].ReasoningContent, "the signed thinking leads the tool turn")
	require.Equal(t, "The user wants the command run.", replayed.Content[0].ReasoningContent.ReasoningText.Text)

	var written int
	for _, r := range reqs {
		written += r.Metered.CacheWriteInputTokens
	}
	require.Positive(t, written)
	var usage []codexEvent
	for _, ev := range evs {
		if ev.Type == "turn.completed" {
			usage = append(usage, ev)
		}
	}
	require.Len(t, usage, 1)
	require.Equal(t, written, usage[0].Usage.CacheWriteInputTokens, "Codex's count of the tokens written to the cache")
}
