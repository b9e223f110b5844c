package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeStringAndItemInput(t *testing.T) {
	r, err := DecodeCreateRequest([]byte(`{"model":"m","input":"hello"}`))
	require.NoError(t, err)
	require.Len(t, r.Input, 1)
	assert.Equal(t, RoleUser, r.Input[0].Role)
	assert.Equal(t, "hello", r.Input[0].Text())
	assert.True(t, r.Stores())

	r, err = DecodeCreateRequest([]byte(`{"input":[
		{"role":"system","content":"be nice"},
		{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"},{"type":"input_image","image_url":"data:image/png;base64,AA=="}]},
		{"type":"message","role":"assistant","content":[{"type":"output_text","text":"yo","annotations":[]}]},
		{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
		{"type":"function_call_output","call_id":"c1","output":"42"},
		{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"4"},{"type":"input_text","text":"2"}]},
		{"type":"reasoning","id":"rs_1","summary":[]}
	],"tools":[{"type":"function","name":"f","parameters":{"type":"object"}},{"type":"lambent:calculator"},{"type":"mcp","server_label":"x","server_url":"https://x"}],
	"tool_choice":{"type":"function","name":"f"},"text":{"format":{"type":"json_schema","name":"s","schema":{"type":"object"}}},
	"store":false,"stream":true,"metadata":{"k":"v"},"include":["reasoning.encrypted_content"],"truncation":"auto","max_tool_calls":3,"temperature":0.2}`))
	require.NoError(t, err)
	assert.Len(t, r.Input, 7)
	assert.Equal(t, "42", r.Input[5].OutputText())
	assert.False(t, r.Stores())
	assert.True(t, r.Tools[1].IsHosted())
	assert.Equal(t, "calculator", r.Tools[1].HostedName())
	assert.True(t, r.ToolChoice.Forced())
}

func TestToolChoiceForms(t *testing.T) {
	for in, mode := range map[string]string{`"auto"`: "auto", `"none"`: "none", `"required"`: "required",
		`{"type":"function","name":"f"}`: "required", `{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"f"}]}`: "auto",
		`{"type":"mcp","server_label":"docs","name":"search.v2"}`: "required", `{"type":"mcp","server_label":"docs"}`: "required"} {
		r, err := DecodeCreateRequest([]byte(`{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":` + in + `}`))
		require.NoError(t, err, in)
		assert.Equal(t, mode, r.ToolChoice.EffectiveMode(), in)
		b, err := json.Marshal(r.ToolChoice)
		require.NoError(t, err)
		assert.JSONEq(t, in, string(b))
	}
}

// tool_choice {"type":"mcp"} (OpenAI's ToolChoiceMcp) needs a server_label;
// its name, if given, is an MCP tool name of at most 128 bytes. Whether the
// label names a server of the request is the engine's to check.
func TestDecodeMCPToolChoice(t *testing.T) {
	r, err := DecodeCreateRequest([]byte(`{"input":"x","tools":[{"type":"mcp","server_label":"docs","server_url":"https://mcp.example/mcp"}],` +
		`"tool_choice":{"type":"mcp","server_label":"docs","name":null}}`))
	require.NoError(t, err)
	assert.Equal(t, ToolChoice{Type: ToolMCP, ServerLabel: "docs"}, *r.ToolChoice)
	runBad(t, []badCase{
		{`{"input":"x","tool_choice":{"type":"mcp","name":"search"}}`, "tool_choice.server_label", "", "missing required parameter"},
		{`{"input":"x","tool_choice":{"type":"mcp","server_label":""}}`, "tool_choice.server_label", "", "missing required parameter"},
		{`{"input":"x","tool_choice":{"type":"mcp","server_label":"docs","name":"` + strings.Repeat("n", 129) + `"}}`, "tool_choice.name", "", "128"},
		// A label is bounded as a declaration's is, before any message
		// quotes it.
		{`{"input":"x","tool_choice":{"type":"mcp","server_label":"` + strings.Repeat("l", 257) + `"}}`, "tool_choice.server_label", "", "256"},
	})
}

