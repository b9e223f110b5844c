// Package wirejson encodes Lambent's wire values: json.Marshal's output,
// byte for byte, from github.com/segmentio/encoding/json, which encodes the
// API's union types (their MarshalJSON methods nest) about twice as fast as
// encoding/json and which the MCP SDK already links (one fast JSON library
// in every bootstrap, not two: goccy/go-json, used before, cost 0.7 MB
// zipped for the same speed; docs/performance.md); and decodes the answers
// of model backends (Chat Completions bodies and stream chunks,
// internal/chatwire) into the values json.Unmarshal gives, about three
// times faster (a stream chunk: 0.8 against 2.3 µs), which is most of what
// a streamed answer costs the gateway per chunk. Client request bodies
// stay with encoding/json: its error messages are in the API's 400s. A
// Stream reads Marshal's bytes of a large value in pieces, its long arrays
// encoded element by element (a long conversation's model request,
// response and stored record).
package wirejson

import fastjson "github.com/segmentio/encoding/json"

// Marshal returns the JSON encoding of v, as json.Marshal does.
func Marshal(v any) ([]byte, error) { return fastjson.Marshal(v) }

// Append appends the JSON encoding of v to b, as Marshal writes it: what a
// writer that frames values in a buffer of its own (the SSE writer) uses,
// without a buffer per value. On error b's bytes after len(b) are garbage.
func Append(b []byte, v any) ([]byte, error) {
	return fastjson.Append(b, v, fastjson.EscapeHTML|fastjson.SortMapKeys)
}

// Unmarshal decodes data into v, as json.Unmarshal does; it fails where
// json.Unmarshal fails, with errors of its own.
func Unmarshal(data []byte, v any) error { return fastjson.Unmarshal(data, v) }
