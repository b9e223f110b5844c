package openai

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
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
	// Inputs the fast decoder must hand to encoding/json.
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

// normalize makes empty slices nil: the fast decoder leaves them nil.
func normalize(p *chatPayload) {
	if len(p.Choices) == 0 {
		p.Choices = nil
	}
	for i := range p.Choices {
		for _, m := range []*chatOutMessage{&p.Choices[i].Message, &p.Choices[i].Delta} {
			if len(m.ToolCalls) == 0 {
				m.ToolCalls = nil
			}
		}
	}
}

// checkFast asserts that when the fast decoder accepts b, it decodes it
// exactly as encoding/json does.
func checkFast(t *testing.T, b []byte) bool {
	t.Helper()
	var fast, slow chatPayload
	ok := fastDecode(b, &fast)
	jerr := json.Unmarshal(b, &slow)
	if !ok {
		return false
	}
	if jerr != nil {
		t.Fatalf("fast decoder accepted %q, encoding/json says %v", b, jerr)
	}
	normalize(&fast)
	normalize(&slow)
	if !reflect.DeepEqual(fast, slow) {
		t.Fatalf("decoding %q:\nfast %+v\njson %+v", b, fast, slow)
	}
	return true
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	accepted := 0
	for _, s := range payloadCorpus {
		if checkFast(t, []byte(s)) {
			accepted++
		}
	}
	if accepted != 18 {
		t.Errorf("fast decoder accepted %d corpus entries, want the 18 well-formed ones", accepted)
	}
	for _, chunk := range bytes.Split(streamBody(2, 3), []byte("\n\n")) {
		chunk = bytes.TrimPrefix(chunk, []byte("data: "))
		if len(chunk) == 0 || string(chunk) == "[DONE]" {
			continue
		}
		if !checkFast(t, chunk) {
			t.Errorf("fast decoder gave up on %s", chunk)
		}
	}
}

// decodePayload reports encoding/json's error for what the fast decoder
// refuses.
func TestDecodePayloadFallback(t *testing.T) {
	var p chatPayload
	if err := decodePayload([]byte(`{"choices":[{"index":0,"delta":{"Content":"x"}}]}`), &p); err != nil || p.Choices[0].Delta.Content != "x" {
		t.Errorf("fallback: %v %+v", err, p)
	}
	if err := decodePayload([]byte(`{"choices":"nope"}`), &p); err == nil {
		t.Error("no error for a malformed payload")
	}
	deep := bytes.Repeat([]byte("["), 100000)
	if err := decodePayload(append(append([]byte(`{"x":`), deep...), '}'), &p); err == nil {
		t.Error("no error for deep nesting")
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range payloadCorpus {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFast(t, b)
	})
}
