package schemacheck_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/engine/schemacheck"
)

// The target of a $dynamicRef (and of draft 2019-09's $recursiveRef) is
// not where it points but where the path the validator took says: it walks
// the whole dynamic scope, from the text's root, at each use, so a check
// costs the square of the text's depth (28 s for 20 KB, 4,000 deep, with
// 16 such references per level behind 16 $refs), and resolving to an outer
// resource's anchor takes it to subschemas the evaluations budget never
// counted (the schema below, whose reference says one path per level,
// costs 2^depth: 4.8 s at depth 20). OpenAI's structured outputs support
// neither keyword; the compiler refuses both, wherever a schema reaches
// them, and accepts what only looks like them.
func TestCompileRefusesDynamicReferences(t *testing.T) {
	for _, c := range []struct{ name, schema, at string }{
		{"dynamic reference", `{"$dynamicAnchor":"node","type":"object","properties":{"c":{"$dynamicRef":"#node"}}}`, "#/properties/c"},
		{"to an outer anchor", `{"$dynamicAnchor":"n","allOf":[{"$ref":"e"},{"$ref":"e"}],` +
			`"$defs":{"e":{"$id":"e","$dynamicAnchor":"n","type":"object","properties":{"c":{"$dynamicRef":"#n"}}}}}`, "#/$defs/e/properties/c"},
		{"by pointer", `{"$defs":{"a":{"type":"string"}},"type":"array","items":{"$dynamicRef":"#/$defs/a"}}`, "#/items"},
		{"recursive reference", `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,` +
			`"type":"object","additionalProperties":{"$recursiveRef":"#"}}`, "#/additionalProperties"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := schemacheck.Compile(json.RawMessage(c.schema), 1000)
			require.Error(t, err)
			kw := "$dynamicRef"
			if strings.Contains(c.schema, "$recursiveRef") {
				kw = "$recursiveRef"
			}
			assert.Contains(t, err.Error(), kw+" (at "+c.at+") is not supported")
		})
	}

	// A property so named, a value of const, a $dynamicAnchor a $ref
	// names, and a $dynamicRef nothing reaches are no dynamic references.
	for _, schema := range []string{
		`{"type":"object","properties":{"$dynamicRef":{"type":"string"}},"const":{"$recursiveRef":"#"}}`,
		`{"$defs":{"n":{"$dynamicAnchor":"n","type":"object","properties":{"c":{"$ref":"#n"}}}},"$ref":"#n"}`,
		`{"$defs":{"unused":{"$dynamicRef":"#"}},"type":"integer"}`,
	} {
		s, err := schemacheck.Compile(json.RawMessage(schema), 1000)
		require.NoError(t, err, schema)
		assert.NotNil(t, schemacheck.Errors(s, `[]`), schema)
	}
}

// BenchmarkDynamicRefDepth shows what a $dynamicRef cost before it was
// refused (the library's validator, which resolves one by walking the
// dynamic scope from the root): time grows with the square of the text's
// depth (9, 32 and 118 ms at depths 1,000, 2,000 and 4,000 here), its
// allocations only linearly (0.45, 0.93 and 1.9 MB), as the evaluations
// do: the walk allocates nothing.
func BenchmarkDynamicRefDepth(b *testing.B) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"$dynamicAnchor":"node","type":"object","properties":{"c":{"$dynamicRef":"#node"}}}`))
	require.NoError(b, err)
	c := jsonschema.NewCompiler()
	require.NoError(b, c.AddResource("https://example.invalid/s.json", doc))
	s, err := c.Compile("https://example.invalid/s.json")
	require.NoError(b, err)
	for _, d := range []int{1000, 2000, 4000} {
		text := strings.Repeat(`{"c":`, d) + "{}" + strings.Repeat("}", d)
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(text)))
		require.NoError(b, err)
		b.Run(fmt.Sprint("depth ", d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(inst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
