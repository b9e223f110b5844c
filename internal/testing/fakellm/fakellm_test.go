package fakellm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"go.uber.org/goleak"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newClient returns the official client pointed at s, without retries so
// scripted errors reach the test unchanged.
func newClient(s *fakellm.Server) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(s.URL),
		option.WithAPIKey("sk-test"),
		option.WithHTTPClient(s.Client()),
		option.WithMaxRetries(0),
	)
}

func start(t *testing.T, turns ...fakellm.Turn) (*fakellm.Server, openai.Client) {
	t.Helper()
	s := fakellm.New(turns...)
	t.Cleanup(s.Close)
	return s, newClient(s)
}

func weatherTool() openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_weather",
		Description: openai.String("Weather at a place"),
		Parameters: shared.FunctionParameters{
			"type":       "object",
			"properties": map[string]any{"city": map[string]any{"type": "string"}},
		},
	})
}

func TestCompleteText(t *testing.T) {
	s, c := start(t, fakellm.Turn{
		Text:      "Hello there, \"friend\" <3\n日本",
		Reasoning: "thinking...",
		Usage:     fakellm.Usage{PromptTokens: 11, CompletionTokens: 7, CachedTokens: 3, ReasoningTokens: 2},
	})
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "test-model",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("be brief"),
			openai.UserMessage("hi"),
		},
		Temperature:         openai.Float(0.5),
		MaxCompletionTokens: openai.Int(100),
		Tools:               []openai.ChatCompletionToolUnionParam{weatherTool()},
		ToolChoice:          openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("auto")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.ID, "chatcmpl-") || res.Model != "test-model" || res.Created == 0 ||
		//lint:ignore SA1019 the fake sends system_fingerprint as OpenAI still does
		res.SystemFingerprint != fakellm.SystemFingerprint || string(res.Object) != "chat.completion" {
		t.Errorf("envelope: %s", res.RawJSON())
	}
	if len(res.Choices) != 1 {
		t.Fatalf("choices: %s", res.RawJSON())
	}
	ch := res.Choices[0]
	if ch.Message.Content != "Hello there, \"friend\" <3\n日本" || ch.FinishReason != "stop" || ch.Index != 0 || string(ch.Message.Role) != "assistant" {
		t.Errorf("choice: %s", ch.RawJSON())
	}
	if got := ch.Message.JSON.ExtraFields["reasoning_content"].Raw(); got != `"thinking..."` {
		t.Errorf("reasoning_content = %s", got)
	}
	if got := ch.JSON.Logprobs.Raw(); got != "null" {
		t.Errorf("logprobs = %s, want null", got)
	}
	u := res.Usage
	if u.PromptTokens != 11 || u.CompletionTokens != 7 || u.TotalTokens != 18 ||
		u.PromptTokensDetails.CachedTokens != 3 || u.CompletionTokensDetails.ReasoningTokens != 2 {
		t.Errorf("usage: %s", u.RawJSON())
	}

	reqs := s.Requests()
	if len(reqs) != 1 || s.Calls() != 1 {
		t.Fatalf("requests = %d, calls = %d", len(reqs), s.Calls())
	}
	r := reqs[0]
	if r.Model != "test-model" || r.Stream || r.Authorization != "Bearer sk-test" || r.Seq != 0 {
		t.Errorf("request: %+v", r)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content.String() != "be brief" ||
		r.Messages[1].Role != "user" || r.Messages[1].Content.String() != "hi" {
		t.Errorf("messages: %+v", r.Messages)
	}
	if r.Temperature == nil || *r.Temperature != 0.5 || r.MaxCompletionTokens == nil || *r.MaxCompletionTokens != 100 {
		t.Errorf("sampling: %+v", r)
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "get_weather" ||
		!json.Valid(r.Tools[0].Function.Parameters) || string(r.ToolChoice) != `"auto"` {
		t.Errorf("tools: %+v choice %s", r.Tools, r.ToolChoice)
	}
	if !json.Valid(r.Body) || !bytes.Contains(r.Body, []byte(`"get_weather"`)) {
		t.Errorf("body: %s", r.Body)
	}
}

func TestCompleteToolCalls(t *testing.T) {
	_, c := start(t, fakellm.Turn{
		ToolCalls: []fakellm.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		},
	})
	res, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "m",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := res.Choices[0].Message
	if res.Choices[0].FinishReason != "tool_calls" || msg.Content != "" || msg.JSON.Content.Raw() != "null" {
		t.Errorf("choice: %s", res.Choices[0].RawJSON())
	}
	if len(msg.ToolCalls) != 2 {
		t.Fatalf("tool calls: %s", msg.RawJSON())
	}
	tc := msg.ToolCalls
	if tc[0].ID != "call_a" || tc[0].Type != "function" || tc[0].Function.Name != "get_weather" || tc[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("call 0: %s", tc[0].RawJSON())
	}
	if !strings.HasPrefix(tc[1].ID, "call_") || tc[1].ID == tc[0].ID || tc[1].Function.Arguments != `{"city":"Oslo"}` {
		t.Errorf("call 1: %s", tc[1].RawJSON())
	}
}

