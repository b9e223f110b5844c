package openai

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

func TestTransportErrorMapping(t *testing.T) {
	wrap := func(err error) error { return &url.Error{Op: "Post", URL: "http://x/v1/chat/completions", Err: err} }
	cases := []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"dns", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}), 502, provider.CodeUpstreamUnreachable},
		{"dial timeout", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}), 502, provider.CodeUpstreamUnreachable},
		{"header timeout", wrap(timeoutErr{}), 504, provider.CodeUpstreamTimeout},
		{"reset", wrap(&net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}), 502, provider.CodeUpstreamError},
		{"eof", wrap(io.EOF), 502, provider.CodeUpstreamError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := transportError(context.Background(), tc.err)
			if e.Status != tc.status || e.Code != tc.code || e.Type != api.ErrTypeUpstream || !errors.Is(e, tc.err) {
				t.Errorf("got %d %s %q", e.Status, e.Code, e.Message)
			}
			if strings.Contains(e.Message, "http://x") {
				t.Errorf("message %q names the URL", e.Message)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// The SSE parser works whatever the read sizes are.
func TestDecodeStreamReadSizes(t *testing.T) {
	body := streamBody(3, 50)
	want, err := decodeStream(bytes.NewReader(body), "m", func(provider.Delta) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]io.Reader{
		"one byte": iotest.OneByteReader(bytes.NewReader(body)),
		"half":     iotest.HalfReader(bytes.NewReader(body)),
	} {
		got, err := decodeStream(r, "m", func(provider.Delta) error { return nil })
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Text != want.Text || len(got.ToolCalls) != 3 || !reflect.DeepEqual(got.ToolCalls[2], want.ToolCalls[2]) || got.Usage != want.Usage {
			t.Errorf("%s: result differs: %+v", name, got)
		}
	}
	if !reflect.DeepEqual(want.ToolCalls[1], api.Item{Type: api.ItemFunctionCall, CallID: "call_1", Name: "lookup", Arguments: `{"query":"item 1","limit":10}`}) {
		t.Errorf("tool call = %+v", want.ToolCalls[1])
	}
}

func TestDecodeStreamReadError(t *testing.T) {
	body := streamBody(0, 5)
	r := io.MultiReader(bytes.NewReader(body[:len(body)/2]), iotest.ErrReader(errors.New("boom")))
	_, err := decodeStream(r, "m", func(provider.Delta) error { return nil })
	var re *readError
	if !errors.As(err, &re) {
		t.Fatalf("err = %T %v, want a readError", err, err)
	}
}

// streamBody is a realistic streamed completion: text deltas, then
// parallel tool calls with their arguments split over chunks, then usage.
func streamBody(calls, words int) []byte {
	var b bytes.Buffer
	head := `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[`
	tail := `],"usage":null}`
	fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}%s\n\n", head, tail)
	for i := range words {
		fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{\"content\":\" word%d\"},\"logprobs\":null,\"finish_reason\":null}%s\n\n", head, i, tail)
	}
	for i := range calls {
		fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"call_%d\",\"type\":\"function\",\"function\":{\"name\":\"lookup\",\"arguments\":\"\"}}]},\"logprobs\":null,\"finish_reason\":null}%s\n\n", head, i, i, tail)
		for _, frag := range []string{`{\"query\"`, `:\"item `, fmt.Sprint(i), `\",\"limit\"`, `:10}`} {
			fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"%s\"}}]},\"logprobs\":null,\"finish_reason\":null}%s\n\n", head, i, frag, tail)
		}
	}
	finish := "stop"
	if calls > 0 {
		finish = "tool_calls"
	}
	fmt.Fprintf(&b, "data: %s{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"%s\"}%s\n\n", head, finish, tail)
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\",\"created\":1741570283,\"model\":\"gpt-4o-2024-08-06\",\"choices\":[],\"usage\":{\"prompt_tokens\":120,\"completion_tokens\":%d,\"total_tokens\":%d,\"prompt_tokens_details\":{\"cached_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0}}}\n\n", words, 120+words)
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// BenchmarkStreamDecode measures the SSE parser and chunk decoder on a
// 200-chunk text answer and on a 2-call tool answer; ns/op divided by the
// chunk count is the per-chunk cost the gateway adds.
func BenchmarkStreamDecode(b *testing.B) {
	for _, bc := range []struct {
		name         string
		calls, words int
	}{{"text200", 0, 200}, {"tools2", 2, 10}} {
		body := streamBody(bc.calls, bc.words)
		chunks := bytes.Count(body, []byte("\n\n"))
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			r := bytes.NewReader(body)
			n := 0
			fn := func(provider.Delta) error { n++; return nil }
			for b.Loop() {
				r.Reset(body)
				if _, err := decodeStream(r, "m", fn); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunks), "ns/chunk")
		})
	}
}

