// Package wirejson encodes Lambent's wire values: json.Marshal's output,
// byte for byte, from github.com/goccy/go-json, which encodes the API's
// union types (their MarshalJSON methods nest) several times faster than
// encoding/json. Decoding stays with encoding/json.
package wirejson

import gojson "github.com/goccy/go-json"

// Marshal returns the JSON encoding of v, as json.Marshal does.
func Marshal(v any) ([]byte, error) { return gojson.Marshal(v) }
