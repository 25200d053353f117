package builtin

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/sdk"
)

func TestEvaluate(t *testing.T) {
	cases := []struct {
		expr string
		want float64
	}{
		// precedence
		{"2+3*4", 14},
		{"(2+3)*4", 20},
		{"10-4-3", 3},      // left-associative
		{"100/10/5", 2},    // left-associative
		{"2*3+4*5", 26},    //
		{"7%3", 1},         //
		{"-7%3", -1},       // sign of the dividend
		{"7.5%2", 1.5},     //
		{"2+6/3*2", 6},     // / and * share a level, left to right
		{"1+2*3^2", 19},    // ^ above *
		{"2^3^2", 512},     // right-associative
		{"(2^3)^2", 64},    //
		{"2**3", 8},        // Python spelling
		{"2**3**2", 512},   //
		{"-2^2", -4},       // unary minus below ^
		{"(-2)^2", 4},      //
		{"2^-1", 0.5},      // unary in the exponent
		{"2^-2^2", 0.0625}, // 2^(-(2^2))
		{"--3", 3},
		{"+-+3", -3},
		{"3--2", 5},
		{"-(2+3)", -5},
		// numbers
		{"0.5+.5", 1},
		{"1.", 1},
		{"1e3", 1000},
		{"2.5E-3", 0.0025},
		{"6.02e+23", 6.02e23},
		{"1e-400", 0}, // underflow is zero, not an error
		{"  1 +\t2\n", 3},
		{"0.1+0.2", 0.3}, // tidied to 15 significant digits
		{"1/3", 0.333333333333333},
		// constants and functions
		{"pi", math.Pi},
		{"PI", math.Pi},
		{"π", math.Pi},
		{"e", math.E},
		{"2*pi", 2 * math.Pi},
		{"sqrt(16)", 4},
		{"sqrt(2)^2", 2},
		{"abs(-3.5)", 3.5},
		{"round(2.5)", 3},
		{"round(-2.5)", -3},
		{"round(2.4)", 2},
		{"round(3.14159, 2)", 3.14},
		{"round(1.005, 2)", 1.01},
		{"round(-1.005, 2)", -1.01},
		{"round(9.995, 2)", 10},
		{"round(99.95, 1)", 100},
		{"round(100/7, 0)", 14},
		{"round(0.04, 1)", 0},
		{"floor(-1.5)", -2},
		{"ceil(-1.5)", -1},
		{"ceil(1.2)", 2},
		{"min(3, 1, 2)", 1},
		{"max(3, 1, 2)", 3},
		{"max(5)", 5},
		{"max(3, 7.5) ^ 2", 56.25},
		{"ln(e)", 1},
		{"log10(1000)", 3},
		{"sin(0)", 0},
		{"cos(0)", 1},
		{"sin(pi/2)", 1},
		{"cos(pi)", -1},
		{"tan(pi/4)", 1},
		{"sin(pi)", 0},        // 1.2e-16 snapped
		{"cos(pi/2)", 0},      //
		{"tan(pi)", 0},        //
		{"sin(1e-20)", 1e-20}, // tiny but true
		{"sqrt(max(9, 16)) + min(abs(-2), 10)", 6},
		// unicode operators
		{"6×7", 42},
		{"84÷2", 42},
		{"50−8", 42},
		{"2^1023*1.5", 1.348269851146737e308},
	}
	for _, c := range cases {
		got, err := evaluate(c.expr)
		if err != nil {
			t.Errorf("evaluate(%q): unexpected error %v", c.expr, err)
			continue
		}
		if !approxEqual(got, c.want) {
			t.Errorf("evaluate(%q) = %v, want %v", c.expr, got, c.want)
		}
	}
}

