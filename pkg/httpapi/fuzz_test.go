package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakebedrock"
	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/logbuf"
)

// Placeholders of the fuzz corpus, replaced by the ids the fuzz setup
// stored: a response, one of its output items, a conversation.
const (
	fuzzResp = "$RESP"
	fuzzItem = "$ITEM"
	fuzzConv = "$CONV"
)

// The fuzz inputs are sent as tenant fuzzKey; what must never be lost is
// stored as tenant keepKey before the loop. (A tenant's own writes evict
// its oldest responses past the memory store's bounds, as documented; a
// tenant within its fair share is never evicted by another's.)
const (
	fuzzKey = "sk-fuzz-0123456789abcdef"
	keepKey = "sk-keep-0123456789abcdef"
)

// fuzzEnv is the fuzz gateways' settings: the two tenants, JSON logs.
func fuzzEnv() map[string]string {
	return map[string]string{"LAMBENT_API_KEYS": "fuzz=" + fuzzKey + ",keep=" + keepKey, "LAMBENT_LOG_FORMAT": "json"}
}

// fuzzModes are the fake model's answers a fuzz input picks by its mode
// byte: text, a call of the first tool offered (text once a tool's result
// is back), text after reasoning, calls of every tool offered at once with
// arguments that are not JSON, text cut by the output limit, a refusal.
const fuzzModes = 6

// fuzzGateway is a gateway whose model answers as the current input's
// mode says, holding a response, its item and a conversation the inputs
// refer to, and a response of tenant keepKey (keep), stored before the
// fuzz loop, with what reading it gave then.
type fuzzGateway struct {
	*gateway
	logs                   *logbuf.Buffer
	mode                   atomic.Uint32
	resp, item, conv, keep string
	keepBody, keepItems    []byte
}

// newFuzzGateway builds the real app (memory store) in front of a fake
// model and stores what the inputs refer to.
func newFuzzGateway(f *testing.F) *fuzzGateway {
	fz := &fuzzGateway{logs: &logbuf.Buffer{}}
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		msgs := req.Messages
		answered := len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool"
		switch fz.mode.Load() {
		case 1:
			if len(req.Tools) > 0 && !answered {
				return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: req.Tools[0].Function.Name, Arguments: "{}"}}}
			}
		case 2:
			return fakellm.Turn{Reasoning: "thinking", Text: `{"answer":"ok"}`}
		case 3:
			if len(req.Tools) > 0 && !answered {
				var calls []fakellm.ToolCall
				for _, tl := range req.Tools {
					calls = append(calls, fakellm.ToolCall{Name: tl.Function.Name, Arguments: `{"a":`})
				}
				return fakellm.Turn{ToolCalls: calls}
			}
		case 4:
			return fakellm.Turn{Text: `{"answer":`, FinishReason: "length"}
		case 5:
			return fakellm.Turn{Refusal: "no"}
		}
		return fakellm.Turn{Text: `{"answer":"ok"}`}
	})
	fz.gateway = newGatewayLogged(f, fake, fuzzEnv(), nil, fz.logs)
	fz.store(f)
	return fz
}

// newBedrockFuzzGateway is newFuzzGateway with the Bedrock provider, in
// front of a fake Bedrock Runtime answering text.
func newBedrockFuzzGateway(f *testing.F) *fuzzGateway {
	fz := &fuzzGateway{logs: &logbuf.Buffer{}}
	fake := fakebedrock.NewHandler(func(fakebedrock.Request) fakebedrock.Turn { return fakebedrock.Turn{Text: "ok"} })
	srv := newBedrockServer(f, fake, fuzzEnv(), fz.logs)
	fz.gateway = &gateway{t: f, srv: srv, http: srv.Client()}
	fz.store(f)
	return fz
}

