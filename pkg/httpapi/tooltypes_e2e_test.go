package httpapi_test

// The tool types of OpenAI's Tool union beyond function and mcp, end to
// end (docs/tools.md, "Tool types"): namespace and custom tools reach the
// model as functions and their calls come back as OpenAI's items; the
// built-in types Lambent does not run are left out and reported.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/chatwire"
	"github.com/lambent/lambent/internal/testing/fakellm"
)

// toolTypesTools are a flat function named as the namespace crm's lookup
// would be flattened, the namespace, a custom tool with a grammar, OpenAI's
// client-executed shell and apply_patch, and built-in tools the gateway
// does not run.
const toolTypesTools = `[
	{"type":"function","name":"crm__lookup","description":"A flat tool.","parameters":{"type":"object"}},
	{"type":"namespace","name":"crm","description":"CRM tools.","tools":[
		{"type":"function","name":"lookup","description":"Look a customer up.","parameters":{"type":"object","properties":{"id":{"type":"string"}}}},
		{"type":"custom","name":"note","description":"Write a note."}]},
	{"type":"custom","name":"patch","description":"Apply a patch.","format":{"type":"grammar","syntax":"lark","definition":"start: \"ok\""}},
	{"type":"web_search","external_web_access":false},
	{"type":"shell"},{"type":"apply_patch"},
	{"type":"local_shell"}]`

// modelTools are the function names (and descriptions) a model call was
// offered.
func modelTools(req fakellm.Request) map[string]chatwire.FunctionDef {
	m := map[string]chatwire.FunctionDef{}
	for _, t := range req.Tools {
		m[t.Function.Name] = t.Function
	}
	return m
}

