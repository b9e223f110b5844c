package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
	"github.com/lambent/lambent/pkg/provider/openai"
)

// collect returns a delta callback that records every delta of the
// answer (the call's acceptance left out: TestStreamAccepted).
func collect(ds *[]provider.Delta) func(provider.Delta) error {
	return func(d provider.Delta) error {
		if d.Kind != provider.DeltaAccepted {
			*ds = append(*ds, d)
		}
		return nil
	}
}

// A streamed call's first delta says the provider accepted it (its 2xx
// status came), once, before the answer; a call refused gets none.
func TestStreamAccepted(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, sseReply(chunk(`{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}`)))
	var kinds []provider.DeltaKind
	_, err := p.Stream(context.Background(), hi, func(d provider.Delta) error { kinds = append(kinds, d.Kind); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := []provider.DeltaKind{provider.DeltaAccepted, provider.DeltaText}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("delta kinds = %v, want %v", kinds, want)
	}
	p, _ = newBackend(t, openai.Config{}, func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"error":{"message":"Unsupported parameter: 'temperature'","type":"invalid_request_error"}}`, http.StatusBadRequest)
	})
	kinds = nil
	if _, err := p.Stream(context.Background(), hi, func(d provider.Delta) error { kinds = append(kinds, d.Kind); return nil }); err == nil {
		t.Fatal("a refused call succeeded")
	}
	if len(kinds) != 0 {
		t.Errorf("a refused call passed deltas %v", kinds)
	}
}

const chunkHead = `"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","system_fingerprint":"fp"`

func chunk(choice string) string {
	return `{` + chunkHead + `,"choices":[` + choice + `],"usage":null}`
}

func TestStreamTextReasoningUsage(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, sseReply(
		chunk(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"reasoning_content":"Think"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"reasoning_content":"ing."},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":"Hel"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":"lo"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{},"finish_reason":"length"}`),
		`{`+chunkHead+`,"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":1}}}`,
	))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	wantDs := []provider.Delta{
		{Kind: provider.DeltaReasoning, Text: "Think", More: true},
		{Kind: provider.DeltaReasoning, Text: "ing.", More: true},
		{Kind: provider.DeltaText, Text: "Hel", More: true},
		{Kind: provider.DeltaText, Text: "lo", More: true},
	}
	if !reflect.DeepEqual(ds, wantDs) {
		t.Errorf("deltas = %+v\nwant %+v", ds, wantDs)
	}
	want := &provider.Result{Text: "Hello", Reasoning: "Thinking.", FinishReason: provider.FinishLength, Model: "gpt-4o-mini",
		Usage: api.Usage{InputTokens: 9, OutputTokens: 2, TotalTokens: 11,
			InputTokensDetails: api.InputTokensDetails{CachedTokens: 4}, OutputTokensDetails: api.OutputTokensDetails{ReasoningTokens: 1}}}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
}

