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
//
// What some keywords cost at an evaluation counts in the same budget
// (keywordCost): comparing the value with an enum's values or a const
// (each number of them about an evaluation, the validator reads both as
// exact rationals; each other scalar a 64th), running a pattern over a
// string or a key (patternProperties, propertyNames): the string's length
// times the expression's size (regexpSize), an evaluation per
// patternSteps, reading a string for its length or format, an
// evaluation per stringBytes (per regexBytes for format "regex", which
// parses it), hashing an array's values for uniqueItems as comparing
// them, looking up each name of required, and the subschemas applied
// before one at the same place, which the validator looks back through for
// a loop of references at each evaluation: an evaluation per scopeSteps of
// the longest chain (of $refs, allOf, ...) that reaches it; and the
// place's depth in the text, which the errors of a failed evaluation copy:
// an evaluation per locationLevels. Without it, 20 KB of output cost 6 s
// against an enum of 1,000 numbers, a 4,000-character string 2 s against
// a pattern of the size a request may give, a 100 KB string 3 to 6 s
// against a maxLength or format that 16,384 paths reach (75 s for format
// "regex"), 25 KB 10 s against uniqueItems that 4,096 paths reach,
// 10,000 objects 6.5 s against 10,000 required names, 25 KB 1.9 s against
// 786,000 evaluations at the end of a chain of 4,000 $refs (which a
// schema of 128 KiB holds), and the errors of a text failing at every
// level took 105 MB 2,000 deep, 2 GB 9,000 deep (54 KB), and those of
// 24,000 evaluations failing 64 deep 49 MB, each growing with the text.
const (
	MaxEvaluations      = 1 << 16
	EvaluationsPerValue = 64
)

// The costs the counter charges, in 64ths of an evaluation.
const (
	evaluation = 64
	// numberCompare is a comparison with a number of an enum or const,
	// scalarCompare with any other scalar, or with an object or array
	// (which then compares its members).
	numberCompare = evaluation
	scalarCompare = 1
	// requiredName is looking up a name of required in an object (and
	// listing it when it is missing).
	requiredName = 4
	// patternSteps is how many characters × size of an expression one
	// evaluation runs: about 10 ns each.
	patternSteps = 100
	// stringBytes is how many bytes of a string one evaluation reads for
	// its length (minLength, maxLength) or format, a few ns each.
	stringBytes = 256
	// regexBytes is how many bytes of a string format "regex" parses in
	// one evaluation (about 50 ns each): it parses the string at every
	// evaluation, and caches nothing of it (patternBudget).
	regexBytes = 20
	// scopeSteps is how many subschemas applied before it at the same
	// place an evaluation looks back through (the validator's check for a
	// loop of references) in the time of one evaluation, a few ns each.
	scopeSteps = 256
	// locationLevels is how many levels of its place's depth in the text
	// cost the memory of one evaluation in the errors of a failed one: each
	// copies the place's path (16 bytes a level), and so do the errors that
	// wrap it (a $ref's, the place's when it has several).
	locationLevels = 8
)

// pathCap is where counts of paths stop growing (they never overflow).
const pathCap = 1 << 50

// withinBudget reports whether validating inst (a JSON value as
// jsonschema.UnmarshalJSON returns it) against s costs at most
// MaxEvaluations evaluations of subschemas, plus EvaluationsPerValue for
// each value of inst, their keywords' costs included (keywordCost). It
// counts them without evaluating: at every place of inst, the subschemas
// that apply there, each with the number of paths that lead to it. It may
// count a subschema that would not apply (every pattern property for every
// key), never fewer than the validator evaluates; a reference that loops
// back at the same place is counted once (the validator refuses the loop).
func withinBudget(s *jsonschema.Schema, inst any) bool {
	c := &costCounter{left: MaxEvaluations * evaluation}
	return c.visit(map[*jsonschema.Schema]int{s: 1}, inst, 0)
}

// costCounter counts evaluations down from a budget, in 64ths of one.
type costCounter struct {
	left int
	// enums caches the cost of comparing a value of each kind with the
	// values of an enum (enumCosts).
	enums map[*jsonschema.Enum]*[kinds]int
}

