package httpapi_test

// OpenAI's Codex CLI (the pinned npm package @openai/codex, a Rust binary
// in its platform package) against the gateway, with its default tools
// and requests: store false with the whole history replayed,
// client_metadata, a namespace tool per MCP server and for its sub-agent
// tools, web_search. The fake model answers by the conversation.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/mcptest"
)

// codexCLI is the Codex CLI configured for one gateway: its CODEX_HOME
// (config.toml) and the working directory of its commands.
type codexCLI struct {
	t    *testing.T
	bin  string
	home string
	work string
	// retries is how many times Codex retries a failed request or stream
	// (retry): each retry's "Reconnecting..." error event is expected.
	retries int
	// env is added to the environment of every Codex process.
	env []string
}

// newCodex installs the pinned Codex CLI (once, into the cache) and
// configures it for the gateway at baseURL with Lambent as its model
// provider, the MCP servers of mcp (name → streamable HTTP URL), and a
// sandbox and approval policy that run commands without asking (a
// container has no sandbox to give Codex).
func newCodex(t *testing.T, baseURL string, mcp map[string]string) *codexCLI {
	t.Helper()
	dir := npmPackages(t, "testdata/codex", "codex")
	c := &codexCLI{t: t, bin: filepath.Join(dir, "node_modules", ".bin", "codex"), home: t.TempDir(), work: t.TempDir()}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, `model = "test-model"
model_provider = "lambent"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.lambent]
name = "Lambent"
base_url = %q
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, baseURL)
	for name, url := range mcp {
		fmt.Fprintf(&cfg, "\n[mcp_servers.%s]\nurl = %q\n", name, url)
	}
	require.NoError(t, os.WriteFile(filepath.Join(c.home, "config.toml"), []byte(cfg.String()), 0o600))
	return c
}

// retry lets Codex retry a failed request or stream n times, as its
// defaults do (4 and 5 times), instead of none.
func (c *codexCLI) retry(n int) {
	c.t.Helper()
	c.editConfig("_max_retries = 0", fmt.Sprintf("_max_retries = %d", n))
	c.retries = n
}

// editConfig replaces every old of Codex's config.toml with replacement.
func (c *codexCLI) editConfig(old, replacement string) {
	c.t.Helper()
	path := filepath.Join(c.home, "config.toml")
	b, err := os.ReadFile(path)
	require.NoError(c.t, err)
	require.Contains(c.t, string(b), old)
	b = bytes.ReplaceAll(b, []byte(old), []byte(replacement))
	require.NoError(c.t, os.WriteFile(path, b, 0o600))
}

// environ is the environment of a Codex process.
func (c *codexCLI) environ() []string {
	return append(append(os.Environ(), "CODEX_HOME="+c.home, "RUST_LOG=error", "NO_COLOR=1"), c.env...)
}

// codexEvent is one line of `codex exec --json`.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	// Usage is turn.completed's: the turn's token usage as Codex read it
	// from the responses' usage.
	Usage struct {
		InputTokens           int `json:"input_tokens"`
		CachedInputTokens     int `json:"cached_input_tokens"`
		CacheWriteInputTokens int `json:"cache_write_input_tokens"`
	} `json:"usage"`
	Item struct {
		Type             string `json:"type"`
		Text             string `json:"text"`
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		Server           string `json:"server"`
		Tool             string `json:"tool"`
		Status           string `json:"status"`
		// Message is an error item's: a warning, or Codex's notice that
		// it falls back from WebSocket mode to HTTP, with the cause.
		Message string `json:"message"`
	} `json:"item"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

// run runs `codex exec --json` with args: its events, what it wrote to
// stderr, and its error.
func (c *codexCLI) run(args ...string) ([]codexEvent, string, error) {
	c.t.Helper()
	cmd := exec.Command(c.bin, append([]string{"exec", "--json", "--skip-git-repo-check"}, args...)...)
	cmd.Dir = c.work
	cmd.Env = c.environ()
	cmd.Stdin = strings.NewReader("")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var evs []codexEvent
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev codexEvent
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type != "" {
			evs = append(evs, ev)
		}
	}
	if err != nil {
		err = fmt.Errorf("codex exec %q: %w\nstdout: %s", args, err, out)
	}
	return evs, stderr.String(), err
}

