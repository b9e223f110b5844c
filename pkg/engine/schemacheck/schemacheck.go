// Package schemacheck compiles the JSON Schemas of requests and checks
// JSON texts against them, within bounds a request cannot exceed: Scan
// measures a JSON text (nesting, numbers, enum values) in one pass before
// anything parses it, Compile bounds the schema's regular expressions and
// refuses $dynamicRef and $recursiveRef, and Errors reports an output's
// failed constraints, capped, within an evaluations budget (MaxEvaluations;
// keywords, $ref chains and the text's depth are charged to it). No schema or
// output can make it read a file, fetch a URL or panic. The engine checks
// requests' schemas with it (checkSchema) and validates outputs
// (validated output, attempts.go).
package schemacheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaURL is the URL the output schema is compiled under; relative $refs
// resolve against it and, like every other external reference, are refused.
const schemaURL = "https://lambent.invalid/output.schema.json"

// noLoader refuses to load external schemas: a request's schema must not
// make the gateway read files or fetch URLs.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not supported (%s)", url)
}

// Compile compiles a request's JSON Schema (draft 2020-12 unless it says
// otherwise, formats asserted, external references refused, and dynamic
// ones: refuseDynamicRefs). Its regular
// expressions may add up to patterns in size (patternBudget); a schema over
// that is a *PatternsError. The caller has bounded its size, depth and
// numbers (Scan).
func Compile(raw json.RawMessage, patterns int) (s *jsonschema.Schema, err error) {
	defer recovered("compile the schema", &err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the schema is not valid JSON: %w", err)
	}
	budget := &patternBudget{limit: patterns, compiled: map[string]jsonschema.Regexp{}}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(budget.compile)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err = c.Compile(schemaURL)
	budget.compiledAll()
	if budget.over > 0 {
		return nil, &PatternsError{Size: budget.over, Limit: patterns}
	}
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	if err := refuseDynamicRefs(s); err != nil {
		return nil, err
	}
	return s, nil
}

// refuseDynamicRefs refuses a schema that reaches a $dynamicRef or a
// $recursiveRef (draft 2019-09): the validator resolves one by walking the
// whole dynamic scope, from the text's root, at each use, so a check costs
// the square of the text's depth, and to a subschema the path decides,
// which the evaluations budget (withinBudget) cannot follow. OpenAI's
// structured outputs support neither.
func refuseDynamicRefs(root *jsonschema.Schema) error {
	seen := map[*jsonschema.Schema]bool{root: true}
	stack := []*jsonschema.Schema{root}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		kw := ""
		switch {
		case s.DynamicRef != nil:
			kw = "$dynamicRef"
		case s.RecursiveRef != nil:
			kw = "$recursiveRef"
		}
		if kw != "" {
			return fmt.Errorf("%s (at %s) is not supported: use $ref", kw, strings.TrimPrefix(s.Location, schemaURL))
		}
		for _, t := range subschemas(s) {
			if !seen[t] {
				seen[t] = true
				stack = append(stack, t)
			}
		}
	}
	return nil
}

// recovered turns a panic of the JSON Schema validator (a library) into
// *err, so that no schema or output can take the gateway down.
func recovered(what string, err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("could not %s: the validator failed (%v)", what, p)
	}
}

// patternBudget compiles the regular expressions of one schema (pattern,
// patternProperties, format "regex") for the validator, each distinct one
// once, up to limit in summed size (regexpSize): a regular expression's
// compiled program grows with its repetitions, and 128 KiB of
// "[a-z]{1,1000}" patterns cost seconds and gigabytes to compile.
//
// Once the schema is compiled (compiledAll), the validator still calls
// compile, for the values it checks against format "regex": those are the
// checked texts' (a tool call's arguments, an output), not the schema's,
// and a schema compiled once serves every request (a hosted tool's, for
// the engine's life). They are parsed only — valid or not, which is all
// the format asks — and neither count against the budget nor are cached:
// they counted and stayed cached, so that one tenant's calls used up the
// budget and every later call's regular expression was refused.
type patternBudget struct {
	mu       sync.Mutex
	limit    int
	used     int
	over     int // the size asked for past the limit, 0 while within it
	compiled map[string]jsonschema.Regexp
	done     bool // the schema is compiled: what comes is a checked text's
}

