package calculator

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/lambent/lambent/pkg/tools"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		// numbers
		{"42", "42"},
		{"  7 ", "7"},
		{"3.25", "3.25"},
		{".5", "0.5"},
		{"5.", "5"},
		{"1e3", "1000"},
		{"1E3", "1000"},
		{"1e+3", "1000"},
		{"2.5e-3", "0.0025"},
		{"1e-400", "0"},
		{"1e15", "1e+15"},
		{"999999999999999", "999999999999999"},
		{"1e20", "1e+20"},
		{"0.1 + 0.2", "0.30000000000000004"},
		// precedence and associativity
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"10 - 4 - 3", "3"},
		{"100 / 10 / 5", "2"},
		{"2 * 3 % 4", "2"},
		{"7 % 4 * 2", "6"},
		{"1 + 7 % 4", "4"},
		{"2 ^ 3 ^ 2", "512"},
		{"(2 ^ 3) ^ 2", "64"},
		{"2 ** 3", "8"},
		{"2 ** 3 ** 2", "512"},
		{"-2 ^ 2", "-4"},
		{"(-2) ^ 2", "4"},
		{"2 ^ -1", "0.5"},
		{"2 ^ -2 ^ 2", "0.0625"},
		{"-3 * -3", "9"},
		{"2 * -3", "-6"},
		{"2 - -3", "5"},
		{"--3", "3"},
		{"+-+3", "-3"},
		{"-(1 + 2) * 2", "-6"},
		{"2 * 3 ^ 2", "18"},
		{"-2 ^ -2", "-0.25"},
		{"1 - 2 + 3", "2"},
		{"8 / 2 * 4", "16"},
		{"-7 % 3", "-1"},
		{"7.5 % 2", "1.5"},
		{"((((1))))", "1"},
		{"-0", "0"},
		{"0 * -1", "0"},
		// functions and constants
		{"sqrt(16)", "4"},
		{"sqrt(2)", "1.4142135623730951"},
		{"sqrt(0)", "0"},
		{"abs(-3.5)", "3.5"},
		{"round(2.5)", "3"},
		{"round(-2.5)", "-3"},
		{"round(2.4)", "2"},
		{"floor(-1.5)", "-2"},
		{"ceil(1.2)", "2"},
		{"min(3)", "3"},
		{"min(3, 1, 2)", "1"},
		{"max(3, 1, 2)", "3"},
		{"max(-1, -5)", "-1"},
		{"max(1, 2) ^ min(3, 4)", "8"},
		{"pi", "3.141592653589793"},
		{"e", "2.718281828459045"},
		{"PI", "3.141592653589793"},
		{"Sqrt(9)", "3"},
		{"2 * pi", "6.283185307179586"},
		{"-pi", "-3.141592653589793"},
		{"sqrt(3^2 + 4^2)", "5"},
		{"round(pi * 100) / 100", "3.14"},
		{"abs(-2) ^ 2", "4"},
		{"-sqrt(4)", "-2"},
		{"min(1+1, 2*2, sqrt(1))", "1"},
		{"(1.5 + 2) * sqrt(16) / 2^3", "1.75"},
		{"1\n+\t2", "3"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			v, err := Evaluate(tt.expr)
			if err != nil {
				t.Fatalf("Evaluate(%q) error: %v", tt.expr, err)
			}
			if got := Format(v); got != tt.want {
				t.Errorf("Evaluate(%q) = %s, want %s", tt.expr, got, tt.want)
			}
		})
	}
}

