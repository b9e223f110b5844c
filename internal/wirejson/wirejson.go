// Package wirejson encodes Lambent's wire values: json.Marshal's output,
// byte for byte, from github.com/segmentio/encoding/json, which encodes the
// API's union types (their MarshalJSON methods nest) about twice as fast as
// encoding/json and which the MCP SDK already links (one fast JSON library
// in every bootstrap, not two: goccy/go-json, used before, cost 0.7 MB
// zipped for the same speed; docs/performance.md); and decodes the answers
// of model backends (Chat Completions bodies and stream chunks,
// internal/chatwire) into the values json.Unmarshal gives, about three
// times faster (a stream chunk: 0.8 against 2.3 µs), which is most of what
// a streamed answer costs the gateway per chunk; and decodes client
// request bodies (Codex CLI's first request in 0.40 ms against 1.8 when
// pkg/api decoded it with encoding/json), which pkg/api decodes again with
// encoding/json only when this decoder fails, for the error texts of the
// API's 400s (SplitArray gives a refused array's elements, without copies,
// to be decoded one by one for the element the 400 names). A
// Stream reads Marshal's bytes of a large value in pieces, its long arrays
// encoded element by element (a long conversation's model request,
// response and stored record).
package wirejson

import (
	"encoding/json"
	"errors"

	fastjson "github.com/segmentio/encoding/json"
)

// Marshal returns the JSON encoding of v, as json.Marshal does.
func Marshal(v any) ([]byte, error) { return fastjson.Marshal(v) }

// Append appends the JSON encoding of v to b, as Marshal writes it: what a
// writer that frames values in a buffer of its own (the SSE writer) uses,
// without a buffer per value. On error b's bytes after len(b) are garbage.
func Append(b []byte, v any) ([]byte, error) {
	return fastjson.Append(b, v, fastjson.EscapeHTML|fastjson.SortMapKeys)
}

// Unmarshal decodes data into v, as json.Unmarshal does; it fails where
// json.Unmarshal fails, with errors of its own. segmentio's decoder wraps
// an integer of 20 digits around instead of failing (21000000000000000000
// decodes into an int64 as 2553255926290448384): data holding such a run
// of digits is decoded by encoding/json.
func Unmarshal(data []byte, v any) error {
	if longDigitRun(data) {
		return json.Unmarshal(data, v)
	}
	return fastjson.Unmarshal(data, v)
}

// SplitArray splits the JSON array data into its elements' texts, which
// alias data (nothing of it is copied): what decodes each element by
// itself reads it where it is. null has none.
func SplitArray(data []byte) ([]json.RawMessage, error) {
	var elems []json.RawMessage
	rest, err := fastjson.Parse(data, &elems, fastjson.DontCopyRawMessage)
	if err == nil && len(rest) != 0 {
		err = errors.New("invalid JSON after the array")
	}
	return elems, err
}

// longDigitRun reports whether data holds 20 ASCII digits in a row (no
// int64 or uint64 has more than 19 or 20). It looks at about one byte in
// 20 of text without long numbers: a run of 20 must cover the byte it
// looks at.
func longDigitRun(data []byte) bool {
	const n = 20
	for i := n - 1; i < len(data); {
		if !isDigit(data[i]) {
			i += n
			continue
		}
		j := i
		for j > i-n+1 && isDigit(data[j-1]) {
			j--
		}
		if j == i-n+1 {
			return true
		}
		// data[j-1] is not a digit: a run of n starts at j or later.
		i = j + n - 1
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
