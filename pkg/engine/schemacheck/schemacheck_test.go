package schemacheck_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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

// The validator evaluates a subschema once per path to it: schemas whose
// references double the paths at every definition (all at one place of the
// text), or at every level of the text they recurse into (alone, or every
// other level through two definitions that refer back), cost 2^n evaluations
// for a few hundred bytes. Such a text is not validated (a line says why)
// and the check ends at once; recursive schemas that do not multiply
// validate as before.
func TestCheckBoundsEvaluations(t *testing.T) {
	const n = 22
	var defs strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&defs, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	nested := func(d int) string { return strings.Repeat(`{"c":`, d) + "1" + strings.Repeat("}", d) }
	for _, c := range []struct{ name, schema, text string }{
		{"definitions", `{"$ref":"#/$defs/a0","$defs":{` + defs.String() + fmt.Sprintf(`"a%d":{"type":"string"}}}`, n), `1`},
		{"recursion", `{"type":"object","properties":{"c":{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}}}`, nested(n)},
		{"mutual recursion", `{"properties":{"c":{"allOf":[{"$ref":"#/$defs/a"},{"$ref":"#/$defs/b"}]}},` +
			`"$defs":{"a":{"properties":{"c":{"$ref":"#"}}},"b":{"properties":{"c":{"$ref":"#"}},"type":"object"}}}`, nested(2 * n)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := schemacheck.Compile(json.RawMessage(c.schema), 1000)
			require.NoError(t, err)
			errs := schemacheck.Check(s, c.text, "the input")
			require.Len(t, errs, 1)
			assert.Equal(t, fmt.Sprintf("the input cannot be validated against this schema: it would take more than %d evaluations of its subschemas (and %d for each value of the input)",
				schemacheck.MaxEvaluations, schemacheck.EvaluationsPerValue), errs[0])
		})
	}

	// A linked list 300 deep and a tree through two properties, pattern
	// properties and items: validated as before.
	list, err := schemacheck.Compile(json.RawMessage(`{"type":"object","properties":{"v":{"type":"integer"},"next":{"$ref":"#"}},`+
		`"patternProperties":{"^x":{"type":"string"}},"additionalProperties":false}`), 1000)
	require.NoError(t, err)
	deep := strings.Repeat(`{"v":1,"next":`, 300) + `{"v":"no"}` + strings.Repeat("}", 300)
	errs := schemacheck.Check(list, deep, "the input")
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0], "/next/next")
	tree, err := schemacheck.Compile(json.RawMessage(`{"$defs":{"node":{"anyOf":[{"type":"null"},{"type":"object","properties":{"left":{"$ref":"#/$defs/node"},"right":{"$ref":"#/$defs/node"},"tags":{"type":"array","items":{"$ref":"#/$defs/node"}}}}]}},"$ref":"#/$defs/node"}`), 1000)
	require.NoError(t, err)
	var node func(d int) string
	node = func(d int) string {
		if d == 0 {
			return "null"
		}
		return `{"left":` + node(d-1) + `,"right":` + node(d-1) + `,"tags":[null,null]}`
	}
	assert.Nil(t, schemacheck.Check(tree, node(10), "the input"))

	// A long text of a schema with nullable fields by reference (as
	// Pydantic writes them): 20,000 objects, 220,000 values.
	var fields strings.Builder
	for _, f := range "abcdefhij" {
		fmt.Fprintf(&fields, `%q:{"anyOf":[{"type":"string"},{"type":"null"}]},`, string(f))
	}
	rows, err := schemacheck.Compile(json.RawMessage(`{"type":"array","items":{"$ref":"#/$defs/row"},"$defs":{"row":{"type":"object","properties":{`+
		fields.String()+`"g":{"anyOf":[{"$ref":"#/$defs/id"},{"type":"null"}]}},"additionalProperties":false},"id":{"type":"integer"}}}`), 1000)
	require.NoError(t, err)
	var text strings.Builder
	text.WriteString("[")
	for i := 0; i < 20000; i++ {
		if i > 0 {
			text.WriteString(",")
		}
		text.WriteString(`{"a":"x","b":null,"c":"x","d":null,"e":"x","f":"x","g":1,"h":null,"i":"x","j":"x"}`)
	}
	text.WriteString("]")
	assert.Nil(t, schemacheck.Check(rows, text.String(), "the output"))
}

