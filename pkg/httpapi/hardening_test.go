package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/fakellm"
	"github.com/lambent/lambent/internal/testing/mcptest"
	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/httpapi"
	"github.com/lambent/lambent/pkg/limits"
)

// errorLog is a slog handler that keeps the records at Error level and above.
type errorLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *errorLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errorLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errorLog) WithGroup(string) slog.Handler            { return l }
func (l *errorLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError {
		l.mu.Lock()
		l.msgs = append(l.msgs, r.Message)
		l.mu.Unlock()
	}
	return nil
}

// silentWriter records whether anything was written.
type silentWriter struct {
	header  http.Header
	written bool
}

func (w *silentWriter) Header() http.Header         { return w.header }
func (w *silentWriter) WriteHeader(int)             { w.written = true }
func (w *silentWriter) Write(p []byte) (int, error) { w.written = true; return len(p), nil }

// A client that went away before its GET, DELETE, input_items or cancel
// was answered (DynamoDB store): nothing is written, nothing is logged as
// an error, and nothing was deleted.
func TestClientGoneIsNotAServerError(t *testing.T) {
	t.Parallel()
	g := dynamoGateway(t, fakellm.New(fakellm.Turn{Text: "stored"}), "")
	status, _, body := g.postJSON(`{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	id := decodeWire(t, body).ID
	logs := &errorLog{}
	h := httpapi.New(httpapi.Config{Service: g.app.Engine, Logger: slog.New(logs)})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/v1/responses/" + id},
		{http.MethodDelete, "/v1/responses/" + id},
		{http.MethodGet, "/v1/responses/" + id + "/input_items"},
		{http.MethodPost, "/v1/responses/" + id + "/cancel"},
	} {
		w := &silentWriter{header: http.Header{}}
		h.ServeHTTP(w, httptest.NewRequest(r.method, r.path, nil).WithContext(ctx))
		assert.False(t, w.written, "%s %s: nothing is written to a client that went away", r.method, r.path)
	}
	assert.Empty(t, logs.msgs, "a client going away is not an error")
	status, _, _ = g.do(http.MethodGet, "/v1/responses/"+id, "", "")
	require.Equal(t, http.StatusOK, status, "nothing was deleted")
}

// input_items' after is bounded before any store sees it.
func TestInputItemsAfterBounded(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "ok"}), nil)
	status, _, body := g.postJSON(`{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	id := decodeWire(t, body).ID
	for _, after := range []string{strings.Repeat("a", 3000), "msg_\x00", "msg_é", "msg a", "msg_\n"} {
		status, _, body := g.do(http.MethodGet, "/v1/responses/"+id+"/input_items?after="+url.QueryEscape(after), "", "")
		wantError(t, status, body, http.StatusBadRequest, "after", "")
		require.LessOrEqual(t, len(body), 1024, "the error does not echo the cursor")
	}
	status, _, body = g.do(http.MethodGet, "/v1/responses/"+id+"/input_items?after=msg_unknown", "", "")
	wantError(t, status, body, http.StatusBadRequest, "after", "")
}

// A list's limit and order out of range are OpenAI's 400s, with its
// codes and messages, on input items and conversation items alike: the
// same as the body's numbers and enumerations (code null and messages of
// their own before).
func TestListQueryErrorsAsOpenAI(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.New(fakellm.Turn{Text: "ok"}), nil)
	status, _, body := g.postJSON(`{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	resp := decodeWire(t, body).ID
	status, _, body = g.do(http.MethodPost, "/v1/conversations", "application/json", `{}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	conv := decodeWire(t, body).ID
	for _, path := range []string{"/v1/responses/" + resp + "/input_items", "/v1/conversations/" + conv + "/items"} {
		for _, c := range []struct{ query, param, code, message string }{
			{"limit=101", "limit", "integer_above_max_value", "Invalid 'limit': integer above maximum value. Expected a value between 1 and 100, but got 101 instead."},
			{"limit=0", "limit", "integer_below_min_value", "Invalid 'limit': integer below minimum value. Expected a value between 1 and 100, but got 0 instead."},
			{"order=sideways", "order", "invalid_value", `Invalid value for 'order': "sideways". Supported values are: 'asc', 'desc'.`},
		} {
			status, _, body := g.do(http.MethodGet, path+"?"+c.query, "", "")
			wantError(t, status, body, http.StatusBadRequest, c.param, c.code)
			var e struct{ Error struct{ Message string } }
			require.NoError(t, json.Unmarshal(body, &e))
			require.Equal(t, c.message, e.Error.Message, path+"?"+c.query)
		}
	}
}

// hostileRequest is one request of TestHostileInputs.
type hostileRequest struct {
	method, path, contentType, body string
}

// hostileRequests returns the hostile requests tried against a gateway
// holding the stored response existing: malformed and oddly typed JSON,
// odd ids on every route, bad query parameters, an oversize body, odd
// content types and methods, unicode.
func hostileRequests(existing string) []hostileRequest {
	var reqs []hostileRequest
	add := func(method, path, ct, body string) {
		reqs = append(reqs, hostileRequest{method, path, ct, body})
	}
	create := func(body string) { add(http.MethodPost, "/v1/responses", "application/json", body) }
	jsonStr := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	// Odd ids (path-escaped) on every route, and as previous_response_id.
	ids := []string{
		"resp_" + strings.Repeat("a", 3000), "resp_" + strings.Repeat("a", 2049), "resp_" + strings.Repeat("b", 100_000),
		"resp_" + strings.Repeat("c", 123), "resp_" + strings.Repeat("c", 124), "resp_", "resp", "RESP_abc", "msg_abc",
		"resp_\x00", "resp_a\nb", "resp_ a", "resp_a#b", "resp_a?b", "resp_a%b", "resp_é", "resp_😀😀", "resp_\u202e",
		"resp_\xff\xfe", "resp_..", "..", "resp_a;b", `resp_a"b'`, "null", "-1", "0", "resp_a\\b",
		existing, existing + "x", strings.ToUpper(existing), existing[:len(existing)-1],
	}
	for _, id := range ids {
		p := "/v1/responses/" + url.PathEscape(id)
		add(http.MethodGet, p, "", "")
		add(http.MethodDelete, p+"?x=1", "", "")
		add(http.MethodGet, p+"/input_items", "", "")
		add(http.MethodPost, p+"/cancel", "", "")
		add(http.MethodGet, p+"?stream=true", "", "")
		add(http.MethodGet, p+"?stream=true&starting_after=x", "", "")
		create(`{"input":"hi","previous_response_id":` + jsonStr(id) + `}`)
	}
	// Deleting the existing response is left to the end.
	reqs = slices.DeleteFunc(reqs, func(r hostileRequest) bool {
		return r.method == http.MethodDelete && strings.HasPrefix(r.path, "/v1/responses/"+existing+"?")
	})

	// Bad query parameters.
	items := "/v1/responses/" + existing + "/input_items?"
	for _, q := range []string{
		"limit=0", "limit=-1", "limit=101", "limit=abc", "limit=1e3", "limit=99999999999999999999", "limit=", "limit=%205",
		"limit=1&limit=2", "order=ASC", "order=sideways", "order=", "order=%00", "order=desc%00",
		"after=" + strings.Repeat("a", 3000), "after=%00", "after=%C3%A9", "after=%20", "after=msg_nope", "after=" + url.QueryEscape(existing),
		"after=&limit=1", "limit=1&order=asc&after=x", "%zz", "after=%FF", strings.Repeat("a=1&", 1000),
	} {
		add(http.MethodGet, items+q, "", "")
	}
	for _, q := range []string{
		"stream=true&starting_after=-1", "stream=true&starting_after=abc", "stream=true&starting_after=1e3",
		"stream=true&starting_after=9223372036854775808", "stream=true&starting_after=", "stream=true&starting_after=%201",
		"stream=TRUE", "stream=1", "stream=true&stream=false",
	} {
		add(http.MethodGet, "/v1/responses/"+existing+"?"+q, "", "")
	}
	add(http.MethodGet, "/v1/responses/"+existing, "application/json", `{"stream":true}`)
	add(http.MethodGet, "/v1/responses/"+existing, "application/json", `{"stream":`)

	// Malformed JSON.
	for _, b := range []string{
		"", " ", "{", "}", "[", "]", `{"input":}`, `{"input":"hi",}`, `{"input":"hi"}{"x":1}`, `{"input":"hi"} trailing`,
		"\ufeff" + `{"input":"hi"}`, "nul", `{"input":"\x"}`, `{"input":"hi"`, `{'input':'hi'}`, `{input:"hi"}`,
		`{"input":"hi","input":"ho"}`, `{"input":NaN}`, `{"input":Infinity}`, `{"input":1e999999}`, `"just a string"`,
		"123", "null", "true", "{\"input\":\"\xff\xfe\"}", "\xff\xfe{\x00\"\x00}\x00", strings.Repeat("[", 100_000),
		strings.Repeat(`{"a":`, 20_000) + "1" + strings.Repeat("}", 20_000), `{"input":"hi"` + strings.Repeat(" ", 100_000) + "}",
		`{"":1,"input":"hi"}`, `{"input":"\ud800"}`, `{"input":"\u0000"}`, `{"input":"hi","metadata":{"k":"\udfff"}}`,
	} {
		create(b)
	}

	// Every parameter with wrong or odd values.
	params := []string{
		"model", "input", "instructions", "tools", "tool_choice", "allowed_tools", "parallel_tool_calls", "max_tool_calls",
		"max_output_tokens", "temperature", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs", "text",
		"reasoning", "previous_response_id", "store", "background", "stream", "stream_options", "metadata", "include",
		"truncation", "safety_identifier", "prompt_cache_key", "service_tier", "user", "conversation", "prompt",
	}
	values := []string{
		"1", "-1", "1e400", "-0", "3.5", `"s"`, `""`, "[]", "{}", "null", "true",
		jsonStr(strings.Repeat("x", 10_000)), strings.Repeat("[", 50) + strings.Repeat("]", 50), `{"a":{"b":{"c":[1,{"d":null}]}}}`,
		`"😀\u0000\u202e"`, `[1,"a",null,{}]`,
	}
	for _, p := range params {
		for _, v := range values {
			if p == "input" {
				create(`{"input":` + v + `}`)
			} else {
				create(`{"input":"hi",` + jsonStr(p) + `:` + v + `}`)
			}
		}
	}

	// Odd input items.
	for _, it := range []string{
		`{"type":"bogus"}`, `{}`, `null`, `1`, `"s"`, `[]`,
		`{"type":"message","role":"wizard","content":"hi"}`, `{"type":"message","role":"user","content":42}`,
		`{"type":"message","role":"user","content":[{"type":"nope","text":"x"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_text","text":1}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"javascript:alert(1)"}]}`,
		`{"type":"message","role":"user","content":[{"type":"input_file","file_data":"%%%"}]}`,
		`{"type":"message","role":"user","content":"` + strings.Repeat("é", 100_000) + `"}`,
		`{"type":"message","role":"user","content":"\u0000\u0001\u001f\ud83d\ude00"}`,
		`{"type":"function_call_output","output":"x"}`, `{"type":"function_call_output","call_id":"nope","output":"x"}`,
		`{"type":"function_call_output","call_id":` + jsonStr(strings.Repeat("c", 5000)) + `,"output":{}}`,
		`{"type":"function_call","call_id":"c","name":"f","arguments":"{not json"}`,
		`{"type":"function_call","call_id":"c","name":"` + strings.Repeat("n", 5000) + `","arguments":"{}"}`,
		`{"type":"item_reference","id":"msg_nope"}`, `{"type":"item_reference","id":` + jsonStr(strings.Repeat("i", 5000)) + `}`,
		`{"type":"item_reference"}`, `{"type":"reasoning","summary":"x"}`, `{"type":"reasoning","encrypted_content":1}`,
		`{"type":"message","id":` + jsonStr(strings.Repeat("m", 5000)) + `,"role":"user","content":"hi"}`,
		`{"type":"message","id":"msg_\u0000#","role":"user","content":"hi"}`,
	} {
		create(`{"input":[` + it + `]}`)
	}
	create(`{"input":[` + strings.Repeat(`{"type":"message","role":"user","content":"x"},`, 2000) + `{"type":"message","role":"user","content":"y"}]}`)
	create(`{"input":"hi","tools":[` + strings.Repeat(`{"type":"function","name":"f","parameters":{}},`, 100) + `{"type":"lambent:nope"}]}`)
	create(`{"input":"hi","tools":[{"type":"function","name":"` + strings.Repeat("f", 5000) + `","parameters":{"type":"object"}}]}`)
	create(`{"input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"http://127.0.0.1:1"}]}`)
	create(`{"input":"hi","metadata":{` + strings.TrimSuffix(strings.Repeat(`"k":"v",`, 100), ",") + `}}`)
	// JSON schemas the validator cannot read (it panicked on exponents past
	// a million) or that cost too much to compile.
	for _, schema := range []string{`{"multipleOf":1e-100000000}`, `{"minLength":1e100000000}`, `{"maximum":1e401}`,
		`{"pattern":"(a{1,1000}){1,1000}"}`, `{"pattern":"[a-z]{1,1000}[a-z]{1,1000}[a-z]{1,1000}[a-z]{1,1000}"}`} {
		create(`{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` + schema + `}}}`)
		create(`{"input":"hi","tools":[{"type":"lambent:output","name":"o","parameters":` + schema + `}]}`)
	}

	// Content types, methods, paths.
	for _, ct := range []string{
		"text/plain", "application/xml", "multipart/form-data; boundary=x", "application/json; charset=utf-16",
		"application/json;;", "application/json; charset", "APPLICATION/JSON", "application/jsonx", "*/*",
		"application/x-www-form-urlencoded", "application/json; charset=\"x", "application/json, text/plain",
		"application/json\u00e9", "application/vnd.api+json",
	} {
		add(http.MethodPost, "/v1/responses", ct, `{"input":"hi"}`)
	}
	add(http.MethodPost, "/v1/responses", "", `{"input":"hi"}`)
	add(http.MethodPost, "/v1/responses/compact", "", `{"input":"hi"}`)
	for _, m := range []string{http.MethodPut, http.MethodPatch, http.MethodOptions, http.MethodHead, http.MethodTrace, "BREW", "get"} {
		add(m, "/v1/responses", "application/json", `{"input":"hi"}`)
		add(m, "/v1/responses/"+existing, "", "")
		add(m, "/v1/responses/"+existing+"/cancel", "", "")
		add(m, "/v1/responses/"+existing+"/input_items", "", "")
	}
	for _, p := range []string{
		"/v1/responses/", "//v1/responses", "/v1/responses/x/y/z", "/V1/RESPONSES", "/v1/responses/" + existing + "/cancel/extra",
		"/v1/responses/../healthz", "/v1/responses/%2e%2e/input_items", "/v1/responses/" + existing + "/%00", "/v1", "/",
		"/v1/responses/" + existing + "/input_items/", "/v1/responses//input_items", "/" + strings.Repeat("a", 50_000),
	} {
		add(http.MethodGet, p, "", "")
	}

	// Oversize bodies.
	create(`{"input":"` + strings.Repeat("a", 9<<20) + `"}`)
	create(`{"input":"hi","metadata":{"k":"` + strings.Repeat("b", 9<<20) + `"}}`)

	add(http.MethodDelete, "/v1/responses/"+existing, "", "")
	add(http.MethodDelete, "/v1/responses/"+existing, "", "")
	return reqs
}

// Hostile requests against the real handler on both stores: none gets a
// 5xx, and every error has the OpenAI shape.
func TestHostileInputs(t *testing.T) {
	t.Parallel()
	model := func() *fakellm.Server {
		return fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "ok"} })
	}
	for _, st := range []string{"memory", "dynamodb"} {
		t.Run(st, func(t *testing.T) {
			var g *gateway
			if st == "memory" {
				g = newGateway(t, model(), nil)
			} else {
				g = dynamoGateway(t, model(), "")
			}
			status, _, body := g.postJSON(`{"input":"seed"}`)
			require.Equal(t, http.StatusOK, status, "%s", body)
			reqs := hostileRequests(decodeWire(t, body).ID)
			require.GreaterOrEqual(t, len(reqs), 500)
			var fivexx []string
			for _, r := range reqs {
				req, err := http.NewRequest(r.method, g.srv.URL+r.path, strings.NewReader(r.body))
				require.NoError(t, err, "%s %.80s", r.method, r.path)
				if r.contentType != "" {
					req.Header.Set("Content-Type", r.contentType)
				}
				// A client's own request id is never taken: every reply
				// carries the gateway's.
				req.Header.Set("X-Request-Id", "req_forged"+strings.Repeat("f", 4096))
				res, err := g.http.Do(req)
				require.NoError(t, err, "%s %.80s", r.method, r.path)
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.NoError(t, res.Body.Close())
				require.Regexp(t, requestIDRe, res.Header.Get("X-Request-Id"), "%s %.80s", r.method, r.path)
				if res.StatusCode >= 500 {
					fivexx = append(fivexx, fmt.Sprintf("%d %s %.80q body %.80q: %.300s", res.StatusCode, r.method, r.path, r.body, b))
					continue
				}
				if res.StatusCode >= 400 && r.method != http.MethodHead {
					wantError(t, res.StatusCode, b, res.StatusCode, "", "")
				}
			}
			t.Logf("%s store: %d hostile requests, %d answered 5xx", st, len(reqs), len(fivexx))
			assert.Empty(t, fivexx, "no hostile request gets a 5xx")
		})
	}
}