func TestE2EToolTypes(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Turn{Text: "done"}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{
			{ID: "call_ns", Name: "crm__lookup_2", Arguments: `{"id":"7"}`},
			{ID: "call_note", Name: "crm__note", Arguments: `{"input":"call them back"}`},
			{ID: "call_patch", Name: "patch", Arguments: `{"input":"ok"}`},
			{ID: "call_sh", Name: "shell", Arguments: `{"commands":["ls -la"],"timeout_ms":5000}`},
			{ID: "call_ap", Name: "apply_patch", Arguments: `{"type":"create_file","path":"a.txt","diff":"+hi"}`},
		}}
	})
	g := newGateway(t, fake, nil)

	for _, stream := range []bool{false, true} {
		body := `{"model":"m","input":"go","store":false,"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `,"tools":` + toolTypesTools + `}`
		status, _, raw := g.postJSON(body)
		require.Equal(t, http.StatusOK, status, "%s", raw)
		var resp struct {
			Status  string            `json:"status"`
			Output  []json.RawMessage `json:"output"`
			Lambent struct {
				UnservedTools []string `json:"unserved_tools"`
			} `json:"lambent"`
			Tools []json.RawMessage `json:"tools"`
		}
		if stream {
			frames, done := sseFrames(t, raw)
			require.True(t, done)
			events := map[string]int{}
			for _, f := range frames {
				events[f.event]++
				if f.event == "response.completed" {
					var ev struct{ Response json.RawMessage }
					require.NoError(t, json.Unmarshal(f.data, &ev))
					require.NoError(t, json.Unmarshal(ev.Response, &resp))
				}
			}
			// Custom calls have input events, not argument events.
			assert.Equal(t, 2, events["response.custom_tool_call_input.done"], "%v", events)
			assert.Equal(t, 2, events["response.custom_tool_call_input.delta"], "%v", events)
			assert.Equal(t, 1, events["response.function_call_arguments.done"], "%v", events)
		} else {
			require.NoError(t, json.Unmarshal(raw, &resp))
		}
		require.Equal(t, "requires_action", resp.Status)
		require.Len(t, resp.Output, 5)
		assert.JSONEq(t, `{"type":"function_call","call_id":"call_ns","namespace":"crm","name":"lookup","arguments":"{\"id\":\"7\"}","status":"completed"}`, withoutID(t, resp.Output[0]))
		assert.JSONEq(t, `{"type":"custom_tool_call","call_id":"call_note","namespace":"crm","name":"note","input":"call them back","status":"completed"}`, withoutID(t, resp.Output[1]))
		assert.JSONEq(t, `{"type":"custom_tool_call","call_id":"call_patch","name":"patch","input":"ok","status":"completed"}`, withoutID(t, resp.Output[2]))
		assert.JSONEq(t, `{"type":"shell_call","call_id":"call_sh","action":{"commands":["ls -la"],"timeout_ms":5000},"status":"completed"}`, withoutID(t, resp.Output[3]))
		assert.JSONEq(t, `{"type":"apply_patch_call","call_id":"call_ap","operation":{"type":"create_file","path":"a.txt","diff":"+hi"},"status":"completed"}`, withoutID(t, resp.Output[4]))
		assert.Equal(t, []string{"web_search"}, resp.Lambent.UnservedTools)
		assert.JSONEq(t, `{"type":"shell"}`, string(resp.Tools[4]))
		require.Len(t, resp.Tools, 7)
		assert.JSONEq(t, `{"type":"web_search","external_web_access":false}`, string(resp.Tools[3]))
	}

	// What the model was offered: every client tool as a function, the
	// namespaced ones by their flattened names (numbered past the flat
	// tool's), the custom ones with one string input; no built-in tool.
	first := fake.Requests()[0]
	offered := modelTools(first)
	names := make([]string, 0, len(offered))
	for n := range offered {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{"crm__lookup", "crm__lookup_2", "crm__note", "patch", "shell", "apply_patch", "local_shell"}, names)
	assert.Equal(t, "Look a customer up.", offered["crm__lookup_2"].Description)
	assert.JSONEq(t, `{"type":"object","properties":{"input":{"type":"string","description":"The tool's input, as free text."}},"required":["input"],"additionalProperties":false}`, string(offered["patch"].Parameters))
	assert.Contains(t, offered["patch"].Description, "lark grammar:\nstart: \"ok\"")

	// A store: false client replays the calls with their outputs: the
	// model sees them as function calls of the names it knows.
	replay := `{"model":"m","store":false,"tools":` + toolTypesTools + `,"input":[
		{"role":"user","content":"go"},
		{"type":"function_call","call_id":"call_ns","namespace":"crm","name":"lookup","arguments":"{\"id\":\"7\"}"},
		{"type":"custom_tool_call","call_id":"call_note","namespace":"crm","name":"note","input":"call them back"},
		{"type":"custom_tool_call","call_id":"call_patch","name":"patch","input":"ok"},
		{"type":"shell_call","call_id":"call_sh","action":{"commands":["ls -la"],"timeout_ms":5000}},
		{"type":"apply_patch_call","call_id":"call_ap","operation":{"type":"create_file","path":"a.txt","diff":"+hi"},"status":"completed"},
		{"type":"function_call_output","call_id":"call_ns","output":"Ada"},
		{"type":"custom_tool_call_output","call_id":"call_note","output":"noted"},
		{"type":"custom_tool_call_output","call_id":"call_patch","output":[{"type":"input_text","text":"patched"}]},
		{"type":"shell_call_output","call_id":"call_sh","output":[{"stdout":"a.txt\n","stderr":"","outcome":{"type":"exit","exit_code":0}}]},
		{"type":"apply_patch_call_output","call_id":"call_ap","status":"failed","output":"a.txt exists"}]}`
	status, _, raw := g.postJSON(replay)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var done struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal(raw, &done))
	require.Equal(t, "completed", done.Status)
	reqs := fake.Requests()
	msgs := reqs[len(reqs)-1].Messages
	var calls []string
	var outputs []string
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.ID+" "+c.Function.Name+" "+string(c.Function.Arguments))
		}
		if m.Role == "tool" {
			outputs = append(outputs, m.ToolCallID+" "+m.Content.String())
		}
	}
	assert.Equal(t, []string{`call_ns crm__lookup_2 {"id":"7"}`, `call_note crm__note {"input":"call them back"}`, `call_patch patch {"input":"ok"}`,
		`call_sh shell {"commands":["ls -la"],"timeout_ms":5000}`, `call_ap apply_patch {"type":"create_file","path":"a.txt","diff":"+hi"}`}, calls)
	assert.Equal(t, []string{"call_ns Ada", "call_note noted", "call_patch patched",
		`call_sh [{"stdout":"a.txt\n","stderr":"","outcome":{"type":"exit","exit_code":0}}]`, "call_ap Error: a.txt exists"}, outputs, "a failed apply_patch reaches the model marked")

	// An output for a call the conversation does not hold is refused.
	status, _, raw = g.postJSON(`{"model":"m","input":[{"type":"custom_tool_call_output","call_id":"nope","output":"x"}]}`)
	wantError(t, status, raw, http.StatusBadRequest, "input[0].call_id", "")
}

// A forced choice of a namespace's function reaches the model by its
// flattened name; forcing a built-in tool the gateway does not run is a
// 400 naming it.
func TestE2EToolChoiceNamespaced(t *testing.T) {
	t.Parallel()
	fake := fakellm.New(fakellm.Turn{Text: "ok"}, fakellm.Turn{Text: "ok"})
	g := newGateway(t, fake, nil)
	status, _, raw := g.postJSON(`{"model":"m","input":"go","tools":` + toolTypesTools + `,"tool_choice":{"type":"function","name":"lookup","namespace":"crm"}}`)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	assert.JSONEq(t, `{"type":"function","function":{"name":"crm__lookup_2"}}`, string(fake.Requests()[0].ToolChoice))
	status, _, raw = g.postJSON(`{"model":"m","input":"go","tools":` + toolTypesTools + `,"tool_choice":{"type":"apply_patch"}}`)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	assert.JSONEq(t, `{"type":"function","function":{"name":"apply_patch"}}`, string(fake.Requests()[1].ToolChoice))

	status, _, raw = g.postJSON(`{"model":"m","input":"go","tools":` + toolTypesTools + `,"tool_choice":{"type":"web_search_preview"}}`)
	wantError(t, status, raw, http.StatusBadRequest, "tool_choice.type", "unsupported_tool")
	assert.Equal(t, 2, fake.Calls())
}

// withoutID is an output item without its id (generated).
func withoutID(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	require.NotEmpty(t, m["id"])
	delete(m, "id")
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

// Codex's headers are logged with the request (its request id), and so
// are the built-in tools left out of what the model sees.
func TestE2EClientHeadersLogged(t *testing.T) {
	t.Parallel()
	srv, logs := loggedGateway(t, fakellm.New(fakellm.Turn{Text: "ok"}), nil)
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/responses", strings.NewReader(`{"input":"hi","tools":[{"type":"web_search","external_web_access":false}],"client_metadata":{"session_id":"s1"}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Originator", "codex_exec")
	req.Header.Set("Session-Id", "019a-session")
	req.Header.Set("X-Client-Request-Id", "019a-request")
	res, err := srv.Client().Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	id := res.Header.Get("X-Request-Id")
	client := logs.records(t, func(m map[string]any) bool { return m["request_id"] == id && m["msg"] == "client request" })
	require.Len(t, client, 1)
	assert.Equal(t, "codex_exec", client[0]["originator"])
	assert.Equal(t, "019a-session", client[0]["session_id"])
	assert.Equal(t, "019a-request", client[0]["client_request_id"])
	unserved := logs.records(t, func(m map[string]any) bool {
		return m["request_id"] == id && strings.HasPrefix(m["msg"].(string), "built-in tools not served")
	})
	require.Len(t, unserved, 1)
	assert.Equal(t, []any{"web_search"}, unserved[0]["tools"])
}

