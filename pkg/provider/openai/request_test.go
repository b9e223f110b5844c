package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

const okCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`

func msg(role string, parts ...api.ContentPart) api.Item {
	return api.Item{Type: api.ItemMessage, Role: role, Content: parts}
}

func text(s string) api.ContentPart    { return api.ContentPart{Type: api.PartInputText, Text: s} }
func outText(s string) api.ContentPart { return api.ContentPart{Type: api.PartOutputText, Text: s} }

func TestTranslateConversation(t *testing.T) {
	p, b := newBackend(t, openai.Config{APIKey: "sk-test"}, jsonReply(200, okCompletion))
	req := &provider.Request{
		Model:        "llama3.2",
		Instructions: "Be brief.",
		Items: []api.Item{
			msg(api.RoleDeveloper, text("Use metric units.")),
			msg(api.RoleUser, text("Weather in Paris"), text("and Rome?")),
			msg(api.RoleUser, text("Look:"), api.ContentPart{Type: api.PartInputImage, ImageURL: "https://x/img.png", Detail: "low"}),
			{Type: api.ItemReasoning, ID: "rs_1", Content: []api.ContentPart{{Type: api.PartReasoningText, Text: "thinking"}}},
			msg(api.RoleAssistant, outText("Let me check.")),
			{Type: api.ItemFunctionCall, CallID: "call_a", Name: "weather", Arguments: `{"city":"Paris"}`},
			{Type: api.ItemFunctionCall, CallID: "call_b", Name: "weather", Arguments: `{"city":"Rome"}`},
			{Type: api.ItemFunctionCallOutput, CallID: "call_a", Output: "18C"},
			{Type: api.ItemFunctionCallOutput, CallID: "call_b", OutputParts: []api.ContentPart{{Type: api.PartInputText, Text: "21"}, {Type: api.PartInputText, Text: "C"}}},
			{Type: api.ItemFunctionCall, CallID: "call_c", Name: "now"},
			{Type: api.ItemFunctionCallOutput, CallID: "call_c", Output: "noon", IsError: false},
			msg(api.RoleAssistant, outText("Paris 18C, "), api.ContentPart{Type: api.PartRefusal, Refusal: "no more"}),
			msg(api.RoleSystem, text("sys")),
			msg(api.RoleUser, text("Thanks")),
		},
	}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := b.paths[0]; got != "/v1/chat/completions" {
		t.Errorf("path = %q", got)
	}
	h := b.header(0)
	if got := h.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	body := b.body(0)
	if body["model"] != "llama3.2" {
		t.Errorf("model = %v", body["model"])
	}
	for _, k := range []string{"stream", "stream_options", "tools", "tool_choice", "parallel_tool_calls", "max_tokens",
		"max_completion_tokens", "response_format", "temperature", "logprobs", "top_logprobs", "user", "service_tier",
		"prompt_cache_key", "reasoning_effort"} {
		if _, ok := body[k]; ok {
			t.Errorf("%s sent although not set: %v", k, body[k])
		}
	}
	assertJSON(t, "messages", body["messages"], `[
		{"role":"system","content":"Be brief."},
		{"role":"system","content":"Use metric units."},
		{"role":"user","content":"Weather in Paris\nand Rome?"},
		{"role":"user","content":[{"type":"text","text":"Look:"},{"type":"image_url","image_url":{"url":"https://x/img.png","detail":"low"}}]},
		{"role":"assistant","content":"Let me check.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"18C"},
		{"role":"tool","tool_call_id":"call_b","content":"21C"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_c","type":"function","function":{"name":"now","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_c","content":"noon"},
		{"role":"assistant","content":"Paris 18C, no more"},
		{"role":"system","content":"sys"},
		{"role":"user","content":"Thanks"}
	]`)
}

func TestTranslateNoAPIKey(t *testing.T) {
	p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
	if _, err := p.Complete(context.Background(), &provider.Request{Model: "m", Items: []api.Item{msg(api.RoleUser, text("hi"))}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.header(0)["Authorization"]; ok {
		t.Errorf("Authorization sent without an API key: %q", b.header(0).Get("Authorization"))
	}
}

// Chat Completions takes image_url parts in user messages only (OpenAI
// refuses "Image URLs are only allowed for messages with role 'user'"):
// an image in a system or developer message is a 400 before the call.
func TestTranslateSystemImageRejected(t *testing.T) {
	for _, role := range []string{api.RoleSystem, api.RoleDeveloper} {
		p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
		_, err := p.Complete(context.Background(), &provider.Request{Model: "m", Items: []api.Item{
			msg(role, text("the logo:"), api.ContentPart{Type: api.PartInputImage, ImageURL: "https://x/logo.png"}),
			msg(api.RoleUser, text("hi")),
		}})
		var e *api.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Type != api.ErrTypeInvalidRequest || e.Code != "unsupported_content" {
			t.Fatalf("%s: err = %#v", role, err)
		}
		contains(t, "message", e.Message, "user messages")
		if len(b.bodies) != 0 {
			t.Errorf("%s: backend was called", role)
		}
	}
}

// Chat Completions refuses more than 128 tools ("array too long"): a call
// offering more is a 400 limit_exceeded naming tools before the call,
// streamed or not, and 128 go through.
func TestTooManyToolsRejected(t *testing.T) {
	tools := func(n int) []api.ToolDefinition {
		out := make([]api.ToolDefinition, n)
		for i := range out {
			out[i] = api.ToolDefinition{Name: fmt.Sprintf("f%d", i), Parameters: json.RawMessage(`{"type":"object"}`)}
		}
		return out
	}
	p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
	req := &provider.Request{Model: "m", Tools: tools(129), Items: []api.Item{msg(api.RoleUser, text("hi"))}}
	for name, call := range map[string]func() error{
		"Complete": func() error { _, err := p.Complete(context.Background(), req); return err },
		"Stream": func() error {
			_, err := p.Stream(context.Background(), req, func(provider.Delta) error { return nil })
			return err
		},
	} {
		err := call()
		var e *api.Error
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != "limit_exceeded" || e.Param != "tools" {
			t.Fatalf("%s: err = %#v", name, err)
		}
		contains(t, "message", e.Message, "129 tools")
		contains(t, "message", e.Message, "limit of 128")
	}
	if len(b.bodies) != 0 {
		t.Errorf("backend was called")
	}
	req.Tools = tools(128)
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
}

func TestTranslateInputFileRejected(t *testing.T) {
	p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
	_, err := p.Complete(context.Background(), &provider.Request{Model: "m", Items: []api.Item{
		msg(api.RoleUser, text("read"), api.ContentPart{Type: api.PartInputFile, FileData: "data:application/pdf;base64,AA=="}),
	}})
	var e *api.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Type != api.ErrTypeInvalidRequest || e.Code != "unsupported_content" {
		t.Fatalf("err = %#v", err)
	}
	contains(t, "message", e.Message, "input_file")
	if len(b.bodies) != 0 {
		t.Errorf("backend was called")
	}
}

// weatherParams is a strict-mode schema (OpenAI refuses strict tools whose
// objects do not set additionalProperties false).
var weatherParams = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)

func TestTranslateToolsAndChoice(t *testing.T) {
	defs := []api.ToolDefinition{
		{Name: "weather", Description: "Weather by city", Parameters: weatherParams, Strict: ptr(true)},
		{Name: "now"},
	}
	wantTools := `[
		{"type":"function","function":{"name":"weather","description":"Weather by city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false},"strict":true}},
		{"type":"function","function":{"name":"now","parameters":{"type":"object","properties":{}}}}
	]`
	cases := []struct {
		name       string
		tools      []api.ToolDefinition
		choice     string
		forced     string
		parallel   *bool
		wantChoice string // JSON; "" means absent
	}{
		{name: "auto", tools: defs, choice: "auto", wantChoice: `"auto"`},
		{name: "none", tools: defs, choice: "none", wantChoice: `"none"`},
		{name: "required", tools: defs, choice: "required", parallel: ptr(false), wantChoice: `"required"`},
		{name: "forced", tools: defs, choice: "required", forced: "weather", wantChoice: `{"type":"function","function":{"name":"weather"}}`},
		{name: "default", tools: defs, wantChoice: ""},
		{name: "no tools", choice: "required", forced: "weather", parallel: ptr(true), wantChoice: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
			_, err := p.Complete(context.Background(), &provider.Request{
				Model: "m", Items: []api.Item{msg(api.RoleUser, text("hi"))},
				Tools: tc.tools, ToolChoice: tc.choice, ForcedTool: tc.forced, ParallelToolCalls: tc.parallel,
			})
			if err != nil {
				t.Fatal(err)
			}
			body := b.body(0)
			if tc.wantChoice == "" {
				if v, ok := body["tool_choice"]; ok {
					t.Errorf("tool_choice = %v, want absent", v)
				}
			} else {
				assertJSON(t, "tool_choice", body["tool_choice"], tc.wantChoice)
			}
			if len(tc.tools) == 0 {
				for _, k := range []string{"tools", "parallel_tool_calls"} {
					if v, ok := body[k]; ok {
						t.Errorf("%s = %v without tools", k, v)
					}
				}
				return
			}
			assertJSON(t, "tools", body["tools"], wantTools)
			if tc.parallel == nil {
				if v, ok := body["parallel_tool_calls"]; ok {
					t.Errorf("parallel_tool_calls = %v, want absent", v)
				}
			} else if body["parallel_tool_calls"] != *tc.parallel {
				t.Errorf("parallel_tool_calls = %v, want %v", body["parallel_tool_calls"], *tc.parallel)
			}
		})
	}
}

func TestTranslateResponseFormat(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`)
	cases := []struct {
		name string
		text *api.TextConfig
		want string
	}{
		{"json_schema", &api.TextConfig{Format: api.TextFormat{Type: "json_schema", Name: "out", Description: ptr("the output"), Schema: schema, Strict: ptr(true)}},
			`{"type":"json_schema","json_schema":{"name":"out","description":"the output","schema":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false},"strict":true}}`},
		{"json_object", &api.TextConfig{Format: api.TextFormat{Type: "json_object"}}, `{"type":"json_object"}`},
		{"text", &api.TextConfig{Format: api.TextFormat{Type: "text"}}, ""},
		{"unset", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
			if _, err := p.Complete(context.Background(), &provider.Request{Model: "m", Items: []api.Item{msg(api.RoleUser, text("hi"))}, Text: tc.text}); err != nil {
				t.Fatal(err)
			}
			got, ok := b.body(0)["response_format"]
			if tc.want == "" {
				if ok {
					t.Errorf("response_format = %v, want absent", got)
				}
				return
			}
			assertJSON(t, "response_format", got, tc.want)
		})
	}
}

func TestTranslateSamplingAndStream(t *testing.T) {
	req := &provider.Request{
		Model: "m", Items: []api.Item{msg(api.RoleUser, text("hi"))},
		MaxOutputTokens: ptr(256), Temperature: ptr(0.2), TopP: ptr(0.9), PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(-0.5),
		TopLogprobs: ptr(3), ReasoningEffort: "low", User: "user-1", PromptCacheKey: "pck", ServiceTier: "flex",
	}
	t.Run("complete", func(t *testing.T) {
		p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		body := b.body(0)
		delete(body, "messages")
		assertJSON(t, "body", body, `{"model":"m","max_tokens":256,"temperature":0.2,"top_p":0.9,"presence_penalty":0.5,
			"frequency_penalty":-0.5,"logprobs":true,"top_logprobs":3,"reasoning_effort":"low","user":"user-1",
			"prompt_cache_key":"pck","service_tier":"flex"}`)
	})
	t.Run("max_completion_tokens", func(t *testing.T) {
		p, b := newBackend(t, openai.Config{TokenLimit: openai.TokenLimitMaxCompletionTokens}, jsonReply(200, okCompletion))
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		body := b.body(0)
		if body["max_completion_tokens"] != 256.0 {
			t.Errorf("max_completion_tokens = %v", body["max_completion_tokens"])
		}
		if v, ok := body["max_tokens"]; ok {
			t.Errorf("max_tokens = %v sent too", v)
		}
	})
	t.Run("reasoning models take max_completion_tokens", func(t *testing.T) {
		// OpenAI refuses max_tokens for its reasoning models: by default
		// they are known by name.
		for _, model := range []string{"o3", "o4-mini", "gpt-5", "gpt-5-mini-2025-08-07", "gpt-5.1"} {
			p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
			r := *req
			r.Model = model
			if _, err := p.Complete(context.Background(), &r); err != nil {
				t.Fatalf("%s: %v", model, err)
			}
			body := b.body(0)
			if _, ok := body["max_tokens"]; ok || body["max_completion_tokens"] != 256.0 {
				t.Errorf("%s: max_tokens = %v, max_completion_tokens = %v", model, body["max_tokens"], body["max_completion_tokens"])
			}
		}
	})
	t.Run("max_tokens to every model", func(t *testing.T) {
		// A self-hosted model named like OpenAI's reasoning models
		// (Ollama, LM Studio ignore max_completion_tokens) keeps its limit.
		p, b := newSelfHostedBackend(t, openai.Config{TokenLimit: openai.TokenLimitMaxTokens}, jsonReply(200, okCompletion))
		r := *req
		r.Model = "gpt-5"
		if _, err := p.Complete(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
		body := b.body(0)
		if _, ok := body["max_completion_tokens"]; ok || body["max_tokens"] != 256.0 {
			t.Errorf("max_tokens = %v, max_completion_tokens = %v", body["max_tokens"], body["max_completion_tokens"])
		}
	})
	t.Run("max_completion_tokens to a custom deployment name", func(t *testing.T) {
		// An Azure OpenAI deployment serving a reasoning model under a
		// name of its own.
		p, b := newBackend(t, openai.Config{TokenLimit: openai.TokenLimitMaxCompletionTokens}, jsonReply(200, okCompletion))
		r := *req
		r.Model = "prod-reasoner"
		if _, err := p.Complete(context.Background(), &r); err != nil {
			t.Fatal(err)
		}
		body := b.body(0)
		if _, ok := body["max_tokens"]; ok || body["max_completion_tokens"] != 256.0 {
			t.Errorf("max_tokens = %v, max_completion_tokens = %v", body["max_tokens"], body["max_completion_tokens"])
		}
	})
	t.Run("stream", func(t *testing.T) {
		p, b := newBackend(t, openai.Config{}, sseReply(`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`))
		if _, err := p.Stream(context.Background(), req, func(provider.Delta) error { return nil }); err != nil {
			t.Fatal(err)
		}
		body := b.body(0)
		if body["stream"] != true {
			t.Errorf("stream = %v", body["stream"])
		}
		assertJSON(t, "stream_options", body["stream_options"], `{"include_usage":true}`)
		if got := b.header(0).Get("Accept"); got != "text/event-stream" {
			t.Errorf("Accept = %q", got)
		}
	})
}

// The reasoning of the current tool loop (after the last user message)
// goes back as reasoning_content on the assistant message after it, from
// the reasoning text or, replayed without it, the summary; an earlier
// turn's reasoning does not.
func TestTranslateReasoningOfToolLoop(t *testing.T) {
	p, b := newBackend(t, openai.Config{}, jsonReply(200, okCompletion))
	reasoning := func(text string) api.Item {
		return api.Item{Type: api.ItemReasoning, Content: []api.ContentPart{{Type: api.PartReasoningText, Text: text}}}
	}
	req := &provider.Request{Model: "deepseek-reasoner", Items: []api.Item{
		msg(api.RoleUser, text("Weather?")),
		reasoning("Earlier turn."),
		msg(api.RoleAssistant, outText("Sunny.")),
		msg(api.RoleUser, text("And Rome and Oslo?")),
		reasoning("Call the tool for Rome."),
		{Type: api.ItemFunctionCall, CallID: "call_a", Name: "weather", Arguments: `{"city":"Rome"}`},
		{Type: api.ItemFunctionCallOutput, CallID: "call_a", Output: "21C"},
		{Type: api.ItemReasoning, Summary: []api.ContentPart{{Type: api.PartSummaryText, Text: "Now Oslo."}}},
		msg(api.RoleAssistant, outText("Checking Oslo.")),
		{Type: api.ItemFunctionCall, CallID: "call_b", Name: "weather", Arguments: `{"city":"Oslo"}`},
		{Type: api.ItemFunctionCallOutput, CallID: "call_b", Output: "5C"},
	}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, "messages", b.body(0)["messages"], `[
		{"role":"user","content":"Weather?"},
		{"role":"assistant","content":"Sunny."},
		{"role":"user","content":"And Rome and Oslo?"},
		{"role":"assistant","content":null,"reasoning_content":"Call the tool for Rome.","tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
		{"role":"tool","tool_call_id":"call_a","content":"21C"},
		{"role":"assistant","content":"Checking Oslo.","reasoning_content":"Now Oslo.","tool_calls":[
			{"id":"call_b","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"call_b","content":"5C"}
	]`)
}

// TestLongRequestStreamed: a request body longer than the gateway buffers
// (a long agentic loop's history) is sent chunked as its messages are
// encoded, and arrives whole and valid (the backend applies the fake
// model's rules); sent again after a redirect, it is encoded again from
// the start; a short body keeps its Content-Length.
func TestLongRequestStreamed(t *testing.T) {
	t.Parallel()
	p, b := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("again") == "" && r.ContentLength < 0 {
			http.Redirect(w, r, r.URL.Path+"?again=1", http.StatusTemporaryRedirect)
			return
		}
		jsonReply(200, okCompletion)(w, r)
	})
	const rounds, size = 40, 16 << 10
	req := &provider.Request{Model: "m", Items: []api.Item{msg(api.RoleUser, text("Check everything."))}}
	for i := range rounds {
		id := fmt.Sprintf("call_%d", i)
		req.Items = append(req.Items,
			api.Item{Type: api.ItemFunctionCall, CallID: id, Name: "check", Arguments: fmt.Sprintf(`{"n":%d}`, i)},
			api.Item{Type: api.ItemFunctionCallOutput, CallID: id, Output: fmt.Sprintf("%d <&> ", i) + strings.Repeat(fmt.Sprint(i%10), size)})
	}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := b.length(0); got != -1 {
		t.Errorf("long request: Content-Length %d, want chunked", got)
	}
	msgs, _ := b.body(1)["messages"].([]any)
	if len(msgs) != 1+2*rounds {
		t.Fatalf("redirected request: %d messages, want %d", len(msgs), 1+2*rounds)
	}
	for i := range rounds {
		m := msgs[2+2*i].(map[string]any)
		if want := fmt.Sprintf("%d <&> ", i) + strings.Repeat(fmt.Sprint(i%10), size); m["content"] != want || m["tool_call_id"] != fmt.Sprintf("call_%d", i) {
			t.Fatalf("message %d: tool_call_id %v, content of %d bytes, want call_%d's output", 2+2*i, m["tool_call_id"], len(fmt.Sprint(m["content"])), i)
		}
	}
	if !reflect.DeepEqual(b.body(0), b.body(1)) {
		t.Error("the redirected request differs from the first")
	}

	req.Items = req.Items[:3]
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := b.length(2); got <= 0 {
		t.Errorf("short request: Content-Length %d, want it set", got)
	}
}

