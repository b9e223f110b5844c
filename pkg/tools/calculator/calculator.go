// Package calculator implements the "calculator" hosted tool: a small, safe
// arithmetic expression evaluator over float64 written as a hand-made
// recursive-descent parser. It never executes code, bounds the input length
// and nesting depth, and reports precise errors the model can act on.
package calculator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lambent/lambent/pkg/tooldef"
	"github.com/lambent/lambent/pkg/tools"
)

// Name is the function name the model uses to call the calculator.
const Name = "calculator"

// MaxExpressionLength is the longest expression, in bytes, that Evaluate accepts.
const MaxExpressionLength = 4096

// MaxDepth is the deepest nesting of parentheses, function calls, unary signs
// and exponents that Evaluate accepts; it keeps recursion strictly bounded.
const MaxDepth = 200

const description = "Evaluate an arithmetic expression and return the numeric result (64-bit floating point, shortest exact form: 0.1 + 0.2 gives 0.30000000000000004). " +
	"Use it for any calculation instead of computing in your head. " +
	"Supports numbers (3, 2.5, .5, 1e3, 6.02e23), operators + - * / % (remainder) and ^ (power, right-associative; ** also works), " +
	"unary minus/plus (-2^2 = -4), parentheses, constants pi and e, and functions " +
	"sqrt(x), abs(x), round(x) (half away from zero), floor(x), ceil(x), min(a, b, ...), max(a, b, ...). " +
	"Standard precedence: ^ binds tighter than unary minus, which binds tighter than * / %, which bind tighter than + -. " +
	"There are no variables, no implicit multiplication (write 2*pi, not 2pi) and no percent-of syntax (% is the remainder). " +
	"Example: {\"expression\": \"(1.5 + 2) * sqrt(16) / 2^3\"}."

const parameters = `{
  "type": "object",
  "properties": {
    "expression": {
      "type": "string",
      "description": "The arithmetic expression to evaluate, e.g. \"2 * (3 + 4)^2 - sqrt(81)\"."
    }
  },
  "required": ["expression"],
  "additionalProperties": false
}`

// Tool returns the calculator hosted tool: its definition and its handler.
// The handler takes {"expression": string} and returns the formatted result.
func Tool() tools.Hosted {
	return tools.Hosted{
		Definition: tooldef.ToolDefinition{
			Name:        Name,
			Description: description,
			Parameters:  json.RawMessage(parameters),
		},
		Handler: handle,
	}
}

type arguments struct {
	Expression *string `json:"expression"`
}

func handle(ctx context.Context, call tools.ToolCall) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("calculator: %w", err)
	}
	var args arguments
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		return "", fmt.Errorf("invalid arguments: expected a JSON object like {\"expression\": \"1+2\"}: %w", err)
	}
	if args.Expression == nil {
		return "", errors.New("missing required argument \"expression\"")
	}
	v, err := Evaluate(*args.Expression)
	if err != nil {
		return "", err
	}
	return Format(v), nil
}

// Format renders a result the way the tool reports it: integers with
// magnitude below 1e15 without exponent or decimal point ("42", "-4"),
// everything else in the shortest 'g' form that round-trips ("0.5", "1e+20").
// Negative zero is printed as "0".
func Format(v float64) string {
	if v == 0 {
		return "0"
	}
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// SyntaxError reports malformed input at a 1-based byte position in the
// expression. Its message has the form "syntax error at position N: ...".
type SyntaxError struct {
	// Pos is the 1-based byte position of the offending input.
	Pos int
	// Msg describes the problem.
	Msg string
}

// Error implements the error interface.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error at position %d: %s", e.Pos, e.Msg)
}

func syntaxErr(pos int, format string, a ...any) error {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, a...)}
}

// Evaluate parses and evaluates an arithmetic expression (see the package
// documentation and the tool description for the grammar) and returns its
// value. Every intermediate and final value must be finite: overflow, NaN,
// division or remainder by zero and the square root of a negative number are
// errors, as are malformed input, unknown identifiers, wrong argument counts,
// expressions longer than MaxExpressionLength and nesting deeper than MaxDepth.
func Evaluate(expr string) (float64, error) {
	if len(expr) > MaxExpressionLength {
		return 0, fmt.Errorf("expression too long: %d bytes (max %d)", len(expr), MaxExpressionLength)
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	if len(toks) == 1 { // only EOF
		return 0, errors.New("empty expression")
	}
	p := &parser{toks: toks}
	n, err := p.parseExpr()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return 0, syntaxErr(t.pos, "unexpected %s", t.describe())
	}
	return n.eval()
}