// An operator serves a built-in type with a hosted tool
// (LAMBENT_BUILTIN_TOOLS): the model sees that tool, and its calls run on
// the gateway as mcp_call items; the echo keeps the request's declaration.
// LAMBENT_UNSERVED_TOOLS=refuse makes any other built-in tool a 400.
func TestE2EBuiltinToolsServed(t *testing.T) {
	t.Parallel()
	fake := fakellm.NewHandler(func(req fakellm.Request) fakellm.Turn {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Turn{Text: "It is " + last.Content.String()}
		}
		return fakellm.Turn{ToolCalls: []fakellm.ToolCall{{Name: "calculator", Arguments: `{"expression":"6*7"}`}}}
	})
	g := newGateway(t, fake, map[string]string{"LAMBENT_BUILTIN_TOOLS": "code_interpreter=lambent:calculator", "LAMBENT_UNSERVED_TOOLS": "refuse"})
	status, _, raw := g.postJSON(`{"model":"m","input":"6*7?","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var resp struct {
		Status string `json:"status"`
		Output []struct {
			Type, Name, Output string
		} `json:"output"`
		Tools   []json.RawMessage `json:"tools"`
		Lambent *json.RawMessage  `json:"lambent"`
	}
	require.NoError(t, json.Unmarshal(raw, &resp))
	require.Equal(t, "completed", resp.Status)
	require.Len(t, resp.Output, 2)
	assert.Equal(t, "mcp_call", resp.Output[0].Type)
	assert.Equal(t, "calculator", resp.Output[0].Name)
	assert.Equal(t, "42", resp.Output[0].Output)
	require.Len(t, resp.Tools, 1)
	assert.JSONEq(t, `{"type":"code_interpreter","container":{"type":"auto"}}`, string(resp.Tools[0]))
	require.NotNil(t, resp.Lambent)
	assert.NotContains(t, string(*resp.Lambent), "unserved_tools", "nothing unserved")
	assert.Contains(t, modelTools(fake.Requests()[0]), "calculator")

	status, _, raw = g.postJSON(`{"model":"m","input":"hi","tools":[{"type":"function","name":"f"},{"type":"web_search"}]}`)
	wantError(t, status, raw, http.StatusBadRequest, "tools[1].type", "unsupported_tool")
	assert.Equal(t, 2, fake.Calls())
}