// Every bad input is a 400 (or 413) naming the parameter.
func TestBadInput(t *testing.T) {
	cases := []struct{ body, param, msg string }{
		{`{"input":`, "", "parse"},
		{`[1,2]`, "", "JSON object"},
		{`{"input":42}`, "input", "string or an array"},
		{`{"input":"x","tools":{}}`, "tools", "array"},
		{`{"input":""}`, "input", "empty"},
		{`{"input":[]}`, "input", "empty"},
		{`{}`, "input", "empty"},
		{`{"input":"x","tool_choice":"sometimes"}`, "tool_choice", "sometimes"},
		{`{"input":"x","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"function","name":"g"}}`, "tool_choice.name", "not in tools"},
		{`{"input":[{"type":"telepathy"}]}`, "input[0].type", "unsupported item type"},
		{`{"input":"x","frobnicate":true}`, "frobnicate", "Unknown parameter"},
		{`{"input":[{"role":"wizard","content":"x"}]}`, "input[0].role", "invalid role"},
		{`{"input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content[0].text", "text"},
		{`{"input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "call_id"},
		{`{"input":"x","tools":[{"type":"function"}]}`, "tools[0].name", "name"},
		{`{"input":"x","tools":[{"type":"web_browse"}]}`, "tools[0].type", "unsupported tool type"},
		{`{"input":"x","temperature":"hot"}`, "temperature", "number"},
		{`{"input":"x","temperature":3}`, "temperature", "between"},
		{`{"input":"x","max_tool_calls":0}`, "max_tool_calls", "at least 1"},
		{`{"input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", "yaml"},
		{`{"input":"x","include":["everything"]}`, "include[0]", "everything"},
		{`{"input":"x","stream":"yes"}`, "stream", "boolean"},
		{`{"input":"x","metadata":{"a":1}}`, "metadata", "string"},
		{`{"input":"x","allowed_tools":["nope"]}`, "allowed_tools[0]", "not in tools"},
		{`{"input":"x","background":true,"store":false}`, "background", "stored"},
		{`{"input":"x","conversation":"conv_1","previous_response_id":"resp_1"}`, "conversation", "Mutually exclusive"},
	}
	for _, c := range cases {
		_, err := DecodeCreateRequest([]byte(c.body))
		var ae *Error
		require.True(t, errors.As(err, &ae), "%s: %v", c.body, err)
		assert.Equal(t, 400, ae.Status, c.body)
		assert.Equal(t, c.param, ae.Param, c.body)
		assert.Contains(t, ae.Message, c.msg, c.body)
	}
}

func TestReadLimited(t *testing.T) {
	_, err := ReadLimited(strings.NewReader(strings.Repeat("x", 11)), 10)
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 413, ae.Status)
	b, err := ReadLimited(strings.NewReader("0123456789"), 10)
	require.NoError(t, err)
	assert.Len(t, b, 10)
}

func TestStateMachine(t *testing.T) {
	assert.True(t, CanTransition("", StatusQueued))
	assert.True(t, CanTransition("", StatusInProgress))
	assert.True(t, CanTransition(StatusQueued, StatusInProgress))
	assert.True(t, CanTransition(StatusInProgress, StatusRequiresAction))
	assert.True(t, CanTransition(StatusInProgress, StatusIncomplete))
	for _, term := range []Status{StatusCompleted, StatusIncomplete, StatusFailed, StatusCancelled, StatusRequiresAction} {
		assert.True(t, term.Terminal())
		for _, to := range []Status{StatusQueued, StatusInProgress, StatusCompleted, StatusRequiresAction} {
			assert.Error(t, Transition(term, to), "%s -> %s", term, to)
		}
	}
	assert.Error(t, Transition("", StatusCompleted))
	assert.Error(t, Transition(StatusQueued, StatusCompleted))
}

func TestIDsSortAndDiffer(t *testing.T) {
	a, b := NewID(PrefixResponse), NewID(PrefixResponse)
	assert.NotEqual(t, a, b)
	assert.True(t, strings.HasPrefix(a, "resp_"))
	assert.Len(t, a, len("resp_")+48)
	prev := NewID("x_")
	for i := 0; i < 1000; i++ {
		next := NewID("x_")
		assert.Less(t, prev[:18], next[:18]+"~", "time prefix never goes back")
		prev = next
	}
}

func TestErrorJSON(t *testing.T) {
	b, err := json.Marshal(ErrorBody{Error: InvalidRequest("input", "bad")})
	require.NoError(t, err)
	assert.JSONEq(t, `{"error":{"message":"bad","type":"invalid_request_error","param":"input","code":null}}`, string(b))
}

func TestItemRoundTrip(t *testing.T) {
	items := []Item{
		{Type: ItemMessage, ID: "msg_1", Status: ItemCompleted, Role: RoleAssistant, Content: []ContentPart{{Type: PartOutputText, Text: "hi"}, {Type: PartRefusal, Refusal: "no"}}},
		{Type: ItemFunctionCall, ID: "fc_1", Status: ItemCompleted, CallID: "c", Name: "f", Arguments: "{}"},
		{Type: ItemFunctionCallOutput, ID: "fco_1", Status: ItemCompleted, CallID: "c", Output: "x", IsError: true},
		{Type: ItemReasoning, ID: "rs_1", Content: []ContentPart{{Type: PartReasoningText, Text: "think"}}},
	}
	b, err := json.Marshal(items)
	require.NoError(t, err)
	var back []Item
	require.NoError(t, json.Unmarshal(b, &back))
	b2, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(b2))
}

// A metadata value must be a string, as at OpenAI: null is refused (400
// naming the key) by every decoder of metadata, a response's create, a
// conversation's create and its metadata update. (Decoded into a map of
// strings, null was read as "" and stored.)
func TestMetadataNullValueRefused(t *testing.T) {
	decoders := map[string]func(md string) error{
		"create response": func(md string) error {
			_, err := DecodeCreateRequest([]byte(`{"input":"x","metadata":` + md + `}`))
			return err
		},
		"create conversation": func(md string) error {
			_, err := DecodeConversationCreate([]byte(`{"metadata":` + md + `}`))
			return err
		},
		"update metadata": func(md string) error { _, err := DecodeMetadataUpdate([]byte(`{"metadata":` + md + `}`)); return err },
	}
	for name, decode := range decoders {
		err := decode(`{"a":"b","k":null}`)
		var ae *Error
		require.ErrorAs(t, err, &ae, name)
		assert.Equal(t, 400, ae.Status, name)
		assert.Equal(t, "metadata.k", ae.Param, name)
		assert.Contains(t, ae.Message, "null", name)
		require.NoError(t, decode(`{"a":"b"}`), name)
	}
}