// store stores what the inputs refer to, a response and a conversation,
// and the response of tenant keepKey.
func (fz *fuzzGateway) store(f *testing.F) {
	status, _, body := fz.call(f, keepKey, http.MethodPost, "/v1/responses", `{"input":"keep me","metadata":{"k":"v"}}`)
	require.Equal(f, http.StatusOK, status, "%s", body)
	fz.keep = decodeWire(f, body).ID
	status, _, body = fz.call(f, fuzzKey, http.MethodPost, "/v1/responses", `{"input":"Say hi"}`)
	require.Equal(f, http.StatusOK, status, "%s", body)
	var w struct {
		ID     string `json:"id"`
		Output []struct {
			ID string `json:"id"`
		} `json:"output"`
	}
	require.NoError(f, json.Unmarshal(body, &w))
	require.Len(f, w.Output, 1)
	fz.resp, fz.item = w.ID, w.Output[0].ID
	status, _, body = fz.call(f, fuzzKey, http.MethodPost, "/v1/conversations", `{"items":[{"role":"user","content":"hello"}]}`)
	require.Equal(f, http.StatusOK, status, "%s", body)
	var c struct{ ID string }
	require.NoError(f, json.Unmarshal(body, &c))
	fz.conv = c.ID
	fz.keepBody, fz.keepItems = fz.stored(f)
}

// stored reads the response of tenant keepKey and its input items.
func (fz *fuzzGateway) stored(t testing.TB) (resp, items []byte) {
	t.Helper()
	status, _, resp := fz.call(t, keepKey, http.MethodGet, "/v1/responses/"+fz.keep, "")
	require.Equal(t, http.StatusOK, status, "%s", resp)
	status, _, items = fz.call(t, keepKey, http.MethodGet, "/v1/responses/"+fz.keep+"/input_items", "")
	require.Equal(t, http.StatusOK, status, "%s", items)
	return resp, items
}

// call sends a request with key's bearer token (and a JSON body when
// body is not empty), failing t on a broken exchange, and returns the
// status, header and whole body.
func (fz *fuzzGateway) call(t testing.TB, key, method, path, body string) (int, http.Header, []byte) {
	t.Helper()
	g := *fz.gateway
	g.t = t
	ct := "application/json"
	if body == "" {
		ct = ""
	}
	return g.doWith(method, path, body, "Content-Type", ct, "Authorization", "Bearer "+key)
}

// fill replaces the corpus's placeholders with the stored ids.
func (fz *fuzzGateway) fill(body []byte) []byte {
	body = bytes.ReplaceAll(body, []byte(fuzzResp), []byte(fz.resp))
	body = bytes.ReplaceAll(body, []byte(fuzzItem), []byte(fz.item))
	return bytes.ReplaceAll(body, []byte(fuzzConv), []byte(fz.conv))
}

// check runs after each input: no panic was logged since the log was
// logged bytes long, and what was stored before the loop reads the same.
func (fz *fuzzGateway) check(t *testing.T, logged int) {
	t.Helper()
	if l := fz.logs.String()[logged:]; strings.Contains(l, "panic") {
		t.Fatalf("panic logged: %s", l)
	}
	resp, items := fz.stored(t)
	require.Equal(t, string(fz.keepBody), string(resp), "the stored response changed")
	require.Equal(t, string(fz.keepItems), string(items), "the stored response's input items changed")
}

// create posts body, the model answering per mode, checks the answer
// (wantAnswer; a background response is followed to its end) and then
// what was stored (check).
func (fz *fuzzGateway) create(t *testing.T, body []byte, mode uint8) {
	t.Helper()
	fz.mode.Store(uint32(mode % fuzzModes))
	logged := len(fz.logs.String())
	status, header, reply := fz.call(t, fuzzKey, http.MethodPost, "/v1/responses", string(body))
	if id := wantAnswer(t, status, header, reply, false); id != "" {
		status, header, reply = fz.call(t, fuzzKey, http.MethodGet, "/v1/responses/"+id+"?stream=true", "")
		require.Equal(t, http.StatusOK, status, "%s", reply)
		wantAnswer(t, status, header, reply, false)
	}
	fz.check(t, logged)
}