// charge takes n × per from the budget; false when it ran out.
func (c *costCounter) charge(n, per int) bool {
	if per <= 0 {
		return c.left >= 0
	}
	if n > c.left/per {
		c.left = -1
		return false
	}
	c.left -= n * per
	return true
}

// visit counts the evaluations at inst, depth levels deep in the text, of
// the subschemas set (each with its number of paths) and of everything
// they apply below it, and reports whether the budget held.
func (c *costCounter) visit(set map[*jsonschema.Schema]int, inst any, depth int) bool {
	if len(set) == 0 {
		return true // nothing applies here, nor below
	}
	c.left += EvaluationsPerValue * evaluation
	return c.apply(set, inst, depth)
}

// apply is visit without the value's own allowance: for a key, which
// propertyNames checks (as a text of its own: depth 0).
func (c *costCounter) apply(set map[*jsonschema.Schema]int, inst any, depth int) bool {
	if len(set) == 0 {
		return true
	}
	set, ok := c.closure(set, depth)
	if !ok {
		return false
	}
	arrayCost := -1 // valueCost of inst, for uniqueItems, once
	for s, n := range set {
		cost := c.keywordCost(s, inst)
		if arr, ok := inst.([]any); ok && s.UniqueItems && len(arr) > 1 {
			if arrayCost < 0 {
				arrayCost = valueCost(arr)
			}
			cost += arrayCost
		}
		if !c.charge(n, cost) {
			return false
		}
	}
	switch v := inst.(type) {
	case map[string]any:
		for k, child := range v {
			for s, n := range set {
				if !c.charge(n, patternPropertiesCost(s, k)) {
					return false
				}
			}
			if !c.apply(children(set, func(s *jsonschema.Schema) []*jsonschema.Schema { return nonNil([]*jsonschema.Schema{s.PropertyNames}) }), k, 0) {
				return false
			}
			if !c.visit(children(set, func(s *jsonschema.Schema) []*jsonschema.Schema { return propertySchemas(s, k) }), child, depth+1) {
				return false
			}
		}
	case []any:
		for i, child := range v {
			if !c.visit(children(set, func(s *jsonschema.Schema) []*jsonschema.Schema { return itemSchemas(s, i) }), child, depth+1) {
				return false
			}
		}
	}
	return true
}

// keywordCost is what the keywords of s cost at one evaluation on inst
// beyond the evaluation itself, in 64ths of one: comparing inst with its
// enum's values (all of them, as for a value that is none) and its const;
// for an object, looking up the names of required and of the
// dependencies; for a string, running its pattern and reading it for its
// length or format. (uniqueItems, which hashes every value of an array,
// costs as comparing the array with its equal: apply.)
func (c *costCounter) keywordCost(s *jsonschema.Schema, inst any) int {
	cost := 0
	if s.Enum != nil {
		cost += c.enumCosts(s.Enum)[kindOf(inst)]
	}
	if s.Const != nil {
		cost += compareCost(inst, *s.Const)
	}
	if _, ok := inst.(map[string]any); ok {
		cost += len(s.Required)*requiredName + (len(s.Dependencies)+len(s.DependentSchemas)+len(s.DependentRequired))*scalarCompare
	}
	if str, ok := inst.(string); ok {
		if s.Pattern != nil {
			cost += patternCost(s.Pattern, len(str))
		}
		if s.MinLength != nil || s.MaxLength != nil || s.Format != nil || s.ContentEncoding != nil || s.ContentMediaType != nil {
			cost += max(len(str)*evaluation/stringBytes, scalarCompare)
		}
		if s.Format != nil && s.Format.Name == "regex" {
			cost += len(str) * evaluation / regexBytes
		}
	}
	return cost
}

// patternPropertiesCost is what matching key against the pattern
// properties of s costs, in 64ths of an evaluation.
func patternPropertiesCost(s *jsonschema.Schema, key string) int {
	cost := 0
	for re := range s.PatternProperties {
		cost += patternCost(re, len(key))
	}
	return cost
}

// patternCost is what running re over a string of n bytes costs, in 64ths
// of an evaluation: n times its size (regexpSize; 1 for an expression
// Compile did not size), at least one comparison.
func patternCost(re jsonschema.Regexp, n int) int {
	size := 1
	if r, ok := re.(*sizedRegexp); ok {
		size = r.size
	}
	return max(n*size*evaluation/patternSteps, scalarCompare)
}

