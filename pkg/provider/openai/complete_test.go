package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

var hi = &provider.Request{Model: "req-model", Items: []api.Item{{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: "hi"}}}}}

func TestCompleteText(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{
		"id":"chatcmpl-abc","object":"chat.completion","created":1700000000,"model":"gpt-4o-2024-08-06",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there.","refusal":null,"reasoning_content":"The user greets."},"logprobs":null,"finish_reason":"stop"}],
		"usage":{"prompt_tokens":19,"completion_tokens":10,"total_tokens":29,
			"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},
			"completion_tokens_details":{"reasoning_tokens":4,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
		"service_tier":"default","system_fingerprint":"fp_1"}`))
	res, err := p.Complete(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	want := &provider.Result{
		Text: "Hello there.", Reasoning: "The user greets.", FinishReason: provider.FinishStop, Model: "gpt-4o-2024-08-06",
		Usage: api.Usage{InputTokens: 19, OutputTokens: 10, TotalTokens: 29,
			InputTokensDetails: api.InputTokensDetails{CachedTokens: 8}, OutputTokensDetails: api.OutputTokensDetails{ReasoningTokens: 4}},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
}

func TestCompleteToolCalls(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{
		"id":"chatcmpl-abc","object":"chat.completion","created":1,"model":"qwen3",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"reasoning":"Two cities.","tool_calls":[
			{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
			{"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
		"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70}}`))
	res, err := p.Complete(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	want := &provider.Result{
		Reasoning: "Two cities.",
		ToolCalls: []api.Item{
			{Type: api.ItemFunctionCall, CallID: "call_1", Name: "weather", Arguments: `{"city":"Paris"}`},
			{Type: api.ItemFunctionCall, CallID: "call_2", Name: "weather", Arguments: `{"city":"Rome"}`},
		},
		FinishReason: provider.FinishToolCalls, Model: "qwen3",
		Usage: api.Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
}

// Backends differ: OpenAI answers "stop" to a forced tool call, some omit
// ids, some send the arguments as an object.
func TestCompleteToolCallVariants(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{
		"choices":[{"index":0,"message":{"role":"assistant","content":"","tool_calls":[
			{"type":"function","function":{"name":"weather","arguments":{"city":"Paris"}}},
			{"id":"call_9","type":"function","function":{"name":"now","arguments":""}}]},
		"finish_reason":"stop"}]}`))
	res, err := p.Complete(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 {
		t.Fatalf("tool calls = %+v", res.ToolCalls)
	}
	if c := res.ToolCalls[0]; !strings.HasPrefix(c.CallID, "call_") || c.Name != "weather" || c.Arguments != `{"city":"Paris"}` {
		t.Errorf("call 0 = %+v", c)
	}
	if c := res.ToolCalls[1]; c.CallID != "call_9" || c.Arguments != "{}" {
		t.Errorf("call 1 = %+v", c)
	}
	if res.FinishReason != provider.FinishToolCalls {
		t.Errorf("finish = %q", res.FinishReason)
	}
	if res.Model != "req-model" {
		t.Errorf("model = %q, want the requested model when the backend names none", res.Model)
	}
	if res.Usage != (api.Usage{}) {
		t.Errorf("usage = %+v", res.Usage)
	}
}

func TestCompleteFinishReasons(t *testing.T) {
	for upstream, want := range map[string]string{
		"length": provider.FinishLength, "content_filter": provider.FinishContentFilter,
		"stop": provider.FinishStop, "": provider.FinishStop, "function_call": provider.FinishToolCalls,
	} {
		t.Run(upstream, func(t *testing.T) {
			fr := `null`
			if upstream != "" {
				fr = `"` + upstream + `"`
			}
			p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a"},"finish_reason":`+fr+`}],
				"usage":{"prompt_tokens":3,"completion_tokens":16}}`))
			res, err := p.Complete(context.Background(), hi)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != want {
				t.Errorf("finish = %q, want %q", res.FinishReason, want)
			}
			if res.Text != "Once upon a" || res.Usage.TotalTokens != 19 {
				t.Errorf("result = %+v", res)
			}
		})
	}
}

func TestCompleteRefusal(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`))
	res, err := p.Complete(context.Background(), hi)
	if err != nil {
		t.Fatal(err)
	}
	if res.Refusal != "I can't help with that." || res.Text != "" {
		t.Errorf("result = %+v", res)
	}
}

// A finish_reason saying the backend interrupted the answer (DeepSeek's
// insufficient_system_resource, OpenRouter's error, vLLM's abort) fails
// the call: the text so far is a cut answer, not a completed one.
func TestInterruptedFinishReasons(t *testing.T) {
	for upstream, want := range map[string]struct {
		status int
		code   string
	}{
		"insufficient_system_resource": {http.StatusServiceUnavailable, provider.CodeModelUnavailable},
		"error":                        {http.StatusBadGateway, provider.CodeUpstreamError},
		"abort":                        {http.StatusBadGateway, provider.CodeUpstreamError},
	} {
		t.Run(upstream, func(t *testing.T) {
			p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Once upon a"},"finish_reason":"`+upstream+`"}]}`))
			res, err := p.Complete(context.Background(), hi)
			if res != nil {
				t.Errorf("Complete: result = %+v, want none", res)
			}
			e := apiErr(t, err, want.status, api.ErrTypeUpstream, want.code)
			contains(t, "Complete: message", e.Message, upstream)
			p, _ = newBackend(t, openai.Config{}, sseReply(
				chunk(`{"index":0,"delta":{"content":"Once upon a"},"finish_reason":null}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"`+upstream+`"}`),
			))
			res, err = p.Stream(context.Background(), hi, collect(new([]provider.Delta)))
			if res != nil {
				t.Errorf("Stream: result = %+v, want none", res)
			}
			e = apiErr(t, err, want.status, api.ErrTypeUpstream, want.code)
			contains(t, "Stream: message", e.Message, upstream)
		})
	}
}

// A non-streaming answer longer than the bound of an answer (64 MiB, as a
// streamed one's) is a 502 that says so, with or without a Content-Length,
// rather than its first 64 MiB decoded as a malformed answer.
func TestCompleteAnswerBounded(t *testing.T) {
	const limit = 64 << 20
	body := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", limit) + `"},"finish_reason":"stop"}]}`
	for name, length := range map[string]bool{"content-length": true, "chunked": false} {
		t.Run(name, func(t *testing.T) {
			p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if length {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				_, _ = io.WriteString(w, body)
			})
			_, err := p.Complete(context.Background(), hi)
			var e *api.Error
			if !errors.As(err, &e) || e.Status != 502 || e.Code != provider.CodeUpstreamBadResponse || !strings.Contains(e.Message, "longer than 67108864 bytes") {
				t.Fatalf("err = %v, want a 502 %s saying the answer is longer than 67108864 bytes", err, provider.CodeUpstreamBadResponse)
			}
		})
	}
}
