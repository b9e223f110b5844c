package api

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
)

// ID prefixes.
const (
	PrefixResponse     = "resp_"
	PrefixMessage      = "msg_"
	PrefixFunctionCall = "fc_"
	PrefixFuncOutput   = "fco_"
	PrefixReasoning    = "rs_"
)

// NewID returns prefix followed by 48 hex characters: 16 of the creation time
// in nanoseconds (so IDs sort by time) and 32 of crypto randomness.
func NewID(prefix string) string {
	var raw [24]byte
	n := uint64(time.Now().UnixNano())
	for i := 7; i >= 0; i-- {
		raw[i] = byte(n)
		n >>= 8
	}
	_, _ = rand.Read(raw[8:])
	buf := make([]byte, len(prefix)+48)
	copy(buf, prefix)
	hex.Encode(buf[len(prefix):], raw[:])
	return string(buf)
}

// MaxResponseIDLength bounds the length of a response id: longer ones are
// never stored, so no store is asked for them.
const MaxResponseIDLength = 128

// ValidResponseID reports whether id is a well-formed response id:
// PrefixResponse followed by 1 to MaxResponseIDLength-len(PrefixResponse)
// ASCII letters, digits, '_' or '-'. Every id NewID(PrefixResponse)
// returns is one, and so must be the ids callers choose for event-started
// background responses.
func ValidResponseID(id string) bool {
	rest, ok := strings.CutPrefix(id, PrefixResponse)
	if !ok || rest == "" || len(id) > MaxResponseIDLength {
		return false
	}
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}
