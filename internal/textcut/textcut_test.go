package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestPrefix(t *testing.T) {
	assert.Equal(t, "abc", Prefix("abc", 3))
	assert.Equal(t, "abc", Prefix("abc", 10))
	assert.Equal(t, "ab", Prefix("abc", 2))
	assert.Equal(t, "", Prefix("abc", 0))
	assert.Equal(t, "", Prefix("abc", -1))
	// "é" is 2 bytes, "€" 3: a cut inside one backs off to its start.
	assert.Equal(t, "a", Prefix("aé", 2))
	assert.Equal(t, "aé", Prefix("aé", 3))
	assert.Equal(t, "", Prefix("€", 2))
	const s = "añ€😀x"
	for n := range len(s) + 2 {
		c := Prefix(s, n)
		assert.True(t, utf8.ValidString(c), n)
		assert.LessOrEqual(t, len(c), max(n, 0), n)
		assert.True(t, strings.HasPrefix(s, c), n)
	}
}

func TestEllipsis(t *testing.T) {
	assert.Equal(t, "abc", Ellipsis("abc", 3))
	assert.Equal(t, "ab…", Ellipsis("abc", 2))
	assert.Equal(t, "a…", Ellipsis("a€", 3))
}