// TestHistoryDecoding checks that a multi-turn history (assistant tool
// calls, tool results, content parts) is decoded into Request.
func TestHistoryDecoding(t *testing.T) {
	s, c := start(t, fakellm.Turn{Text: "done"})
	asst := openai.ChatCompletionAssistantMessageParam{
		ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID:       "call_1",
				Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Rome"}`},
			},
		}},
	}
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("look: "),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/a.png"}),
			}),
			{OfAssistant: &asst},
			openai.ToolMessage("sunny", "call_1"),
		},
		// OpenAI takes parallel_tool_calls only with tools.
		Tools:             []openai.ChatCompletionToolUnionParam{weatherTool()},
		ParallelToolCalls: openai.Bool(false),
	})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if len(r.Messages) != 3 {
		t.Fatalf("messages: %s", r.Body)
	}
	u := r.Messages[0]
	if len(u.Content.Parts) != 2 || u.Content.Parts[0].Type != "text" || u.Content.String() != "look: " ||
		u.Content.Parts[1].ImageURL == nil || u.Content.Parts[1].ImageURL.URL != "https://example.com/a.png" {
		t.Errorf("user parts: %+v", u.Content)
	}
	a := r.Messages[1]
	if a.Role != "assistant" || len(a.ToolCalls) != 1 ||
		a.ToolCalls[0] != (chatwire.ToolCall{ID: "call_1", Type: "function",
			Function: chatwire.FunctionCall{Name: "get_weather", Arguments: `{"city":"Rome"}`}}) {
		t.Errorf("assistant: %+v", a)
	}
	if tm := r.Messages[2]; tm.Role != "tool" || tm.ToolCallID != "call_1" || tm.Content.String() != "sunny" {
		t.Errorf("tool message: %+v", tm)
	}
	if r.ParallelToolCalls == nil || *r.ParallelToolCalls {
		t.Errorf("parallel_tool_calls: %v", r.ParallelToolCalls)
	}
}

func streamParams(includeUsage bool) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "stream-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}
	if includeUsage {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p
}

