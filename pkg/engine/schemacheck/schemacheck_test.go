package schemacheck_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/engine/schemacheck"
)

// An output is checked against the schema: nil when valid, else a line
// per failed constraint naming where, capped in number.
func TestErrors(t *testing.T) {
	s, err := schemacheck.Compile(json.RawMessage(`{"type":"object","properties":{"score":{"type":"integer","minimum":0}},"required":["score"]}`), 1000)
	require.NoError(t, err)
	assert.Nil(t, schemacheck.Errors(s, `{"score":3}`))
	errs := schemacheck.Errors(s, `{"score":-1}`)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "at '/score'")
	assert.Contains(t, schemacheck.Errors(s, `{"score":`)[0], "not valid JSON")
	assert.Contains(t, schemacheck.Errors(s, `{"score":1e999999}`)[0], "cannot be validated")
	// Check names the text as its caller does.
	assert.Equal(t, schemacheck.Errors(s, `{"score":-1}`), schemacheck.Check(s, `{"score":-1}`, "the input"))
	assert.True(t, strings.HasPrefix(schemacheck.Check(s, `{"score":`, "the input")[0], "the input is not valid JSON: "))
	assert.True(t, strings.HasPrefix(schemacheck.Check(s, `{"score":1e999999}`, "the input")[0], "the input holds a number"))

	many, err := schemacheck.Compile(json.RawMessage(`{"type":"array","items":{"type":"string"}}`), 1000)
	require.NoError(t, err)
	errs = schemacheck.Errors(many, "["+strings.Repeat("1,", 49)+"1]")
	assert.Len(t, errs, 21)
	assert.Equal(t, "(and 30 more errors)", errs[20])
}

// A schema may not reach outside (files, URLs), and its regular
// expressions are bounded with their repetitions expanded.
func TestCompileBounds(t *testing.T) {
	_, err := schemacheck.Compile(json.RawMessage(`{"$ref":"https://example.com/s.json"}`), 1000)
	assert.ErrorContains(t, err, "external schema references are not supported")
	_, err = schemacheck.Compile(json.RawMessage(`{"type":"string","pattern":"^[a-z]{1,1000}$"}`), 500)
	var pe *schemacheck.PatternsError
	require.True(t, errors.As(err, &pe), "%v", err)
	assert.Equal(t, 500, pe.Limit)
	assert.Greater(t, pe.Size, 500)
	props := make([]string, 50)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string","pattern":"^[A-Z]{2}$"}`, i)
	}
	_, err = schemacheck.Compile(json.RawMessage(`{"type":"object","properties":{`+strings.Join(props, ",")+`}}`), 10)
	assert.NoError(t, err, "a pattern repeated is compiled, and counted, once")
}
