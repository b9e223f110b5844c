package api

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first request of Codex CLI 0.169 (captured from `codex exec` with an
// MCP server configured) decodes: client_metadata, namespace tools (its
// sub-agents, the MCP server), web_search, store false, include,
// prompt_cache_key, reasoning.summary.
func TestDecodeCodexBody(t *testing.T) {
	b, err := os.ReadFile("testdata/codex_body.json")
	require.NoError(t, err)
	r, err := DecodeCreateRequest(b)
	require.NoError(t, err)
	assert.False(t, r.Stores())
	var types []string
	for _, tl := range r.Tools {
		types = append(types, tl.Type)
	}
	assert.Contains(t, types, ToolNamespace)
	assert.Contains(t, types, "web_search")
}

// Every tool type of the SDK's Tool union decodes; built-in tools are
// echoed as given.
func TestDecodeToolTypes(t *testing.T) {
	body := `{"input":"hi","tools":[
		{"type":"function","name":"f"},
		{"type":"custom","name":"patch","description":"Apply a patch.","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}},
		{"type":"custom","name":"note"},
		{"type":"namespace","name":"crm","description":"CRM tools.","tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"custom","name":"raw","format":{"type":"text"}}]},
		{"type":"web_search","external_web_access":false},
		{"type":"web_search_preview"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"code_interpreter","container":{"type":"auto"}},
		{"type":"image_generation"},{"type":"computer_use_preview","display_width":1024,"display_height":768,"environment":"linux"},
		{"type":"computer"},{"type":"local_shell"},{"type":"shell"},{"type":"apply_patch"},{"type":"tool_search"}],
		"tool_choice":{"type":"function","name":"f","namespace":"crm"}}`
	r, err := DecodeCreateRequest([]byte(body))
	require.NoError(t, err)
	require.Len(t, r.Tools, 15)
	ns := r.Tools[3]
	require.Len(t, ns.Tools, 2)
	assert.Equal(t, "raw", ns.Tools[1].Name)
	echo, err := json.Marshal(r.Tools[4])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"web_search","external_web_access":false}`, string(echo))
	echo, err = json.Marshal(r.Tools[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"custom","name":"patch","description":"Apply a patch.","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}`, string(echo))
	assert.Equal(t, ToolChoice{Type: ToolFunction, Name: "f", Namespace: "crm"}, *r.ToolChoice)
	assert.Equal(t, ToolChoiceRequired, r.ToolChoice.EffectiveMode())

	for _, typ := range []string{"web_search", "file_search", "tool_search"} {
		assert.Equal(t, BuiltinHosted, BuiltinKind(typ), typ)
	}
	for _, typ := range []string{"shell", "apply_patch", "local_shell", "computer", "computer_use_preview"} {
		assert.Equal(t, BuiltinClient, BuiltinKind(typ), typ)
	}
	for _, typ := range []string{"computer_use", "programmatic_tool_calling"} {
		assert.Equal(t, BuiltinUnsupported, BuiltinKind(typ), typ)
	}
	assert.Empty(t, BuiltinKind("function"))
}

// Malformed namespace and custom tools, and choices of tools not given,
// are a 400 naming the field.
func TestDecodeRejectsToolShapes(t *testing.T) {
	in := func(tools string) string { return `{"input":"hi","tools":[` + tools + `]}` }
	runBad(t, []badCase{
		{in(`{"type":"namespace","tools":[{"type":"function","name":"f"}]}`), "tools[0].name", "missing_required_parameter", ""},
		{in(`{"type":"namespace","name":"has.dot","tools":[{"type":"function","name":"f"}]}`), "tools[0].name", "", "has.dot"},
		{in(`{"type":"namespace","name":"n","tools":[]}`), "tools[0].tools", "missing_required_parameter", ""},
		{in(`{"type":"namespace","name":"n","tools":[{"type":"web_search"}]}`), "tools[0].tools[0].type", "invalid_value", "web_search"},
		{in(`{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"},{"type":"custom","name":"f"}]}`), "tools[0].tools[1].name", "", "duplicate"},
		{in(`{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]},{"type":"namespace","name":"n","tools":[{"type":"function","name":"g"}]}`), "tools[1].name", "", "duplicate namespace"},
		{in(`{"type":"namespace","name":"n","tools":[{"type":"function"}]}`), "tools[0].tools[0].name", "", ""},
		{in(`{"type":"custom"}`), "tools[0].name", "", ""},
		{in(`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"peg","definition":"x"}}`), "tools[0].format.syntax", "invalid_value", "peg"},
		{in(`{"type":"custom","name":"c","format":{"type":"grammar","syntax":"lark"}}`), "tools[0].format.definition", "missing_required_parameter", ""},
		{in(`{"type":"custom","name":"c","format":{"type":"json"}}`), "tools[0].format.type", "invalid_value", ""},
		{in(`{"type":"custom","name":"c","format":{"type":"text","extra":1}}`), "tools[0].format.extra", "unknown_parameter", ""},
		{in(`{"type":"custom","name":"c"},{"type":"function","name":"c"}`), "tools[1].name", "", "duplicate"},
		{in(`{"type":"telepathy"}`), "tools[0].type", "", "telepathy"},
		{`{"input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}],"tool_choice":{"type":"function","name":"f"}}`, "tool_choice.name", "", `"f"`},
		{`{"input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]}],"tool_choice":{"type":"function","name":"g","namespace":"n"}}`, "tool_choice.name", "", `"n.g"`},
		{`{"input":"hi","tools":[{"type":"custom","name":"c"}],"tool_choice":{"type":"custom","name":"d"}}`, "tool_choice.name", "", `"d"`},
		{`{"input":"hi","client_metadata":{"a":1}}`, "client_metadata", "", "string"},
		{`{"input":"hi","client_metadata":"x"}`, "client_metadata", "", ""},
	})
}

