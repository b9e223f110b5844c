package httpapi_test

// Codex CLI's compaction against the gateway: a session whose context
// passes Codex's model_auto_compact_token_limit (the fake model reports
// large usage) compacts before a turn and in the middle of a tool loop.
// With a provider of its own name Codex summarises itself (a plain create
// ending with its summarisation prompt); with a provider named "OpenAI" it
// asks the gateway (a create whose input ends with a compaction_trigger
// item), keeps the compaction item it gets and sends it back.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// seenRequest is one request a gatewayFront passed on: its route, the
// gateway's status, the body as sent and Codex's beta-features header.
type seenRequest struct {
	Route  string
	Status int
	Body   map[string]any
	Beta   string
}

// lastInput is the last item of the request's input (nil when none).
func (s seenRequest) lastInput() map[string]any {
	in, _ := s.Body["input"].([]any)
	if len(in) == 0 {
		return nil
	}
	last, _ := in[len(in)-1].(map[string]any)
	return last
}

// hasInput reports whether the request's input holds an item of type typ.
func (s seenRequest) hasInput(typ string) bool {
	in, _ := s.Body["input"].([]any)
	for _, it := range in {
		if m, _ := it.(map[string]any); m["type"] == typ {
			return true
		}
	}
	return false
}

// gatewayFront serves a gateway's handler, recording every request.
type gatewayFront struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

// statusWriter keeps the status a handler wrote, and flushes through.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// newGatewayFront serves g's handler, recording what passes.
func newGatewayFront(t *testing.T, g *gateway) *gatewayFront {
	t.Helper()
	f := &gatewayFront{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statusWriter{ResponseWriter: w}
		g.app.Handler.ServeHTTP(sw, r)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Route: r.Method + " " + r.URL.Path, Status: sw.status, Body: m, Beta: r.Header.Get("X-Codex-Beta-Features")})
		f.mu.Unlock()
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// requests are the requests so far, in order.
func (f *gatewayFront) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

// Prompts that ask the model for a summary: Codex's own (when it compacts
// itself) and the gateway's (when it compacts for Codex).
const (
	codexSummaryPrompt   = "CONTEXT CHECKPOINT COMPACTION"
	lambentSummaryPrompt = "Compact the conversation above"
)