// The kinds of JSON values, as the validator compares them.
const (
	kindNumber = iota
	kindScalar // a string, boolean or null
	kindObject
	kindArray
	kinds
)

func kindOf(v any) int {
	switch v.(type) {
	case map[string]any:
		return kindObject
	case []any:
		return kindArray
	case string, bool, nil:
		return kindScalar
	}
	return kindNumber
}

// enumCosts is, for a value of each kind, what comparing it with every
// value of e costs (compareCost), computed once per enum.
func (c *costCounter) enumCosts(e *jsonschema.Enum) *[kinds]int {
	if costs, ok := c.enums[e]; ok {
		return costs
	}
	costs := new([kinds]int)
	for _, v := range e.Values {
		for k := range costs {
			costs[k] += compareCostOfKind(k, v)
		}
	}
	if c.enums == nil {
		c.enums = map[*jsonschema.Enum]*[kinds]int{}
	}
	c.enums[e] = costs
	return costs
}

// compareCost is what comparing inst with want costs at most, in 64ths of
// an evaluation.
func compareCost(inst, want any) int { return compareCostOfKind(kindOf(inst), want) }

// compareCostOfKind is what comparing a value of kind k with want costs at
// most: values of different kinds differ at once; a number compares as
// exact rationals; objects and arrays compare their members, as many as
// want has at most.
func compareCostOfKind(k int, want any) int {
	if kindOf(want) != k {
		return scalarCompare
	}
	return valueCost(want)
}

// valueCost is what comparing v with a value equal to it costs.
func valueCost(v any) int {
	switch t := v.(type) {
	case map[string]any:
		n := scalarCompare
		for _, x := range t {
			n += scalarCompare + valueCost(x)
		}
		return n
	case []any:
		n := scalarCompare
		for _, x := range t {
			n += valueCost(x)
		}
		return n
	case string, bool, nil:
		return scalarCompare
	}
	return numberCompare
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
// out. An evaluation also costs the subschemas applied before it at the
// place, which the validator looks back through for a loop: as many as
// the longest path to it (a chain of $refs), one evaluation per
// scopeSteps; and the place's depth in the text, which the errors of a
// failed evaluation copy, one per locationLevels.
func (c *costCounter) closure(set map[*jsonschema.Schema]int, depth int) (map[*jsonschema.Schema]int, bool) {
	each := evaluation + depth*evaluation/locationLevels
	if !anyInPlace(set) {
		for _, n := range set {
			if !c.charge(n, each) {
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
	chain := make(map[*jsonschema.Schema]int, len(order))
	for i := len(order) - 1; i >= 0; i-- {
		s := order[i]
		n := paths[s]
		if !c.charge(n, each+chain[s]*evaluation/scopeSteps) {
			return nil, false
		}
		for _, t := range inPlace(s) {
			if !back[[2]*jsonschema.Schema{s, t}] {
				paths[t] = min(paths[t]+n, pathCap)
				chain[t] = max(chain[t], chain[s]+1)
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

// propertySchemas lists the subschemas s may apply to the value of its
// object's property key (propertyNames applies to the key: apply).
func propertySchemas(s *jsonschema.Schema, key string) []*jsonschema.Schema {
	out := []*jsonschema.Schema{s.Properties[key], s.UnevaluatedProperties}
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

// subschemas lists every subschema s may apply (refuseDynamicRefs walks
// them all).
func subschemas(s *jsonschema.Schema) []*jsonschema.Schema {
	out := inPlace(s)
	out = append(out, s.PropertyNames, s.UnevaluatedProperties, s.Items2020, s.Contains, s.UnevaluatedItems)
	out = append(out, s.PrefixItems...)
	for _, t := range s.Properties {
		out = append(out, t)
	}
	for _, t := range s.PatternProperties {
		out = append(out, t)
	}
	for _, v := range []any{s.AdditionalProperties, s.AdditionalItems, s.Items} {
		switch t := v.(type) {
		case *jsonschema.Schema:
			out = append(out, t)
		case []*jsonschema.Schema:
			out = append(out, t...)
		}
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
