package api

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/lambent/lambent/internal/wirejson"
)

// FuzzDecodeCreateRequest: any body either decodes into a valid request
// that re-validates and marshals, or fails with a 4xx *Error in the OpenAI
// error shape; never a panic. The corpus holds the shapes the OpenAI API
// accepts and the bodies official clients send.
func FuzzDecodeCreateRequest(f *testing.F) {
	addCreateSeeds(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, ok := requireDecoded(t, DecodeCreateRequest, body)
		if ok && len(req.Input) == 0 && req.PreviousResponseID == "" {
			t.Fatalf("empty input accepted")
		}
	})
}

// FuzzDecodeInputTokensRequest: any body of POST
// /v1/responses/input_tokens either decodes into a request that
// re-validates and whose input marshals, or fails with a 4xx *Error in the
// OpenAI error shape; never a panic. Its corpus is the create request's.
func FuzzDecodeInputTokensRequest(f *testing.F) {
	addCreateSeeds(f)
	f.Add([]byte(`{"model":"m","input":"x","tools":[],"truncation":"auto","parallel_tool_calls":false}`))
	f.Add([]byte(`{"input":"x","stream":true}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		requireDecoded(t, DecodeInputTokensRequest, body)
	})
}

// requireDecoded decodes body with decode and fails t unless it fails
// with a client error (requireClientError) or gives a request that
// re-validates and whose input marshals; ok reports the latter.
func requireDecoded(t *testing.T, decode func([]byte) (*CreateResponseRequest, error), body []byte) (req *CreateResponseRequest, ok bool) {
	t.Helper()
	req, err := decode(body)
	if err != nil {
		requireClientError(t, err)
		return nil, false
	}
	if err := req.Validate(); err != nil {
		t.Fatalf("decoded request does not validate: %v", err)
	}
	if _, err := json.Marshal(req.Input); err != nil {
		t.Fatalf("decoded input does not marshal: %v", err)
	}
	return req, true
}

// requireClientError fails t unless err is a 4xx *Error that marshals in
// the OpenAI error shape (a message and a type).
func requireClientError(t *testing.T, err error) {
	t.Helper()
	var ae *Error
	if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
		t.Fatalf("error is not a 4xx *Error: %#v", err)
	}
	var env struct {
		Error struct{ Message, Type string } `json:"error"`
	}
	b, err := json.Marshal(ErrorBody{Error: ae})
	if err != nil || json.Unmarshal(b, &env) != nil || env.Error.Message == "" || env.Error.Type == "" {
		t.Fatalf("error is not in the OpenAI error shape: %s (%v)", b, err)
	}
}

// addCreateSeeds adds the create-request corpus to f: the shapes the OpenAI
// API accepts, faulty ones, and the bodies official clients send.
func addCreateSeeds(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hello"}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}],"stream":true}`,
		`{"input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}],"previous_response_id":"resp_1"}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"lambent:calculator"}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}}`,
		`{"input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object"}}},"metadata":{"a":"b"}}`,
		`{"input":[{"role":"user","content":"x"},{"type":"compaction","id":"cmp_1","encrypted_content":"k.AAAA"}]}`,
		`{"input":42}`, `{"input":"x","tools":{}}`, `[]`, `null`, `{"input":[{"type":"nope"}]}`, `{"input":"x","tool_choice":{"type":"function"}}`,
		// Shapes the OpenAI API accepts: empty objects, nulls, every parameter.
		`{"input":"x","text":{},"reasoning":{},"stream_options":{},"prompt_cache_options":{},"context_management":[]}`,
		`{"input":"x","text":{"format":null,"verbosity":"low"},"reasoning":{"effort":null,"generate_summary":"auto"},"conversation":null,"prompt":null,"moderation":null}`,
		`{"input":"x","text":{"format":{}}}`, `{"input":"x","text":{"format":{"type":"text","name":"n"}}}`,
		`{"input":"x","include":["message.input_image.image_url"],"prompt_cache_key":"k","prompt_cache_retention":"24h","safety_identifier":"s",` +
			`"service_tier":"fast","truncation":"auto","top_logprobs":20,"stream":true,"stream_options":{"include_obfuscation":false},"max_tool_calls":1,` +
			`"metadata":{"k":"v"},"user":"u","background":true,"store":true,"instructions":"i","presence_penalty":-2,"frequency_penalty":2,"max_output_tokens":16}`,
		`{"input":"x","temperature":2.5}`, `{"input":"x","max_output_tokens":15}`, `{"input":"x","conversation":{"id":"c"}}`,
		`{"input":"x","prompt":{"id":"p"}}`, `{"input":"x","prompt_cache_options":{"prewarm":true}}`, `{"input":"x","access_programs":{"cyber":"standard"},"image":{"context_compression":"auto"}}`, `{"input":"x","background":true,"background_options":{"completion_window":"8h","continuation_id":"c"}}`,
		`{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"mcp","server_label":"s"}}`,
		`{"input":[{"id":"msg_1"},{"type":null,"id":"msg_2"},{"type":"item_reference","id":"msg_3"}]}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","file_id":"f","detail":"original"},{"type":"input_file","file_url":"https://x","detail":"low"}]}]}`,
		`{"input":[{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"t","annotations":[],"logprobs":[]},{"type":"refusal","refusal":"r"}]}]}`,
		`{"input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}","status":"completed"},` +
			`{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]}`,
		`{"input":[{"type":"mcp_call","id":"mcp_1","server_label":"lambent","name":"calculator","arguments":"{}","output":"2","error":null,"status":"completed"},` +
			`{"type":"mcp_call","id":"mcp_2","server_label":"lambent","name":"c","arguments":"{}","error":{"type":"mcp_tool_execution_error","content":[{"type":"text","text":"e"}]},"status":"failed"},` +
			`{"type":"mcp_call","id":"mcp_3","name":"c","error":"boom","status":"calling"}]}`,
		`{"input":[{"type":"web_search_call","status":"completed","action":{"type":"search","query":"q","queries":["q"]}},{"type":"web_search_call","id":"ws_1","status":"searching",` +
			`"action":{"type":"open_page","url":"https://x"}},{"type":"web_search_call","action":{"type":"find_in_page","url":"u","pattern":"p","sources":[{"type":"url","url":"u"}]}},{"type":"web_search_call"}]}`,
		`{"input":[{"type":"tool_search_call","call_id":"s","execution":"client","arguments":{"query":"q","limit":1}},{"type":"tool_search_output","call_id":"s","execution":"client",` +
			`"tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}]},{"type":"tool_search_call","call_id":null,"arguments":"x"},` +
			`{"type":"tool_search_output","tools":[]}]}`,
		`{"input":[{"type":"tool_search_call"}]}`, `{"input":[{"type":"tool_search_output","tools":[{}]}]}`, `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`,
		`{"input":[{"type":"web_search_call","action":"search"}]}`, `{"input":[{"type":"web_search_call","action":{"type":"search","x":[[[[[[[[]]]]]]]]}}]}`,
		`{"input":[{"type":"computer_call","call_id":"c"}]}`, `{"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","status":"done"}]}`,
	} {
		f.Add([]byte(s))
	}
	for _, c := range clientBodies(f) {
		f.Add([]byte(c.Body))
	}
}

// FuzzUnmarshalMatchesEncodingJSON holds unmarshal's fast pass to
// encoding/json: for the body and, recursively, every value inside it,
// wirejson decodes each of the types the request decoders decode into
// exactly when encoding/json does, into the same value. unmarshal trusts
// the fast pass's success, so this is what keeps the 400s and the values
// of DecodeCreateRequest those of encoding/json.
func FuzzUnmarshalMatchesEncodingJSON(f *testing.F) {
	addCreateSeeds(f)
	for _, s := range []string{`"\ud800"`, "\"\xff\"", `{"Type":"x","TYPE":"y"}`, `{"a":1,"a":2}`, `[1,]`, `1e400`, `-0`, `{"id":"a" } x`, ` [ ] `, `"\u0000"`} {
		f.Add([]byte(s))
	}
	targets := []func() any{
		func() any { return new(map[string]json.RawMessage) }, func() any { return new([]json.RawMessage) },
		func() any { return new(string) }, func() any { return new(*bool) }, func() any { return new(*float64) },
		func() any { return new(*int64) }, func() any { return new(map[string]string) }, func() any { return new([]string) },
		func() any { return new(wireItemIn) }, func() any { return new(wirePartIn) }, func() any { return new(wireTool) },
		func() any { return new(StreamOptions) }, func() any { return new([]ToolRef) }, func() any { return new(MCPTool) },
		// Arrays of them: each element by its UnmarshalJSON.
		func() any { return new([]Item) }, func() any { return new([]ContentPart) }, func() any { return new([]Tool) },
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var check func(data []byte, depth int)
		check = func(data []byte, depth int) {
			for _, target := range targets {
				fast, slow := target(), target()
				fastErr, slowErr := wirejson.Unmarshal(data, fast), json.Unmarshal(data, slow)
				if (fastErr == nil) != (slowErr == nil) {
					t.Fatalf("%T from %q: wirejson %v, encoding/json %v", fast, data, fastErr, slowErr)
				}
				if fastErr == nil && !reflect.DeepEqual(fast, slow) {
					t.Fatalf("%T from %q: wirejson %#v, encoding/json %#v", fast, data, fast, slow)
				}
			}
			if depth == 0 {
				return
			}
			var fields map[string]json.RawMessage
			var elems []json.RawMessage
			if json.Unmarshal(data, &fields) == nil {
				for _, v := range fields {
					check(v, depth-1)
				}
			} else if json.Unmarshal(data, &elems) == nil {
				for _, v := range elems {
					check(v, depth-1)
				}
			}
		}
		check(body, 6)
	})
}