// wantAnswer asserts that a reply of status with body is no server
// error: a 4xx in the OpenAI error shape, or a 2xx whose response (or
// stream, ending with a terminal event) did not fail on the server's side.
// It returns the id of a response still queued or in progress. Only a
// resumed stream (GET, starting_after) may be empty.
func wantAnswer(t *testing.T, status int, header http.Header, body []byte, resumed bool) (pending string) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("status %d: %s", status, body)
	}
	if status >= 400 {
		wantError(t, status, body, status, "", "")
		return ""
	}
	if !strings.HasPrefix(header.Get("Content-Type"), "text/event-stream") {
		return wantNoServerFailure(t, body)
	}
	frames, done := sseFrames(t, body)
	if len(frames) == 0 {
		// A resumed stream past its last event: only the end.
		require.True(t, done && resumed, "a stream of no events: %q", body)
		return ""
	}
	last := frames[len(frames)-1]
	switch last.event {
	case "response.completed", "response.incomplete", "response.failed":
		var ev struct {
			Response json.RawMessage `json:"response"`
		}
		require.NoError(t, json.Unmarshal(last.data, &ev), "%s", last.data)
		wantNoServerFailure(t, ev.Response)
	case "error":
		if bytes.Contains(last.data, []byte(`"server_error"`)) {
			t.Fatalf("stream ended with a server error: %s", last.data)
		}
	default:
		t.Fatalf("stream ends with %q, no terminal event: %s", last.event, body)
	}
	return ""
}

// wantNoServerFailure fails t when the response raw failed with a server
// error; it returns its id when it is queued or in progress.
func wantNoServerFailure(t *testing.T, raw []byte) (pending string) {
	t.Helper()
	var r struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Error  *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	if r.Error != nil && r.Error.Code == "server_error" {
		t.Fatalf("response failed with a server error: %s", raw)
	}
	if r.Status == "queued" || r.Status == "in_progress" {
		return r.ID
	}
	return ""
}