// TestLongShellChunked: a body made long by its tools, not its messages,
// is sent chunked too, arrives whole, and is sent again whole after a
// redirect.
func TestLongShellChunked(t *testing.T) {
	t.Parallel()
	p, b := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("again") == "" {
			http.Redirect(w, r, r.URL.Path+"?again=1", http.StatusTemporaryRedirect)
			return
		}
		jsonReply(200, okCompletion)(w, r)
	})
	desc := strings.Repeat("a <long> description ", 16<<10)
	req := &provider.Request{Model: "m", Items: []api.Item{msg(api.RoleUser, text("hi"))},
		Tools: []api.ToolDefinition{{Name: "f", Description: desc, Parameters: []byte(`{"type":"object"}`)}}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := b.length(0); got != -1 {
		t.Errorf("Content-Length %d, want chunked", got)
	}
	for i := range 2 {
		tools, _ := b.body(i)["tools"].([]any)
		if len(tools) != 1 || tools[0].(map[string]any)["function"].(map[string]any)["description"] != desc {
			t.Errorf("request %d: the tool did not arrive whole", i)
		}
	}
}

// headerRoundTripper adds a header to the request it is given, as some
// tracing RoundTrippers do.
type headerRoundTripper struct{ base http.RoundTripper }

func (h headerRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	r.Header.Add("X-Trace", "1")
	return h.base.RoundTrip(r)
}

