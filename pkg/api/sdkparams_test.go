package api

import (
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/assert"
)

// sdkParams are the JSON names of the fields of params, an openai-go
// request params struct: what openai-go can send.
func sdkParams(params any) []string {
	t := reflect.TypeOf(params)
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// Every parameter openai-go sends to POST /v1/responses, /compact and
// /input_tokens is one the gateway knows (it acts on it, or checks and
// ignores it, or refuses it naming why): none is the 400
// unknown_parameter of a parameter no client has. A new openai-go that
// adds one fails here until the gateway decides what it does with it
// (docs/api.md, Request parameters).
func TestEveryOpenAIGoParamIsKnown(t *testing.T) {
	for _, c := range []struct {
		name   string
		params any
		decode func([]byte) error
	}{
		{"ResponseNewParams", responses.ResponseNewParams{}, func(b []byte) error { _, err := DecodeCreateRequest(b); return err }},
		{"ResponseCompactParams", responses.ResponseCompactParams{}, func(b []byte) error { _, err := DecodeCompactRequest(b); return err }},
		{"InputTokenCountParams", responses.InputTokenCountParams{}, func(b []byte) error { _, err := DecodeInputTokensRequest(b); return err }},
	} {
		names := sdkParams(c.params)
		assert.NotEmpty(t, names, c.name)
		for _, p := range names {
			// null is "absent" for a known parameter; an unknown one is
			// refused whatever its value.
			err := c.decode([]byte(`{"model":"m","input":"hi","` + p + `":null}`))
			if err != nil {
				assert.NotContains(t, AsError(err).Code, "unknown_parameter", "%s.%s: %v", c.name, p, err)
			}
		}
	}
}
