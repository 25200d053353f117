package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// Limits on one expression. They bound the parser's time and stack whatever
// a model sends; no honest arithmetic comes near them.
const (
	maxExprLen   = 1000 // characters (Unicode code points)
	maxExprDepth = 100  // nested parentheses, calls, unary signs and powers
)

const calculatorDescription = `Evaluate an arithmetic expression exactly as written and return its numeric value. ` +
	`Use it for any arithmetic instead of computing in your head. ` +
	`Operators: + - * / % (remainder, sign of the left operand) and ^ or ** (power, right-associative: 2^3^2 = 2^9); ` +
	`unary minus binds looser than ^ (-2^2 = -4); parentheses group. ` +
	`Numbers: 42, 3.14, .5, 6.02e23. Constants: pi, e. ` +
	`Functions: sqrt, abs, round (round(x) or round(x, digits) with 0-15 digits), floor, ceil, min, max (one or more arguments), ln, log10, sin, cos, tan (radians). ` +
	`No variables and no implicit multiplication: write 2*pi, not 2pi. ` +
	`The result is rounded to 15 significant digits. Errors (division by zero, a result too large, a syntax error) name the 1-based character position.`

var calculatorSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "expression": {
      "type": "string",
      "minLength": 1,
      "maxLength": 1000,
      "description": "The expression to evaluate, e.g. \"(2+3)*4\", \"sqrt(2)/2\", \"max(3, 7.5) ^ 2\", \"round(100/7, 2)\"."
    }
  },
  "required": ["expression"],
  "additionalProperties": false
}`)

// calculatorResult is the tool's output: the expression is echoed so a model
// that made several calls in one step can tell the answers apart.
type calculatorResult struct {
	Expression string  `json:"expression"`
	Result     float64 `json:"result"`
}

func calculatorTool() sdk.Tool {
	return sdk.Func("calculator", calculatorDescription, calculatorSchema, func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var args struct {
			Expression *string `json:"expression"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		if args.Expression == nil {
			return nil, errors.New(`missing "expression": pass the arithmetic to evaluate as a string, e.g. {"expression": "2+3*4"}`)
		}
		v, err := evaluate(*args.Expression)
		if err != nil {
			return nil, fmt.Errorf("cannot evaluate %q: %w", *args.Expression, err)
		}
		return calculatorResult{Expression: *args.Expression, Result: v}, nil
	})
}

// decodeArgs decodes a tool's arguments strictly (package strictjson). The
// host validates against the schema first; this keeps the tool correct when
// called directly.
func decodeArgs(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := strictjson.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("invalid arguments: %w; see the tool's parameters", err)
	}
	return nil
}

// exprError is a calculator failure at a place in the expression. pos is the
// 1-based position of the character (code point) at fault, so a model can
// find and fix the mistake rather than guess.
type exprError struct {
	pos  int
	msg  string
	hint string // what to do, after the position
}

func (e *exprError) Error() string {
	if e.hint != "" {
		return fmt.Sprintf("%s at position %d; %s", e.msg, e.pos, e.hint)
	}
	return fmt.Sprintf("%s at position %d", e.msg, e.pos)
}

func errAt(pos int, format string, args ...any) error {
	return &exprError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// evaluate parses expr completely, then evaluates it, so a syntax error is
// reported even when an evaluation error would come earlier.
func evaluate(expr string) (float64, error) {
	if !utf8.ValidString(expr) {
		return 0, errors.New("the expression is not valid UTF-8 text")
	}
	if n := utf8.RuneCountInString(expr); n > maxExprLen {
		return 0, fmt.Errorf("the expression is %d characters long; the limit is %d", n, maxExprLen)
	}
	if strings.TrimSpace(expr) == "" {
		return 0, errors.New("the expression is empty; pass arithmetic such as \"2+3*4\"")
	}
	toks, err := lex(expr)
	if err != nil {
		return 0, err
	}
	p := &parser{toks: toks}
	n, err := p.parseExpr()
	if err != nil {
		return 0, err
	}
	if t := p.peek(); t.kind != tokEOF {
		if t.kind == tokOp && t.text == ")" {
			return 0, errAt(t.pos, `unmatched ")"`)
		}
		return 0, &exprError{pos: t.pos, msg: fmt.Sprintf("unexpected %s: expected an operator or the end of the expression", t.describe()), hint: "implicit multiplication is not supported: write 2*pi, not 2pi"}
	}
	v, err := n.eval()
	if err != nil {
		return 0, err
	}
	return tidy(v), nil
}

// tidy rounds to 15 significant digits, which removes binary noise such as
// 0.1+0.2 = 0.30000000000000004 that a model would otherwise repeat, and
// turns -0 into 0.
func tidy(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 15, 64), 64)
	if err != nil || math.IsInf(r, 0) {
		return v
	}
	if r == 0 {
		return 0
	}
	return r
}