func TestEvaluateErrors(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want string // exact error message, or prefix when prefix is set
		pfx  bool
	}{
		{"division", "1 / 0", "division by zero", false},
		{"division by expression", "1 / (2 - 2)", "division by zero", false},
		{"remainder", "5 % 0", "division by zero", false},
		{"zero to negative power", "0 ^ -1", "division by zero", false},
		{"empty", "", "empty expression", false},
		{"blank", "   ", "empty expression", false},
		{"trailing operator", "1 +", "syntax error at position 4: unexpected end of expression, expected a number, constant, function or \"(\"", false},
		{"leading operator", "* 2", "syntax error at position 1: unexpected \"*\", expected a number, constant, function or \"(\"", false},
		{"double operator", "1 * / 2", "syntax error at position 5: unexpected \"/\", expected a number, constant, function or \"(\"", false},
		{"two numbers", "1 2", "syntax error at position 3: unexpected number \"2\"", false},
		{"implicit multiplication", "2pi", "syntax error at position 2: unexpected identifier \"pi\"", false},
		{"implicit multiplication paren", "2(3)", "syntax error at position 2: unexpected \"(\"", false},
		{"unclosed paren", "(1 + 2", "syntax error at position 7: missing closing parenthesis for \"(\" at position 1", false},
		{"extra close paren", "1 + 2)", "syntax error at position 6: unexpected \")\"", false},
		{"empty parens", "()", "syntax error at position 2: unexpected \")\", expected a number, constant, function or \"(\"", false},
		{"bad character", "1 & 2", "syntax error at position 3: unexpected character '&'", false},
		{"unicode character", "2 × 3", "syntax error at position 3: unexpected character '×'", false},
		{"lone dot", ".", "syntax error at position 1: invalid number \".\"", false},
		{"double dot", "1.2.3", "syntax error at position 4: unexpected number \".3\"", false},
		{"hex", "0x10", "syntax error at position 2: unexpected identifier \"x10\"", false},
		{"huge literal", "1e400", "syntax error at position 1: number \"1e400\" is out of range", false},
		{"assignment", "x = 1", "syntax error at position 3: unexpected character '='", false},
		{"unknown identifier", "foo + 1", "unknown identifier \"foo\" at position 1 (known: functions sqrt, abs, round, floor, ceil, min, max; constants pi, e)", false},
		{"unknown function", "1 + log(2)", "unknown identifier \"log\" at position 5", true},
		{"function without parens", "sqrt 4", "syntax error at position 5: function sqrt must be called with parentheses, e.g. sqrt(2)", false},
		{"constant called", "pi(2)", "syntax error at position 3: pi is a constant, not a function", false},
		{"sqrt no args", "sqrt()", "sqrt expects exactly 1 argument, got 0 (at position 1)", false},
		{"sqrt two args", "sqrt(1, 2)", "sqrt expects exactly 1 argument, got 2 (at position 1)", false},
		{"abs two args", "1 + abs(1, 2)", "abs expects exactly 1 argument, got 2 (at position 5)", false},
		{"min no args", "min()", "min expects at least 1 argument, got 0 (at position 1)", false},
		{"max no args", "max()", "max expects at least 1 argument, got 0 (at position 1)", false},
		{"trailing comma", "max(1,)", "syntax error at position 7: unexpected \")\", expected a number, constant, function or \"(\"", false},
		{"unclosed call", "max(1, 2", "syntax error at position 9: missing closing parenthesis for max( at position 4", false},
		{"bad separator", "max(1 2)", "syntax error at position 7: expected \",\" or \")\" but found number \"2\"", false},
		{"sqrt negative", "sqrt(-1)", "sqrt of negative number", false},
		{"overflow multiply", "1e308 * 10", "numeric overflow: result is infinite", false},
		{"overflow power", "10 ^ 400", "numeric overflow: result is infinite", false},
		{"overflow add", "1.7e308 + 1.7e308", "numeric overflow: result is infinite", false},
		{"nan power", "(-8) ^ (1/3)", "result is not a real number (NaN)", false},
		{"error inside function", "sqrt(1/0)", "division by zero", false},
		{"too long", strings.Repeat("1+", 2048) + "1", "expression too long: 4097 bytes (max 4096)", false},
		{"too deep parens", strings.Repeat("(", 300) + "1" + strings.Repeat(")", 300), "syntax error at position 201: expression is nested too deeply (max depth 200)", false},
		{"too deep unary", strings.Repeat("-", 1000) + "1", "syntax error at position 201: expression is nested too deeply (max depth 200)", false},
		{"too deep power", strings.Repeat("1^", 1000) + "1", "syntax error at position 401: expression is nested too deeply (max depth 200)", false},
		{"too deep calls", strings.Repeat("abs(", 500) + "1" + strings.Repeat(")", 500), "syntax error at position 801: expression is nested too deeply (max depth 200)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Evaluate(tt.expr)
			if err == nil {
				t.Fatalf("Evaluate(%q) = %v, want error %q", tt.expr, v, tt.want)
			}
			got := err.Error()
			if tt.pfx {
				if !strings.HasPrefix(got, tt.want) {
					t.Errorf("Evaluate(%q) error = %q, want prefix %q", tt.expr, got, tt.want)
				}
			} else if got != tt.want {
				t.Errorf("Evaluate(%q) error = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

func TestSyntaxErrorType(t *testing.T) {
	_, err := Evaluate("1 + * 2")
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is not a *SyntaxError", err)
	}
	if se.Pos != 5 {
		t.Errorf("Pos = %d, want 5", se.Pos)
	}
}

func TestNestingWithinLimit(t *testing.T) {
	expr := strings.Repeat("(", 150) + "2" + strings.Repeat(")", 150)
	v, err := Evaluate(expr)
	if err != nil || v != 2 {
		t.Fatalf("Evaluate(150 nested parens) = %v, %v; want 2, nil", v, err)
	}
	// A long flat chain is bounded by the length cap, not the depth cap.
	expr = strings.Repeat("1+", 2047) + "1"
	v, err = Evaluate(expr)
	if err != nil || v != 2048 {
		t.Fatalf("Evaluate(long chain) = %v, %v; want 2048, nil", v, err)
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{
		{42, "42"},
		{-4, "-4"},
		{0.5, "0.5"},
		{math.Copysign(0, -1), "0"},
		{123456789012345, "123456789012345"},
		{1e15, "1e+15"},
		{-1e15, "-1e+15"},
		{1.5e-7, "1.5e-07"},
		{1e21, "1e+21"},
		{2.5, "2.5"},
	}
	for _, tt := range tests {
		if got := Format(tt.v); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestToolDefinition(t *testing.T) {
	tool := Tool()
	d := tool.Definition
	if d.Name != Name || d.Description == "" || tool.Handler == nil {
		t.Fatalf("unexpected definition: %+v", d)
	}
	var schema struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not valid JSON: %v", err)
	}
	if schema.Type != "object" || schema.Properties["expression"] == nil ||
		len(schema.Required) != 1 || schema.Required[0] != "expression" ||
		schema.AdditionalProperties == nil || *schema.AdditionalProperties {
		t.Fatalf("unexpected schema: %s", d.Parameters)
	}
}

func TestHandler(t *testing.T) {
	h := Tool().Handler
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
	}{
		{"ok", `{"expression":"6*7"}`, "42", ""},
		{"fraction", `{"expression":"1/2"}`, "0.5", ""},
		{"negative", `{"expression":"-2^2"}`, "-4", ""},
		{"extra field ignored", `{"expression":"1+1","note":"x"}`, "2", ""},
		{"evaluation error", `{"expression":"1/0"}`, "", "division by zero"},
		{"missing expression", `{}`, "", `missing required argument "expression"`},
		{"null", `null`, "", `missing required argument "expression"`},
		{"empty expression", `{"expression":""}`, "", "empty expression"},
		{"wrong type", `{"expression":42}`, "", "invalid arguments"},
		{"bad json", `{"expression":`, "", "invalid arguments"},
		{"empty arguments", ``, "", "invalid arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h(context.Background(), tools.ToolCall{ID: "call_1", Name: Name, Arguments: tt.args})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("handler(%s) = %q, %v; want error containing %q", tt.args, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("handler(%s) = %q, %v; want %q", tt.args, got, err, tt.want)
			}
		})
	}
}

func TestHandlerCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Tool().Handler(ctx, tools.ToolCall{Arguments: `{"expression":"1"}`})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"1+2*3", "-2^2", "2^3^2", "(1+2)*3", "sqrt(16)", "min(1,2,3)", "max(-1)",
		"round(2.5)", "floor(-1.5)+ceil(1.2)", "pi*e", "1e3", ".5", "1/0", "5%0",
		"sqrt(-1)", "((", "))", "1 +", "", "abc", "1e308*10", "(-8)^(1/3)", "2**-2",
		"---1", "1.2.3", "max(1,)", "0^-1", "abs(1,2)", "1e-400", "9e999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := Evaluate(expr)
		if err != nil {
			if v != 0 {
				t.Fatalf("Evaluate(%q) returned %v together with error %v", expr, v, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("Evaluate(%q) = %v without an error", expr, v)
		}
		if s := Format(v); s == "" || s == "NaN" || strings.Contains(s, "Inf") {
			t.Fatalf("Format(%v) = %q", v, s)
		}
	})
}