func TestStreamText(t *testing.T) {
	const text = "The quick brown fox jumps over the lazy dog"
	s, c := start(t, fakellm.Turn{
		Text:      text,
		Reasoning: "Let me think about foxes",
		Usage:     fakellm.Usage{PromptTokens: 5, CompletionTokens: 9},
	})
	stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams(true))
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	var reasoning strings.Builder
	contentDone := false
	for stream.Next() {
		ch := stream.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("accumulator rejected chunk %d: %s", len(chunks), ch.RawJSON())
		}
		if got, ok := acc.JustFinishedContent(); ok {
			contentDone = got == text
		}
		if len(ch.Choices) > 0 {
			if f := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; f.Raw() != "" {
				var p string
				if err := json.Unmarshal([]byte(f.Raw()), &p); err != nil {
					t.Fatal(err)
				}
				reasoning.WriteString(p)
			}
		}
		chunks = append(chunks, ch)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != text {
		t.Errorf("content = %q", got)
	}
	if !contentDone {
		t.Error("JustFinishedContent never reported the full text")
	}
	if reasoning.String() != "Let me think about foxes" {
		t.Errorf("reasoning = %q", reasoning.String())
	}
	if acc.Choices[0].FinishReason != "stop" || acc.Model != "stream-model" || !strings.HasPrefix(acc.ID, "chatcmpl-") {
		t.Errorf("accumulated: %+v", acc.ChatCompletion)
	}
	// role + 5 reasoning words + 9 content words + finish + usage
	if len(chunks) != 1+5+9+1+1 {
		t.Errorf("got %d chunks, want per-word deltas", len(chunks))
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 14 || last.Usage.PromptTokens != 5 {
		t.Errorf("usage chunk: %s", last.RawJSON())
	}
	if acc.Usage.TotalTokens != 14 {
		t.Errorf("accumulated usage: %+v", acc.Usage)
	}
	for i, ch := range chunks[:len(chunks)-1] {
		if ch.ID != chunks[0].ID || ch.Created != chunks[0].Created || ch.JSON.Usage.Raw() != "null" {
			t.Errorf("chunk %d: %s", i, ch.RawJSON())
		}
	}
	if r := s.Requests()[0]; !r.Stream || !r.IncludeUsage() {
		t.Errorf("request: stream=%v options=%+v", r.Stream, r.StreamOptions)
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	_, c := start(t, fakellm.Turn{Text: "a b c", Usage: fakellm.Usage{PromptTokens: 1, CompletionTokens: 1}, Chunks: 1})
	stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams(false))
	defer stream.Close()
	var n int
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) != 1 || ch.JSON.Usage.Valid() {
			t.Errorf("chunk %d: %s", n, ch.RawJSON())
		}
		n++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 3 { // role, one content delta, finish
		t.Errorf("chunks = %d, want 3", n)
	}
}

