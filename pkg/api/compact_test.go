package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A compaction item is accepted as create input, with or without its id,
// and written back in its wire shape.
func TestCompactionItemInput(t *testing.T) {
	r, err := DecodeCreateRequest([]byte(`{"input":[
		{"type":"message","role":"user","content":"first"},
		{"type":"compaction","id":"cmp_1","encrypted_content":"k1.AAAA"},
		{"type":"compaction","encrypted_content":"k1.BBBB","id":null},
		{"role":"user","content":"next"}]}`))
	require.NoError(t, err)
	require.Len(t, r.Input, 4)
	assert.Equal(t, Item{Type: ItemCompaction, ID: "cmp_1", EncryptedContent: "k1.AAAA"}, r.Input[1])
	assert.Equal(t, Item{Type: ItemCompaction, EncryptedContent: "k1.BBBB"}, r.Input[2])
	b, err := json.Marshal(r.Input[1])
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"compaction","id":"cmp_1","encrypted_content":"k1.AAAA"}`, string(b))

	for _, bad := range []string{`{"type":"compaction"}`, `{"type":"compaction","encrypted_content":""}`, `{"type":"compaction","encrypted_content":null}`} {
		_, err := DecodeCreateRequest([]byte(`{"input":[` + bad + `]}`))
		e := AsError(err)
		require.Error(t, err, bad)
		assert.Equal(t, 400, e.Status, bad)
		assert.Equal(t, "input[0].encrypted_content", e.Param, bad)
	}
	_, err = DecodeCreateRequest([]byte(`{"input":[{"type":"compaction","encrypted_content":7}]}`))
	assert.Equal(t, 400, AsError(err).Status)
}

// A compaction_trigger item ending a create's input (Codex's remote
// compaction) asks for a compaction now: it leaves the input and sets
// CompactNow. Anywhere else, and in a conversation's items, it is a 400.
func TestCompactionTriggerInput(t *testing.T) {
	r, err := DecodeCreateRequest([]byte(`{"input":[{"role":"user","content":"hi"},{"type":"compaction_trigger"}]}`))
	require.NoError(t, err)
	assert.True(t, r.CompactNow)
	require.Len(t, r.Input, 1)
	assert.Equal(t, ItemMessage, r.Input[0].Type)

	r, err = DecodeCreateRequest([]byte(`{"previous_response_id":"resp_1","input":[{"type":"compaction_trigger"}]}`))
	require.NoError(t, err)
	assert.True(t, r.CompactNow)
	assert.Empty(t, r.Input)

	r, err = DecodeCreateRequest([]byte(`{"input":"hi"}`))
	require.NoError(t, err)
	assert.False(t, r.CompactNow)

	for body, param := range map[string]string{
		`{"input":[{"type":"compaction_trigger"}]}`:                                                              "input",
		`{"input":[{"type":"compaction_trigger"},{"role":"user","content":"hi"}]}`:                               "input[0].type",
		`{"input":[{"role":"user","content":"hi"},{"type":"compaction_trigger"},{"type":"compaction_trigger"}]}`: "input[1].type",
	} {
		_, err := DecodeCreateRequest([]byte(body))
		require.Error(t, err, body)
		assert.Equal(t, 400, AsError(err).Status, body)
		assert.Equal(t, param, AsError(err).Param, body)
	}
	_, err = DecodeConversationItems([]byte(`{"items":[{"type":"compaction_trigger"}]}`))
	require.Error(t, err)
	assert.Equal(t, "items[0].type", AsError(err).Param)
}

func TestDecodeCompactRequest(t *testing.T) {
	r, err := DecodeCompactRequest([]byte(`{"model":"m","input":"hello","instructions":"be brief","prompt_cache_key":"pk","service_tier":"flex","previous_response_id":null}`))
	require.NoError(t, err)
	assert.Equal(t, &CompactRequest{Model: "m", Instructions: "be brief", PromptCacheKey: "pk", ServiceTier: "flex",
		Input: []Item{{Type: ItemMessage, Role: RoleUser, Content: []ContentPart{{Type: PartInputText, Text: "hello"}}}}}, r)

	// The SDKs' caching and image hints are checked, then ignored.
	_, err = DecodeCompactRequest([]byte(`{"model":"m","input":"hello","prompt_cache_retention":"24h","prompt_cache_options":{"ttl":"12h"},"image":{"context_compression":"auto"}}`))
	require.NoError(t, err)

	r, err = DecodeCompactRequest([]byte(`{"model":"m","previous_response_id":"resp_1"}`))
	require.NoError(t, err)
	assert.Equal(t, "resp_1", r.PreviousResponseID)
	assert.Empty(t, r.Input)

	for _, tc := range []struct{ body, param string }{
		{`{"model":"m"}`, "input"},
		{`{"model":"m","input":[]}`, "input"},
		{`{"model":"m","input":"x","tools":[]}`, "tools"},
		{`{"model":"m","input":"x","stream":true}`, "stream"},
		{`{"model":"m","input":[{"type":"compaction"}]}`, "input[0].encrypted_content"},
		{`{"model":"m","input":[{"role":"wizard","content":"x"}]}`, "input[0].role"},
		{`{"model":"m","input":"x","service_tier":"cheap"}`, "service_tier"},
		{`{"model":"m","input":"x","prompt_cache_retention":"forever"}`, "prompt_cache_retention"},
		{`{"model":"m","input":"x","image":{"context_compression":"max"}}`, "image.context_compression"},
		{`{"model":"m","input":"x","background_options":{}}`, "background_options"},
		{`{"model":7,"input":"x"}`, "model"},
		{`[]`, ""},
		{`{"model":`, ""},
	} {
		_, err := DecodeCompactRequest([]byte(tc.body))
		require.Error(t, err, tc.body)
		e := AsError(err)
		assert.Equal(t, 400, e.Status, tc.body)
		assert.Equal(t, tc.param, e.Param, tc.body)
	}
}
