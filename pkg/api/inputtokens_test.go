package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// POST /v1/responses/input_tokens takes the create request's fields a
// count needs (the SDKs' InputTokenCountParams), decoded and validated as
// a create request's; the others (stream, background, store,
// max_output_tokens...) are unknown parameters, as OpenAI answers them.
// The SDKs' personality, a style preset of OpenAI's models, is refused as
// unsupported: no model here has one, nor does a create here take it.
func TestDecodeInputTokensRequest(t *testing.T) {
	r, err := DecodeInputTokensRequest([]byte(`{"model":"m","input":"hello","instructions":"be brief","previous_response_id":null,
		"tools":[{"type":"function","name":"f","parameters":{"type":"object"}}],"tool_choice":"required","conversation":{"id":"conv_1"},
		"text":{"format":{"type":"text"}},"reasoning":{"effort":"low"},"truncation":"disabled","parallel_tool_calls":false}`))
	require.NoError(t, err)
	assert.Equal(t, "m", r.Model)
	assert.Equal(t, "be brief", r.Instructions)
	assert.Equal(t, "conv_1", r.Conversation)
	assert.Len(t, r.Tools, 1)
	assert.Equal(t, ToolChoiceRequired, r.ToolChoice.Mode)
	assert.Equal(t, "low", *r.Reasoning.Effort)
	assert.False(t, *r.ParallelToolCalls)
	assert.Equal(t, []Item{{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: PartInputText, Text: "hello"}}}}, r.Input)

	for _, tc := range []struct{ body, param, code string }{
		{`{"model":"m","input":"x","stream":true}`, "stream", "unknown_parameter"},
		{`{"model":"m","input":"x","background":true}`, "background", "unknown_parameter"},
		{`{"model":"m","input":"x","store":false}`, "store", "unknown_parameter"},
		{`{"model":"m","input":"x","max_output_tokens":5}`, "max_output_tokens", "unknown_parameter"},
		{`{"model":"m","input":"x","personality":"friendly"}`, "personality", "unsupported_parameter"},
		{`{"model":"m","input":[{"role":"wizard","content":"x"}]}`, "input[0].role", ""},
		{`{"model":"m","input":"x","truncation":"sometimes"}`, "truncation", ""},
		{`[]`, "", ""},
	} {
		_, err := DecodeInputTokensRequest([]byte(tc.body))
		require.Error(t, err, tc.body)
		e := AsError(err)
		assert.Equal(t, 400, e.Status, tc.body)
		assert.Equal(t, tc.param, e.Param, tc.body)
		if tc.code != "" {
			assert.Equal(t, tc.code, e.Code, tc.body)
		}
	}
}

// The count's reply is OpenAI's {"object":"response.input_tokens","input_tokens":N}.
func TestInputTokensJSON(t *testing.T) {
	b, err := json.Marshal(NewInputTokens(42))
	require.NoError(t, err)
	assert.JSONEq(t, `{"object":"response.input_tokens","input_tokens":42}`, string(b))
}
