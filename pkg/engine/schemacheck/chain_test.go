package schemacheck_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lambent/lambent/pkg/engine/schemacheck"
)

// chainSchema is a schema for an array of two items: the first an array of
// anything, the second reaching through a chain of n $refs, one
// definition to the next, a definition that doubles k times (allOf of
// two $refs to the next), 3 × 2^(k+1) evaluations. chainText is an output
// for it whose first item holds enough values for the evaluations budget
// to allow them.
func chainSchema(n, k int) string {
	var b strings.Builder
	b.WriteString(`{"type":"array","prefixItems":[{"items":true},{"$ref":"#/$defs/a0"}],"$defs":{`)
	for i := range n {
		fmt.Fprintf(&b, `"a%d":{"$ref":"#/$defs/a%d"},`, i, i+1)
	}
	fmt.Fprintf(&b, `"a%d":{"$ref":"#/$defs/b0"},`, n)
	for i := range k {
		fmt.Fprintf(&b, `"b%d":{"allOf":[{"$ref":"#/$defs/b%d"},{"$ref":"#/$defs/b%d"}]},`, i, i+1, i+1)
	}
	fmt.Fprintf(&b, `"b%d":true}}`, k)
	return b.String()
}

func chainText(n, k int) string {
	values := (3<<(k+1)+n)/(schemacheck.EvaluationsPerValue-1) + 100
	return "[[" + strings.TrimSuffix(strings.Repeat("1,", values), ",") + "],{}]"
}

// Each time it starts on a subschema, the validator looks back through the
// subschemas applied before it at the same place for a loop of references:
// as many as the chain of $refs that led there. A schema within the size
// limit holds a chain of 4,000, and one that ends in a fan of evaluations
// (which the output's values pay for) costs 4,000 times each of them: 1.9 s
// for 25 KB of output (chain 4,000, fan 2^17), growing with the output.
// The budget charges each evaluation the longest chain that reaches it.
func TestErrorsCountsReferenceChains(t *testing.T) {
	for _, c := range []struct {
		n, k  int
		valid bool
	}{
		{n: 10, k: 14, valid: true},
		{n: 100, k: 14, valid: true},
		{n: 1000, k: 14},
		{n: 4000, k: 14},
		{n: 4000, k: 0, valid: true}, // 8 M steps once: 14 ms
	} {
		s, err := schemacheck.Compile(json.RawMessage(chainSchema(c.n, c.k)), 1000)
		require.NoError(t, err)
		errs := schemacheck.Errors(s, chainText(c.n, c.k))
		if c.valid {
			assert.Nil(t, errs, "chain %d, fan 2^%d", c.n, c.k)
		} else {
			require.Len(t, errs, 1, "chain %d, fan 2^%d", c.n, c.k)
			assert.Contains(t, errs[0], "cannot be validated against this schema", "chain %d, fan 2^%d", c.n, c.k)
		}
	}
}

// BenchmarkRefChain shows what a chain of $refs costs the validator (the
// budget refuses the longer ones now: TestErrorsCountsReferenceChains):
// before, 23, 79 and 274 ms for chains of 100, 1,000 and 4,000 over the
// same fan of 98,000 evaluations, and 1.9 s for 4,000 over 2^17.
func BenchmarkRefChain(b *testing.B) {
	for _, c := range []struct{ n, k int }{{100, 14}, {1000, 14}, {4000, 14}, {4000, 17}} {
		raw := chainSchema(c.n, c.k)
		s, err := schemacheck.Compile(json.RawMessage(raw), 1000)
		require.NoError(b, err)
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(chainText(c.n, c.k)))
		require.NoError(b, err)
		b.Run(fmt.Sprintf("chain %d fan 2^%d (%d bytes)", c.n, c.k, len(raw)), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(inst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