// compactingTurn is the fake model for Codex's compaction, by the latest
// message that matters (Codex's context messages are passed over):
//   - a summarisation prompt: "SUMMARY: …" with the facts it saw (the
//     user's name, the command's output);
//   - a summary (not the model's own answer): "Recalled: " and it;
//   - a tool result: "Tool said: " and it;
//   - "run the command": Codex's exec_command running an echo;
//   - "who am I?": what a summary says, else "I do not know.";
//   - anything else: "Hello from Lambent.".
//
// Turns that start work report 50,000 input tokens, which is over the
// test's limit: Codex compacts before its next request.
func compactingTurn(req fakellm.Request) fakellm.Turn {
	const big, small = 50_000, 1_000
	recalled := func() fakellm.Turn {
		for _, m := range req.Messages {
			if text := m.Content.String(); m.Role != "assistant" && strings.Contains(text, "SUMMARY:") {
				return fakellm.Turn{Text: "Recalled: " + strings.TrimSpace(text[strings.Index(text, "SUMMARY:"):]), Usage: fakellm.Usage{PromptTokens: small}}
			}
		}
		return fakellm.Turn{Text: "I do not know.", Usage: fakellm.Usage{PromptTokens: small}}
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		text := m.Content.String()
		switch {
		case strings.Contains(text, codexSummaryPrompt) || strings.Contains(text, lambentSummaryPrompt):
			return fakellm.Turn{Text: compactedFacts(req), Usage: fakellm.Usage{PromptTokens: 100, CompletionTokens: 20}}
		case m.Role != "assistant" && strings.Contains(text, "SUMMARY:"):
			return recalled()
		case m.Role == "tool":
			return fakellm.Turn{Text: "Tool said: " + strings.TrimSpace(text), Usage: fakellm.Usage{PromptTokens: small}}
		case m.Role != "user":
		case strings.Contains(text, "run the command"):
			return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"echo lambent-$((6*7))","yield_time_ms":2000}`}},
				Usage: fakellm.Usage{PromptTokens: big}}
		case strings.Contains(text, "who am I?"):
			return recalled()
		case strings.Contains(text, "say hello"):
			return fakellm.Turn{Text: "Hello from Lambent.", Usage: fakellm.Usage{PromptTokens: big}}
		}
	}
	return fakellm.Turn{Text: "Hello from Lambent.", Usage: fakellm.Usage{PromptTokens: small}}
}

// compactedFacts is the summary of what the summarising call saw.
func compactedFacts(req fakellm.Request) string {
	var ada, printed bool
	for _, m := range req.Messages {
		text := m.Content.String()
		ada = ada || strings.Contains(text, "I am Ada") || strings.Contains(text, "the user is Ada")
		printed = printed || strings.Contains(text, "lambent-42")
	}
	facts := []string{"SUMMARY:"}
	if ada {
		facts = append(facts, "the user is Ada.")
	}
	if printed {
		facts = append(facts, "The command printed lambent-42.")
	}
	return strings.Join(facts, " ")
}

// compactingCodex is Codex configured to compact past 10,000 tokens, with
// the provider named name and config appended.
func compactingCodex(t *testing.T, baseURL, name, config string) *codexCLI {
	t.Helper()
	codex := newCodex(t, baseURL, nil)
	codex.editConfig(`model = "test-model"`+"\n", `model = "test-model"`+"\nmodel_auto_compact_token_limit = 10000\nmodel_context_window = 100000\n")
	codex.editConfig(`name = "Lambent"`, fmt.Sprintf("name = %q", name))
	codex.editConfig("stream_max_retries = 0\n", "stream_max_retries = 0\n"+config)
	return codex
}

// summaryRequests are the model requests that asked for a summary with
// prompt.
func summaryRequests(reqs []fakellm.Request, prompt string) int {
	n := 0
	for _, r := range reqs {
		if strings.Contains(r.Messages[len(r.Messages)-1].Content.String(), prompt) {
			n++
		}
	}
	return n
}

// answered is the model request that produced answer.
func answered(t *testing.T, fake *fakellm.Server, answer string) fakellm.Request {
	t.Helper()
	for _, r := range fake.Requests() {
		if compactingTurn(r).Text == answer {
			return r
		}
	}
	require.FailNow(t, "no model request answered", answer)
	return fakellm.Request{}
}

// requireCodexPrompt fails unless the model saw Codex's own prompt, its
// first developer message, which it keeps through compaction.
func requireCodexPrompt(t *testing.T, seen []chatMsg) {
	t.Helper()
	for _, m := range seen {
		if m.Role == "system" && strings.HasPrefix(m.Text, "You are a coding agent running in the Codex CLI") {
			return
		}
	}
	require.Fail(t, "the model did not see Codex's prompt", "%q", seen)
}

// Codex compacts a session through the gateway, before a turn (`exec
// resume` after a turn over the limit) and within one (a tool call over
// the limit, then Codex's follow-up): each path Codex 0.169.0 takes gets
// 200s only, and the next model request is built from the compacted
// history: the summary, not the turns it replaced.
func TestCodexCompaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, provider, config string
		// remote: Codex asks the gateway (compaction_trigger); else it
		// sends its own summarisation prompt.
		remote bool
	}{
		{name: "local", provider: "Lambent"},
		{name: "remote", provider: "OpenAI", remote: true},
		// Codex's context_management feature is its token-budget mode
		// (ChatGPT plans only): it adds no context_management to creates
		// and leaves compaction as it is.
		{name: "context_management feature", provider: "OpenAI", remote: true, config: "\n[features]\ncontext_management = true\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakellm.NewHandler(compactingTurn)
			g := newGateway(t, fake, map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
			front := newGatewayFront(t, g)
			codex := compactingCodex(t, front.srv.URL+"/v1", tc.provider, tc.config)

			evs := codex.exec("I am Ada. say hello")
			require.Equal(t, "Hello from Lambent.", answer(evs))
			thread := threadID(evs)

			// Before the turn: the model answers from the summary alone.
			evs = codex.exec("resume", thread, "who am I?")
			require.Equal(t, "Recalled: SUMMARY: the user is Ada.", answer(evs))
			seen := messages(answered(t, fake, "Recalled: SUMMARY: the user is Ada."))
			requireCodexPrompt(t, seen)
			for _, m := range seen {
				require.NotEqual(t, "Hello from Lambent.", m.Text, "the compacted answer reached the model")
			}

			// Within a turn: the tool call went over the limit; its output
			// reaches the model in the summary.
			evs = codex.exec("resume", thread, "run the command")
			require.Len(t, items(evs, "command_execution"), 1, "events: %+v", evs)
			require.Equal(t, "Recalled: SUMMARY: the user is Ada. The command printed lambent-42.", answer(evs))
			requireCodexPrompt(t, messages(answered(t, fake, answer(evs))))

			reqs := front.requests()
			// Once compacted, Codex sends a compaction item in every
			// request.
			var triggers int
			for i, r := range reqs {
				require.Equal(t, "POST /v1/responses", r.Route)
				require.Equal(t, http.StatusOK, r.Status, "request %d: %v", i, r.Body)
				require.NotContains(t, r.Body, "context_management")
				require.Equal(t, triggers > 0, r.hasInput("compaction"), "request %d", i)
				if r.lastInput()["type"] == "compaction_trigger" {
					triggers++
					require.Contains(t, r.Beta, "remote_compaction_v2")
				}
			}
			modelReqs := fake.Requests()
			if !tc.remote {
				require.Zero(t, triggers)
				require.Equal(t, 2, summaryRequests(modelReqs, codexSummaryPrompt))
				require.Zero(t, summaryRequests(modelReqs, lambentSummaryPrompt))
				return
			}
			require.Equal(t, 2, triggers)
			require.Zero(t, summaryRequests(modelReqs, codexSummaryPrompt))
			require.Equal(t, 2, summaryRequests(modelReqs, lambentSummaryPrompt))
			// The summary is the gateway's developer message.
			var summaries int
			for _, m := range messages(answered(t, fake, "Recalled: SUMMARY: the user is Ada. The command printed lambent-42.")) {
				if strings.HasPrefix(m.Text, "Summary of the earlier conversation:") {
					summaries++
				}
			}
			require.Equal(t, 1, summaries)
		})
	}
}

