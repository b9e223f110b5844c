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

// Bytes that start no character (invalid UTF-8: a binary payload, a
// header's garbage) are each one of their own: a cut backs off only from
// inside a valid sequence, at most utf8.UTFMax-1 bytes, never to nothing.
func TestPrefixInvalidUTF8(t *testing.T) {
	junk := strings.Repeat("\x80", 200)
	assert.Len(t, Prefix(junk, 128), 128)
	assert.Len(t, Prefix("ab"+junk, 100), 100)
	assert.Equal(t, "ab\xc3", Prefix("ab\xc3x", 3)) // a lead byte without its continuation
	assert.Equal(t, "\x80\x80", Prefix("\x80\x80é", 3))
	assert.Equal(t, "é\x80", Prefix("é\x80\x80\x80", 3))
}
