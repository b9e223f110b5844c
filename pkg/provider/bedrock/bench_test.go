package bedrock_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/bedrock"
	"github.com/lambent/lambent/pkg/provider/openai"
)

const benchText = "Lambent is a gateway that runs an agentic loop over a model provider and streams events to its clients as they come."

// benchRequest is a mid-conversation turn: a finished tool turn in the
// history and three tools on offer.
func benchRequest() *provider.Request {
	tools := []api.ToolDefinition{weatherTool(),
		{Name: "calculator", Description: "Evaluate arithmetic", Parameters: json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string"}},"required":["expression"]}`)},
		{Name: "fetch_url", Description: "Fetch a page", Parameters: json.RawMessage(`{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}`)}}
	return &provider.Request{Model: claude, Instructions: "You are a helpful assistant.", Tools: tools, ToolChoice: api.ToolChoiceAuto,
		Items: []api.Item{
			user("What is the weather in Paris and Rome, and what is 6*7?"),
			msg(api.RoleAssistant, "Let me check."),
			fcall("tooluse_1", "get_weather", `{"city":"Paris"}`),
			fcall("tooluse_2", "get_weather", `{"city":"Rome"}`),
			output("tooluse_1", `{"sky":"sunny","celsius":22}`, false),
			output("tooluse_2", `{"sky":"rain","celsius":14}`, false),
		}}
}

var benchCalls = [][2]string{{"calculator", `{"expression":"6*7"}`}, {"fetch_url", `{"url":"https://example.com/weather"}`}}

// BenchmarkTurn measures one model turn through each provider against its
// fake over loopback HTTP: translating the request, the call, and decoding
// the answer (a 21-word text and two tool calls, streamed per word and in
// 8-byte argument pieces). The fake-only rows replay the same request
// body over plain HTTP and read the reply without decoding it: the
// provider's own overhead is its row minus its fake's.
func BenchmarkTurn(b *testing.B) {
	req := benchRequest()
	discard := func(provider.Delta) error { return nil }

	bturn := fakebedrock.Turn{Text: benchText, Usage: fakebedrock.Usage{InputTokens: 200, OutputTokens: 40}}
	oturn := fakellm.Turn{Text: benchText, Usage: fakellm.Usage{PromptTokens: 200, CompletionTokens: 40}}
	for i, c := range benchCalls {
		bturn.ToolUses = append(bturn.ToolUses, fakebedrock.ToolUse{ID: "tooluse_b" + string(rune('0'+i)), Name: c[0], Input: c[1]})
		oturn.ToolCalls = append(oturn.ToolCalls, fakellm.ToolCall{ID: "call_b" + string(rune('0'+i)), Name: c[0], Arguments: c[1]})
	}
	bfake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return bturn })
	defer bfake.Close()
	ofake := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return oturn })
	defer ofake.Close()
	bp := bedrock.New(bedrock.Config{AWS: bfake.AWSConfig()})
	op := openai.New(openai.Config{BaseURL: ofake.URL, HTTPClient: ofake.Client()})

	check := func(b *testing.B, res *provider.Result, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if res.Text != benchText || len(res.ToolCalls) != 2 {
			b.Fatalf("unexpected answer %q with %d calls", res.Text, len(res.ToolCalls))
		}
	}
	run := func(name string, call func() (*provider.Result, error)) {
		b.Run(name, func(b *testing.B) {
			res, err := call() // warm the connection
			check(b, res, err)
			bfake.SetRecording(false)
			ofake.SetRecording(false)
			defer bfake.SetRecording(true)
			defer ofake.SetRecording(true)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := call()
				check(b, res, err)
			}
		})
	}
	ctx := context.Background()
	run("bedrock/stream", func() (*provider.Result, error) { return bp.Stream(ctx, req, discard) })
	run("openai/stream", func() (*provider.Result, error) { return op.Stream(ctx, req, discard) })
	run("bedrock/complete", func() (*provider.Result, error) { return bp.Complete(ctx, req) })
	run("openai/complete", func() (*provider.Result, error) { return op.Complete(ctx, req) })

	// The fakes alone, on the requests the providers sent.
	var bstream, ostream []byte
	bauth := ""
	for _, r := range bfake.Requests() {
		if r.Operation == "ConverseStream" {
			bstream, bauth = r.Body, r.Authorization
		}
	}
	for _, r := range ofake.Requests() {
		if r.Stream {
			ostream = r.Body
		}
	}
	replay := func(name string, client *http.Client, u, auth string, body []byte) {
		b.Run(name, func(b *testing.B) {
			bfake.SetRecording(false)
			ofake.SetRecording(false)
			b.ReportAllocs()
			for b.Loop() {
				hr, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(body))
				hr.Header.Set("Content-Type", "application/json")
				if auth != "" {
					hr.Header.Set("Authorization", auth)
				}
				res, err := client.Do(hr)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					b.Fatalf("status %d", res.StatusCode)
				}
			}
		})
	}
	replay("fakebedrock-only/stream", bfake.Client(), bfake.URL+"/model/"+url.PathEscape(claude)+"/converse-stream", bauth, bstream)
	replay("fakellm-only/stream", ofake.Client(), ofake.URL+"/chat/completions", "", ostream)
}
