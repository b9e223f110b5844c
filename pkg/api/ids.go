package api

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// ID prefixes.
const (
	PrefixResponse     = "resp_"
	PrefixMessage      = "msg_"
	PrefixFunctionCall = "fc_"
	PrefixFuncOutput   = "fco_"
	PrefixReasoning    = "rs_"
	PrefixCompaction   = "cmp_"
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