// fuzzCreateSeeds are create bodies covering the request's parameters,
// tools of every type, input items of every type and references to what
// the fuzz setup stored.
func fuzzCreateSeeds() []string {
	return []string{
		`{"input":"hi"}`,
		`{"model":"test-model","input":"hi","stream":true}`,
		`{"input":"hi","stream":true,"stream_options":{"include_obfuscation":false}}`,
		`{"input":"hi","background":true}`,
		`{"input":"hi","background":true,"stream":true}`,
		`{"input":"hi","background":true,"store":false}`,
		`{"input":"hi","store":false}`,
		`{"input":"again","previous_response_id":"` + fuzzResp + `"}`,
		`{"input":"again","previous_response_id":"` + fuzzResp + `","stream":true,"instructions":"be brief"}`,
		`{"input":"again","previous_response_id":"` + fuzzResp + `","conversation":"` + fuzzConv + `"}`,
		`{"input":"in conv","conversation":"` + fuzzConv + `"}`,
		`{"input":"in conv","conversation":{"id":"` + fuzzConv + `"},"stream":true}`,
		`{"input":"in conv","conversation":"conv_nope"}`,
		`{"input":[{"type":"item_reference","id":"` + fuzzItem + `"},{"role":"user","content":"more"}]}`,
		`{"input":[{"type":"item_reference","id":"` + fuzzItem + `"}],"store":false}`,
		`{"input":[{"role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo=","detail":"low"}]}]}`,
		`{"input":[{"role":"user","content":[{"type":"input_file","filename":"a.txt","file_data":"data:text/plain;base64,aGk="}]}]}`,
		`{"input":[{"type":"message","role":"system","content":"sys"},{"type":"message","role":"developer","content":"dev"},{"type":"message","role":"user","content":"u"}]}`,
		`{"input":[{"type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":"t","annotations":[]},{"type":"refusal","refusal":"r"}]},{"role":"user","content":"u"}]}`,
		`{"input":[{"role":"user","content":"call"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"42"}],` +
			`"tools":[{"type":"function","name":"f","parameters":{"type":"object","properties":{}}}]}`,
		`{"input":[{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"o"}]}],"previous_response_id":"` + fuzzResp + `"}`,
		`{"input":[{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"s"}],"encrypted_content":"e"},{"role":"user","content":"u"}],"include":["reasoning.encrypted_content"]}`,
		`{"input":[{"role":"user","content":"x"},{"type":"compaction","id":"cmp_1","encrypted_content":"k.AAAA"}]}`,
		`{"input":[{"type":"mcp_list_tools","id":"mcpl_1","server_label":"s","tools":[]},{"type":"mcp_call","id":"mcp_1","server_label":"s","name":"t","arguments":"{}","output":"2"},{"role":"user","content":"u"}]}`,
		`{"input":[{"type":"mcp_approval_request","id":"mcpr_1","server_label":"s","name":"t","arguments":"{}"},{"type":"mcp_approval_response","approval_request_id":"mcpr_1","approve":true}]}`,
		`{"input":[{"type":"custom_tool_call","call_id":"c","name":"g","input":"x"},{"type":"custom_tool_call_output","call_id":"c","output":"y"}],"tools":[{"type":"custom","name":"g"}]}`,
		`{"input":[{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}},{"role":"user","content":"u"}]}`,
		`{"input":[{"type":"local_shell_call","call_id":"c","action":{"type":"exec","command":["ls"]}},{"type":"local_shell_call_output","call_id":"c","output":"x"}]}`,
		`{"input":"hi","tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false},"strict":true}],"tool_choice":"required"}`,
		`{"input":"hi","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":false}`,
		`{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`,
		`{"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":"none","max_tool_calls":1}`,
		`{"input":"hi","tools":[{"type":"function","name":"f"},{"type":"lambent:calculator"}],"tool_choice":{"type":"allowed_tools","mode":"required","tools":[{"type":"function","name":"f"}]}}`,
		`{"input":"what is 2+2","tools":[{"type":"lambent:calculator"}],"stream":true}`,
		`{"input":"hi","tools":[{"type":"lambent:output","name":"report","parameters":{"type":"object","properties":{"answer":{"type":"string"}}}}]}`,
		`{"input":"hi","tools":[{"type":"custom","name":"g","format":{"type":"grammar","syntax":"regex","definition":"[a-z]+"}}]}`,
		`{"input":"hi","tools":[{"type":"namespace","name":"n","description":"d","tools":[{"type":"function","name":"f","parameters":{"type":"object"}}]}]}`,
		`{"input":"hi","tools":[{"type":"web_search"}],"tool_choice":{"type":"web_search"}}`,
		`{"input":"hi","tools":[{"type":"web_search_preview","search_context_size":"low"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"code_interpreter","container":{"type":"auto"}}]}`,
		`{"input":"hi","tools":[{"type":"image_generation"},{"type":"computer_use_preview","display_width":1,"display_height":1,"environment":"linux"},{"type":"local_shell"},{"type":"shell"},{"type":"apply_patch"}]}`,
		`{"input":"hi","tools":[{"type":"mcp","server_label":"s","server_url":"http://127.0.0.1:1/mcp","require_approval":"never","allowed_tools":["t"]}],"tool_choice":{"type":"mcp","server_label":"s","name":"t"}}`,
		`{"input":"hi","tools":[{"type":"tool_search"}]}`,
		`{"input":"hi","text":{"format":{"type":"json_schema","name":"answer","strict":true,"schema":{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false}}}}`,
		`{"input":"hi","text":{"format":{"type":"json_schema","name":"n","schema":{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer","minimum":3}}}},"verbosity":"low"},"stream":true}`,
		`{"input":"hi","text":{"format":{"type":"json_object"}}}`,
		`{"input":"hi","text":{"format":{"type":"text"}},"reasoning":{"effort":"high","summary":"auto"}}`,
		`{"input":"hi","reasoning":{"effort":"minimal"},"include":["reasoning.encrypted_content","message.output_text.logprobs"],"top_logprobs":5}`,
		`{"input":"hi","include":["message.input_image.image_url","file_search_call.results","web_search_call.action.sources","code_interpreter_call.outputs","computer_call_output.output.image_url"]}`,
		`{"input":"hi","truncation":"auto","max_output_tokens":16,"temperature":0.5,"top_p":0.9,"presence_penalty":1,"frequency_penalty":-1}`,
		`{"input":"hi","truncation":"disabled","max_output_tokens":100000000}`,
		`{"input":"hi","instructions":"be brief","metadata":{"a":"b","c":""},"user":"u","safety_identifier":"s","prompt_cache_key":"k","service_tier":"auto"}`,
		`{"input":"hi","context_management":[{"type":"compaction","compact_threshold":1000}]}`,
		`{"input":"hi","prompt_cache_retention":"24h","store":true}`,
		`{"input":"","previous_response_id":"` + fuzzResp + `"}`,
		`{"input":[],"previous_response_id":"` + fuzzResp + `"}`,
	}
}