// compiledAll marks the schema compiled: compile now parses only.
func (b *patternBudget) compiledAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done, b.compiled = true, nil
}

// errPatternBudget refuses a regular expression past the budget.
var errPatternBudget = errors.New("the schema's regular expressions are too large")

// compile compiles expr for the schema within the budget or, once the
// schema is compiled, only parses it (the validator's format "regex",
// which uses the error alone): its Regexp is then nil.
func (b *patternBudget) compile(expr string) (jsonschema.Regexp, error) {
	b.mu.Lock()
	if b.done {
		b.mu.Unlock()
		_, err := syntax.Parse(expr, syntax.Perl)
		return nil, err
	}
	defer b.mu.Unlock()
	if re, ok := b.compiled[expr]; ok {
		return re, nil
	}
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	own := regexpSize(parsed, b.limit+1)
	size := b.used + own
	if size > b.limit {
		b.over = max(b.over, size)
		return nil, errPatternBudget
	}
	b.used = size
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, err
	}
	sized := &sizedRegexp{Regexp: re, size: own}
	b.compiled[expr] = sized
	return sized, nil
}

// sizedRegexp is a compiled regular expression with its size
// (regexpSize), which a match's work grows with (patternCost).
type sizedRegexp struct {
	*regexp.Regexp
	size int
}

// regexpSize is the size of a parsed regular expression with its
// repetitions expanded ("[a-z]{1,1000}" is 1,000, "^[A-Z]{2}$" 4), which its
// compiled program's grows with; counted up to limit. Go's parser bounds
// the nesting, and so the recursion, at 1,000.
func regexpSize(re *syntax.Regexp, limit int) int {
	n := 1
	switch re.Op {
	case syntax.OpLiteral:
		n = len(re.Rune)
	case syntax.OpRepeat:
		n = max(re.Max, re.Min, 1) * regexpSize(re.Sub[0], limit)
	default:
		for _, sub := range re.Sub {
			n += regexpSize(sub, limit)
		}
	}
	return min(n, limit)
}

// PatternsError is a schema whose regular expressions are over the budget:
// Size, with repetitions expanded (regexpSize), over Limit.
type PatternsError struct{ Size, Limit int }

func (e *PatternsError) Error() string {
	return fmt.Sprintf("the schema's regular expressions are %d in size, over the limit of %d", e.Size, e.Limit)
}

// Errors checks output (JSON text) against s: nil when it is valid, else
// one line per failed constraint ("at '/score': minimum: got -1, want 0"),
// at most maxSchemaErrors of them.
func Errors(s *jsonschema.Schema, output string) []string {
	return Check(s, output, "the output")
}

// Check is Errors for any JSON text: what names it (a singular noun) in
// the errors about the text as a whole ("the input is not valid JSON").
func Check(s *jsonschema.Schema, text, what string) (errs []string) {
	var failed error
	defer func() {
		if failed != nil {
			errs = []string{failed.Error()}
		}
	}()
	defer recovered("validate "+what, &failed)
	if Scan(text).Number > MaxNumberSize {
		return []string{fmt.Sprintf("%s holds a number of more than %d digits or with an exponent beyond ±%d, which cannot be validated", what, MaxNumberSize, MaxNumberSize)}
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return []string{what + " is not valid JSON: " + err.Error()}
	}
	if !withinBudget(s, inst) {
		return []string{fmt.Sprintf("%s cannot be validated against this schema: it would take more than %d evaluations of its subschemas (and %d for each value of %s)", what, MaxEvaluations, EvaluationsPerValue, what)}
	}
	err = s.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	more := 0
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if len(out) == maxSchemaErrors {
			more++
			return
		}
		u := e.BasicOutput()
		loc := u.InstanceLocation
		if loc == "" {
			loc = "/"
		}
		out = append(out, clip(fmt.Sprintf("at '%s': %s", loc, u.Error), maxSchemaErrorLen))
	}
	walk(ve)
	if more > 0 {
		out = append(out, fmt.Sprintf("(and %d more errors)", more))
	}
	return out
}