// ---- lexer ----

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokIdent
	tokOp // + - * / % ^ ( ) ,
)

type token struct {
	kind tokKind
	text string // operator (normalised), identifier (lower case) or number lexeme
	num  float64
	pos  int // 1-based code point position
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return "number " + t.text
	case tokIdent:
		return fmt.Sprintf("name %q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

func lex(expr string) ([]token, error) {
	rs := []rune(expr)
	var toks []token
	for i := 0; i < len(rs); {
		r, pos := rs[i], i+1
		switch {
		case unicode.IsSpace(r):
			i++
		case r >= '0' && r <= '9' || r == '.':
			j := i
			digits := 0
			for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
				j++
				digits++
			}
			if j < len(rs) && rs[j] == '.' {
				j++
				for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
					j++
					digits++
				}
			}
			if digits == 0 {
				return nil, errAt(pos, `a "." must belong to a number such as 0.5`)
			}
			if j < len(rs) && (rs[j] == 'e' || rs[j] == 'E') {
				k := j + 1
				if k < len(rs) && (rs[k] == '+' || rs[k] == '-') {
					k++
				}
				if k < len(rs) && rs[k] >= '0' && rs[k] <= '9' {
					for k < len(rs) && rs[k] >= '0' && rs[k] <= '9' {
						k++
					}
					j = k
				}
			}
			if j < len(rs) && rs[j] == '.' {
				return nil, errAt(j+1, "a number has at most one decimal point")
			}
			text := string(rs[i:j])
			v, err := strconv.ParseFloat(text, 64)
			if err != nil {
				if errors.Is(err, strconv.ErrRange) && math.IsInf(v, 0) {
					return nil, errAt(pos, "the number %s is too large (the limit is about 1.8e308)", text)
				}
				if !errors.Is(err, strconv.ErrRange) { // underflow to 0 is fine
					return nil, errAt(pos, "malformed number %s", text)
				}
			}
			toks = append(toks, token{kind: tokNum, text: text, num: v, pos: pos})
			i = j
		case r == 'π':
			toks = append(toks, token{kind: tokIdent, text: "pi", pos: pos})
			i++
		case unicode.IsLetter(r) || r == '_':
			j := i
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '_') {
				j++
			}
			toks = append(toks, token{kind: tokIdent, text: strings.ToLower(string(rs[i:j])), pos: pos})
			i = j
		default:
			op := ""
			switch r {
			case '+', '-', '/', '%', '^', '(', ')', ',':
				op = string(r)
			case '*':
				op = "*"
				if i+1 < len(rs) && rs[i+1] == '*' {
					op = "^" // Python's power operator, which models often write
					i++
				}
			case '×', '·':
				op = "*"
			case '÷':
				op = "/"
			case '−': // U+2212 MINUS SIGN
				op = "-"
			default:
				return nil, errAt(pos, "unexpected character %q: use numbers, + - * / %% ^, parentheses, commas and the known functions", r)
			}
			toks = append(toks, token{kind: tokOp, text: op, pos: pos})
			i++
		}
	}
	return append(toks, token{kind: tokEOF, pos: len(rs) + 1}), nil
}

// ---- parser ----
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("-" | "+") unary | power
//	power   = primary [ "^" unary ]          (right-associative; -2^2 = -4, 2^-1 = 0.5)
//	primary = number | constant | function "(" expr { "," expr } ")" | "(" expr ")"

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
	if t.kind == tokOp && len(t.text) == 1 && strings.Contains(ops, t.text) {
		return t, true
	}
	return t, false
}

// nest guards every recursive construct, which bounds the stack.
func (p *parser) nest(pos int) error {
	p.depth++
	if p.depth > maxExprDepth {
		return errAt(pos, "the expression is nested too deeply (the limit is %d levels)", maxExprDepth)
	}
	return nil
}

func (p *parser) parseExpr() (node, error) {
	l, err := p.parseTerm()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("+-")
		if !ok {
			return l, nil
		}
		p.next()
		r, err := p.parseTerm()
		if err != nil {
			return nil, err
		}
		l = &binary{op: t.text[0], l: l, r: r, pos: t.pos}
	}
}

func (p *parser) parseTerm() (node, error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		t, ok := p.isOp("*/%")
		if !ok {
			return l, nil
		}
		p.next()
		r, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		l = &binary{op: t.text[0], l: l, r: r, pos: t.pos}
	}
}

