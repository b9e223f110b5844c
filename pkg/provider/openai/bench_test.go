package openai_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// benchTurn is BenchmarkGateway's answer: a 14-word sentence (14 text
// chunks when streamed).
var benchTurn = fakellm.Turn{Text: "Hello! This is a short answer from the fake backend, sent word by word.", Usage: fakellm.Usage{PromptTokens: 12, CompletionTokens: 16}}

// recordedReplies are the fake model's bodies for benchTurn, non-streaming
// and streamed, recorded once so that the benchmark's server only writes
// bytes.
func recordedReplies(b *testing.B) (complete, stream []byte) {
	b.Helper()
	fake := fakellm.New(benchTurn, benchTurn)
	defer fake.Close()
	get := func(streamed bool) []byte {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}]}`
		if streamed {
			body = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello"}],"stream":true,"stream_options":{"include_usage":true}}`
		}
		res, err := fake.Client().Post(fake.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		defer res.Body.Close()
		out, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != http.StatusOK {
			b.Fatalf("recording: status %d, %v: %s", res.StatusCode, err, out)
		}
		return out
	}
	return get(false), get(true)
}

// BenchmarkCall measures one model call through the provider against a
// loopback server that answers with recorded bytes (the fake model's
// reply to BenchmarkGateway's request): a non-streaming Complete and a
// 14-text-chunk Stream, each chunk written and flushed on its own as the
// fake model does. The figures hold the server's side too, which is
// small: io.Copy of the request and a few writes.
func BenchmarkCall(b *testing.B) {
	complete, stream := recordedReplies(b)
	events := bytes.SplitAfter(stream, []byte("\n\n"))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		if !strings.Contains(r.Header.Get("Accept"), "event-stream") {
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(complete)))
			_, _ = w.Write(complete)
			return
		}
		h.Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for _, e := range events {
			if len(e) == 0 {
				continue
			}
			_, _ = w.Write(e)
			_ = rc.Flush()
		}
	}))
	defer srv.Close()
	p := openai.New(openai.Config{BaseURL: srv.URL + "/v1"})
	defer p.CloseIdleConnections()
	req := &provider.Request{Model: "gpt-4o-mini", Instructions: "You are a helpful assistant.", Items: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "Say hello"}}}}}
	ctx := context.Background()
	b.Run("complete", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := p.Complete(ctx, req)
			if err != nil || res.Text != benchTurn.Text {
				b.Fatalf("%+v, %v", res, err)
			}
		}
	})
	b.Run("stream14", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		fn := func(provider.Delta) error { n++; return nil }
		for b.Loop() {
			res, err := p.Stream(ctx, req, fn)
			if err != nil || res.Text != benchTurn.Text {
				b.Fatalf("%+v, %v", res, err)
			}
		}
		if n/b.N != 14 {
			b.Fatalf("%d deltas a call, want 14", n/b.N)
		}
	})
}