// ---- lexer ----

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp // one of + - * / % ^ ( ) , ; "**" is lexed as "^"
)

type token struct {
	kind tokKind
	pos  int // 1-based byte position
	text string
	num  float64
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return fmt.Sprintf("number %q", t.text)
	case tokIdent:
		return fmt.Sprintf("identifier %q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isIdentStart(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'
}

func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case isDigit(c) || c == '.':
			start := i
			digits := 0
			for i < len(s) && isDigit(s[i]) {
				i++
				digits++
			}
			if i < len(s) && s[i] == '.' {
				i++
				for i < len(s) && isDigit(s[i]) {
					i++
					digits++
				}
			}
			if digits == 0 {
				return nil, syntaxErr(start+1, "invalid number %q", s[start:i])
			}
			if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
				j := i + 1
				if j < len(s) && (s[j] == '+' || s[j] == '-') {
					j++
				}
				if j < len(s) && isDigit(s[j]) {
					for j < len(s) && isDigit(s[j]) {
						j++
					}
					i = j
				}
			}
			text := s[start:i]
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				if errors.Is(err, strconv.ErrRange) && !math.IsInf(v, 0) {
					v = 0 // underflow: the nearest float64 is zero
				} else {
					return nil, syntaxErr(start+1, "number %q is out of range", text)
				}
			}
			toks = append(toks, token{kind: tokNum, pos: start + 1, text: text, num: v})
		case isIdentStart(c):
			start := i
			for i < len(s) && (isIdentStart(s[i]) || isDigit(s[i])) {
				i++
			}
			toks = append(toks, token{kind: tokIdent, pos: start + 1, text: s[start:i]})
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, token{kind: tokOp, pos: i + 1, text: "^"})
			i += 2
		case strings.IndexByte("+-*/%^(),", c) >= 0:
			toks = append(toks, token{kind: tokOp, pos: i + 1, text: s[i : i+1]})
			i++
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return nil, syntaxErr(i+1, "unexpected character %q", r)
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(s) + 1}), nil
}

// ---- parser ----
//
// expr    = term { ("+" | "-") term }
// term    = unary { ("*" | "/" | "%") unary }
// unary   = ("+" | "-") unary | power
// power   = primary [ "^" unary ]          (right-associative)
// primary = number | ident | ident "(" expr { "," expr } ")" | "(" expr ")"
//
// Every recursive cycle passes through parseUnary, which enforces MaxDepth.

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *parser) isOp(ops string) (token, bool) {
	t := p.peek()
	if t.kind == tokOp && strings.Contains(ops, t.text) {
		return t, true
	}
	return t, false
}

func (p *parser) parseExpr() (node, error) {
	left, err := p.parseTerm()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("+-")
		if !ok {
			return left, nil
		}
		p.next()
		right, err := p.parseTerm()
		if err != nil {
			return nil, err
		}
		left = &binary{op: t.text[0], l: left, r: right}
	}
}

func (p *parser) parseTerm() (node, error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("*/%")
		if !ok {
			return left, nil
		}
		p.next()
		right, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		left = &binary{op: t.text[0], l: left, r: right}
	}
}

func (p *parser) parseUnary() (node, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > MaxDepth {
		return nil, syntaxErr(p.peek().pos, "expression is nested too deeply (max depth %d)", MaxDepth)
	}
	if t, ok := p.isOp("+-"); ok {
		p.next()
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		if t.text == "-" {
			return &negate{x: x}, nil
		}
		return x, nil
	}
	return p.parsePower()
}

func (p *parser) parsePower() (node, error) {
	base, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	if _, ok := p.isOp("^"); !ok {
		return base, nil
	}
	p.next()
	exp, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	return &binary{op: '^', l: base, r: exp}, nil
}

func (p *parser) parsePrimary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return number(t.num), nil
	case tokIdent:
		return p.parseIdent(t)
	case tokOp:
		if t.text == "(" {
			x, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if c := p.peek(); c.kind != tokOp || c.text != ")" {
				if c.kind == tokEOF {
					return nil, syntaxErr(c.pos, "missing closing parenthesis for \"(\" at position %d", t.pos)
				}
				return nil, syntaxErr(c.pos, "expected \")\" but found %s", c.describe())
			}
			p.next()
			return x, nil
		}
		return nil, syntaxErr(t.pos, "unexpected %s, expected a number, constant, function or \"(\"", t.describe())
	default:
		return nil, syntaxErr(t.pos, "unexpected end of expression, expected a number, constant, function or \"(\"")
	}
}

const knownNames = "functions sqrt, abs, round, floor, ceil, min, max; constants pi, e"

