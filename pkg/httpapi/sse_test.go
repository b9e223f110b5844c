package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/engine"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/pacing"
	"github.com/lambent/lambent/pkg/provider/openai"
	"github.com/lambent/lambent/pkg/store"
)

// The events that are ready together go out in one write: response.created,
// response.in_progress, output_item.added, content_part.added and the first
// delta in the first; a later delta as it comes, or with the deltas the
// model sent with it (the fake sends its whole answer at once, so how its
// deltas are grouped depends on how they are read); the done events, the
// terminal event and [DONE] in the last. The flush delay is longer than the
// test, so nothing else depends on how fast the fake model answers.
func TestSSEWritesWholeEventsReadyTogether(t *testing.T) {
	t.Parallel()
	fake := fakellm.New(fakellm.Turn{Text: "one two three"})
	t.Cleanup(fake.Close)
	p := openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: fake.Client()})
	e, err := engine.New(engine.Config{
		Provider:     p,
		Store:        store.NewMemory(store.MemoryConfig{}),
		DefaultModel: "test-model",
		Logger:       slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	h := httpapi.New(httpapi.Config{Service: e, Logger: slog.New(slog.DiscardHandler), Pacing: pacing.Config{FlushDelay: time.Hour}})

	rec := &writeRecorder{header: http.Header{}}
	req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(`{"input":"count","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.status)

	var writes [][]string
	for i, op := range rec.ops {
		if i%2 == 1 {
			require.Equalf(t, "flush", op, "op %d: every write must be followed by a flush (ops %v)", i, rec.opNames())
			continue
		}
		frames, done := sseFrames(t, []byte(op))
		var w []string
		for _, f := range frames {
			w = append(w, f.event)
		}
		if done {
			w = append(w, "[DONE]")
		}
		writes = append(writes, w)
	}
	first := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta"}
	last := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed", "[DONE]"}
	require.GreaterOrEqual(t, len(writes[0]), len(first))
	require.Equal(t, first, writes[0][:len(first)], "the first write")
	end := writes[len(writes)-1]
	require.GreaterOrEqual(t, len(end), len(last))
	require.Equal(t, last, end[len(end)-len(last):], "the last write")
	var all []string
	for i, w := range writes {
		if i > 0 && i < len(writes)-1 {
			require.Equalf(t, "response.output_text.delta", w[0], "write %d of %v: a delta", i, writes)
		}
		all = append(all, w...)
	}
	require.Equal(t, append(append(first, "response.output_text.delta", "response.output_text.delta"), last...), all)
}