// custom_tool_call, custom_tool_call_output and a function_call's
// namespace decode and are written back in OpenAI's shapes.
func TestCustomAndNamespacedItems(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"type":"function_call","id":"fc_1","call_id":"c1","namespace":"mcp__docs","name":"search","arguments":"{}","status":"completed"}`,
			`{"type":"function_call","id":"fc_1","call_id":"c1","namespace":"mcp__docs","name":"search","arguments":"{}","status":"completed"}`},
		{`{"type":"custom_tool_call","id":"ctc_1","call_id":"c2","name":"apply_patch","input":"*** Begin Patch"}`,
			`{"type":"custom_tool_call","id":"ctc_1","call_id":"c2","name":"apply_patch","input":"*** Begin Patch","status":""}`},
		{`{"type":"custom_tool_call_output","call_id":"c2","output":"done"}`,
			`{"type":"custom_tool_call_output","id":"","call_id":"c2","output":"done","status":""}`},
		{`{"type":"custom_tool_call_output","call_id":"c2","output":[{"type":"input_text","text":"done"}]}`,
			`{"type":"custom_tool_call_output","id":"","call_id":"c2","output":[{"type":"input_text","text":"done"}],"status":""}`},
		{`{"type":"shell_call","id":"sh_1","call_id":"c3","action":{"commands":["ls"],"timeout_ms":1000},"status":"completed"}`,
			`{"type":"shell_call","id":"sh_1","call_id":"c3","action":{"commands":["ls"],"timeout_ms":1000},"status":"completed"}`},
		{`{"type":"shell_call_output","call_id":"c3","output":[{"stdout":"a\n","stderr":"","outcome":{"type":"exit","exit_code":0}}],"max_output_length":100}`,
			`{"type":"shell_call_output","id":"","call_id":"c3","output":[{"stdout":"a\n","stderr":"","outcome":{"type":"exit","exit_code":0}}],"status":""}`},
		{`{"type":"apply_patch_call","call_id":"c4","operation":{"type":"delete_file","path":"a.txt"},"status":"completed"}`,
			`{"type":"apply_patch_call","id":"","call_id":"c4","operation":{"type":"delete_file","path":"a.txt"},"status":"completed"}`},
		{`{"type":"apply_patch_call_output","call_id":"c4","status":"failed","output":"no such file"}`,
			`{"type":"apply_patch_call_output","id":"","call_id":"c4","status":"failed","output":"no such file"}`},
		{`{"type":"apply_patch_call_output","call_id":"c4","status":"completed"}`,
			`{"type":"apply_patch_call_output","id":"","call_id":"c4","status":"completed","output":null}`},
		{`{"type":"local_shell_call","id":"lsh_1","call_id":"c5","action":{"type":"exec","command":["ls"],"env":{}},"status":"completed"}`,
			`{"type":"local_shell_call","id":"lsh_1","call_id":"c5","action":{"type":"exec","command":["ls"],"env":{}},"status":"completed"}`},
		{`{"type":"local_shell_call_output","id":"c5","output":"a.txt"}`,
			`{"type":"local_shell_call_output","id":"","call_id":"c5","output":"a.txt","status":""}`},
		{`{"type":"local_shell_call_output","id":"lsho_1","call_id":"c5","output":"a.txt","status":"completed"}`,
			`{"type":"local_shell_call_output","id":"lsho_1","call_id":"c5","output":"a.txt","status":"completed"}`},
		{`{"type":"computer_call","id":"cu_1","call_id":"c6","action":{"type":"screenshot"},"pending_safety_checks":[{"id":"s1","code":"malicious_instructions","message":"m"}],"status":"completed"}`,
			`{"type":"computer_call","id":"cu_1","call_id":"c6","action":{"type":"screenshot"},"pending_safety_checks":[{"id":"s1","code":"malicious_instructions","message":"m"}],"status":"completed"}`},
		{`{"type":"computer_call_output","call_id":"c6","output":{"type":"computer_screenshot","image_url":"https://x/y.png"},"acknowledged_safety_checks":[{"id":"s1"}]}`,
			`{"type":"computer_call_output","id":"","call_id":"c6","output":{"type":"computer_screenshot","image_url":"https://x/y.png"},"acknowledged_safety_checks":[{"id":"s1"}],"status":""}`},
	} {
		var it Item
		require.NoError(t, json.Unmarshal([]byte(c.in), &it), c.in)
		require.NoError(t, validateInputItem(&it))
		b, err := json.Marshal(it)
		require.NoError(t, err)
		assert.JSONEq(t, c.want, string(b))
	}
	runBad(t, []badCase{
		{`{"input":[{"type":"custom_tool_call","call_id":"c","name":"n"}]}`, "input[0].input", "", "input"},
		{`{"input":[{"type":"custom_tool_call","name":"n","input":""}]}`, "input[0].call_id", "", ""},
		{`{"input":[{"type":"custom_tool_call_output","call_id":"c"}]}`, "input[0].output", "", "output"},
		{`{"input":[{"type":"shell_call","call_id":"c"}]}`, "input[0].action", "", "action"},
		{`{"input":[{"type":"shell_call_output","call_id":"c","output":"x"}]}`, "input[0].output", "", "array"},
		{`{"input":[{"type":"apply_patch_call","call_id":"c","operation":"x"}]}`, "input[0].operation", "", "operation"},
		{`{"input":[{"type":"apply_patch_call_output","call_id":"c"}]}`, "input[0].status", "missing_required_parameter", ""},
		{`{"input":[{"type":"apply_patch_call_output","call_id":"c","status":"in_progress"}]}`, "input[0].status", "invalid_value", ""},
		{`{"input":[{"type":"local_shell_call","call_id":"c"}]}`, "input[0].action", "", "action"},
		{`{"input":[{"type":"local_shell_call_output","id":"c","output":[]}]}`, "input[0].output", "", "string"},
		{`{"input":[{"type":"local_shell_call_output","output":"x"}]}`, "input[0].call_id", "", ""},
		{`{"input":[{"type":"computer_call","call_id":"c","action":"click"}]}`, "input[0].action", "", "action"},
		{`{"input":[{"type":"computer_call_output","call_id":"c","output":"x"}]}`, "input[0].output", "", "computer_screenshot"},
	})
}

// GET /v1/models lists the named models; /v1/models/{id} knows those and
// the models of prefix routes, else it is a 404 model_not_found.
func TestModels(t *testing.T) {
	m := Models{
		Named:    []Model{{ID: "llama3.2", OwnedBy: "openai"}, {ID: "gpt-4o", OwnedBy: "openai"}},
		Prefixes: []Model{{ID: "us.anthropic.", OwnedBy: "bedrock"}, {ID: "us.", OwnedBy: "openai"}},
	}
	b, err := json.Marshal(m.List())
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[{"id":"llama3.2","object":"model","created":0,"owned_by":"openai"},{"id":"gpt-4o","object":"model","created":0,"owned_by":"openai"}]}`, string(b))
	got, err := m.Get("us.anthropic.claude-sonnet-4-5")
	require.NoError(t, err)
	assert.Equal(t, Model{ID: "us.anthropic.claude-sonnet-4-5", Object: "model", OwnedBy: "bedrock"}, *got)
	got, err = m.Get("gpt-4o")
	require.NoError(t, err)
	assert.Equal(t, "openai", got.OwnedBy)
	_, err = m.Get("claude")
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, 404, e.Status)
	assert.Equal(t, "model_not_found", e.Code)
	b, err = json.Marshal(Models{}.List())
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"list","data":[]}`, string(b))
}