// maxSchemaErrors bounds the errors a validation reports (to the model, and
// in the response's attempts), and maxSchemaErrorLen the length of each: an
// error may quote its schema (an enum's values), once per value of the
// output that fails it.
const (
	maxSchemaErrors   = 20
	maxSchemaErrorLen = 500
)

// BoundErrors returns errs as a validation reports them: at most 20, each
// cut to 500 bytes, and a note of how many more there were. A validator
// tool's reply holds what its author wrote: bounded so, the errors fit
// the response's error, the model's feedback and the events that carry
// them (EventBridge's 256 KB).
func BoundErrors(errs []string) []string {
	n := min(len(errs), maxSchemaErrors)
	out := make([]string, n, n+1)
	for i := range n {
		out[i] = clip(errs[i], maxSchemaErrorLen)
	}
	if more := len(errs) - n; more > 0 {
		out = append(out, fmt.Sprintf("(and %d more errors)", more))
	}
	return out
}

// clip returns s, cut to n bytes with "…" when it is longer.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// MaxNumberSize bounds the digits and the decimal exponent of the numbers
// the JSON Schema validator reads, in schemas and in outputs: it makes each
// an exact rational, whose cost grows with both (1e-999999 takes ~20 ms),
// and it panics past an exponent of a million. float64 spans ±308.
const MaxNumberSize = 400

// Shape is what one pass over a JSON text finds.
type Shape struct {
	// Depth is the most objects and arrays open at once (1 for
	// {"type":"string"}, 0 for a scalar).
	Depth int
	// Number is the size of the largest number: its digits, or the
	// magnitude of its exponent when that is larger (counted up to
	// MaxNumberSize+1).
	Number int
	// Enum is the number of values in the arrays of "enum" keys (the values
	// of enums inside an enum's values are data, not counted).
	Enum int
}

// Scan measures the JSON text b in one pass, without recursion or
// allocation. b is valid JSON (a request decoder or the validator's
// parser checks it), so only strings need skipping.
func Scan[T string | []byte](b T) Shape {
	var s Shape
	depth := 0
	// enumKey: the last token was the string "enum"; enumColon: then a
	// colon; inEnum: the depth of the enum array being counted (0: none).
	enumKey, enumColon, inEnum := false, false, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			continue
		}
		key, colon := false, false
		switch {
		case c == '"':
			start := i + 1
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			key = i-start == 4 && string(b[start:min(i, len(b))]) == "enum"
		case c == ':':
			colon = enumKey
		case c == ',':
			if inEnum != 0 && depth == inEnum {
				s.Enum++
			}
		case c == '{' || c == '[':
			depth++
			s.Depth = max(s.Depth, depth)
			if c == '[' && enumColon && inEnum == 0 {
				inEnum = depth
				if j := skipSpace(b, i+1); j < len(b) && b[j] != ']' {
					s.Enum++ // the first value
				}
			}
		case c == '}' || c == ']':
			if depth == inEnum {
				inEnum = 0
			}
			depth--
		case c == '-' || c >= '0' && c <= '9':
			digits, exp := 0, 0
			for ; i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '.'); i++ {
				if b[i] >= '0' && b[i] <= '9' {
					digits++
				}
			}
			if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
				for i++; i < len(b) && (b[i] >= '0' && b[i] <= '9' || b[i] == '-' || b[i] == '+'); i++ {
					if b[i] >= '0' && b[i] <= '9' && exp <= MaxNumberSize {
						exp = exp*10 + int(b[i]-'0')
					}
				}
			}
			s.Number = max(s.Number, min(max(digits, exp), MaxNumberSize+1))
			i-- // the byte after the number
		}
		enumKey, enumColon = key, colon
	}
	return s
}

// skipSpace returns the index of the first byte of b from i that is not
// JSON white space.
func skipSpace[T string | []byte](b T, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
