package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/wirejson"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/provider"
)

var payloadCorpus = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
	`{"choices":[{"index":0,"delta":{"content":"caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \b\f\n\r\t"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":"héllo 世界 😀"}}]}`,
	"{\n  \"model\" : \"m\" ,\n  \"choices\" : [ { \"index\" : 0 , \"message\" : { \"role\" : \"assistant\" , \"content\" : \"x\" } , \"finish_reason\" : \"stop\" } ] \n}\n",
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":[1,2.5e-3,true,null]}"}}]}}]}`,
	`{"choices":[{"index":0,"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"a": [1, {"b": "c"}]}}}]},"finish_reason":"tool_calls"}]}`,
	`{"choices":[{"index":0,"message":{"tool_calls":[{"index":null,"id":null,"function":null},{"function":{"name":null,"arguments":null}}]}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":1}}}`,
	`{"choices":null,"usage":null,"model":null}`,
	`{"error":{"message":"overloaded","type":"server_error","code":null}}`,
	`{"error":"plain"}`,
	`{"error":null}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"r1","reasoning":"r2"}},{"index":1,"delta":{"content":"other"},"finish_reason":"length"}]}`,
	`{"model":"a","model":"b","choices":[{"index":0,"delta":{"content":"1","content":"2"}}]}`,
	`{"x":{"deep":[[[{"k":[-0,1E+2,3.0e1,"s\u0041"]}]]]},"y":[],"z":{}}`,
	`{"choices":[{"index":0,"delta":{"con\u0074ent":"escaped key"}}]}`,
	`{"choices":[{"index":0,"logprobs":{"content":[{"token":"Hi","logprob":-0.1,"bytes":[72,105],"top_logprobs":[]}]},"delta":{"content":"Hi"}}]}`,
	`{}`,
	`{"choices":[{"index":0,"delta":{"Content":"upper case key"}}]}`,
	`{"choices":[{"index":1.0,"delta":{"content":"x"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"lone \ud83d surrogate"}}]}`,
	"{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"bad \xff utf8\"}}]}",
	`{"choices":[{"index":0,"delta":{"content":["array"]}}]}`,
	`{"choices":"nope"}`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]`,
	`{"choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
	`{"a":01}`,
	`{"a":"bad \q escape"}`,
	`{"a":"ctl` + "\x01" + `"}`,
	`null`,
	``,
	`{"usage":"x"}`,
	`{"a":tru}`,
}

// decodeChunk decodes data as the one chunk of a stream ended by [DONE],
// recording the deltas.
func decodeChunk(data []byte) (*streamResult, []provider.Delta, error) {
	var ds []provider.Delta
	body := append(append([]byte("data: "), data...), "\n\ndata: [DONE]\n\n"...)
	res, err := decodeStream(bytes.NewReader(body), "m", func(d provider.Delta) error {
		ds = append(ds, d)
		return nil
	})
	return res, ds, err
}

// A chunk decodes as encoding/json reads it: the last of repeated keys,
// keys matched case-insensitively, null as absent, invalid UTF-8 replaced.
func TestDecodeChunk(t *testing.T) {
	usage := api.Usage{InputTokens: 9, OutputTokens: 2, TotalTokens: 11,
		InputTokensDetails: api.InputTokensDetails{CachedTokens: 4}, OutputTokensDetails: api.OutputTokensDetails{ReasoningTokens: 1}}
	for _, tc := range []struct {
		in   string
		want provider.Result
	}{
		{payloadCorpus[0], provider.Result{Model: "gpt-4o"}},
		{payloadCorpus[1], provider.Result{Text: "café 😀 \"q\" \\ / \b\f\n\r\t"}},
		{payloadCorpus[2], provider.Result{Text: "héllo 世界 😀"}},
		{payloadCorpus[4], provider.Result{ToolCalls: []api.Item{{Type: api.ItemFunctionCall, CallID: "call_1", Name: "f", Arguments: `{"a":[1,2.5e-3,true,null]}`}}, FinishReason: provider.FinishToolCalls}},
		{payloadCorpus[7], provider.Result{Usage: usage}},
		{payloadCorpus[8], provider.Result{}},
		{payloadCorpus[11], provider.Result{}},
		{payloadCorpus[12], provider.Result{Reasoning: "r1"}},
		{`{"choices":[{"index":0,"delta":{"reasoning":"r2"}}]}`, provider.Result{Reasoning: "r2"}},
		{payloadCorpus[13], provider.Result{Text: "2", Model: "b"}},
		{payloadCorpus[14], provider.Result{}},
		{payloadCorpus[15], provider.Result{Text: "escaped key"}},
		{payloadCorpus[16], provider.Result{Text: "Hi"}},
		{payloadCorpus[17], provider.Result{}},
		{payloadCorpus[18], provider.Result{Text: "upper case key"}},
		{payloadCorpus[20], provider.Result{Text: "lone \ufffd surrogate"}},
		{payloadCorpus[21], provider.Result{Text: "bad \ufffd utf8"}},
		{payloadCorpus[29], provider.Result{}},
		{`{"choices":[{"index":0,"delta":null,"finish_reason":"length"}]}`, provider.Result{FinishReason: provider.FinishLength}},
		{`{"choices":[{"index":0,"delta":{"refusal":"no","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":{"x":1}}}]}}]}`,
			provider.Result{Refusal: "no", ToolCalls: []api.Item{{Type: api.ItemFunctionCall, CallID: "c", Name: "f", Arguments: `{"x":1}`}}, FinishReason: provider.FinishToolCalls}},
	} {
		res, _, err := decodeChunk([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		want := tc.want
		if want.Model == "" {
			want.Model = "m"
		}
		if want.FinishReason == "" {
			want.FinishReason = provider.FinishStop
		}
		if !reflect.DeepEqual(res.Result, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, res.Result, want)
		}
	}

	// A call without index or id gets an id; its empty arguments are {}.
	res, _, err := decodeChunk([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":null,"id":null,"function":null},{"function":{"name":null,"arguments":null}}]}}]}`))
	if err != nil || len(res.ToolCalls) != 1 || !strings.HasPrefix(res.ToolCalls[0].CallID, "call_") || res.ToolCalls[0].Arguments != "{}" {
		t.Errorf("null tool call fields: %+v %v", res, err)
	}

	for _, in := range []string{payloadCorpus[9], payloadCorpus[10]} {
		_, _, err := decodeChunk([]byte(in))
		var e *api.Error
		if !errors.As(err, &e) || e.Code != provider.CodeUpstreamError || (!strings.Contains(e.Err.Error(), "overloaded") && !strings.Contains(e.Err.Error(), "plain")) {
			t.Errorf("%s: err = %v", in, err)
		}
	}
	deep := `{"x":` + strings.Repeat("[", 100000) + `}`
	malformed := append([]string{deep, payloadCorpus[19]}, payloadCorpus[22:29]...)
	for _, in := range append(malformed, payloadCorpus[31:]...) {
		_, _, err := decodeChunk([]byte(in))
		var e *api.Error
		if !errors.As(err, &e) || e.Code != provider.CodeUpstreamBadResponse {
			t.Errorf("%.40q: err = %v, want a bad response", in, err)
		}
	}
}

// The chunks of a stream are decoded into one reused value: nothing of a
// chunk (a delta's text, a choice's index, the finish reason) is seen again
// in the chunks after it that leave it out.
func TestDecodeChunksReuseNothing(t *testing.T) {
	var body []byte
	for _, c := range []string{
		`{"model":"a","choices":[{"index":1,"delta":{"content":"other"},"finish_reason":"length"}]}`,
		`{"choices":[{"delta":{"role":"assistant","content":"x","refusal":"r"}}],"usage":{"prompt_tokens":1,"completion_tokens":2}}`,
		`{"choices":[{"index":0,"delta":{}}]}`,
		`{"choices":[{"delta":{"content":"y"}}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning":"z"},"finish_reason":"stop"}]}`,
	} {
		body = append(append(append(body, "data: "...), c...), "\n\n"...)
	}
	body = append(body, "data: [DONE]\n\n"...)
	var ds []provider.Delta
	res, err := decodeStream(bytes.NewReader(body), "m", func(d provider.Delta) error {
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.Delta{{Kind: provider.DeltaText, Text: "x"}, {Kind: provider.DeltaRefusal, Text: "r"},
		{Kind: provider.DeltaText, Text: "y"}, {Kind: provider.DeltaReasoning, Text: "z"}}
	for i := range ds {
		ds[i].More = false
	}
	if !reflect.DeepEqual(ds, want) {
		t.Errorf("deltas = %+v\nwant %+v", ds, want)
	}
	if res.Model != "a" || res.FinishReason != provider.FinishStop || res.Usage.TotalTokens != 3 {
		t.Errorf("result = %+v", res.Result)
	}

	// Nor is a tool call's id, name or index seen in the next chunk's call.
	body = body[:0]
	for _, c := range []string{
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"{\"a\":1}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"[]"}}]},"finish_reason":"tool_calls"}]}`,
	} {
		body = append(append(append(body, "data: "...), c...), "\n\n"...)
	}
	body = append(body, "data: [DONE]\n\n"...)
	res, err = decodeStream(bytes.NewReader(body), "m", func(provider.Delta) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[0].CallID != "c1" || res.ToolCalls[0].Arguments != `{}{"a":1}` ||
		res.ToolCalls[1].CallID == "c1" || res.ToolCalls[1].Name != "" || res.ToolCalls[1].Arguments != "[]" {
		t.Errorf("tool calls = %+v", res.ToolCalls)
	}
}

// decodeCompletion reads a completion's message; arguments may be an
// object, and null or absent fields are empty.
func TestDecodeCompletionPayloads(t *testing.T) {
	res, err := decodeCompletion([]byte(payloadCorpus[3]), "req")
	if err != nil || res.Text != "x" || res.Model != "m" || res.FinishReason != provider.FinishStop {
		t.Errorf("spaced completion: %+v %v", res, err)
	}
	res, err = decodeCompletion([]byte(payloadCorpus[5]), "req")
	if err != nil || len(res.ToolCalls) != 1 || !reflect.DeepEqual(res.ToolCalls[0], api.Item{Type: api.ItemFunctionCall, CallID: "c", Name: "f", Arguments: `{"a": [1, {"b": "c"}]}`}) || res.Model != "req" {
		t.Errorf("object arguments: %+v %v", res, err)
	}
	res, err = decodeCompletion([]byte(`{"choices":[{"index":0,"message":null,"finish_reason":null}]}`), "req")
	if err != nil || res.Text != "" || res.FinishReason != provider.FinishStop {
		t.Errorf("null message: %+v %v", res, err)
	}
	for _, in := range []string{``, `null`, `{"choices":[{"index":0,"message":{"content":["array"]}}]}`} {
		if _, err := decodeCompletion([]byte(in), "req"); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// FuzzDecodeChunk feeds any bytes to the stream and completion decoders:
// they fail only with a 502 *api.Error, and what they accept is
// consistent (the deltas add up to the result, every call has an id and
// arguments).
func FuzzDecodeChunk(f *testing.F) {
	for _, s := range payloadCorpus {
		f.Add([]byte(s))
	}
	for _, chunk := range bytes.Split(streamBody(2, 3), []byte("\n\n")) {
		f.Add(bytes.TrimPrefix(chunk, []byte("data: ")))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		badGateway := func(err error) {
			var e *api.Error
			if !errors.As(err, &e) || e.Status != http.StatusBadGateway {
				t.Fatalf("decoding %q: err = %v, want a 502 *api.Error", b, err)
			}
		}
		checkCalls := func(calls []api.Item, finish string) {
			for _, c := range calls {
				if c.CallID == "" || c.Arguments == "" {
					t.Fatalf("decoding %q: call %+v", b, c)
				}
			}
			if len(calls) > 0 && finish != provider.FinishToolCalls {
				t.Fatalf("decoding %q: finish %q with tool calls", b, finish)
			}
		}
		if res, err := decodeCompletion(b, "m"); err != nil {
			badGateway(err)
		} else {
			checkCalls(res.ToolCalls, res.FinishReason)
		}
		res, ds, err := decodeChunk(b)
		if err != nil {
			badGateway(err)
			return
		}
		checkCalls(res.ToolCalls, res.FinishReason)
		var text, reasoning, refusal strings.Builder
		args := make([]strings.Builder, len(res.ToolCalls))
		for _, d := range ds {
			switch d.Kind {
			case provider.DeltaText:
				text.WriteString(d.Text)
			case provider.DeltaReasoning:
				reasoning.WriteString(d.Text)
			case provider.DeltaRefusal:
				refusal.WriteString(d.Text)
			case provider.DeltaToolCall:
				args[d.ToolIndex].WriteString(d.Text)
			}
		}
		if text.String() != res.Text || reasoning.String() != res.Reasoning || refusal.String() != res.Refusal {
			t.Fatalf("decoding %q: deltas %+v do not add up to %+v", b, ds, res.Result)
		}
		for i, c := range res.ToolCalls {
			if a := args[i].String(); a != c.Arguments && (a != "" || c.Arguments != "{}") {
				t.Fatalf("decoding %q: call %d arguments %q, deltas %q", b, i, c.Arguments, a)
			}
		}
	})
}

// FuzzChunkDecoders: internal/wirejson (segmentio/encoding/json) decodes any bytes
// into a chatwire.Completion and into a chatwire.Chunk (what the provider
// decodes chunks and completions into) as encoding/json does: both fail,
// or both give the same value.
func FuzzChunkDecoders(f *testing.F) {
	for _, s := range payloadCorpus {
		f.Add([]byte(s))
	}
	for _, chunk := range bytes.Split(streamBody(2, 3), []byte("\n\n")) {
		f.Add(bytes.TrimPrefix(chunk, []byte("data: ")))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got, want chatwire.Completion
		err, wantErr := wirejson.Unmarshal(b, &got), json.Unmarshal(b, &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: wirejson err %v, encoding/json err %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: wirejson %+v, encoding/json %+v", b, got, want)
		}
		var gotChunk, wantChunk chatwire.Chunk
		err, wantErr = wirejson.Unmarshal(b, &gotChunk), json.Unmarshal(b, &wantChunk)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: chunk: wirejson err %v, encoding/json err %v", b, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(gotChunk, wantChunk) {
			t.Fatalf("%q: chunk: wirejson %+v, encoding/json %+v", b, gotChunk, wantChunk)
		}
	})
}