// limitRequests are create bodies over a default limit (or the attempts
// cap of limitGateway), each with the param its 400 names.
func limitRequests() []struct{ name, body, param string } {
	deep := func(n int) string { return strings.Repeat(`{"items":`, n) + `{}` + strings.Repeat(`}`, n) }
	many := func(n int, f func(i int) string) string {
		l := make([]string, n)
		for i := range l {
			l[i] = f(i)
		}
		return strings.Join(l, ",")
	}
	return []struct{ name, body, param string }{
		{"text.format schema 2,000 deep", `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":` + deep(2000) + `}}}`, "text.format.schema"},
		{"function parameters 9,000 deep", `{"input":"hi","tools":[{"type":"function","name":"f","parameters":` + deep(9000) + `}]}`, "tools[0].parameters"},
		{"output parameters 2,000 deep", `{"input":"hi","tools":[{"type":"lambent:output","name":"report","parameters":` + deep(2000) + `}]}`, "tools[0].parameters"},
		{"schema of 200 KB", `{"input":"hi","tools":[{"type":"function","name":"f","parameters":{"description":"` + strings.Repeat("d", 200<<10) + `"}}]}`, "tools[0].parameters"},
		{"patterns of 60 × 1,000", `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object","properties":{` +
			many(60, func(i int) string { return fmt.Sprintf(`"p%d":{"pattern":"^[a-z]{1,1000}x%d$"}`, i, i) }) + `}}}}}`, "text.format.schema"},
		{"129 tools", `{"input":"hi","tools":[` + many(129, func(i int) string { return fmt.Sprintf(`{"type":"function","name":"f%d"}`, i) }) + `]}`, "tools"},
		{"model name of 2 MB", `{"input":"hi","model":"` + strings.Repeat("m", 2<<20) + `"}`, "model"},
		{"20 attempts of 100 iterations", `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{}}},"lambent":{"max_attempts":20,"max_iterations_per_attempt":100}}`, "lambent.max_attempts"},
		{"100 iterations", `{"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{}}},"lambent":{"max_iterations_per_attempt":100}}`, "lambent.max_iterations_per_attempt"},
		{"100 images", `{"input":[{"type":"message","role":"user","content":[` + many(100, func(int) string { return `{"type":"input_image","image_url":"https://images.invalid/a.png"}` }) + `]}]}`, "input[0]"},
		{"10,000 item references", `{"input":[` + many(api.MaxInputItems, func(int) string {
			return `{"type":"item_reference","id":"` + api.NewItemID(api.PrefixMessage, api.NewID(api.PrefixResponse)) + `"}`
		}) + `]}`, "input[16].id"},
		{"10,001 input items", `{"input":[` + many(api.MaxInputItems+1, func(int) string { return `{"role":"user","content":"a"}` }) + `]}`, "input"},
	}
}

