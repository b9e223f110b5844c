package schemacheck

import "github.com/santhosh-tekuri/jsonschema/v6"

// MaxEvaluations and EvaluationsPerValue bound the schema evaluations one
// check may cost: MaxEvaluations, plus EvaluationsPerValue for each value
// of the text (a long text of a wide schema costs in proportion). The
// validator evaluates a subschema once per path that leads to it, so a
// schema of a few hundred bytes whose definitions refer twice to the next
// ({"anyOf": [{"$ref": "#/$defs/a1"}, {"$ref": "#/$defs/a1"}]}, twenty
// deep) costs a million evaluations at one place of the text, and one that
// does so through a property it recurses into doubles its cost at every
// level of the text. About a microsecond each.
const (
	MaxEvaluations      = 1 << 16
	EvaluationsPerValue = 64
)

// pathCap is where counts of paths stop growing (they never overflow).
const pathCap = 1 << 50

// withinBudget reports whether validating inst (a JSON value as
// jsonschema.UnmarshalJSON returns it) against s costs at most
// MaxEvaluations evaluations of subschemas, plus EvaluationsPerValue for
// each value of inst. It counts them without evaluating: at every place of
// inst, the subschemas that apply there, each with the number of paths
// that lead to it. It may count a subschema that would not apply (every
// pattern property for every key), never fewer than the validator
// evaluates; a reference that loops back at the same place is counted
// once (the validator refuses the loop).
func withinBudget(s *jsonschema.Schema, inst any) bool {
	c := &costCounter{left: MaxEvaluations}
	return c.visit(map[*jsonschema.Schema]int{s: 1}, inst)
}

// costCounter counts evaluations down from a budget.
type costCounter struct{ left int }

// visit counts the evaluations at inst of the subschemas set (each with
// its number of paths) and of everything they apply below it, and reports
// whether the budget held.
func (c *costCounter) visit(set map[*jsonschema.Schema]int, inst any) bool {
	if len(set) == 0 {
		return true // nothing applies here, nor below
	}
	c.left += EvaluationsPerValue
	set, ok := c.closure(set)
	if !ok {
		return false
	}
	switch v := inst.(type) {
	case map[string]any:
		for k, child := range v {
			if !c.visit(children(set, func(s *jsonschema.Schema) []*jsonschema.Schema { return propertySchemas(s, k) }), child) {
				return false
			}
		}
	case []any:
		for i, child := range v {
			if !c.visit(children(set, func(s *jsonschema.Schema) []*jsonschema.Schema { return itemSchemas(s, i) }), child) {
				return false
			}
		}
	}
	return true
}

// children is the set of subschemas that sub finds below each of set's,
// with their numbers of paths.
func children(set map[*jsonschema.Schema]int, sub func(*jsonschema.Schema) []*jsonschema.Schema) map[*jsonschema.Schema]int {
	next := map[*jsonschema.Schema]int{}
	for s, n := range set {
		for _, t := range sub(s) {
			next[t] = min(next[t]+n, pathCap)
		}
	}
	return next
}

// closure adds to set the subschemas its subschemas apply at the same
// place (references, allOf, anyOf, oneOf, not, if/then/else, dependent
// schemas), each with its number of paths, charging every evaluation to
// the budget; false when the budget ran out. Paths are counted in
// topological order, each subschema once; an edge that loops back is left
// out.
func (c *costCounter) closure(set map[*jsonschema.Schema]int) (map[*jsonschema.Schema]int, bool) {
	if !anyInPlace(set) {
		for _, n := range set {
			if c.left -= n; c.left < 0 {
				return nil, false
			}
		}
		return set, true
	}
	var order []*jsonschema.Schema // reverse topological order
	state := map[*jsonschema.Schema]int8{}
	back := map[[2]*jsonschema.Schema]bool{}
	var dfs func(s *jsonschema.Schema)
	dfs = func(s *jsonschema.Schema) {
		state[s] = 1
		for _, t := range inPlace(s) {
			switch state[t] {
			case 0:
				dfs(t)
			case 1:
				back[[2]*jsonschema.Schema{s, t}] = true
			}
		}
		state[s] = 2
		order = append(order, s)
	}
	for s := range set {
		if state[s] == 0 {
			dfs(s)
		}
	}
	paths := make(map[*jsonschema.Schema]int, len(order))
	for s, n := range set {
		paths[s] = n
	}
	for i := len(order) - 1; i >= 0; i-- {
		s := order[i]
		n := paths[s]
		if c.left -= n; c.left < 0 {
			return nil, false
		}
		for _, t := range inPlace(s) {
			if !back[[2]*jsonschema.Schema{s, t}] {
				paths[t] = min(paths[t]+n, pathCap)
			}
		}
	}
	return paths, true
}

// anyInPlace reports whether a subschema of set applies others in place.
func anyInPlace(set map[*jsonschema.Schema]int) bool {
	for s := range set {
		if len(inPlace(s)) > 0 {
			return true
		}
	}
	return false
}

// inPlace lists the subschemas s applies to the value it is applied to.
func inPlace(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(ts ...*jsonschema.Schema) {
		for _, t := range ts {
			if t != nil {
				out = append(out, t)
			}
		}
	}
	add(s.Ref, s.RecursiveRef, s.Not, s.If, s.Then, s.Else, s.ContentSchema)
	if s.DynamicRef != nil {
		add(s.DynamicRef.Ref)
	}
	add(s.AllOf...)
	add(s.AnyOf...)
	add(s.OneOf...)
	for _, t := range s.DependentSchemas {
		add(t)
	}
	for _, d := range s.Dependencies {
		if t, ok := d.(*jsonschema.Schema); ok {
			add(t)
		}
	}
	return out
}

// propertySchemas lists the subschemas s may apply to its object's
// property key (and to the key itself).
func propertySchemas(s *jsonschema.Schema, key string) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Properties[key], s.PropertyNames, s.UnevaluatedProperties}
	if t, ok := s.AdditionalProperties.(*jsonschema.Schema); ok {
		out = append(out, t)
	}
	for _, t := range s.PatternProperties {
		out = append(out, t)
	}
	return nonNil(out)
}

// itemSchemas lists the subschemas s may apply to its array's item i.
func itemSchemas(s *jsonschema.Schema, i int) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Items2020, s.Contains, s.UnevaluatedItems}
	if i < len(s.PrefixItems) {
		out = append(out, s.PrefixItems[i])
	}
	switch items := s.Items.(type) {
	case *jsonschema.Schema:
		out = append(out, items)
	case []*jsonschema.Schema:
		if i < len(items) {
			out = append(out, items[i])
		}
	}
	if t, ok := s.AdditionalItems.(*jsonschema.Schema); ok {
		out = append(out, t)
	}
	return nonNil(out)
}

func nonNil(ss []*jsonschema.Schema) []*jsonschema.Schema {
	out := ss[:0]
	for _, s := range ss {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}