// FuzzCreate: any body of POST /v1/responses through the real handler,
// engine and memory store, against a fake model answering as the mode
// says (fuzzModes), gets no 5xx and causes no panic; an error is a 4xx in
// the OpenAI error shape; a stream ends with a terminal event; a
// background response ends without a server error; and the response
// another tenant stored before the loop reads the same after every input.
func FuzzCreate(f *testing.F) {
	fz := newFuzzGateway(f)
	for i, s := range fuzzCreateSeeds() {
		f.Add([]byte(s), uint8(i%fuzzModes))
	}
	raw, err := os.ReadFile("../api/testdata/client_bodies.json")
	require.NoError(f, err)
	var bodies []capturedBody
	require.NoError(f, json.Unmarshal(raw, &bodies))
	for i, c := range bodies {
		if _, ok := c.Body["previous_response_id"]; ok {
			c.Body["previous_response_id"] = json.RawMessage(`"` + fuzzResp + `"`)
		}
		var in []map[string]json.RawMessage
		if json.Unmarshal(c.Body["input"], &in) == nil {
			for _, it := range in {
				if string(it["type"]) == `"item_reference"` {
					it["id"] = json.RawMessage(`"` + fuzzItem + `"`)
				}
			}
			c.Body["input"] = mustJSON(f, in)
		}
		b, err := json.Marshal(c.Body)
		require.NoError(f, err)
		f.Add(b, uint8(i%fuzzModes))
	}
	for _, r := range hostileRequests(fuzzResp) {
		if r.method == http.MethodPost && r.path == "/v1/responses" && r.contentType == "application/json" && len(r.body) < 64<<10 {
			f.Add([]byte(r.body), uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		fz.create(t, fz.fill(body), mode)
	})
}

// FuzzGetQuery: any query of GET /v1/responses/{id} (include, include[],
// stream, starting_after, include_obfuscation) on the response stored
// before the loop, or on a background one (bg), gets no 5xx and causes no
// panic; an error is a 4xx in the OpenAI error shape; a stream ends with a
// terminal event; and what was stored reads the same afterwards.
func FuzzGetQuery(f *testing.F) {
	fz := newFuzzGateway(f)
	status, _, body := fz.call(f, fuzzKey, http.MethodPost, "/v1/responses", `{"input":"hi","background":true}`)
	require.Equal(f, http.StatusOK, status, "%s", body)
	bg := decodeWire(f, body).ID
	status, _, body = fz.call(f, fuzzKey, http.MethodGet, "/v1/responses/"+bg+"?stream=true", "")
	require.Equal(f, http.StatusOK, status, "%s", body)
	for _, q := range []string{
		"", "stream=true", "stream=false", "stream=true&starting_after=0", "stream=true&starting_after=3", "stream=true&starting_after=999",
		"stream=true&starting_after=-1", "stream=true&starting_after=x", "stream=true&include_obfuscation=false", "stream=true&include_obfuscation=true",
		"include=reasoning.encrypted_content", "include[]=reasoning.encrypted_content&include[]=message.output_text.logprobs",
		"include=nope", "include[]=", "include=message.input_image.image_url&include=file_search_call.results", "stream=1", "stream=TRUE&starting_after=1",
		"starting_after=2", "include_obfuscation=false", "stream=true&stream=false", "%zz", "include=%00",
	} {
		f.Add(q, false)
		f.Add(q, true)
	}
	f.Fuzz(func(t *testing.T, query string, background bool) {
		id := fz.resp
		if background {
			id = bg
		}
		logged := len(fz.logs.String())
		req, err := http.NewRequest(http.MethodGet, fz.srv.URL+"/v1/responses/"+id+"?"+query, nil)
		if err != nil || strings.ContainsFunc(query, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			// net/http's server refuses a request line with white space
			// or control characters before the handler sees it.
			t.Skip("not a request target")
		}
		req.Header.Set("Authorization", "Bearer "+fuzzKey)
		res, err := fz.http.Do(req)
		require.NoError(t, err)
		reply, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		wantAnswer(t, res.StatusCode, res.Header, reply, true)
		fz.check(t, logged)
	})
}

// FuzzInputTokens: any body of POST /v1/responses/input_tokens, the
// corpus of FuzzCreate, on the Bedrock provider (the one that counts), gets no 5xx and causes no panic; an error is a 4xx
// in the OpenAI error shape; and what was stored reads the same
// afterwards.
func FuzzInputTokens(f *testing.F) {
	fz := newBedrockFuzzGateway(f)
	for _, s := range fuzzCreateSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		logged := len(fz.logs.String())
		status, header, reply := fz.call(t, fuzzKey, http.MethodPost, "/v1/responses/input_tokens", string(fz.fill(body)))
		wantAnswer(t, status, header, reply, false)
		if status == http.StatusOK {
			var n struct {
				Object      string `json:"object"`
				InputTokens *int   `json:"input_tokens"`
			}
			require.NoError(t, json.Unmarshal(reply, &n), "%s", reply)
			require.Equal(t, "response.input_tokens", n.Object, "%s", reply)
			require.NotNil(t, n.InputTokens, "%s", reply)
		}
		fz.check(t, logged)
	})
}