// Every per-request limit and the loop caps over HTTP (plain, streaming
// and background creates) and over WebSocket: a 400 limit_exceeded naming
// the param, before any model call.
func TestLimitsOverHTTP(t *testing.T) {
	t.Parallel()
	env := map[string]string{"LAMBENT_MAX_ATTEMPTS": "2", "LAMBENT_MAX_ITERATIONS_PER_ATTEMPT": "5"}
	g := newGateway(t, fakellm.New(), env)
	env["LAMBENT_API_KEYS"] = "acme=" + wsKeyA
	wsg := newGateway(t, fakellm.New(), env)
	for _, tc := range limitRequests() {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"", `"stream":true,`, `"background":true,`} {
				status, _, body := g.postJSON(strings.Replace(tc.body, "{", "{"+mode, 1))
				wantError(t, status, body, http.StatusBadRequest, tc.param, limits.CodeLimitExceeded)
			}
			// A connection of its own, used at once: a client answers the
			// server's pings only while it reads, and the requests above
			// may take longer than a ping's wait on a loaded machine.
			ws := dialWS(t, wsg.srv, wsKeyA)
			e := ws.createErr(`{"type":"response.create",`+strings.TrimPrefix(tc.body, "{"), http.StatusBadRequest, limits.CodeLimitExceeded)
			require.NotNil(t, e.Error.Param)
			assert.Equal(t, tc.param, *e.Error.Param)
		})
	}
	assert.Zero(t, g.fake.Calls(), "no model call")
	assert.Zero(t, wsg.fake.Calls(), "no model call")
}