// FuzzDecodeCompactRequest: any body of POST /v1/responses/compact either
// decodes into a request with input or previous_response_id whose input
// marshals, or fails with a 4xx *Error in the OpenAI error shape; never a
// panic. Its corpus is the create request's, with the compact ones.
func FuzzDecodeCompactRequest(f *testing.F) {
	addCreateSeeds(f)
	f.Add([]byte(`{"model":"m","input":[{"role":"user","content":"x"}],"instructions":"i","prompt_cache_key":"k"}`))
	f.Add([]byte(`{"model":"m","previous_response_id":"resp_1","service_tier":"auto"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeCompactRequest(body)
		if err != nil {
			requireClientError(t, err)
			return
		}
		if len(req.Input) == 0 && req.PreviousResponseID == "" {
			t.Fatalf("compact request without input or previous_response_id accepted: %s", body)
		}
		if _, err := json.Marshal(req.Input); err != nil {
			t.Fatalf("decoded input does not marshal: %v", err)
		}
	})
}

// FuzzDecodeConversation: any body of the Conversations API's writes
// (create, add items, update metadata) either decodes into items that
// marshal and metadata within its limits, or fails with a 4xx *Error in
// the OpenAI error shape; never a panic.
func FuzzDecodeConversation(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `{"items":null,"metadata":null}`, `{"metadata":{"a":"b"}}`, `{"metadata":{"a":null}}`,
		`{"items":[{"role":"user","content":"hi"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"t"}]}]}`,
		`{"items":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"items":[]}`, `{"items":{}}`, `{"items":[{"type":"item_reference","id":"msg_1"}]}`, `{"x":1}`, `[]`, `null`, `{"metadata":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkItems := func(items []Item) {
			if _, err := json.Marshal(items); err != nil {
				t.Fatalf("decoded items do not marshal: %v", err)
			}
		}
		if c, err := DecodeConversationCreate(body); err != nil {
			requireClientError(t, err)
		} else {
			checkItems(c.Items)
			if err := ValidateMetadata(c.Metadata); err != nil {
				t.Fatalf("decoded metadata does not validate: %v", err)
			}
		}
		if c, err := DecodeConversationItems(body); err != nil {
			requireClientError(t, err)
		} else {
			if len(c.Items) == 0 {
				t.Fatalf("no items accepted: %s", body)
			}
			checkItems(c.Items)
		}
		if m, err := DecodeMetadataUpdate(body); err != nil {
			requireClientError(t, err)
		} else if err := ValidateMetadata(m); err != nil {
			t.Fatalf("decoded metadata does not validate: %v", err)
		}
	})
}
