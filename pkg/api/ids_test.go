package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestItemIDCarriesItsResponseID(t *testing.T) {
	for _, resp := range []string{NewID(PrefixResponse), "resp_sqs_order_1234", "resp_a-b", "resp_x"} {
		for _, prefix := range []string{PrefixMessage, PrefixFunctionCall, PrefixFuncOutput, PrefixReasoning} {
			id := NewItemID(prefix, resp)
			assert.True(t, strings.HasPrefix(id, prefix), id)
			got, ok := ResponseIDOf(id)
			assert.True(t, ok, id)
			assert.Equal(t, resp, got, id)
		}
	}
	resp := NewID(PrefixResponse)
	a, b := NewItemID(PrefixMessage, resp), NewItemID(PrefixMessage, resp)
	assert.NotEqual(t, a, b, "two items of one response")
	assert.Len(t, a, len(PrefixMessage)+48+1+itemSuffixLen)
}

func TestResponseIDOfOtherForms(t *testing.T) {
	long := NewItemID(PrefixMessage, "resp_"+strings.Repeat("a", MaxResponseIDLen-len("resp_")))
	_, ok := ResponseIDOf(long)
	assert.True(t, ok, "the longest response id")
	for _, id := range []string{
		"",
		"msg",
		NewID(PrefixMessage), // an id of the older format
		NewID(PrefixFunctionCall),
		NewID(PrefixResponse),   // a response id is no item id
		"msg__0123456789ab",     // no response id
		"msg_abc_0123456789a",   // short suffix
		"msg_abc_0123456789abc", // long suffix
		"msg_abc_0123456789aB",  // suffix not lowercase hex
		"msg_abc-0123456789ab",  // no separator
		"msg_a.b_0123456789ab",  // a character a response id cannot hold
		"msg_" + strings.Repeat("a", MaxResponseIDLen) + "_0123456789ab", // too long
	} {
		got, ok := ResponseIDOf(id)
		assert.False(t, ok, "%q → %q", id, got)
	}
}

func TestValidResponseID(t *testing.T) {
	for _, id := range []string{NewID(PrefixResponse), "resp_event_1", "resp_A-z_09", "resp_" + strings.Repeat("f", MaxResponseIDLen-len("resp_"))} {
		assert.True(t, ValidResponseID(id), id)
	}
	for _, id := range []string{"", "resp_", "resp", "msg_abc", "RESP_abc", "resp_a b", "resp_a/b", "resp_é", "resp_" + strings.Repeat("f", MaxResponseIDLen-len("resp_")+1)} {
		assert.False(t, ValidResponseID(id), id)
	}
}