func approxEqual(a, b float64) bool {
	if a == b {
		return true
	}
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

func TestEvaluateNegativeZero(t *testing.T) {
	for _, expr := range []string{"-0", "0*-1", "round(-0.4)", "round(-0.04, 1)"} {
		v, err := evaluate(expr)
		if err != nil || v != 0 || math.Signbit(v) {
			t.Errorf("evaluate(%q) = %v, %v; want +0", expr, v, err)
		}
	}
}

func TestEvaluateErrors(t *testing.T) {
	cases := []struct {
		expr string
		want string // substring of the error
	}{
		{"", "empty"},
		{"   ", "empty"},
		{"1/0", "division by zero at position 2"},
		{"1 + 2/(3-3)", "division by zero at position 6"},
		{"0/0", "division by zero at position 2"},
		{"5%0", "remainder of a division by zero at position 2"},
		{"0^-1", "0 raised to a negative power is a division by zero at position 2"},
		{"(-8)^(1/3)", "fractional power has no real value at position 5"},
		{"10^400", "overflow: the result is too large (the limit is about 1.8e308) at position 3"},
		{"1e308*10", "overflow"},
		{"1e309", "the number 1e309 is too large (the limit is about 1.8e308) at position 1"},
		{"2 + 1e999", "too large (the limit is about 1.8e308) at position 5"},
		{"sqrt(-1)", "sqrt of a negative number (-1) has no real value at position 1"},
		{"1 + ln(0)", "ln is defined only for positive numbers, got 0 at position 5"},
		{"log10(-5)", "log10 is defined only for positive numbers, got -5 at position 1"},
		{"2+", "the expression ends too early: expected a number, a constant, a function or \"(\" at position 3"},
		{"2+*3", "unexpected \"*\": expected a number, a constant, a function or \"(\" at position 3"},
		{"*3", "at position 1"},
		{"(2+3", "expected \")\" to close the \"(\" at position 1, found end of expression at position 5"},
		{"((1)", "to close the \"(\" at position 1"},
		{"2+3)", "unmatched \")\" at position 4"},
		{"()", "unexpected \")\""},
		{"2 3", "unexpected number 3: expected an operator or the end of the expression at position 3; implicit multiplication is not supported: write 2*pi, not 2pi"},
		{"2pi", "unexpected name \"pi\""},
		{"2(3)", "unexpected \"(\": expected an operator"},
		{"1.2.3", "a number has at most one decimal point at position 4"},
		{".", "a \".\" must belong to a number such as 0.5 at position 1"},
		{"2 $ 3", "unexpected character '$'"},
		{"x+1", "unknown name \"x\" at position 1"},
		{"log(100)", "unknown name \"log\" at position 1; use ln for the natural logarithm or log10 for base 10"},
		{"sqrt 4", "sqrt is a function: write sqrt(...) at position 1"},
		{"pi(2)", "pi is a constant, not a function at position 3"},
		{"sqrt()", "sqrt takes exactly 1 argument, got 0 at position 1"},
		{"sqrt(1, 2)", "sqrt takes exactly 1 argument, got 2"},
		{"min()", "min takes at least 1 argument(s), got 0"},
		{"round(1, 2, 3)", "round takes 1 to 2 arguments, got 3"},
		{"round(1.5, 0.5)", "round's digits must be a whole number from 0 to 15, got 0.5 at position 1"},
		{"round(1.5, 16)", "from 0 to 15"},
		{"max(1,)", "unexpected \")\""},
		{"max(1 2)", "expected \")\" to close the \"(\" at position 4, found number 2 at position 7"},
		{"1 + 2 \xff", "not valid UTF-8"},
		{"é + 1", "unknown name \"é\" at position 1"},
		{"−−", "ends too early"},
		{strings.Repeat("1+", 500) + "1", "1001 characters long; the limit is 1000"},
		{strings.Repeat("(", 101) + "1" + strings.Repeat(")", 101), "nested too deeply (the limit is 100 levels) at position 101"},
		{strings.Repeat("-", 101) + "1", "nested too deeply"},
		{strings.Repeat("2^", 101) + "2", "nested too deeply"},
		{strings.Repeat("abs(", 101) + "1" + strings.Repeat(")", 101), "nested too deeply"},
	}
	for _, c := range cases {
		_, err := evaluate(c.expr)
		if err == nil {
			t.Errorf("evaluate(%q): no error, want %q", c.expr, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("evaluate(%q) error = %q, want it to contain %q", c.expr, err, c.want)
		}
	}
}

func TestEvaluateDepthLimitIsInclusive(t *testing.T) {
	expr := strings.Repeat("(", maxExprDepth) + "1" + strings.Repeat(")", maxExprDepth)
	if v, err := evaluate(expr); err != nil || v != 1 {
		t.Fatalf("%d nested parentheses: got %v, %v; want 1", maxExprDepth, v, err)
	}
	expr = strings.Repeat("1+", 499) + "1" // 999 characters, flat
	if v, err := evaluate(expr); err != nil || v != 500 {
		t.Fatalf("999-character expression: got %v, %v; want 500", v, err)
	}
}

func callTool(t *testing.T, p sdk.Provider, name, args string) (json.RawMessage, bool) {
	t.Helper()
	resp, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: name, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("CallTool(%s, %s): %v", name, args, err)
	}
	return resp.Content, resp.IsError
}

func TestCalculatorTool(t *testing.T) {
	p, err := New(Options{Enable: []string{"calculator"}})
	if err != nil {
		t.Fatal(err)
	}
	got, isErr := callTool(t, p, "calculator", `{"expression": "2+3*4"}`)
	if isErr || string(got) != `{"expression":"2+3*4","result":14}` {
		t.Errorf("2+3*4: got %s (is_error %v)", got, isErr)
	}
	got, isErr = callTool(t, p, "calculator", `{"expression": "1/0"}`)
	if !isErr || string(got) != `"cannot evaluate \"1/0\": division by zero at position 2"` {
		t.Errorf("1/0: got %s (is_error %v)", got, isErr)
	}
	for args, want := range map[string]string{
		`{}`:                                 `missing \"expression\"`,
		`{"expression": 5}`:                  `expression: must be a string, got number`,
		`{"expression": "1", "extra": true}`: `extra: unknown key`,
		`[1]`:                                `invalid arguments`,
	} {
		got, isErr := callTool(t, p, "calculator", args)
		if !isErr || !strings.Contains(string(got), want) {
			t.Errorf("args %s: got %s (is_error %v), want an error containing %s", args, got, isErr, want)
		}
	}
}

func FuzzCalculator(f *testing.F) {
	for _, s := range []string{
		"2+3*4", "-2^2", "2^3^2", "round(1.005, 2)", "max(1, 2, 3)", "sqrt(-1)", "1/0",
		"((((1))))", "1e308*10", "2**-1", "π×2", ".5e-3", "log(2)", "pi(1)", "1..2", "1e", "-", ")(",
		"round(-99.95, 1)", "5 % -3", "tan(pi/2)", "floor(ceil(abs(-1.5)))",
	} {
		f.Add(s)
	}
	tool := calculatorTool()
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := evaluate(expr)
		if err == nil {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("evaluate(%q) = %v without an error", expr, v)
			}
		} else if utf8.ValidString(expr) && strings.TrimSpace(expr) != "" && utf8.RuneCountInString(expr) <= maxExprLen {
			if _, ok := err.(*exprError); !ok {
				t.Fatalf("evaluate(%q): error without a position: %v", expr, err)
			}
		}
		args, _ := json.Marshal(map[string]string{"expression": expr})
		resp, cerr := tool.Handler.CallTool(context.Background(), sdk.CallToolRequest{Name: "calculator", Arguments: args})
		if cerr != nil {
			t.Fatalf("CallTool: %v", cerr)
		}
		if !json.Valid(resp.Content) {
			t.Fatalf("invalid JSON result %q", resp.Content)
		}
		if resp.IsError != (err != nil) {
			t.Fatalf("is_error %v but evaluate error %v", resp.IsError, err)
		}
	})
}
