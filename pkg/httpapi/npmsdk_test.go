package httpapi_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/fakellm"
)

// npmSDK installs the official npm `openai` package (once) into the cache
// and returns the directory holding its node_modules. A missing npm or
// registry fails the test: it never skips.
func npmSDK(t *testing.T) string {
	t.Helper()
	cache := os.Getenv("LAMBENT_CACHE")
	if cache == "" {
		home, err := os.UserCacheDir()
		require.NoError(t, err)
		cache = filepath.Join(home, "lambent")
	}
	dir := filepath.Join(cache, "npm-openai")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err == nil {
		return dir
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	cmd := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "openai@7")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "npm install openai: %s", out)
	return dir
}

// The npm SDK works unchanged, including the stream helper's
// finalResponse() on a client-tool pause (response.completed carrying
// status requires_action).
func TestNPMSDK(t *testing.T) {
	dir := npmSDK(t)
	g := newGateway(t, fakellm.New(
		fakellm.Turn{Text: "Hello there!"},
		fakellm.Turn{Text: "Streaming works fine."},
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_rome", Name: "get_weather", Arguments: `{"city":"Rome"}`}}},
		fakellm.Turn{Text: "Sunny in Rome, 25C."},
	), nil)
	script, err := filepath.Abs("testdata/npm_sdk.mjs")
	require.NoError(t, err)
	// Node resolves "openai" from the script's directory upwards, so run a
	// copy placed next to the installed node_modules.
	target := filepath.Join(dir, "npm_sdk.mjs")
	src, err := os.ReadFile(script)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(target, src, 0o644))
	cmd := exec.Command("node", target, g.srv.URL+"/v1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node: %s", stderr.String())
	var got struct {
		Plain    struct{ Status, Text string }
		Streamed struct {
			Status, Text string
			Events       []string
		}
		Paused struct {
			Status string
			Calls  []struct{ CallID, Name, Arguments string } `json:"calls"`
		}
		Continued struct{ Status, Text string }
		Retrieved bool
	}
	require.NoError(t, json.Unmarshal(stdout, &got), string(stdout))
	require.Equal(t, "completed", got.Plain.Status)
	require.Equal(t, "Hello there!", got.Plain.Text)
	require.Equal(t, "completed", got.Streamed.Status)
	require.Equal(t, "Streaming works fine.", got.Streamed.Text)
	require.Equal(t, "response.created", got.Streamed.Events[0])
	require.Equal(t, "response.completed", got.Streamed.Events[len(got.Streamed.Events)-1])
	require.Equal(t, "requires_action", got.Paused.Status)
	require.Len(t, got.Paused.Calls, 1)
	require.Equal(t, "completed", got.Continued.Status)
	require.Equal(t, "Sunny in Rome, 25C.", got.Continued.Text)
	require.True(t, got.Retrieved)
}
