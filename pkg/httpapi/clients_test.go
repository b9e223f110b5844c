package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// jsClients installs the pinned npm packages of testdata/clients (the AI
// SDK, the OpenAI Agents SDK, LangChain, openai) once into the cache, copies
// the scripts next to them and returns that directory. A missing npm or
// registry fails the test: it never skips.
func jsClients(t *testing.T) string {
	t.Helper()
	return npmPackages(t, "testdata/clients", "js-clients")
}

// npmPackages installs the pinned npm packages of the package-lock.json of
// src (a testdata directory) once into the directory name of the cache
// (LAMBENT_CACHE, else the user's cache directory), copies src's files
// there and returns that directory. The install runs again only when the
// lock changes; a missing npm or registry fails the test.
func npmPackages(t *testing.T, src, name string) string {
	t.Helper()
	cache := os.Getenv("LAMBENT_CACHE")
	if cache == "" {
		home, err := os.UserCacheDir()
		require.NoError(t, err)
		cache = filepath.Join(home, "lambent")
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	require.NoError(t, err)
	dir := filepath.Join(cache, name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// Test binaries of several packages may install at once: one at a time.
	lf, err := os.OpenFile(filepath.Join(dir, ".install.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	require.NoError(t, err)
	defer lf.Close()
	require.NoError(t, syscall.Flock(int(lf.Fd()), syscall.LOCK_EX))
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN) //nolint:errcheck // released on close too
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		require.NoError(t, err)
		require.NoError(t, syncFile(filepath.Join(dir, e.Name()), b))
	}
	installed, _ := os.ReadFile(filepath.Join(dir, "node_modules", ".package-lock.json.src"))
	if !bytes.Equal(installed, lock) {
		cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "npm ci (%s): %s", src, out)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "node_modules", ".package-lock.json.src"), lock, 0o644))
	}
	return dir
}

// syncFile makes the file path hold b. One that already does is left
// alone; another is replaced whole, by a file written beside it and renamed
// over it: a parallel test's node may be reading it, and a file truncated
// and rewritten in place would give node a partial or empty script.
func syncFile(path string, b []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, b) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("copying %s: %w", path, err)
	}
	defer os.Remove(f.Name()) //nolint:errcheck // gone once renamed
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("copying %s: %w", path, err)
	}
	return nil
}

// runJS runs one client script against the gateway (with args after the
// base URL) and decodes what it printed into v.
func runJS(t *testing.T, dir, script, baseURL string, v any, args ...string) {
	t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(dir, script), baseURL}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "node %s: %s", script, stderr.String())
	require.NoError(t, json.Unmarshal(stdout, v), "%s printed: %s (stderr %s)", script, stdout, stderr.String())
}

// clientModel is a fake model that answers by the conversation, so each
// client may make its own number of calls in its own order:
//   - after a tool result: "Result: <the result>";
//   - "weather" in the last user message: a get_weather call for Rome;
//   - "calculate": a calculator call for 17*23;
//   - "my name": the name the conversation gave earlier, if the model saw it;
//   - anything else: "Hello from Lambent."
func clientModel() *fakellm.Server {
	return fakellm.NewHandler(clientTurn)
}

// reasoningClientModel is clientModel reasoning briefly before each of its
// replies, as a reasoning model does, so that a client reads reasoning
// items and their events too.
func reasoningClientModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		turn := clientTurn(req)
		turn.Reasoning = "Let me see what is asked."
		return turn
	})
}

// clientTurn is clientModel's answer to req.
func clientTurn(req fakellm.Request) fakellm.Turn {
	msgs := req.Messages
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		return fakellm.Turn{Text: "Result: " + last.Content.String()}
	}
	user := strings.ToLower(last.Content.String())
	switch {
	case strings.Contains(user, "weather"):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "get_weather", Arguments: `{"city":"Rome"}`}}}
	case strings.Contains(user, "calculate"):
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "calculator", Arguments: `{"expression":"17*23"}`}}}
	case strings.Contains(user, "my name?"):
		for _, m := range msgs {
			if s := m.Content.String(); strings.Contains(s, "My name is ") {
				return fakellm.Turn{Text: "Your name is " + strings.TrimSpace(strings.SplitN(s, "My name is ", 2)[1]) + "."}
			}
		}
		return fakellm.Turn{Text: "I do not know your name."}
	case strings.Contains(user, "again"):
		var seen []string
		for _, m := range msgs {
			if m.Role == "tool" {
				seen = append(seen, m.Content.String())
			}
		}
		return fakellm.Turn{Text: fmt.Sprintf("Earlier results: %s", strings.Join(seen, ", "))}
	}
	return fakellm.Turn{Text: "Hello from Lambent."}
}