// BenchmarkBuildRequest measures the request translation and encoding of
// a mid-sized agentic conversation.
func BenchmarkBuildRequest(b *testing.B) {
	req := &provider.Request{Model: "m", Instructions: "You are a helpful assistant.",
		Tools:      []api.ToolDefinition{{Name: "lookup", Description: "Look something up", Parameters: []byte(`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`)}},
		ToolChoice: "auto", MaxOutputTokens: new(int), Temperature: new(float64)}
	for i := range 5 {
		req.Items = append(req.Items,
			api.Item{Type: api.ItemMessage, Role: api.RoleUser, Content: []api.ContentPart{{Type: api.PartInputText, Text: strings.Repeat("Tell me about item. ", 20)}}},
			api.Item{Type: api.ItemFunctionCall, CallID: fmt.Sprint("call_", i), Name: "lookup", Arguments: `{"query":"item","limit":10}`},
			api.Item{Type: api.ItemFunctionCallOutput, CallID: fmt.Sprint("call_", i), Output: strings.Repeat("result line\n", 30)},
			api.Item{Type: api.ItemMessage, Role: api.RoleAssistant, Content: []api.ContentPart{{Type: api.PartOutputText, Text: strings.Repeat("Here is what I found. ", 15)}}},
		)
	}
	b.ReportAllocs()
	var body []byte
	for b.Loop() {
		cr, err := buildRequest(req, true, TokenLimitByModel)
		if err != nil {
			b.Fatal(err)
		}
		if body, _, _, err = encodeRequest(cr, body[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// completionBody is the fake model's non-streaming answer to
// BenchmarkGateway's request.
const completionBody = `{"id":"chatcmpl-39evphkg1","object":"chat.completion","created":1795827915,"model":"gpt-4o-mini","service_tier":"default","system_fingerprint":"fp_fakellm","choices":[{"index":0,"message":{"role":"assistant","content":"Hello! This is a short answer from the fake backend, sent word by word.","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":16,"total_tokens":28,"prompt_tokens_details":{"cached_tokens":0,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`

// BenchmarkDecodeCompletion measures the decoding of a non-streaming
// answer (what Complete does after reading the body).
func BenchmarkDecodeCompletion(b *testing.B) {
	body := []byte(completionBody)
	b.ReportAllocs()
	for b.Loop() {
		// Complete decodes a body of its own: a copy, as readBody's.
		res, err := decodeCompletion(bytes.Clone(body), "m")
		if err != nil || res.Text == "" {
			b.Fatal(res, err)
		}
	}
}

// A stream whose answer grows past maxResponseBody (an endless stream, a
// model repeating itself) fails with a 502 instead of growing the
// gateway's memory without bound: text, reasoning and tool arguments
// alike, as a non-streaming answer is bounded.
func TestDecodeStreamAnswerBounded(t *testing.T) {
	const piece = 1 << 20
	big := strings.Repeat("x", piece)
	for name, delta := range map[string]string{
		"text":      `{"content":"` + big + `"}`,
		"reasoning": `{"reasoning_content":"` + big + `"}`,
		"arguments": `{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"` + big + `"}}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			ev := []byte(`data: {"choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n")
			var parts []io.Reader
			for range maxResponseBody/piece + 1 {
				parts = append(parts, bytes.NewReader(ev))
			}
			parts = append(parts, strings.NewReader("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"))
			res, err := decodeStream(io.MultiReader(parts...), "m", func(provider.Delta) error { return nil })
			var e *api.Error
			if !errors.As(err, &e) || e.Status != 502 || e.Code != provider.CodeUpstreamBadResponse {
				n := 0
				if res != nil {
					n = len(res.Text) + len(res.Reasoning)
					for _, c := range res.ToolCalls {
						n += len(c.Arguments)
					}
				}
				t.Fatalf("err = %v (answer of %d bytes), want a 502 %s", err, n, provider.CodeUpstreamBadResponse)
			}
		})
	}
}
