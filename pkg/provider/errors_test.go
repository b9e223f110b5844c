package provider

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A provider's rate limit says in its message when to try again, as
// OpenAI's do: the provider's Retry-After (seconds or a date), else the
// default.
func TestRateLimitedMessageSaysWhenToRetry(t *testing.T) {
	e := RateLimited("17", nil, "limited")
	require.Equal(t, "limited; please try again in 17s", e.Message)
	require.Equal(t, "17", e.RetryAfter)

	e = RateLimited("", nil, "limited")
	require.Equal(t, "limited; please try again in 10s", e.Message)

	now := time.Date(2026, 1, 2, 3, 4, 5, 250e6, time.UTC)
	date := time.Date(2026, 1, 2, 3, 4, 35, 0, time.UTC).Format(http.TimeFormat)
	require.Equal(t, int64(30), retryAfterSeconds(date, now), "29.75 s, rounded up")
	require.Equal(t, int64(1), retryAfterSeconds(now.Add(-time.Minute).Format(http.TimeFormat), now), "a date gone by")
}

// The model servers' words for an input longer than the model's context.
func TestContextWindowExceeded(t *testing.T) {
	for _, msg := range []string{
		"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
		"The decoder prompt (length 5000) is longer than the maximum model length of 4096.",
		"the request exceeds the available context size, try increasing it",
		"litellm.ContextWindowExceededError: litellm.BadRequestError: ...",
		"Prompt contains 40000 tokens, too large for model with 32768 maximum context length",
		"Input is too long for requested model.",
		"prompt is too long: 215000 tokens > 200000 maximum",
	} {
		require.True(t, ContextWindowExceeded(msg), msg)
	}
	for _, msg := range []string{"Invalid 'messages[1].content': string too long.", "invalid tool call arguments", ""} {
		require.False(t, ContextWindowExceeded(msg), msg)
	}
}
