package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An item reference may omit its type, as OpenAI's ItemReferenceParam
// allows and openai-go sends it; a message may too, and needs its content.
func TestDecodeItemReferenceWithoutType(t *testing.T) {
	r, err := DecodeCreateRequest([]byte(`{"model":"m","input":[{"id":"msg_1"},{"id":"msg_2","type":null},{"type":"item_reference","id":"msg_3"},{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	require.Len(t, r.Input, 4)
	for i, id := range []string{"msg_1", "msg_2", "msg_3"} {
		assert.Equal(t, Item{Type: ItemReference, ID: id}, r.Input[i])
	}
	assert.Equal(t, ItemMessage, r.Input[3].Type)

	_, err = DecodeCreateRequest([]byte(`{"model":"m","input":[{"id":"msg_1","role":"user"}]}`))
	var ae *Error
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "input[0].content", ae.Param)
}
