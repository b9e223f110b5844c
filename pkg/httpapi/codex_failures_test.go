package httpapi_test

// Codex against a model provider that fails: what `codex exec` shows, and
// how it retries.

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// A provider's 429 with Retry-After reaches Codex inside its stream (a
// response.failed rate_limit_exceeded), whose message says when to try
// again as OpenAI's do: Codex, which reads the delay from that message
// ("try again in 2s"), waits that long before it retries, instead of its
// own backoff of a fraction of a second.
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