func (p *parser) parseUnary() (node, error) {
	if t, ok := p.isOp("+-"); ok {
		p.next()
		if err := p.nest(t.pos); err != nil {
			return nil, err
		}
		x, err := p.parseUnary()
		p.depth--
		if err != nil {
			return nil, err
		}
		if t.text == "+" {
			return x, nil
		}
		return &negate{x: x}, nil
	}
	return p.parsePower()
}

func (p *parser) parsePower() (node, error) {
	base, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	t, ok := p.isOp("^")
	if !ok {
		return base, nil
	}
	p.next()
	if err := p.nest(t.pos); err != nil {
		return nil, err
	}
	exp, err := p.parseUnary()
	p.depth--
	if err != nil {
		return nil, err
	}
	return &binary{op: '^', l: base, r: exp, pos: t.pos}, nil
}

func (p *parser) parsePrimary() (node, error) {
	t := p.next()
	switch t.kind {
	case tokNum:
		return number(t.num), nil
	case tokIdent:
		return p.parseName(t)
	case tokOp:
		if t.text == "(" {
			if err := p.nest(t.pos); err != nil {
				return nil, err
			}
			x, err := p.parseExpr()
			p.depth--
			if err != nil {
				return nil, err
			}
			if err := p.closeParen(t); err != nil {
				return nil, err
			}
			return x, nil
		}
	case tokEOF:
		return nil, errAt(t.pos, "the expression ends too early: expected a number, a constant, a function or \"(\"")
	}
	return nil, errAt(t.pos, "unexpected %s: expected a number, a constant, a function or \"(\"", t.describe())
}

func (p *parser) closeParen(open token) error {
	t := p.next()
	if t.kind == tokOp && t.text == ")" {
		return nil
	}
	return errAt(t.pos, "expected \")\" to close the \"(\" at position %d, found %s", open.pos, t.describe())
}

var constants = map[string]float64{"pi": math.Pi, "e": math.E}

func (p *parser) parseName(t token) (node, error) {
	if v, ok := constants[t.text]; ok {
		if open, ok := p.isOp("("); ok {
			return nil, errAt(open.pos, "%s is a constant, not a function", t.text)
		}
		return number(v), nil
	}
	fn, ok := functions[t.text]
	if !ok {
		hint := ""
		if t.text == "log" {
			hint = "use ln for the natural logarithm or log10 for base 10; "
		}
		return nil, &exprError{pos: t.pos, msg: fmt.Sprintf("unknown name %q", t.text), hint: fmt.Sprintf("%sknown functions: %s; constants: pi, e", hint, functionList)}
	}
	open, ok := p.isOp("(")
	if !ok {
		return nil, errAt(t.pos, "%s is a function: write %s(...)", t.text, t.text)
	}
	p.next()
	if err := p.nest(open.pos); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	var args []node
	if _, empty := p.isOp(")"); !empty {
		for {
			a, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if _, comma := p.isOp(","); !comma {
				break
			}
			p.next()
		}
	}
	if err := p.closeParen(open); err != nil {
		return nil, err
	}
	if len(args) < fn.minArgs || (fn.maxArgs >= 0 && len(args) > fn.maxArgs) {
		return nil, errAt(t.pos, "%s takes %s, got %d", t.text, fn.arity(), len(args))
	}
	return &call{name: t.text, fn: fn, args: args, pos: t.pos}, nil
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
	return -v, err
}

type binary struct {
	op   byte
	l, r node
	pos  int
}

func (b *binary) eval() (float64, error) {
	l, err := b.l.eval()
	if err != nil {
		return 0, err
	}
	r, err := b.r.eval()
	if err != nil {
		return 0, err
	}
	var v float64
	switch b.op {
	case '+':
		v = l + r
	case '-':
		v = l - r
	case '*':
		v = l * r
	case '/':
		if r == 0 {
			return 0, errAt(b.pos, "division by zero")
		}
		v = l / r
	case '%':
		if r == 0 {
			return 0, errAt(b.pos, "remainder of a division by zero")
		}
		v = math.Mod(l, r)
	case '^':
		switch {
		case l == 0 && r < 0:
			return 0, errAt(b.pos, "0 raised to a negative power is a division by zero")
		case l < 0 && r != math.Trunc(r):
			return 0, errAt(b.pos, "a negative number raised to a fractional power has no real value")
		}
		v = math.Pow(l, r)
	}
	return finite(v, b.pos)
}

// finite turns the IEEE escape values into errors: a model must never be told
// that a result is Inf or NaN as if it were a number.
func finite(v float64, pos int) (float64, error) {
	switch {
	case math.IsInf(v, 0):
		return 0, errAt(pos, "overflow: the result is too large (the limit is about 1.8e308)")
	case math.IsNaN(v):
		return 0, errAt(pos, "the result is not a real number")
	}
	return v, nil
}