func (p *parser) parseIdent(t token) (node, error) {
	name := strings.ToLower(t.text)
	open, isCall := p.isOp("(")
	if c, ok := constant(name); ok {
		if isCall {
			return nil, syntaxErr(open.pos, "%s is a constant, not a function", t.text)
		}
		return number(c), nil
	}
	fn, ok := lookupFunc(name)
	if !ok {
		return nil, fmt.Errorf("unknown identifier %q at position %d (known: %s)", t.text, t.pos, knownNames)
	}
	if !isCall {
		return nil, syntaxErr(t.pos+len(t.text), "function %s must be called with parentheses, e.g. %s(2)", name, name)
	}
	p.next() // "("
	var args []node
	if _, ok := p.isOp(")"); ok {
		p.next()
	} else {
		for {
			a, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			c := p.next()
			if c.kind == tokOp && c.text == "," {
				continue
			}
			if c.kind == tokOp && c.text == ")" {
				break
			}
			if c.kind == tokEOF {
				return nil, syntaxErr(c.pos, "missing closing parenthesis for %s( at position %d", name, open.pos)
			}
			return nil, syntaxErr(c.pos, "expected \",\" or \")\" but found %s", c.describe())
		}
	}
	if fn.variadic {
		if len(args) < 1 {
			return nil, fmt.Errorf("%s expects at least 1 argument, got 0 (at position %d)", name, t.pos)
		}
	} else if len(args) != 1 {
		return nil, fmt.Errorf("%s expects exactly 1 argument, got %d (at position %d)", name, len(args), t.pos)
	}
	return &call{fn: fn, args: args}, nil
}

func constant(name string) (float64, bool) {
	switch name {
	case "pi":
		return math.Pi, true
	case "e":
		return math.E, true
	}
	return 0, false
}

type function struct {
	name     string
	variadic bool
	apply    func(args []float64) (float64, error)
}

func unaryFn(name string, f func(float64) float64) function {
	return function{name: name, apply: func(a []float64) (float64, error) { return f(a[0]), nil }}
}

func lookupFunc(name string) (function, bool) {
	switch name {
	case "sqrt":
		return function{name: name, apply: func(a []float64) (float64, error) {
			if a[0] < 0 {
				return 0, errors.New("sqrt of negative number")
			}
			return math.Sqrt(a[0]), nil
		}}, true
	case "abs":
		return unaryFn(name, math.Abs), true
	case "round":
		return unaryFn(name, math.Round), true
	case "floor":
		return unaryFn(name, math.Floor), true
	case "ceil":
		return unaryFn(name, math.Ceil), true
	case "min", "max":
		pick := math.Min
		if name == "max" {
			pick = math.Max
		}
		return function{name: name, variadic: true, apply: func(a []float64) (float64, error) {
			v := a[0]
			for _, x := range a[1:] {
				v = pick(v, x)
			}
			return v, nil
		}}, true
	}
	return function{}, false
}

// ---- evaluation ----

type node interface {
	eval() (float64, error)
}

type number float64

func (n number) eval() (float64, error) { return float64(n), nil }

type negate struct{ x node }

func (n *negate) eval() (float64, error) {
	v, err := n.x.eval()
	if err != nil {
		return 0, err
	}
	return -v, nil
}

type binary struct {
	op   byte
	l, r node
}

func (n *binary) eval() (float64, error) {
	a, err := n.l.eval()
	if err != nil {
		return 0, err
	}
	b, err := n.r.eval()
	if err != nil {
		return 0, err
	}
	var v float64
	switch n.op {
	case '+':
		v = a + b
	case '-':
		v = a - b
	case '*':
		v = a * b
	case '/':
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		v = a / b
	case '%':
		if b == 0 {
			return 0, errors.New("division by zero")
		}
		v = math.Mod(a, b)
	case '^':
		if a == 0 && b < 0 {
			return 0, errors.New("division by zero")
		}
		v = math.Pow(a, b)
	default:
		return 0, fmt.Errorf("internal error: unknown operator %q", n.op)
	}
	return checkFinite(v)
}

type call struct {
	fn   function
	args []node
}

func (n *call) eval() (float64, error) {
	vals := make([]float64, len(n.args))
	for i, a := range n.args {
		v, err := a.eval()
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	v, err := n.fn.apply(vals)
	if err != nil {
		return 0, err
	}
	return checkFinite(v)
}

func checkFinite(v float64) (float64, error) {
	switch {
	case math.IsNaN(v):
		return 0, errors.New("result is not a real number (NaN)")
	case math.IsInf(v, 0):
		return 0, errors.New("numeric overflow: result is infinite")
	}
	return v, nil
}
