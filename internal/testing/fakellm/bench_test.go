package fakellm_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakellm"
)

// benchmark measures the fake's own cost per call over real HTTP, the
// baseline a gateway benchmark is compared with.
func benchmark(b *testing.B, body string, turn fakellm.Turn) {
	s := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return turn })
	defer s.Close()
	s.SetRecording(false)
	c := s.Client()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := c.Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
}

const benchText = "Lambent is a gateway that runs an agentic loop over a Chat Completions backend and streams events."

func BenchmarkComplete(b *testing.B) {
	benchmark(b, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, fakellm.Turn{Text: benchText})
}

func BenchmarkStreamPerWord(b *testing.B) {
	benchmark(b, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		fakellm.Turn{Text: benchText, Usage: fakellm.Usage{PromptTokens: 10, CompletionTokens: 20}})
}

func BenchmarkStreamToolCall(b *testing.B) {
	benchmark(b, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		fakellm.Turn{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}}})
}