func TestStreamToolCalls(t *testing.T) {
	calls := []fakellm.ToolCall{
		{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`},
		{ID: "call_2", Name: "lookup", Arguments: `{"q":"ünïcode ✓ \"quoted\""}`},
	}
	_, c := start(t, fakellm.Turn{ToolCalls: calls, Chunks: 4, Usage: fakellm.Usage{PromptTokens: 3, CompletionTokens: 4}})
	params := streamParams(true)
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool()}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	var finished []openai.FinishedChatCompletionToolCall
	idDeltas := map[int64]int{}
	argDeltas := map[int64]int{}
	for stream.Next() {
		ch := stream.Current()
		if !acc.AddChunk(ch) {
			t.Fatalf("accumulator rejected chunk: %s", ch.RawJSON())
		}
		if tc, ok := acc.JustFinishedToolCall(); ok {
			finished = append(finished, tc)
		}
		for _, c := range ch.Choices {
			for _, d := range c.Delta.ToolCalls {
				if d.JSON.ID.Valid() || d.Function.JSON.Name.Valid() {
					idDeltas[d.Index]++
					if d.ID == "" || d.Type != "function" || d.Function.Name == "" {
						t.Errorf("first delta incomplete: %s", d.RawJSON())
					}
				}
				if d.Function.Arguments != "" {
					argDeltas[d.Index]++
				}
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	msg := acc.Choices[0].Message
	if acc.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 2 {
		t.Fatalf("accumulated: %+v", acc.Choices[0])
	}
	for i, want := range calls {
		got := msg.ToolCalls[i]
		if got.ID != want.ID || got.Function.Name != want.Name || got.Function.Arguments != want.Arguments {
			t.Errorf("call %d = %+v, want %+v", i, got, want)
		}
		if idDeltas[int64(i)] != 1 {
			t.Errorf("call %d: id/name sent in %d deltas, want 1", i, idDeltas[int64(i)])
		}
		if argDeltas[int64(i)] < 3 {
			t.Errorf("call %d: arguments in %d deltas, want several", i, argDeltas[int64(i)])
		}
	}
	if len(finished) != 2 || finished[0].ID != "call_1" || finished[0].Arguments != calls[0].Arguments ||
		finished[1].Name != "lookup" || finished[1].Arguments != calls[1].Arguments {
		t.Errorf("JustFinishedToolCall events: %+v", finished)
	}
	if acc.Usage.TotalTokens != 7 {
		t.Errorf("usage: %+v", acc.Usage)
	}
}

func TestErrorStatus(t *testing.T) {
	_, c := start(t,
		fakellm.Turn{Status: http.StatusTooManyRequests, ErrorMessage: "slow down"},
		fakellm.Turn{Status: http.StatusBadRequest, ErrorMessage: "too long", ErrorCode: "context_length_exceeded"},
	)
	_, err := c.Chat.Completions.New(context.Background(), streamParams(false))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != 429 || apiErr.Message != "slow down" || apiErr.Type != "requests" || apiErr.Code != "rate_limit_exceeded" {
		t.Errorf("error: %d %s", apiErr.StatusCode, apiErr.RawJSON())
	}

	// A streaming request gets the error before any chunk.
	stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams(true))
	defer stream.Close()
	if stream.Next() {
		t.Fatalf("got a chunk: %s", stream.Current().RawJSON())
	}
	if !errors.As(stream.Err(), &apiErr) {
		t.Fatalf("stream err = %v, want *openai.Error", stream.Err())
	}
	if apiErr.StatusCode != 400 || apiErr.Message != "too long" || apiErr.Type != "invalid_request_error" || apiErr.Code != "context_length_exceeded" {
		t.Errorf("stream error: %d %s", apiErr.StatusCode, apiErr.RawJSON())
	}
}

func TestCutStream(t *testing.T) {
	s, c := start(t,
		fakellm.Turn{Text: "one two three four five six", CutAfterChunks: 3},
		fakellm.Turn{Text: "short", CutAfterChunks: 100},
		fakellm.Turn{Text: "fine"},
	)
	for i, want := range []int{3, 3} { // second turn: role, content, finish, then cut before [DONE]
		stream := c.Chat.Completions.NewStreaming(context.Background(), streamParams(false))
		n := 0
		for stream.Next() {
			n++
		}
		if n != want {
			t.Errorf("stream %d: %d chunks before the cut, want %d", i, n, want)
		}
		if !errors.Is(stream.Err(), io.ErrUnexpectedEOF) {
			t.Errorf("stream %d: err = %v, want unexpected EOF", i, stream.Err())
		}
		stream.Close()
	}
	// The server keeps working after a cut.
	res, err := c.Chat.Completions.New(context.Background(), streamParams(false))
	if err != nil || res.Choices[0].Message.Content != "fine" {
		t.Fatalf("after cut: %v", err)
	}
	if s.Calls() != 3 {
		t.Errorf("calls = %d", s.Calls())
	}
}

func TestScriptExhausted(t *testing.T) {
	s, c := start(t, fakellm.Turn{Text: "only"})
	if _, err := c.Chat.Completions.New(context.Background(), streamParams(false)); err != nil {
		t.Fatal(err)
	}
	_, err := c.Chat.Completions.New(context.Background(), streamParams(false))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "exhausted") {
		t.Fatalf("err = %v", err)
	}
	if s.Calls() != 2 || len(s.Requests()) != 2 {
		t.Errorf("calls = %d requests = %d", s.Calls(), len(s.Requests()))
	}
}

// post sends a raw request and returns status, content type and body.
func post(t *testing.T, s *fakellm.Server, method, path, contentType, body string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(s.URL, "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header.Get("Content-Type"), b
}

func TestRejects(t *testing.T) {
	s, _ := start(t, fakellm.Turn{Text: "unused"})
	const ok = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	for _, tc := range []struct {
		name, method, path, ct, body string
		status                       int
	}{
		{"unknown path", "POST", "/v1/completions", "application/json", ok, 404},
		{"no v1", "POST", "/chat/completions", "application/json", ok, 404},
		{"GET", "GET", "/v1/chat/completions", "", "", 405},
		{"text/plain", "POST", "/v1/chat/completions", "text/plain", ok, 415},
		{"no content type", "POST", "/v1/chat/completions", "", ok, 415},
		{"bad json", "POST", "/v1/chat/completions", "application/json", `{"model":`, 400},
		{"wrong type", "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":"hi"}`, 400},
		{"no model", "POST", "/v1/chat/completions", "application/json", `{"messages":[{"role":"user","content":"hi"}]}`, 400},
		{"no messages", "POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":[]}`, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ct, body := post(t, s, tc.method, tc.path, tc.ct, tc.body)
			if status != tc.status || ct != "application/json" {
				t.Errorf("status %d %s, want %d", status, ct, tc.status)
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
				t.Errorf("error body %s: %v", body, err)
			}
		})
	}
	if s.Calls() != 0 || len(s.Requests()) != 0 {
		t.Errorf("rejected requests were accepted: calls=%d", s.Calls())
	}
	// charset parameter is fine
	status, _, body := post(t, s, "POST", "/v1/chat/completions", "application/json; charset=utf-8", ok)
	if status != 200 || !bytes.Contains(body, []byte(`"unused"`)) {
		t.Errorf("valid request: %d %s", status, body)
	}
}

// sseEvents splits a raw event stream, checking the framing.
func sseEvents(t *testing.T, body []byte) [][]byte {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("data: [DONE]\n\n")) {
		t.Fatalf("stream does not end with [DONE]: %q", body)
	}
	var out [][]byte
	for _, ev := range bytes.SplitAfter(body, []byte("\n\n")) {
		if len(ev) == 0 {
			continue
		}
		data, ok := bytes.CutPrefix(ev, []byte("data: "))
		if !ok || bytes.Count(ev, []byte("\n")) != 2 {
			t.Fatalf("bad event framing: %q", ev)
		}
		out = append(out, bytes.TrimSuffix(data, []byte("\n\n")))
	}
	return out[:len(out)-1]
}

type wireChunk struct {
	ID                string  `json:"id"`
	Object            string  `json:"object"`
	Created           int64   `json:"created"`
	Model             string  `json:"model"`
	SystemFingerprint *string `json:"system_fingerprint"`
	Choices           []struct {
		Index        *int            `json:"index"`
		Delta        map[string]any  `json:"delta"`
		Logprobs     json.RawMessage `json:"logprobs"`
		FinishReason *string         `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

func TestStreamWire(t *testing.T) {
	text := "héllo wörld, 日本語のテキスト\u2028 with \"quotes\"\tand\\slashes"
	s, _ := start(t, fakellm.Turn{
		Text:      text,
		Chunks:    7,
		ToolCalls: []fakellm.ToolCall{{ID: "call_x", Name: "f", Arguments: `{"a":"ö"}`}},
	})
	status, ct, body := post(t, s, "POST", "/v1/chat/completions", "application/json",
		`{"model":"wire \"m\"","messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"include_usage":true}}`)
	if status != 200 || ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d content type %q", status, ct)
	}
	events := sseEvents(t, body)
	var content strings.Builder
	var args strings.Builder
	for i, ev := range events {
		if !json.Valid(ev) || !utf8.Valid(ev) {
			t.Fatalf("event %d is not valid JSON: %s", i, ev)
		}
		var c wireChunk
		if err := json.Unmarshal(ev, &c); err != nil {
			t.Fatal(err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != `wire "m"` || !strings.HasPrefix(c.ID, "chatcmpl-") ||
			c.Created == 0 || c.SystemFingerprint == nil {
			t.Errorf("event %d envelope: %s", i, ev)
		}
		if i == len(events)-1 {
			if len(c.Choices) != 0 || !bytes.Contains(c.Usage, []byte(`"total_tokens":0`)) {
				t.Errorf("usage event: %s", ev)
			}
			continue
		}
		if string(c.Usage) != "null" || len(c.Choices) != 1 || c.Choices[0].Index == nil || *c.Choices[0].Index != 0 ||
			string(c.Choices[0].Logprobs) != "null" {
			t.Errorf("event %d: %s", i, ev)
		}
		d := c.Choices[0].Delta
		if i == 0 && (d["role"] != "assistant" || d["content"] != "") {
			t.Errorf("first delta: %s", ev)
		}
		if s, ok := d["content"].(string); ok {
			if !utf8.ValidString(s) {
				t.Errorf("delta splits a UTF-8 sequence: %q", s)
			}
			content.WriteString(s)
		}
		if tcs, ok := d["tool_calls"].([]any); ok {
			tc := tcs[0].(map[string]any)
			if tc["index"] != float64(0) {
				t.Errorf("tool call delta without index: %s", ev)
			}
			fn := tc["function"].(map[string]any)
			args.WriteString(fn["arguments"].(string))
		}
		fr := c.Choices[0].FinishReason
		if (fr != nil) != (i == len(events)-2) {
			t.Errorf("event %d finish_reason %v", i, fr)
		}
		if fr != nil && *fr != "tool_calls" {
			t.Errorf("finish_reason %q", *fr)
		}
	}
	if content.String() != text {
		t.Errorf("content = %q", content.String())
	}
	if args.String() != `{"a":"ö"}` {
		t.Errorf("arguments = %q", args.String())
	}
}

func TestBlock(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	s := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		entered <- struct{}{}
		return fakellm.Turn{Text: "released", Block: release}
	})
	defer s.Close()
	c := newClient(s)

	type result struct {
		res *openai.ChatCompletion
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := c.Chat.Completions.New(context.Background(), streamParams(false))
		done <- result{res, err}
	}()
	<-entered
	select {
	case r := <-done:
		t.Fatalf("blocked call returned early: %+v", r)
	default:
	}
	close(release)
	r := <-done
	if r.err != nil || r.res.Choices[0].Message.Content != "released" {
		t.Fatalf("after release: %v", r.err)
	}

	// A canceled client releases the handler; Close does not hang.
	hold := make(chan struct{})
	entered2 := make(chan struct{})
	s2 := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		close(entered2)
		return fakellm.Turn{Block: hold}
	})
	c2 := newClient(s2)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c2.Chat.Completions.New(ctx, streamParams(false))
		errc <- err
	}()
	<-entered2
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled call: %v", err)
	}
	s2.Close()
}