// Hostile MCP use through the real HTTP stack, with the limits set by
// their LAMBENT_LIMIT_* settings: too many servers is a 400 naming tools
// before anything connects (40,000 of them meet the tools limit first); a server
// whose listing is too long, too large or endless, or whose call result is
// too large, fails that listing or call and the response completes; the
// server URL's query never shows.
func TestHostileMCP(t *testing.T) {
	t.Parallel()
	g := newGatewayWith(t, mcpModel(), map[string]string{
		"LAMBENT_FETCH_ALLOW_HOSTS":          "127.0.0.1",
		"LAMBENT_LIMIT_MCP_SERVERS":          "2",
		"LAMBENT_LIMIT_MCP_TOOLS_PER_SERVER": "5",
		"LAMBENT_LIMIT_MCP_REPLY_BYTES":      "65536",
	}, nil)
	tool := func(label, url string) string {
		return fmt.Sprintf(`{"type":"mcp","server_label":%q,"server_url":%q,"require_approval":"never"}`, label, url)
	}
	var list struct {
		Output []struct {
			Type   string            `json:"type"`
			Error  string            `json:"error"`
			Status string            `json:"status"`
			Tools  []json.RawMessage `json:"tools"`
		} `json:"output"`
	}

	good := mcptest.StartHostile(mcptest.Hostile{Tools: 5})
	defer good.Close()
	status, _, body := g.postJSON(`{"input":"hi","tools":[` + tool("a", good.Endpoint+"?key=query-secret") + `,` + tool("b", good.Endpoint) + `]}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	assert.NotContains(t, string(body), "query-secret")
	require.NoError(t, json.Unmarshal(body, &list))
	require.Len(t, list.Output, 3)
	assert.Len(t, list.Output[0].Tools, 5)

	before := len(good.Headers())
	status, _, body = g.postJSON(`{"input":"hi","tools":[` + tool("a", good.Endpoint) + `,` + tool("b", good.Endpoint) + `,` + tool("c", good.Endpoint) + `]}`)
	wantError(t, status, body, http.StatusBadRequest, "tools", "limit_exceeded")
	assert.Len(t, good.Headers(), before, "nothing connected")

	for name, h := range map[string]mcptest.Hostile{
		"too many tools": {Tools: 6},
		"too large":      {Tools: 2, DescriptionBytes: 40 << 10},
		"endless pages":  {Empty: true, EndlessPages: true},
	} {
		t.Run(name, func(t *testing.T) {
			srv := mcptest.StartHostile(h)
			defer srv.Close()
			status, _, body := g.postJSON(`{"input":"hi","tools":[` + tool("a", srv.Endpoint) + `]}`)
			require.Equal(t, http.StatusOK, status, "%s", body)
			require.NoError(t, json.Unmarshal(body, &list))
			require.Equal(t, "mcp_list_tools", list.Output[0].Type)
			assert.Contains(t, list.Output[0].Error, "this gateway's limit")
			assert.Len(t, list.Output[0].Tools, 0)
			assert.Equal(t, "completed", decodeWire(t, body).Status)
		})
	}

	big := mcptest.StartHostile(mcptest.Hostile{CallBytes: 100 << 10})
	defer big.Close()
	status, _, body = g.postJSON(`{"input":"call t0 {}","tools":[` + tool("a", big.Endpoint) + `]}`)
	require.Equal(t, http.StatusOK, status, "%s", body)
	w := decodeWire(t, body)
	assert.Equal(t, []string{"mcp_list_tools", "mcp_call", "message"}, w.types())
	assert.Contains(t, string(body), "exceeds 65536 bytes")

	d := newGatewayWith(t, mcpModel(), map[string]string{"LAMBENT_FETCH_ALLOW_HOSTS": "127.0.0.1"}, nil)
	var many strings.Builder
	for i := range 9_000 { // under api.MaxTools, counted as the body is decoded
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(tool("s"+strconv.Itoa(i), good.Endpoint))
	}
	before = len(good.Headers())
	status, _, body = d.postJSON(`{"input":"hi","tools":[` + many.String() + `]}`)
	wantError(t, status, body, http.StatusBadRequest, "tools", "limit_exceeded")
	assert.Contains(t, string(body), "limit of 128", "9,000 servers meet the tools limit first")
	assert.Len(t, good.Headers(), before, "nothing connected")
}

// postAs posts body to /v1/responses with key's bearer token and returns
// the status, header and body.
func (g *gateway) postAs(key, body string) (int, http.Header, []byte) {
	g.t.Helper()
	return g.doWith(http.MethodPost, "/v1/responses", body, "Content-Type", "application/json", "Authorization", "Bearer "+key)
}

// A tenant over LAMBENT_LIMIT_TENANT_IN_FLIGHT gets a 429
// rate_limit_exceeded with Retry-After in the OpenAI error shape for its
// next response, streamed or not, over HTTP (the SDK reports a rate limit)
// and as the error envelope over WebSocket; another tenant goes on, and
// the tenant's slot frees when its response ends.
func TestTenantInFlightLimit(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	entered := make(chan struct{}, 8)
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content.String(), "slow") {
			entered <- struct{}{}
			return fakellm.Turn{Text: "Slow answer.", Block: block}
		}
		return fakellm.Turn{Text: "hi"}
	})
	g := newGateway(t, fake, map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA + ",globex=" + wsKeyB, "LAMBENT_LIMIT_TENANT_IN_FLIGHT": "1"})
	done := make(chan int, 1)
	go func() {
		status, _, _ := g.postAs(wsKeyA, `{"input":"slow"}`)
		done <- status
	}()
	<-entered

	for _, body := range []string{`{"input":"hi"}`, `{"input":"hi","stream":true}`, `{"input":"hi","background":true}`} {
		status, hdr, b := g.postAs(wsKeyA, body)
		wantError(t, status, b, http.StatusTooManyRequests, "-", "rate_limit_exceeded")
		require.Equal(t, "2", hdr.Get("Retry-After"), "%s", body)
		require.Contains(t, string(b), `"type":"rate_limit_error"`)
	}
	client := openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey(wsKeyA), option.WithMaxRetries(0), option.WithHTTPClient(g.srv.Client()))
	_, err := client.Responses.New(t.Context(), textParams("hi"))
	wantAPIError(t, err, http.StatusTooManyRequests)
	ws := dialWS(t, g.srv, wsKeyA)
	e := ws.createErr(`{"type":"response.create","input":"hi"}`, http.StatusTooManyRequests, "rate_limit_exceeded")
	require.Equal(t, "rate_limit_error", e.Error.Type)

	status, _, b := g.postAs(wsKeyB, `{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "another tenant: %s", b)

	close(block)
	require.Equal(t, http.StatusOK, <-done)
	status, _, b = g.postAs(wsKeyA, `{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "the slot is free again: %s", b)
	ws.create(`{"type":"response.create","input":"hi"}`)
}

// The in-process queue of a local run's background jobs is shared by the
// tenants, but one tenant's queued jobs cannot fill it: a background create
// holds its tenant's in-flight slot only until its job is queued, so a
// tenant could queue any number of jobs behind a long run (1,024 filled the
// queue, and another tenant's background create failed with a 500
// enqueue_failed). A tenant may have at most half of the queue waiting.
func TestLocalQueueShareOfATenant(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	entered := make(chan struct{}, 1)
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if strings.Contains(req.Messages[len(req.Messages)-1].Content.String(), "slow") {
			select {
			case entered <- struct{}{}:
			default:
			}
			return fakellm.Turn{Text: "Slow answer.", Block: block}
		}
		return fakellm.Turn{Text: "hi"}
	})
	g := newGateway(t, fake, map[string]string{"LAMBENT_API_KEYS": "acme=" + wsKeyA + ",globex=" + wsKeyB, "LAMBENT_LOCAL_WORKERS": "1"})
	status, _, b := g.postAs(wsKeyA, `{"input":"slow","background":true}`)
	require.Equal(t, http.StatusOK, status, "%s", b)
	<-entered // the only worker runs acme's first job until the test ends

	queued := 0
	for range 1024 {
		status, _, b := g.postAs(wsKeyA, `{"input":"hi","background":true}`)
		if status != http.StatusOK {
			wantError(t, status, b, http.StatusTooManyRequests, "-", "rate_limit_exceeded")
			break
		}
		queued++
	}
	assert.Equal(t, 512, queued, "acme's jobs queued: half of the queue")

	status, _, b = g.postAs(wsKeyB, `{"input":"hi","background":true}`)
	require.Equal(t, http.StatusOK, status, "another tenant's background create: %s", b)
}

// A model provider's 429 reaches the client: a 429 rate_limit_exceeded
// with the provider's Retry-After, streamed or not (a stream the provider
// refuses before it began gets the HTTP error, as OpenAI's does).
func TestProviderRateLimitReachesClient(t *testing.T) {
	t.Parallel()
	limited := fakellm.Turn{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached for requests", ErrorType: "requests",
		Header: http.Header{"Retry-After": {"17"}}}
	g := newGateway(t, fakellm.New(limited, limited, limited), nil)
	status, hdr, body := g.postJSON(`{"input":"hi"}`)
	wantError(t, status, body, http.StatusTooManyRequests, "-", "rate_limit_exceeded")
	require.Equal(t, "17", hdr.Get("Retry-After"), "the provider's Retry-After")

	_, err := g.client.Responses.New(t.Context(), textParams("hi"))
	wantAPIError(t, err, http.StatusTooManyRequests)

	status, hdr, body = g.postJSON(`{"input":"hi","stream":true}`)
	wantError(t, status, body, http.StatusTooManyRequests, "-", "rate_limit_exceeded")
	require.Equal(t, "17", hdr.Get("Retry-After"), "the provider's Retry-After")
	// The provider's own message names its organization: it stays in the
	// logs.
	require.Contains(t, string(body), "the model provider is rate limiting requests; please try again in 17s")
	require.NotContains(t, string(body), "Rate limit reached for requests")
}

// A model provider that says it is overloaded (OpenAI's 503
// server_is_overloaded, Anthropic's 529 overloaded_error) reaches the
// client as OpenAI's own overload does: a 503 service_unavailable_error
// server_is_overloaded with the provider's Retry-After and no
// x-should-retry: false, which the SDK retries as it retries OpenAI's,
// streamed or not (a stream the provider refuses before it began gets the
// HTTP error).
func TestProviderOverloadReachesClient(t *testing.T) {
	t.Parallel()
	for name, turn := range map[string]fakellm.Turn{
		"openai 503": {Status: http.StatusServiceUnavailable, ErrorType: "service_unavailable_error", ErrorCode: "server_is_overloaded",
			ErrorMessage: "Our servers are currently overloaded. Please try again later.", Header: http.Header{"Retry-After": {"1"}}},
		"anthropic 529": {Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return turn }), nil)
			status, hdr, body := g.postJSON(`{"input":"hi"}`)
			wantError(t, status, body, http.StatusServiceUnavailable, "-", "server_is_overloaded")
			require.Contains(t, string(body), `"type":"service_unavailable_error"`)
			require.Equal(t, turn.Header.Get("Retry-After"), hdr.Get("Retry-After"), "the provider's Retry-After, if any")
			require.Empty(t, hdr.Get("x-should-retry"), "retried as OpenAI's overload is")

			calls := g.fake.Calls()
			retrying := openai.NewClient(option.WithBaseURL(g.srv.URL+"/v1/"), option.WithAPIKey("test"), option.WithMaxRetries(1), option.WithHTTPClient(g.srv.Client()))
			_, err := retrying.Responses.New(t.Context(), textParams("hi"))
			require.Equal(t, "server_is_overloaded", wantAPIError(t, err, http.StatusServiceUnavailable).Code)
			require.Equal(t, calls+2, g.fake.Calls(), "the SDK retried once")

			status, hdr, body = g.postJSON(`{"input":"hi","stream":true}`)
			wantError(t, status, body, http.StatusServiceUnavailable, "-", "server_is_overloaded")
			require.Equal(t, turn.Header.Get("Retry-After"), hdr.Get("Retry-After"), "the provider's Retry-After, if any")
			require.Contains(t, string(body), "the model provider is overloaded")
		})
	}
}

// Browser protections of a local gateway without keys. A cross-site page
// may POST a "simple request" without preflight (no Content-Type, or
// text/plain, form types): every POST with a body must say
// application/json (415 otherwise), so none of them is run. A page whose
// DNS name was rebound to 127.0.0.1 reaches the loopback listener with its
// own name in Host: a request arriving on a loopback socket must name a
// loopback host (421 otherwise), unless LAMBENT_ALLOWED_HOSTS lists it.
// Requests that do not come through a socket of the server (Lambda's
// front doors) are not checked.
func TestBrowserProtections(t *testing.T) {
	t.Parallel()
	g := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "ok"} }), nil)
	send := func(method, path, host, contentType, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, g.srv.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		if host != "" {
			req.Host = host
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		res, err := g.http.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, b
	}

	// Simple requests a page may send cross-site are refused, and never run.
	for _, path := range []string{"/v1/responses", "/v1/responses/compact"} {
		for _, ct := range []string{"", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"} {
			status, b := send(http.MethodPost, path, "", ct, `{"input":"hi"}`)
			wantError(t, status, b, http.StatusUnsupportedMediaType, "-", "unsupported_media_type")
		}
	}
	require.Zero(t, g.fake.Calls(), "no simple request reached the model")
	status, b := send(http.MethodPost, "/v1/responses", "", "application/json; charset=utf-8", `{"input":"hi"}`)
	require.Equal(t, http.StatusOK, status, "%s", b)
	status, _ = send(http.MethodPost, "/v1/responses/resp_nope/cancel", "", "", "")
	require.Equal(t, http.StatusNotFound, status, "a POST without a body needs no Content-Type")

	// Host names of the loopback listener.
	_, port, err := net.SplitHostPort(g.srv.Listener.Addr().String())
	require.NoError(t, err)
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "localhost.:" + port, "[::1]:" + port, "127.1.2.3", "app.localhost:" + port} {
		status, b := send(http.MethodGet, "/healthz", host, "", "")
		require.Equal(t, http.StatusOK, status, "Host %s: %s", host, b)
	}
	calls := g.fake.Calls()
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example", "localhost.evil.example", "0x7f000001.evil.example", "[::2]:" + port, "10.0.0.1"} {
		for _, r := range []struct{ method, path, ct, body string }{
			{http.MethodGet, "/healthz", "", ""},
			{http.MethodPost, "/v1/responses", "application/json", `{"input":"hi"}`},
			{http.MethodGet, "/v1/responses/resp_abc", "", ""},
		} {
			status, b := send(r.method, r.path, host, r.ct, r.body)
			wantError(t, status, b, http.StatusMisdirectedRequest, "-", "host_not_allowed")
		}
	}
	require.Equal(t, calls, g.fake.Calls(), "no rebound request reached the model")
	// A WebSocket upgrade is checked too.
	_, res, err := websocket.Dial(t.Context(), wsURL(g.srv), &websocket.DialOptions{Host: "evil.example:" + port})
	require.Error(t, err)
	require.Equal(t, http.StatusMisdirectedRequest, res.StatusCode)

	// LAMBENT_ALLOWED_HOSTS adds names; "*" lets any Host through.
	g2 := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "ok"} }),
		map[string]string{"LAMBENT_ALLOWED_HOSTS": "gateway.internal, Other.Example:9000"})
	for host, want := range map[string]int{"gateway.internal:8080": 200, "GATEWAY.INTERNAL": 200, "other.example": 200, "localhost": 200, "evil.example": 421} {
		req, err := http.NewRequest(http.MethodGet, g2.srv.URL+"/healthz", nil)
		require.NoError(t, err)
		req.Host = host
		res, err := g2.http.Do(req)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		require.Equal(t, want, res.StatusCode, "Host %s", host)
	}
	g3 := newGateway(t, fakellm.NewHandler(func(fakellm.Request) fakellm.Turn { return fakellm.Turn{Text: "ok"} }),
		map[string]string{"LAMBENT_ALLOWED_HOSTS": "*"})
	req, err := http.NewRequest(http.MethodGet, g3.srv.URL+"/healthz", nil)
	require.NoError(t, err)
	req.Host = "evil.example"
	res, err = g3.http.Do(req)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode, "LAMBENT_ALLOWED_HOSTS=*")

	// A request that did not come through a socket of the server (as
	// lambdaio hands Lambda's front doors' requests to the handler) is
	// not checked: the front door has its own host.
	rec := httptest.NewRecorder()
	req = httptest.NewRequest(http.MethodGet, "/healthz", nil)
	req.Host = "abc123.lambda-url.us-east-1.on.aws"
	g.app.Handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
}
