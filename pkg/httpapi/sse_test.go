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

// An event larger than a pooled buffer (here the text's done events and
// the terminal event of a 160 KB answer) is written through before its
// flush, so that the stream keeps no buffer of its size; a flush still
// follows only whole events, and the stream is the same events in the same
// order.
func TestSSELargeEventsWrittenThrough(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("word ", 32<<10)
	fake := fakellm.New(fakellm.Turn{Text: text})
	t.Cleanup(fake.Close)
	p := openai.New(openai.Config{BaseURL: fake.URL, HTTPClient: fake.Client()})
	e, err := engine.New(engine.Config{Provider: p, Store: store.NewMemory(store.MemoryConfig{}), DefaultModel: "test-model", Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h := httpapi.New(httpapi.Config{Service: e, Logger: slog.New(slog.DiscardHandler), Pacing: pacing.Config{FlushDelay: time.Hour}})
	rec := &writeRecorder{header: http.Header{}}
	req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(`{"input":"talk","stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.status)

	var stream, sinceFlush strings.Builder
	biggest, writes, mostWrites := 0, 0, 0
	for _, op := range rec.ops {
		if op == "flush" {
			require.True(t, strings.HasSuffix(sinceFlush.String(), "\n\n"), "a flush after a partial event")
			sinceFlush.Reset()
			mostWrites, writes = max(mostWrites, writes), 0
			continue
		}
		stream.WriteString(op)
		sinceFlush.WriteString(op)
		biggest = max(biggest, len(op))
		writes++
	}
	mostWrites = max(mostWrites, writes)
	require.Greater(t, mostWrites, 1, "a large event is written through before its flush")
	require.True(t, strings.HasSuffix(sinceFlush.String(), "data: [DONE]\n\n"), "only the end of the stream, whole events, goes out with the response's end")
	frames, done := sseFrames(t, []byte(stream.String()))
	require.True(t, done)
	var types []string
	for _, f := range frames {
		types = append(types, f.event)
	}
	require.Equal(t, "response.completed", types[len(types)-1])
	require.Contains(t, types, "response.output_text.done")
	require.True(t, strings.Contains(string(frames[len(frames)-1].data), strings.TrimSpace(text[:100])), "the terminal event carries the text")
	require.Greater(t, biggest, len(text), "the terminal event's JSON went out in one write of its own")
}
