package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidResponseID(t *testing.T) {
	assert.True(t, ValidResponseID(NewID(PrefixResponse)))
	for _, id := range []string{"resp_a", "resp_event_1", "resp_sqs-order-1234", "resp_" + strings.Repeat("f", MaxResponseIDLength-len("resp_"))} {
		assert.True(t, ValidResponseID(id), id)
	}
	for _, id := range []string{
		"", "resp_", "resp", "RESP_abc", "msg_abc", " resp_abc", "resp_abc ", "resp_a#b", "resp_a/b", "resp_a.b",
		"resp_a%00", "resp_\x00", "resp_é", "resp_a\nb", "resp_" + strings.Repeat("a", MaxResponseIDLength-len("resp_")+1),
		"resp_" + strings.Repeat("a", 3000),
	} {
		assert.False(t, ValidResponseID(id), "%q", id)
	}
}