// A client passed in that changes a request's headers does not change the
// next request's.
func TestClientChangesHeaders(t *testing.T) {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	p, b := newBackend(t, openai.Config{APIKey: "k", HTTPClient: &http.Client{Transport: headerRoundTripper{tr}}}, jsonReply(200, okCompletion))
	for range 3 {
		if _, err := p.Complete(context.Background(), hi); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if h := b.header(i); len(h["X-Trace"]) != 1 || h.Get("Authorization") != "Bearer k" || h.Get("Accept") != "application/json" {
			t.Errorf("request %d: headers %v", i, h)
		}
	}
}

// An invalid base URL fails every call with a 502.
func TestInvalidURL(t *testing.T) {
	p := openai.New(openai.Config{BaseURL: "http://[::1"})
	_, err := p.Complete(context.Background(), hi)
	e := apiErr(t, err, http.StatusBadGateway, api.ErrTypeUpstream, "upstream_unreachable")
	if e.Message != "the model provider's URL is not valid" {
		t.Errorf("message %q", e.Message)
	}
}

// Concurrent calls share the provider's headers and URL (run with -race):
// every request arrives with them, streamed or not.
func TestConcurrentCalls(t *testing.T) {
	t.Parallel()
	p, b := newBackend(t, openai.Config{APIKey: "k"}, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept") == "text/event-stream" {
			sseReply(`{"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`)(w, r)
			return
		}
		jsonReply(200, okCompletion)(w, r)
	})
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for range 5 {
				var res *provider.Result
				var err error
				if i%2 == 0 {
					res, err = p.Complete(context.Background(), hi)
				} else {
					res, err = p.Stream(context.Background(), hi, func(provider.Delta) error { return nil })
				}
				if err != nil || res.Text != "ok" {
					t.Errorf("call: %+v, %v", res, err)
				}
			}
		})
	}
	wg.Wait()
	for i := range 5 * n {
		if h := b.header(i); h.Get("Authorization") != "Bearer k" || h.Get("User-Agent") != "lambent" || h.Get("Content-Type") != "application/json" {
			t.Errorf("request %d: headers %v", i, h)
		}
	}
}

// writeCounter counts the writes of the connections it dials.
type writeCounter struct {
	mu     sync.Mutex
	writes int
}

func (w *writeCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	return countedConn{c, w}, err
}

type countedConn struct {
	net.Conn
	w *writeCounter
}

func (c countedConn) Write(b []byte) (int, error) {
	c.w.mu.Lock()
	c.w.writes++
	c.w.mu.Unlock()
	return c.Conn.Write(b)
}

// A short request goes out in one write, its headers with its body (as
// net/http sends a body it knows is in memory), not in two packets.
func TestShortRequestOneWrite(t *testing.T) {
	var wc writeCounter
	tr := &http.Transport{DialContext: wc.dial}
	t.Cleanup(tr.CloseIdleConnections)
	p, _ := newBackend(t, openai.Config{HTTPClient: &http.Client{Transport: tr}}, jsonReply(200, okCompletion))
	for range 2 {
		if _, err := p.Complete(context.Background(), hi); err != nil {
			t.Fatal(err)
		}
	}
	if wc.writes != 2 {
		t.Errorf("%d writes for 2 short requests, want 2", wc.writes)
	}
}