// The Vercel AI SDK works unchanged: text, streams, client tools over
// several steps, a hosted tool it shows as already executed (it never tries
// to run it), and chat history sent back as item references.
func TestClientAISDK(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, reasoningClientModel(), nil)
	var got struct {
		Generate    struct{ Text, FinishReason string }
		Stream      struct{ Text, FinishReason string }
		ClientTools struct {
			Text  string
			Steps int
			Ran   []string
		}
		Hosted *struct {
			Text      string
			Steps     int
			ToolCalls []struct {
				Name             string
				ProviderExecuted bool
			}
			ToolResults []struct {
				Name   string
				Output json.RawMessage
			}
		}
		HostedStream struct {
			Text  string
			Parts []struct {
				Type, Name       string
				ProviderExecuted bool
				Output           json.RawMessage
			}
		}
		History struct{ First, Second string }
		Errors  []string
	}
	runJS(t, dir, "ai_sdk.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.Equal(t, "Hello from Lambent.", got.Generate.Text)
	require.Equal(t, "stop", got.Generate.FinishReason)
	require.Equal(t, "Hello from Lambent.", got.Stream.Text)
	require.Equal(t, "Result: sunny in Rome", got.ClientTools.Text)
	require.Equal(t, []string{"Rome"}, got.ClientTools.Ran)
	require.Equal(t, 2, got.ClientTools.Steps)

	require.NotNil(t, got.Hosted)
	require.Equal(t, "Result: 391", got.Hosted.Text)
	require.Equal(t, 1, got.Hosted.Steps, "the SDK made no second step: the tool ran on the gateway")
	require.Len(t, got.Hosted.ToolCalls, 1)
	require.True(t, got.Hosted.ToolCalls[0].ProviderExecuted)
	require.Len(t, got.Hosted.ToolResults, 1)
	require.Contains(t, string(got.Hosted.ToolResults[0].Output), "391")
	require.Equal(t, "Result: 391", got.HostedStream.Text)
	require.Len(t, got.HostedStream.Parts, 2)
	for _, p := range got.HostedStream.Parts {
		require.True(t, p.ProviderExecuted, "%+v", p)
	}
	require.Contains(t, string(got.HostedStream.Parts[1].Output), "391")

	require.Equal(t, "Hello from Lambent.", got.History.First)
	require.Equal(t, "Your name is Ada.", got.History.Second)
}

// The OpenAI Agents SDK for JS works unchanged: run, streamed run, a
// function tool it runs itself, a hosted tool it does not, and
// previousResponseId.
func TestClientAgentsSDK(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, reasoningClientModel(), nil)
	var got struct {
		Errors []string
		Run    *struct{ Text, LastResponseID string }
		Stream *struct{ Text, Final string } `json:"streamed"`
		Tools  *struct {
			Text string
			Ran  []string
		}
		Hosted *struct {
			Text  string
			Items []struct{ Type, Raw, Name, Output string }
		}
		HostedStream *struct {
			Text  string
			Items []struct{ Type, Raw string }
		}
		Previous *struct{ Text string }
	}
	runJS(t, dir, "agents.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.Equal(t, "Hello from Lambent.", got.Run.Text)
	require.Equal(t, "Hello from Lambent.", got.Stream.Text)
	require.Equal(t, "Result: sunny in Rome", got.Tools.Text)
	require.Equal(t, []string{"Rome"}, got.Tools.Ran)
	require.Equal(t, "Result: 391", got.Hosted.Text)
	var sawCall bool
	for _, it := range got.Hosted.Items {
		require.NotEqual(t, "function_call", it.Raw, "the SDK must not run a hosted tool: %+v", got.Hosted.Items)
		require.NotEqual(t, "tool_call_output_item", it.Type, "the SDK must not run a hosted tool: %+v", got.Hosted.Items)
		if it.Raw == "hosted_tool_call" {
			sawCall = true
			require.Equal(t, "391", it.Output)
		}
	}
	require.True(t, sawCall, "%+v", got.Hosted.Items)
	require.Equal(t, "Result: 391", got.HostedStream.Text)
	require.Equal(t, "Your name is Ada.", got.Previous.Text)
}

// LangChain's ChatOpenAI on the Responses API works unchanged: invoke,
// stream, bound client tools, and a hosted tool that comes back executed
// (no tool call for the app) and replays as history.
func TestClientLangChain(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, reasoningClientModel(), nil)
	var got struct {
		Errors    []string
		Invoke    *struct{ Text string }
		Stream    *struct{ Text string }
		BindTools *struct {
			Calls []struct {
				Name string
				Args map[string]string
			}
			Text string
		}
		Hosted *struct {
			Text      string
			ToolCalls int
			Outputs   []struct{ Type, Name, Output string }
		}
		HostedHistory *struct{ Text string }
		HostedStream  *struct {
			Text           string
			ToolCallChunks int
		}
	}
	runJS(t, dir, "langchain.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	require.Equal(t, "Hello from Lambent.", got.Invoke.Text)
	require.Equal(t, "Hello from Lambent.", got.Stream.Text)
	require.Len(t, got.BindTools.Calls, 1)
	require.Equal(t, "get_weather", got.BindTools.Calls[0].Name)
	require.Equal(t, "Rome", got.BindTools.Calls[0].Args["city"])
	require.Equal(t, "Result: sunny in Rome", got.BindTools.Text)
	require.Equal(t, "Result: 391", got.Hosted.Text)
	require.Zero(t, got.Hosted.ToolCalls, "LangChain must not see a call to run")
	require.Equal(t, []struct{ Type, Name, Output string }{{"mcp_call", "calculator", "391"}}, got.Hosted.Outputs)
	require.Equal(t, "Earlier results: 391", got.HostedHistory.Text)
	require.Equal(t, "Result: 391", got.HostedStream.Text)
	require.Zero(t, got.HostedStream.ToolCallChunks)
}