// exec runs `codex exec --json` with args and returns its events; a
// failed run fails the test with what Codex printed.
func (c *codexCLI) exec(args ...string) []codexEvent {
	c.t.Helper()
	evs, stderr, err := c.run(args...)
	require.NoError(c.t, err, "stderr: %s", stderr)
	require.NotEmpty(c.t, evs, "codex printed no events\nstderr: %s", stderr)
	for _, ev := range evs {
		require.NotEqual(c.t, "turn.failed", ev.Type, "codex: %+v\nstderr: %s", ev, stderr)
		if c.retries > 0 && strings.HasPrefix(ev.Message, "Reconnecting... ") {
			continue
		}
		require.NotEqual(c.t, "error", ev.Type, "codex: %+v\nstderr: %s", ev, stderr)
	}
	return evs
}

// execFailing runs `codex exec --json` with args, which must fail its
// turn, and returns the turn's error message.
func (c *codexCLI) execFailing(args ...string) string {
	c.t.Helper()
	evs, stderr, err := c.run(args...)
	require.Error(c.t, err, "codex exec %q succeeded: %+v", args, evs)
	for _, ev := range evs {
		if ev.Type == "turn.failed" && ev.Error != nil {
			return ev.Error.Message
		}
	}
	require.FailNow(c.t, "no turn.failed", "%v\nstderr: %s", err, stderr)
	return ""
}

// answer is the text of the last agent message of a run.
func answer(evs []codexEvent) string {
	text := ""
	for _, ev := range evs {
		if ev.Type == "item.completed" && ev.Item.Type == "agent_message" {
			text = ev.Item.Text
		}
	}
	return text
}