func TestStreamParallelToolCalls(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, sseReply(
		chunk(`{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":"Checking."},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_P","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_R","type":"function","function":{"name":"weather","arguments":"{\"city\""}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":\"Rome\"}"}}]},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
		`{`+chunkHead+`,"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}`,
	))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	wantDs := []provider.Delta{
		{Kind: provider.DeltaText, Text: "Checking.", More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "call_P", ToolName: "weather", More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 0, Text: `{"ci`, More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 1, ToolCallID: "call_R", ToolName: "weather", Text: `{"city"`, More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 0, Text: `ty":"Paris"}`, More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 1, Text: `:"Rome"}`, More: true},
	}
	if !reflect.DeepEqual(ds, wantDs) {
		t.Errorf("deltas:\n got  %+v\n want %+v", ds, wantDs)
	}
	want := &provider.Result{
		Text: "Checking.",
		ToolCalls: []api.Item{
			{Type: api.ItemFunctionCall, CallID: "call_P", Name: "weather", Arguments: `{"city":"Paris"}`},
			{Type: api.ItemFunctionCall, CallID: "call_R", Name: "weather", Arguments: `{"city":"Rome"}`},
		},
		FinishReason: provider.FinishToolCalls, Model: "gpt-4o-mini",
		Usage: api.Usage{InputTokens: 30, OutputTokens: 12, TotalTokens: 42},
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("result = %+v\nwant %+v", res, want)
	}
}

// Ollama sends each tool call whole, in one chunk; some backends number
// every call 0 and tell them apart by id only.
func TestStreamToolCallsSameIndex(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, sseReply(
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"ok","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"a","arguments":"{}"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"b","arguments":"{\"x\":1}"}}]},"finish_reason":null}]}`,
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
	))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	wantDs := []provider.Delta{
		{Kind: provider.DeltaReasoning, Text: "ok", More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 0, ToolCallID: "call_a", ToolName: "a", Text: "{}", More: true},
		{Kind: provider.DeltaToolCall, ToolIndex: 1, ToolCallID: "call_b", ToolName: "b", Text: `{"x":1}`, More: true},
	}
	if !reflect.DeepEqual(ds, wantDs) {
		t.Errorf("deltas = %+v\nwant %+v", ds, wantDs)
	}
	if len(res.ToolCalls) != 2 || res.FinishReason != provider.FinishToolCalls || res.ToolCalls[1].Arguments != `{"x":1}` {
		t.Errorf("result = %+v", res)
	}
}

// A delta has More when the backend's next event came with it, and not
// when the provider then waits on the backend.
func TestStreamDeltaMore(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		// One write: the two events reach the provider together.
		_, _ = fmt.Fprintf(w, "data: %s\n\ndata: %s\n\n", chunk(`{"index":0,"delta":{"content":"a"},"finish_reason":null}`), chunk(`{"index":0,"delta":{"content":"b"},"finish_reason":null}`))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		writeSSE(w, chunk(`{"index":0,"delta":{"content":"c"},"finish_reason":"stop"}`), "[DONE]")
	})
	var ds []provider.Delta
	record := collect(&ds)
	_, err := p.Stream(context.Background(), hi, func(d provider.Delta) error {
		_ = record(d)
		if d.Text == "b" {
			close(release)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Delta{
		{Kind: provider.DeltaText, Text: "a", More: true},
		{Kind: provider.DeltaText, Text: "b"},
		{Kind: provider.DeltaText, Text: "c", More: true},
	}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("deltas = %+v\nwant %+v", ds, want)
	}
}

func TestStreamRefusal(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, sseReply(
		chunk(`{"index":0,"delta":{"role":"assistant","refusal":"I can't"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"refusal":" help."},"finish_reason":"stop"}`),
	))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Kind != provider.DeltaRefusal || res.Refusal != "I can't help." {
		t.Errorf("deltas = %+v, result = %+v", ds, res)
	}
}

// SSE framing: comments, other fields, CRLF line endings, multi-line data
// and a final event without a trailing blank line.
func TestStreamFraming(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		_, _ = io.WriteString(w, ": keep-alive\r\n\r\nretry: 100\r\nid: 1\r\nevent: message\r\n"+
			"data: "+chunk(`{"index":0,"delta":{"content":"a"},"finish_reason":null}`)+"\r\n\r\n"+
			"data: {\"choices\":[{\"index\":0,\n"+
			"data: \"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\n"+
			": done soon\n\n"+
			"data:[DONE]")
	})
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "ab" || len(ds) != 2 || res.FinishReason != provider.FinishStop {
		t.Errorf("deltas = %+v, result = %+v", ds, res)
	}
}

func TestStreamLargeLine(t *testing.T) {
	big := strings.Repeat("x", 5<<20)
	p, _ := newBackend(t, openai.Config{}, sseReply(
		chunk(`{"index":0,"delta":{"content":"`+big+`"},"finish_reason":null}`),
		chunk(`{"index":0,"delta":{"content":"!"},"finish_reason":"stop"}`),
	))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || len(ds[0].Text) != len(big) || res.Text != big+"!" {
		t.Errorf("got %d deltas, text length %d", len(ds), len(res.Text))
	}
}

// A stream that finished its answer but was closed without [DONE] is
// accepted.
func TestStreamFinishWithoutDone(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeSSE(w, chunk(`{"index":0,"delta":{"content":"done"},"finish_reason":"stop"}`))
	})
	res, err := p.Stream(context.Background(), hi, collect(new([]provider.Delta)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done" || res.FinishReason != provider.FinishStop {
		t.Errorf("result = %+v", res)
	}
}

// A backend that ignores stream:true and answers with JSON still works.
func TestStreamJSONAnswer(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, jsonReply(200, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"whole","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`))
	var ds []provider.Delta
	res, err := p.Stream(context.Background(), hi, collect(&ds))
	if err != nil {
		t.Fatal(err)
	}
	wantDs := []provider.Delta{
		{Kind: provider.DeltaText, Text: "whole"},
		{Kind: provider.DeltaToolCall, ToolCallID: "c1", ToolName: "f", Text: "{}"},
	}
	if !reflect.DeepEqual(ds, wantDs) || res.Text != "whole" || len(res.ToolCalls) != 1 {
		t.Errorf("deltas = %+v, result = %+v", ds, res)
	}
}