// The npm `openai` SDK decodes a hosted tool loop in both item modes,
// streamed (its accumulator applies every event) and not.
func TestClientOpenAIHostedItems(t *testing.T) {
	dir := jsClients(t)
	for mode, want := range map[string][]string{
		"mcp_call":      {"mcp_call", "message"},
		"function_call": {"function_call", "function_call_output", "message"},
	} {
		t.Run(mode, func(t *testing.T) {
			g := newGateway(t, clientModel(), map[string]string{"LAMBENT_HOSTED_TOOL_ITEMS": mode})
			type item struct {
				Type   string
				Output *string
			}
			var got struct {
				Plain, Streamed struct {
					Status, Text string
					Items        []item
					Events       []string
				}
			}
			runJS(t, dir, "openai_hosted.mjs", g.srv.URL+"/v1", &got)
			for _, r := range []struct {
				Status, Text string
				Items        []item
				Events       []string
			}{got.Plain, got.Streamed} {
				require.Equal(t, "completed", r.Status)
				require.Equal(t, "Result: 391", r.Text)
				var types []string
				for _, it := range r.Items {
					types = append(types, it.Type)
				}
				require.Equal(t, want, types)
			}
			if mode == "mcp_call" {
				require.Equal(t, "391", *got.Streamed.Items[0].Output)
				require.Contains(t, got.Streamed.Events, "response.mcp_call.completed")
			}
		})
	}
}

// actionModel is a fake model for action calls: for a user message `call
// <tool> <json>`, that call; for `cut <tool> <json>`, that call cut by the
// output limit (finish_reason "length"); after a tool result, "Result: <the
// result>".
func actionModel() *fakellm.Server {
	return fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Turn{Text: "Result: " + last.Content.String()}
		}
		verb, rest, _ := strings.Cut(last.Content.String(), " ")
		name, args, _ := strings.Cut(rest, " ")
		turn := fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: name, Arguments: args}}}
		if verb == "cut" {
			turn.FinishReason = "length"
		}
		return turn
	})
}

// The Vercel AI SDK runs OpenAI's action tools (shell, apply_patch,
// local_shell) for the app, streamed too: its parser validates each item
// and event against OpenAI's shapes — an action call's output_item.added
// must already carry its action (or operation), and an apply_patch_call
// is never "incomplete" (OpenAI's has in_progress and completed only).
func TestClientAISDKActionCalls(t *testing.T) {
	dir := jsClients(t)
	g := newGateway(t, actionModel(), nil)
	type run struct {
		Text, FinishReason string
		Calls              []json.RawMessage
	}
	var got struct {
		Errors                                          []string
		Shell, ApplyPatch, LocalShell, CutPatch         *run
		ShellStream, ApplyPatchStream, LocalShellStream *run
		CutPatchStream                                  *run
	}
	runJS(t, dir, "ai_sdk_actions.mjs", g.srv.URL+"/v1", &got)
	require.Empty(t, got.Errors)
	for want, r := range map[string][2]*run{
		`Result: [{"stdout":"hi","stderr":"","outcome":{"type":"exit","exit_code":0}}]`: {got.Shell, got.ShellStream},
		"Result: patched": {got.ApplyPatch, got.ApplyPatchStream},
		"Result: hi":      {got.LocalShell, got.LocalShellStream},
	} {
		require.NotNil(t, r[0], want)
		require.NotNil(t, r[1], want)
		require.Equal(t, want, r[0].Text)
		require.Equal(t, want, r[1].Text)
		require.Len(t, r[1].Calls, 1, want)
	}
	require.JSONEq(t, `{"action":{"commands":["echo hi"]}}`, string(got.ShellStream.Calls[0]))
	require.Contains(t, string(got.ApplyPatchStream.Calls[0]), `"operation":{"type":"create_file","path":"a.txt","diff":"+x"}`)
	for _, r := range []*run{got.CutPatch, got.CutPatchStream} {
		require.NotNil(t, r)
		require.Equal(t, "length", r.FinishReason)
	}
}