// threadID is the id of the run's thread (for exec resume).
func threadID(evs []codexEvent) string {
	for _, ev := range evs {
		if ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}

// items are the completed items of type typ of a run.
func items(evs []codexEvent, typ string) []codexEvent {
	var out []codexEvent
	for _, ev := range evs {
		if ev.Type == "item.completed" && ev.Item.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// codexTurn is the fake model's answer to Codex, by the conversation:
//   - after a tool result: "Tool said: <the result>";
//   - "run the command": Codex's exec_command tool running an echo;
//   - "use the mcp tool": the echo tool of the MCP server "tester", by the
//     function name the gateway offers it under;
//   - "delegate": Codex's spawn_agent (sub-agent namespace), then its
//     wait_agent for the agent spawned; the sub-agent's task is answered as
//     anything else, and its answer (wait_agent's result, or Codex's
//     notification) with "The helper answered: …";
//   - "what did the command print": the earlier tool results it sees in
//     the replayed history;
//   - anything else: "Hello from Lambent.", after a short reasoning.
func codexTurn(req fakellm.Request) fakellm.Turn {
	msgs := req.Messages
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		switch calledTool(msgs, last.ToolCallID) {
		case "multi_agent_v1__wait_agent":
			if strings.Contains(last.Content.String(), "Hello from Lambent.") {
				return fakellm.Turn{Text: "The helper answered: Hello from Lambent."}
			}
		case "multi_agent_v1__spawn_agent":
			var spawned struct {
				AgentID string `json:"agent_id"`
			}
			_ = json.Unmarshal([]byte(last.Content.String()), &spawned)
			args, _ := json.Marshal(map[string]any{"targets": []string{spawned.AgentID}, "timeout_ms": 60000})
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "multi_agent_v1__wait_agent", Arguments: string(args)}}}
		}
		return fakellm.Turn{Text: "Tool said: " + strings.TrimSpace(last.Content.String())}
	}
	user := strings.ToLower(last.Content.String())
	switch {
	case strings.Contains(user, "run the command"):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"echo lambent-$((6*7))","yield_time_ms":2000}`}}}
	case strings.Contains(user, "<subagent_notification>") && strings.Contains(user, `"completed":"hello from lambent."`):
		return fakellm.Turn{Text: "The helper answered: Hello from Lambent."}
	case strings.Contains(user, "delegate"):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "multi_agent_v1__spawn_agent", Arguments: `{"message":"helper task: say hello"}`}}}
	case strings.Contains(user, "use the mcp tool"):
		for _, tool := range req.Tools {
			if n := tool.Function.Name; strings.Contains(n, "tester") && strings.HasSuffix(n, "echo") {
				return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: n, Arguments: `{"text":"hi from codex"}`}}}
			}
		}
		return fakellm.Turn{Text: "No MCP tool was offered."}
	case strings.Contains(user, "what did the command print"):
		var seen []string
		for _, m := range msgs {
			if m.Role == "tool" && strings.Contains(m.Content.String(), "lambent-") {
				seen = append(seen, "lambent-"+strings.Fields(strings.SplitN(m.Content.String(), "lambent-", 2)[1])[0])
			}
		}
		return fakellm.Turn{Text: "Earlier: " + strings.Join(seen, ", ")}
	}
	return fakellm.Turn{Reasoning: "A greeting is enough.", Text: "Hello from Lambent."}
}

// calledTool is the name of the tool call id of the conversation's
// assistant messages.
func calledTool(msgs []chatwire.Message, id string) string {
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Function.Name
			}
		}
	}
	return ""
}

// Codex works unchanged with its default configuration: an answer, a tool
// loop through its exec_command tool (run by Codex, continued with
// store: false and the whole history), `codex exec resume` of that thread,
// a sub-agent spawned and waited for through its multi_agent_v1 namespace
// (the sub-agent's own requests go through the gateway too), and an MCP
// server configured in Codex reached through its namespace.
func TestCodexCLI(t *testing.T) {
	t.Parallel()
	mcp := mcptest.StartStreamable(mcptest.Options{})
	defer mcp.Close()
	fake := fakellm.NewHandler(codexTurn)
	g := newGateway(t, fake, nil)
	codex := newCodex(t, g.srv.URL+"/v1", map[string]string{"tester": mcp.Endpoint})

	t.Run("answer", func(t *testing.T) {
		evs := codex.exec("say hello")
		require.Equal(t, "Hello from Lambent.", answer(evs))
	})

	var thread string
	t.Run("tool loop", func(t *testing.T) {
		thread = threadID(codex.toolLoop())
		require.NotEmpty(t, thread)
	})

	t.Run("resume", func(t *testing.T) {
		require.NotEmpty(t, thread)
		evs := codex.exec("resume", thread, "what did the command print?")
		require.Equal(t, "Earlier: lambent-42", answer(evs))
	})

	t.Run("sub-agent", func(t *testing.T) {
		evs := codex.exec("delegate the greeting")
		var helper bool
		for _, r := range fake.Requests() {
			if m := r.Messages[len(r.Messages)-1]; m.Role == "user" && strings.Contains(m.Content.String(), "helper task: say hello") {
				helper = true
			}
		}
		require.True(t, helper, "the sub-agent reached the model through the gateway")
		require.Equal(t, "The helper answered: Hello from Lambent.", answer(evs))
	})

	t.Run("mcp namespace", func(t *testing.T) {
		evs := codex.exec("use the mcp tool")
		calls := items(evs, "mcp_tool_call")
		require.Len(t, calls, 1, "events: %+v", evs)
		require.Equal(t, "tester", calls[0].Item.Server)
		require.Equal(t, "echo", calls[0].Item.Tool)
		// Codex prefixes the MCP result with its wall time.
		require.Contains(t, answer(evs), "echo: hi from codex")

		// What the model was offered: Codex's functions, its sub-agent and
		// MCP namespaces flattened, no web_search (which Lambent does not
		// run).
		reqs := fake.Requests()
		offered := modelTools(reqs[len(reqs)-1])
		for _, name := range []string{"exec_command", "multi_agent_v1__spawn_agent", "mcp__tester__echo"} {
			require.Contains(t, offered, name)
		}
		for name := range offered {
			require.NotContains(t, name, "web_search")
		}
	})
}

// toolLoop runs Codex on codexTurn's "run the command": one
// command_execution whose output, lambent-42, the answer repeats. It
// returns the run's events.
func (c *codexCLI) toolLoop() []codexEvent {
	c.t.Helper()
	evs := c.exec("run the command")
	cmds := items(evs, "command_execution")
	require.Len(c.t, cmds, 1, "events: %+v", evs)
	require.Contains(c.t, cmds[0].Item.AggregatedOutput, "lambent-42")
	require.Contains(c.t, answer(evs), "lambent-42")
	return evs
}