// An error from fn aborts the stream: it is returned as is and the body is
// closed, so the backend sees the client go away.
func TestStreamCallbackErrorAborts(t *testing.T) {
	gone := make(chan struct{})
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeSSE(w, chunk(`{"index":0,"delta":{"content":"one"},"finish_reason":null}`),
			chunk(`{"index":0,"delta":{"content":"two"},"finish_reason":null}`))
		<-r.Context().Done()
		close(gone)
	})
	stop := errors.New("client went away")
	calls := 0
	res, err := p.Stream(context.Background(), hi, func(d provider.Delta) error {
		calls++
		return stop
	})
	if err != stop {
		t.Fatalf("err = %v, want the callback's error as is", err)
	}
	if res != nil || calls != 1 {
		t.Errorf("res = %v, calls = %d", res, calls)
	}
	<-gone // the handler only returns once the connection is closed
}

// Cancelling the context mid-stream returns an error that says so.
func TestStreamCancelMidStream(t *testing.T) {
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseHeaders(w)
		writeSSE(w, chunk(`{"index":0,"delta":{"content":"one"},"finish_reason":null}`))
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := p.Stream(ctx, hi, func(d provider.Delta) error {
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	apiErr(t, err, provider.StatusClientClosedRequest, api.ErrTypeServer, provider.CodeRequestCancelled)
}

// An error the provider sends mid-stream fails the call: a 502 whose
// message stays in the cause, or, when it says it is overloaded (OpenAI's
// server_is_overloaded code, Anthropic's overloaded_error type), a 503
// server_is_overloaded, as its 503 would.
func TestStreamMidStreamErrorEvent(t *testing.T) {
	for name, tc := range map[string]struct {
		ev, said  string
		status    int
		typ, code string
		message   string
	}{
		"data": {`data: {"error":{"message":"The server is overloaded","type":"server_error","code":null}}` + "\n\n", "The server is overloaded",
			http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamError, "the model provider reported an error"},
		"event": {"event: error\ndata: {\"message\":\"The server is overloaded\"}\n\n", "The server is overloaded",
			http.StatusBadGateway, api.ErrTypeUpstream, provider.CodeUpstreamError, "the model provider reported an error"},
		"data overloaded_error": {`data: {"error":{"message":"Overloaded","type":"overloaded_error"}}` + "\n\n", "Overloaded",
			http.StatusServiceUnavailable, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded"},
		"event server_is_overloaded": {"event: error\ndata: {\"type\":\"error\",\"error\":{\"code\":\"server_is_overloaded\",\"message\":\"Our servers are currently overloaded.\"}}\n\n",
			"Our servers are currently overloaded.", http.StatusServiceUnavailable, api.ErrTypeServiceUnavailable, provider.CodeServerOverloaded, "the model provider is overloaded"},
	} {
		t.Run(name, func(t *testing.T) {
			p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
				sseHeaders(w)
				writeSSE(w, chunk(`{"index":0,"delta":{"content":"par"},"finish_reason":null}`))
				_, _ = fmt.Fprint(w, tc.ev)
			})
			_, err := p.Stream(context.Background(), hi, collect(new([]provider.Delta)))
			e := apiErr(t, err, tc.status, tc.typ, tc.code)
			contains(t, "message", e.Message, tc.message)
			contains(t, "cause", e.Err.Error(), tc.said)
		})
	}
}

// A streamed call hands its connection back to the pool: the stream is
// read to its end after [DONE], so the next call (here, streamed and not)
// goes over the same connection instead of dialing (with TLS, a handshake
// a model call).
func TestStreamReusesConnection(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		if r.Header.Get("Accept") == "text/event-stream" {
			sseReply(chunk(`{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}`))(w, r)
			// The body's last chunk follows [DONE] in a packet of its
			// own, a little later, as over a network.
			time.Sleep(10 * time.Millisecond)
			return
		}
		jsonReply(200, okCompletion)(w, r)
	})
	for range 3 {
		if _, err := p.Stream(context.Background(), hi, func(provider.Delta) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Complete(context.Background(), hi); err != nil {
		t.Fatal(err)
	}
	if len(remotes) != 1 {
		t.Errorf("4 calls used %d connections, want 1", len(remotes))
	}
}

// A server that keeps its response open after [DONE] does not hold the
// call: what follows [DONE] is awaited only briefly.
func TestStreamDoneServerKeepsOpen(t *testing.T) {
	release := make(chan struct{})
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		sseReply(chunk(`{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}`))(w, r)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	done := make(chan error, 1)
	go func() {
		res, err := p.Stream(context.Background(), hi, func(provider.Delta) error { return nil })
		if err == nil && res.Text != "ok" {
			err = fmt.Errorf("text %q", res.Text)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call waited for the end of a response that stays open after [DONE]")
	}
}

// An error answer (429, 500, 400) of a size a backend sends is read to its
// end, so the connection serves the next call (the caller's retry): four
// calls, three refused, one connection. A non-streaming completion sent
// chunked, its end a little after the rest, does not close it either.
func TestErrorsReuseConnection(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	calls := 0
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		calls++
		n := calls
		mu.Unlock()
		switch n {
		case 1:
			jsonReply(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)(w, r)
		case 2:
			jsonReply(http.StatusInternalServerError, `{"error":{"message":"oops"}}`)(w, r)
		case 3:
			jsonReply(http.StatusBadRequest, `{"error":{"message":"bad","type":"invalid_request_error"}}`)(w, r)
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, okCompletion)
			_ = http.NewResponseController(w).Flush()
			time.Sleep(10 * time.Millisecond)
		}
	})
	for i := range 4 {
		_, err := p.Complete(context.Background(), hi)
		if (err == nil) != (i == 3) {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if len(remotes) != 1 {
		t.Errorf("4 calls used %d connections, want 1", len(remotes))
	}
}

// An error answer longer than what is read of it (the first 64 KiB, for
// its message) is drained up to egress.MaxDrain more before its body is
// closed, so the connection serves the next call: closed unread, net/http
// closed it and the retry dialed again.
func TestLongErrorReusesConnection(t *testing.T) {
	var mu sync.Mutex
	remotes := map[string]bool{}
	page := `{"error":{"message":"` + strings.Repeat("x", 100<<10) + `"}}`
	p, _ := newBackend(t, openai.Config{}, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remotes[r.RemoteAddr] = true
		mu.Unlock()
		jsonReply(http.StatusInternalServerError, page)(w, r)
	})
	for range 2 {
		if _, err := p.Complete(context.Background(), hi); err == nil {
			t.Fatal("a 500 was not an error")
		}
	}
	if len(remotes) != 1 {
		t.Errorf("2 calls used %d connections, want 1", len(remotes))
	}
}