type function struct {
	minArgs, maxArgs int // maxArgs < 0: no limit
	fn               func(args []float64) (float64, error)
}

func (f function) arity() string {
	switch {
	case f.maxArgs < 0:
		return fmt.Sprintf("at least %d argument(s)", f.minArgs)
	case f.minArgs == f.maxArgs && f.minArgs == 1:
		return "exactly 1 argument"
	case f.minArgs == f.maxArgs:
		return fmt.Sprintf("exactly %d arguments", f.minArgs)
	}
	return fmt.Sprintf("%d to %d arguments", f.minArgs, f.maxArgs)
}

func unary(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) { return f(a[0]), nil }}
}

// trig snaps to 0 the rounding residue of a zero crossing: sin(pi) is
// 1.2e-16 in floating point, and a model would report that as a real value.
// Only results tiny relative to an argument of magnitude 1 or more are
// snapped, so sin(1e-20) stays 1e-20.
func trig(f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) {
		v := f(a[0])
		if x := math.Abs(a[0]); x >= 1 && math.Abs(v) < 1e-15*x {
			return 0, nil
		}
		return v, nil
	}}
}

func positive(name string, f func(float64) float64) function {
	return function{1, 1, func(a []float64) (float64, error) {
		if a[0] <= 0 {
			return 0, fmt.Errorf("%s is defined only for positive numbers, got %s", name, fmtNum(a[0]))
		}
		return f(a[0]), nil
	}}
}

var functions = map[string]function{
	"sqrt": {1, 1, func(a []float64) (float64, error) {
		if a[0] < 0 {
			return 0, fmt.Errorf("sqrt of a negative number (%s) has no real value", fmtNum(a[0]))
		}
		return math.Sqrt(a[0]), nil
	}},
	"abs":   unary(math.Abs),
	"round": {1, 2, roundDigits},
	"floor": unary(math.Floor),
	"ceil":  unary(math.Ceil),
	"min":   {1, -1, func(a []float64) (float64, error) { return minMax(a, math.Min), nil }},
	"max":   {1, -1, func(a []float64) (float64, error) { return minMax(a, math.Max), nil }},
	"ln":    positive("ln", math.Log),
	"log10": positive("log10", math.Log10),
	"sin":   trig(math.Sin),
	"cos":   trig(math.Cos),
	"tan":   trig(math.Tan),
}

const functionList = "sqrt, abs, round, floor, ceil, min, max, ln, log10, sin, cos, tan"

func minMax(a []float64, pick func(x, y float64) float64) float64 {
	v := a[0]
	for _, x := range a[1:] {
		v = pick(v, x)
	}
	return v
}

// roundDigits rounds half away from zero, to an integer or to a number of
// decimal places. Decimal places are rounded on the shortest decimal form of
// the number, so round(1.005, 2) gives 1.01, what a person expects from the
// digits they see, rather than 1 from the binary value 1.00499999….
func roundDigits(a []float64) (float64, error) {
	if len(a) == 1 {
		return math.Round(a[0]), nil
	}
	d := a[1]
	if d != math.Trunc(d) || d < 0 || d > 15 {
		return 0, fmt.Errorf("round's digits must be a whole number from 0 to 15, got %s", fmtNum(d))
	}
	places := int(d)
	s := strconv.FormatFloat(math.Abs(a[0]), 'f', -1, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	if len(frac) <= places {
		return a[0], nil
	}
	digits := []byte(intPart + frac[:places])
	if frac[places] >= '5' {
		i := len(digits) - 1
		for ; i >= 0 && digits[i] == '9'; i-- {
			digits[i] = '0'
		}
		if i >= 0 {
			digits[i]++
		} else {
			digits = append([]byte{'1'}, digits...)
		}
	}
	cut := len(digits) - places
	v, err := strconv.ParseFloat(string(digits[:cut])+"."+string(digits[cut:])+"0", 64)
	if err != nil {
		return 0, err
	}
	return math.Copysign(v, a[0]), nil
}

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

type call struct {
	name string
	fn   function
	args []node
	pos  int
}

func (c *call) eval() (float64, error) {
	vals := make([]float64, len(c.args))
	for i, a := range c.args {
		v, err := a.eval()
		if err != nil {
			return 0, err
		}
		vals[i] = v
	}
	v, err := c.fn.fn(vals)
	if err != nil {
		return 0, &exprError{pos: c.pos, msg: err.Error()}
	}
	return finite(v, c.pos)
}
