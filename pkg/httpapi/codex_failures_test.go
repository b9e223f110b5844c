package httpapi_test

// Codex against a model provider that fails: what `codex exec` shows, and
// how it retries.

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// A provider's 429 with Retry-After reaches Codex as OpenAI's does, an
// HTTP 429 rate_limit_exceeded with Retry-After (the stream refused before
// it began), whose message says when to try again too: Codex waits that
// long before it retries, instead of its own backoff of a fraction of a
// second.
func TestCodexCLIRateLimitedRetriesAfterRetryAfter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var at []time.Time
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if len(at) == 1 {
			return fakellm.Turn{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"2"}}}
		}
		return fakellm.Turn{Text: "Hello after the wait."}
	})
	g := newGateway(t, fake, nil)
	codex := newCodex(t, g.srv.URL+"/v1", nil)
	codex.retry(1)

	evs := codex.exec("say hello")
	require.Equal(t, "Hello after the wait.", answer(evs))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, at, 2)
	require.GreaterOrEqual(t, at[1].Sub(at[0]), 1900*time.Millisecond, "Codex retried before the provider's Retry-After")
}

// A model stream the provider cuts (the connection drops after some
// deltas) fails the response, and Codex retries the turn. What the model
// had sent of the cut turn is not done: no output_item.done reaches Codex
// for it, so Codex neither shows the cut text as an answer nor runs the
// cut call (with half its arguments), nor replays either in its retry.
func TestCodexCLIStreamCutIsRetriedWhole(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	tries := map[string]int{}
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return fakellm.Turn{Text: "Tool said: " + strings.TrimSpace(last.Content.String())}
		}
		user := ""
		for _, m := range req.Messages {
			if m.Role == "user" {
				user = m.Content.String()
			}
		}
		mu.Lock()
		tries[user]++
		first := tries[user] == 1
		mu.Unlock()
		switch user {
		case "run the command":
			// The first call's connection drops inside its arguments.
			turn := fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"echo lambent-$((6*7)) >> runs.txt; cat runs.txt"}`}}}
			if first {
				turn.CutAfterChunks = 4
			}
			return turn
		case "say hello":
			// The first answer's connection drops after "Hello from".
			turn := fakellm.Turn{Text: "Hello from Lambent."}
			if first {
				turn.CutAfterChunks = 3
			}
			return turn
		}
		return fakellm.Turn{Text: "unexpected: " + user}
	})
	g := newGateway(t, fake, nil)
	codex := newCodex(t, g.srv.URL+"/v1", nil)
	codex.retry(1)

	t.Run("text", func(t *testing.T) {
		evs := codex.exec("say hello")
		var said []string
		for _, ev := range items(evs, "agent_message") {
			said = append(said, ev.Item.Text)
		}
		require.Equal(t, []string{"Hello from Lambent."}, said, "the cut answer is no answer")
		for _, r := range fake.Requests() {
			for _, m := range r.Messages {
				require.NotEqual(t, "Hello from", strings.TrimSpace(m.Content.String()), "the cut answer is not replayed")
			}
		}
	})

	t.Run("tool call", func(t *testing.T) {
		evs := codex.exec("run the command")
		cmds := items(evs, "command_execution")
		require.Len(t, cmds, 1, "only the whole call runs: %+v", evs)
		require.Equal(t, "lambent-42\n", cmds[0].Item.AggregatedOutput)
		require.Contains(t, answer(evs), "lambent-42")
		require.NotContains(t, answer(evs), "failed to parse")
	})
}

// A model server's 400 for an input longer than the model's context (vLLM's
// words, no error code) reaches Codex with OpenAI's code
// context_length_exceeded: Codex tells its user the context window is full
// instead of retrying a request that cannot succeed.
func TestCodexCLIContextWindowExceeded(t *testing.T) {
	t.Parallel()
	fake := fakellm.New(fakellm.Turn{Status: http.StatusBadRequest, ErrorType: "BadRequestError",
		ErrorMessage: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). " +
			"Please reduce the length of the messages or completion."})
	g := newGateway(t, fake, nil)
	codex := newCodex(t, g.srv.URL+"/v1", nil)
	codex.retry(1)

	failed := codex.execFailing("say hello")
	require.Contains(t, failed, "context window")
	require.Equal(t, 1, fake.Calls(), "no retry")
}

// A provider that says it is overloaded reaches Codex as OpenAI's own
// overload does (an HTTP 503 server_is_overloaded, the stream refused
// before it began): Codex tells its user the model is at capacity, as it
// does against OpenAI, instead of showing an unexpected upstream error.
func TestCodexCLIServerOverloaded(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		return fakellm.Turn{Status: http.StatusServiceUnavailable, ErrorType: "service_unavailable_error", ErrorCode: "server_is_overloaded",
			ErrorMessage: "Our servers are currently overloaded. Please try again later."}
	})
	g := newGateway(t, fake, nil)
	codex := newCodex(t, g.srv.URL+"/v1", nil)

	failed := codex.execFailing("say hello")
	require.Contains(t, failed, "at capacity")
}