func TestCloseReleasesBlocked(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	entered := make(chan struct{})
	s := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn {
		close(entered)
		return fakellm.Turn{Block: hold}
	})
	c := newClient(s)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(context.Background(), streamParams(false))
		errc <- err
	}()
	<-entered
	s.Close()
	var apiErr *openai.Error
	if err := <-errc; !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Errorf("err = %v, want 503", err)
	}
}

func TestConcurrentHandler(t *testing.T) {
	s := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		last := req.Messages[len(req.Messages)-1].Content.String()
		return fakellm.Turn{Text: "echo " + last, Usage: fakellm.Usage{PromptTokens: len(last)}}
	})
	defer s.Close()
	c := newClient(s)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := fmt.Sprintf("message %d", i)
			p := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(msg)}}
			if i%2 == 0 {
				res, err := c.Chat.Completions.New(context.Background(), p)
				if err != nil {
					errs <- err
					return
				}
				if got := res.Choices[0].Message.Content; got != "echo "+msg {
					errs <- fmt.Errorf("got %q for %q", got, msg)
				}
				return
			}
			stream := c.Chat.Completions.NewStreaming(context.Background(), p)
			defer stream.Close()
			var acc openai.ChatCompletionAccumulator
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			if err := stream.Err(); err != nil {
				errs <- err
				return
			}
			if got := acc.Choices[0].Message.Content; got != "echo "+msg {
				errs <- fmt.Errorf("stream got %q for %q", got, msg)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	reqs := s.Requests()
	if len(reqs) != n || s.Calls() != n {
		t.Fatalf("requests = %d calls = %d", len(reqs), s.Calls())
	}
	for i, r := range reqs {
		if r.Seq != i {
			t.Errorf("request %d has Seq %d", i, r.Seq)
		}
	}
}

func TestRecordingOff(t *testing.T) {
	s := fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "x"} })
	defer s.Close()
	s.SetRecording(false)
	c := newClient(s)
	for range 3 {
		if _, err := c.Chat.Completions.New(context.Background(), streamParams(false)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Calls() != 3 || len(s.Requests()) != 0 {
		t.Errorf("calls = %d requests = %d", s.Calls(), len(s.Requests()))
	}
}