// FuzzConversations: any body of POST /v1/conversations (route 0), POST
// /v1/conversations/{id} (1: metadata) and POST
// /v1/conversations/{id}/items (2) gets no 5xx and causes no panic; an
// error is a 4xx in the OpenAI error shape; and what was stored reads the
// same afterwards (the items are added to a conversation of their own).
func FuzzConversations(f *testing.F) {
	fz := newFuzzGateway(f)
	status, _, body := fz.call(f, fuzzKey, http.MethodPost, "/v1/conversations", `{}`)
	require.Equal(f, http.StatusOK, status, "%s", body)
	var c struct{ ID string }
	require.NoError(f, json.Unmarshal(body, &c))
	paths := []string{"/v1/conversations", "/v1/conversations/" + c.ID, "/v1/conversations/" + c.ID + "/items"}
	for _, s := range []string{
		`{}`, `{"metadata":{"a":"b"}}`, `{"metadata":null}`, `{"metadata":{}}`, `{"items":[]}`, `{"items":null}`,
		`{"items":[{"role":"user","content":"hi"}],"metadata":{"k":"v"}}`,
		`{"items":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"t"}]}]}`,
		`{"items":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"o"}]}`,
		`{"items":[{"type":"item_reference","id":"` + fuzzItem + `"}]}`,
		`{"items":[{"type":"reasoning","summary":[]},{"type":"compaction","encrypted_content":"k.AAAA"}]}`,
		`{"items":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBORw0KGgo="}]}]}`,
		`{"items":[{"type":"nope"}]}`, `{"items":{}}`, `{"metadata":{"k":1}}`, `[]`, `null`, ``,
	} {
		for route := range paths {
			f.Add([]byte(s), uint8(route))
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, route uint8) {
		logged := len(fz.logs.String())
		status, header, reply := fz.call(t, fuzzKey, http.MethodPost, paths[int(route)%len(paths)], string(fz.fill(body)))
		if status >= 500 {
			t.Fatalf("status %d: %s", status, reply)
		}
		if status >= 400 {
			wantError(t, status, reply, status, "", "")
		} else {
			require.Contains(t, header.Get("Content-Type"), "application/json")
			require.True(t, json.Valid(reply), "%s", reply)
		}
		fz.check(t, logged)
	})
}