// Over WebSocket mode, Codex's remote compaction goes on its socket as
// every turn does: the compaction_trigger create, then the turns that
// send its compaction item back, without an HTTP request or an error.
func TestCodexCompactionOverWebSocket(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(compactingTurn)
	g := newGateway(t, fake, map[string]string{"LAMBENT_COMPACTION_KEYS": compactionKeys("k1")})
	front := newWSFront(t, g.srv.URL)
	codex := compactingCodex(t, front.srv.URL+"/v1", "OpenAI", "")
	codex.websockets()

	evs := codex.exec("I am Ada. say hello")
	require.Equal(t, "Hello from Lambent.", answer(evs))
	thread := threadID(evs)
	evs = codex.exec("resume", thread, "who am I?")
	require.Equal(t, "Recalled: SUMMARY: the user is Ada.", answer(evs))
	evs = codex.exec("resume", thread, "run the command")
	require.Equal(t, "Recalled: SUMMARY: the user is Ada. The command printed lambent-42.", answer(evs))
	requireCodexPrompt(t, messages(answered(t, fake, answer(evs))))

	require.Empty(t, front.requests(), "Codex fell back to HTTP")
	var triggers int
	for _, c := range front.connections() {
		require.Empty(t, c.errors())
		for _, create := range c.creates() {
			if types := inputTypes(create); len(types) > 0 && types[len(types)-1] == "compaction_trigger" {
				triggers++
			}
		}
	}
	require.Equal(t, 2, triggers)
	require.Equal(t, 2, summaryRequests(fake.Requests(), lambentSummaryPrompt))
}
