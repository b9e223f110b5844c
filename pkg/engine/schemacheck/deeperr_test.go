package schemacheck_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/internal/testing/allocs"
	"github.com/lambent/lambent/pkg/engine/schemacheck"
)

// Each error the validator records carries a copy of its place's path
// (its instance location), so an output that fails at every level costs
// memory in the square of its depth: 7, 27, 105 and 421 MB at depths 500,
// 1,000, 2,000 and 4,000, 2 GB for 54 KB nested 9,000 deep; and 24,000
// evaluations failing 64 deep took 49 MB (12 MB at the root). The budget
// charges each evaluation its place's depth (as if it failed), so the
// deepest of those cannot be validated, and what is checked stays in
// proportion to the budget.
func TestErrorsBoundsDeepFailures(t *testing.T) {
	s, err := schemacheck.Compile(json.RawMessage(`{"type":"object","required":["x"],"properties":{"c":{"$ref":"#"}}}`), 1000)
	require.NoError(t, err)
	nested := func(d int, leaf string) string {
		return strings.Repeat(`{"x":1,"c":`, d) + leaf + strings.Repeat("}", d)
	}
	failing := func(d int) string { return strings.Repeat(`{"c":`, d) + "{}" + strings.Repeat("}", d) }

	// Valid and failing at 500 deep are checked as before.
	assert.Nil(t, schemacheck.Errors(s, nested(500, `{"x":1}`)))
	errs := schemacheck.Errors(s, failing(500))
	require.Len(t, errs, 21)
	assert.Equal(t, "at '/': missing property 'x'", errs[0])
	assert.Equal(t, "at '/c': missing property 'x'", errs[1])
	assert.Equal(t, "(and 481 more errors)", errs[20])

	for _, d := range []int{2000, 4000, 9000} {
		var errs []string
		b := allocs.Bytes(func() { errs = schemacheck.Errors(s, failing(d)) })
		assert.Less(t, b, uint64(16<<20), "depth %d", d)
		require.Len(t, errs, 1, "depth %d", d)
		assert.Contains(t, errs[0], "cannot be validated against this schema", "depth %d", d)
	}

	// A fan of 2^13 failing definitions at the end of a path 64 deep.
	var fan strings.Builder
	for i := range 13 {
		fmt.Fprintf(&fan, `"b%d":{"allOf":[{"$ref":"#/$defs/b%d"},{"$ref":"#/$defs/b%d"}]},`, i, i+1, i+1)
	}
	s, err = schemacheck.Compile(json.RawMessage(`{"type":"object","properties":{"c":{"$ref":"#"},"d":{"$ref":"#/$defs/b0"}},`+
		`"$defs":{`+fan.String()+`"b13":{"required":["x"]}}}`), 1000)
	require.NoError(t, err)
	b := allocs.Bytes(func() { errs = schemacheck.Errors(s, strings.Repeat(`{"c":`, 64)+`{"d":{}}`+strings.Repeat("}", 64)) })
	assert.Less(t, b, uint64(16<<20))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "cannot be validated against this schema")
}