// The work of a check is bounded by the evaluations budget whatever the
// schema's keywords cost at each evaluation: an enum (or const) is
// compared with the value, each number of it as an exact rational (about
// a microsecond), and a pattern runs over the string in time its length
// times the expression's size. Within the request limits (1,000 enum
// values, 50,000 of patterns), 20 KB of output took 6 s against a number
// enum, a 4,000-character string 2 s against a pattern, and both grow
// with the output (an enum of arrays compares each of their numbers): such
// a text is not validated (a line says why), at once. Enums, consts and
// patterns of ordinary size validate as before.
func TestCheckBoundsKeywordCost(t *testing.T) {
	numbers := make([]string, 1000)
	for i := range numbers {
		numbers[i] = fmt.Sprint(10_000 + i)
	}
	bigPattern := "^" + strings.Repeat("[a-z]{0,1000}", 49) + "x$"
	many := func(n int, v string) string { return "[" + strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "]" }
	long := strings.Repeat("a", 4000)
	names := make([]string, 10_000)
	for i := range names {
		names[i] = fmt.Sprintf(`"p%d"`, i)
	}
	// 100 arrays of 100 numbers that differ from the output's only in
	// their last.
	arrays := make([]string, 100)
	for i := range arrays {
		arrays[i] = strings.TrimSuffix(many(99, "1"), "]") + fmt.Sprintf(",%d]", i+2)
	}
	for _, c := range []struct{ name, schema, text string }{
		{"number enum", `{"type":"array","items":{"enum":[` + strings.Join(numbers, ",") + `]}}`, many(10_000, "1")},
		{"enum of arrays", `{"type":"array","items":{"enum":[` + strings.Join(arrays, ",") + `]}}`, many(1000, many(100, "1"))},
		{"pattern", fmt.Sprintf(`{"type":"array","items":{"type":"string","pattern":%q}}`, bigPattern), `["` + long + `"]`},
		{"pattern properties", fmt.Sprintf(`{"type":"object","patternProperties":{%q:{}}}`, bigPattern), `{"` + long + `":1}`},
		{"property names", fmt.Sprintf(`{"type":"object","propertyNames":{"pattern":%q}}`, bigPattern), `{"` + long + `":1}`},
		// A string's length and format are read at each of the 16,384
		// paths that reach its schema: 100 KB took 3 to 6 s, and 75 s
		// for format regex (a string too large for a pattern is parsed
		// again at each).
		{"max length by many paths", paths(14, `"type":"string","maxLength":10`), `"` + strings.Repeat("a", 100_000) + `"`},
		{"format by many paths", paths(14, `"type":"string","format":"email"`), `"` + strings.Repeat("a", 100_000) + `"`},
		{"format regex by many paths", paths(14, `"type":"string","format":"regex"`), `"` + strings.Repeat("a", 100_000) + `"`},
		// uniqueItems hashes every value of the array, as exact rationals,
		// at each path (10 s for 25 KB); required looks up each of its
		// names in each object (6.5 s for 10,000 names and objects).
		{"unique items by many paths", paths(12, `"type":"array","uniqueItems":true`), sequence(5000)},
		{"required", `{"type":"array","items":{"required":[` + strings.Join(names, ",") + `]}}`, many(10_000, "{}")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := schemacheck.Compile(json.RawMessage(c.schema), schemaPatterns)
			require.NoError(t, err)
			done := make(chan []string, 1)
			go func() { done <- schemacheck.Check(s, c.text, "the output") }()
			var errs []string
			select {
			case errs = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("the check still runs after 20 s: its work is not bounded")
			}
			require.Len(t, errs, 1)
			assert.Equal(t, fmt.Sprintf("the output cannot be validated against this schema: it would take more than %d evaluations of its subschemas (and %d for each value of the output)",
				schemacheck.MaxEvaluations, schemacheck.EvaluationsPerValue), errs[0])
		})
	}

	// Ordinary ones: a string enum of 1,000 against 10,000 values, a
	// number enum of 20, a const object, a short pattern over 1 MB, a
	// pattern property and property names over keys of an identifier's size.
	strs := make([]string, 1000)
	for i := range strs {
		strs[i] = fmt.Sprintf(`"v%d"`, i)
	}
	for _, c := range []struct{ name, schema, text string }{
		{"string enum", `{"type":"array","items":{"enum":[` + strings.Join(strs, ",") + `]}}`, many(10_000, `"v999"`)},
		{"number enum", `{"type":"array","items":{"enum":[` + strings.Join(numbers[:20], ",") + `]}}`, many(10_000, "10019")},
		{"const", `{"type":"array","items":{"const":{"a":[1,2,3],"b":"x"}}}`, many(1000, `{"b":"x","a":[1,2,3]}`)},
		{"pattern", `{"type":"string","pattern":"^[a-z]+$"}`, `"` + strings.Repeat("a", 1<<20) + `"`},
		{"pattern properties", `{"type":"object","patternProperties":{"^[a-z_]{1,64}$":{"type":"integer"}},"additionalProperties":false}`,
			`{` + strings.TrimSuffix(strings.Repeat(`"some_key":1,`, 1), ",") + `,"other_key":2}`},
		{"property names", `{"type":"object","propertyNames":{"pattern":"^[a-z]{1,100}$","enum":["abc","def"]}}`, `{"abc":1,"def":2}`},
		{"long string", `{"type":"string","maxLength":2000000,"format":"uri"}`, `"https://example.com/` + strings.Repeat("a", 1<<20) + `"`},
		{"strings by a few paths", paths(4, `"type":"string","maxLength":20000,"format":"uri"`), `"https://example.com/` + strings.Repeat("a", 10_000) + `"`},
		{"regexes", `{"type":"array","items":{"type":"string","format":"regex"}}`, many(1000, `"^[a-z]{1,10}$"`)},
		{"unique items", `{"type":"array","items":{"type":"integer"},"uniqueItems":true}`, strings.Replace(sequence(10_000), ",0]", "]", 1)},
		{"required", `{"type":"array","items":{"required":["a","b","c"]}}`, many(10_000, `{"a":1,"b":2,"c":3}`)},
	} {
		t.Run("ordinary "+c.name, func(t *testing.T) {
			s, err := schemacheck.Compile(json.RawMessage(c.schema), schemaPatterns)
			require.NoError(t, err)
			assert.Nil(t, schemacheck.Check(s, c.text, "the output"))
		})
	}
}

// paths is a schema of keywords kw that 2^n paths reach
// (definitions that refer twice to the next).
func paths(n int, kw string) string {
	var defs strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&defs, `"a%d":{"anyOf":[{"$ref":"#/$defs/a%d"},{"$ref":"#/$defs/a%d"}]},`, i, i+1, i+1)
	}
	return `{"$ref":"#/$defs/a0","$defs":{` + defs.String() + fmt.Sprintf(`"a%d":{%s}}}`, n, kw)
}

// sequence is an array of the integers 0 to n-1, then 0 again.
func sequence(n int) string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprint(i)
	}
	return "[" + strings.Join(l, ",") + ",0]"
}

// schemaPatterns is the default limit of a schema's regular expressions
// (limits.DefaultSchemaPatterns).
const schemaPatterns = 50_000