// withMember is body (a JSON object) with value set at key: a dotted path
// of members ("text.format.schema"), or "input[]" or "tools[]" appending
// value to that array (a string input becomes a user message first). A
// body or member that is no object is replaced by one.
func withMember(body []byte, key string, value json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	if name, ok := strings.CutSuffix(key, "[]"); ok && !strings.Contains(name, ".") {
		var arr []json.RawMessage
		if json.Unmarshal(m[name], &arr) != nil {
			if s := m[name]; len(s) > 0 && s[0] == '"' {
				arr = []json.RawMessage{json.RawMessage(`{"role":"user","content":` + string(s) + `}`)}
			}
		}
		m[name], _ = json.Marshal(append(arr, value))
	} else if first, rest, nested := strings.Cut(key, "."); nested {
		m[first] = withMember(m[first], rest, value)
	} else {
		m[key] = value
	}
	b, _ := json.Marshal(m)
	return b
}

// FuzzCreateParam is FuzzCreate on bodies that stay JSON: one of
// FuzzCreate's seed bodies (base) with a member set or an item or tool
// appended (key, see withMember) to value (a JSON string of value when it
// is not JSON), the model answering per mode.
func FuzzCreateParam(f *testing.F) {
	fz := newFuzzGateway(f)
	bases := fuzzCreateSeeds()
	for i, c := range []struct{ key, value string }{
		{"model", `"other-model"`}, {"instructions", `"be brief"`}, {"max_output_tokens", `16`}, {"max_tool_calls", `0`},
		{"tool_choice", `"required"`}, {"tool_choice", `{"type":"function","name":"f"}`}, {"tool_choice", `{"type":"allowed_tools","mode":"auto","tools":[]}`},
		{"tools[]", `{"type":"function","name":"f","parameters":{"type":"object"}}`}, {"tools[]", `{"type":"lambent:calculator"}`},
		{"tools[]", `{"type":"lambent:output","name":"o","parameters":{"type":"object"}}`}, {"tools[]", `{"type":"custom","name":"c"}`},
		{"tools[]", `{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"}]}`}, {"tools[]", `{"type":"web_search"}`},
		{"input[]", `{"type":"item_reference","id":"` + fuzzItem + `"}`}, {"input[]", `{"type":"function_call_output","call_id":"c1","output":"o"}`},
		{"input[]", `{"type":"function_call","call_id":"c9","name":"f","arguments":"{}"}`}, {"input[]", `{"type":"reasoning","summary":[],"encrypted_content":"x"}`},
		{"input[]", `{"type":"compaction","encrypted_content":"k.AAAA"}`}, {"input[]", `{"role":"assistant","content":[{"type":"output_text","text":"t"}]}`},
		{"previous_response_id", `"` + fuzzResp + `"`}, {"conversation", `"` + fuzzConv + `"`}, {"conversation.id", `"` + fuzzConv + `"`},
		{"text.format", `{"type":"json_schema","name":"n","schema":{"type":"object"}}`}, {"text.format.schema", `{"type":"array","items":{"type":"string"}}`},
		{"text.verbosity", `"high"`}, {"reasoning.effort", `"low"`}, {"reasoning.summary", `"detailed"`}, {"include", `["reasoning.encrypted_content"]`},
		{"truncation", `"auto"`}, {"metadata", `{"a":"b"}`}, {"stream", `true`}, {"background", `true`}, {"store", `false`},
		{"stream_options.include_obfuscation", `false`}, {"top_logprobs", `3`}, {"parallel_tool_calls", `false`},
		{"context_management", `[{"type":"compaction","compact_threshold":1}]`}, {"input", `[]`}, {"input", `""`},
	} {
		f.Add(uint8(i), c.key, []byte(c.value), uint8(i%fuzzModes))
	}
	f.Fuzz(func(t *testing.T, base uint8, key string, value []byte, mode uint8) {
		v := json.RawMessage(fz.fill(value))
		if !json.Valid(v) {
			v = mustJSON(t, string(v))
		}
		fz.create(t, withMember(fz.fill([]byte(bases[int(base)%len(bases)])), key, v), mode)
	})
}
