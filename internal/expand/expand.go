// Package expand is the one grammar of ${VAR} references in 10xgraph.json:
// the MCP servers' command, args, env, cwd, url and headers, and every
// provider's env. The host's config check reads it to refuse what an
// expression may not name; the process that starts a provider (the host
// for plugins, the MCP bridge for its servers) reads it to expand.
//
// The grammar is Docker Compose's, minus the bare $VAR:
//
//	${VAR}          VAR's value; an error when VAR is not set
//	${VAR:-word}    word when VAR is unset or empty
//	${VAR-word}     word when VAR is unset
//	${VAR:+word}    word when VAR is set and not empty, else ""
//	${VAR+word}     word when VAR is set, else ""
//	${VAR:?word}    an error saying word when VAR is unset or empty
//	${VAR?word}     an error saying word when VAR is unset
//	$$              a literal $: "$${VAR}" is the text ${VAR}
//
// word is itself an expression, so forms nest: ${A:-${B:-none}}. It runs
// to the } that closes its form, so it cannot hold a literal }. A $ not
// followed by { or $ is kept as it is: "$HOME" and "price: $5" are text,
// as desktop MCP clients pass them. Other shell forms (${#VAR},
// ${VAR/a/b}, ${VAR:1:2}, ${!VAR}...) and other clients' own (${env:VAR},
// ${input:id}) are errors that say what to write instead.
//
// No error of this package holds a value read from the environment: each
// quotes the expression as written and the variable's name.
package expand

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// maxDepth bounds how deep forms nest: more is a mistake, not a need.
const maxDepth = 8

// Expr is a parsed expression.
type Expr struct {
	src   string
	nodes []node
}

// node is literal text (name == "") or one ${...} form.
type node struct {
	text string // the literal, or the form as written
	name string
	op   string // "", ":-", "-", ":+", "+", ":?", "?"
	word []node
	wsrc string // word as written
}

// Parse reads s, or says what in it is not part of the grammar.
func Parse(s string) (*Expr, error) {
	if !strings.Contains(s, "$") {
		return &Expr{src: s, nodes: []node{{text: s}}}, nil
	}
	p := parser{s: s}
	nodes, err := p.seq(0, false)
	if err != nil {
		return nil, err
	}
	return &Expr{src: s, nodes: nodes}, nil
}

type parser struct {
	s string
	i int
}

// seq reads literals and forms up to the end, or, inside a word, up to
// the } that closes it (left unread).
func (p *parser) seq(depth int, inWord bool) ([]node, error) {
	var out []node
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, node{text: lit.String()})
			lit.Reset()
		}
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '}' && inWord:
			flush()
			return out, nil
		case c == '$' && p.i+1 < len(p.s) && p.s[p.i+1] == '$':
			lit.WriteByte('$')
			p.i += 2
		case c == '$' && p.i+1 < len(p.s) && p.s[p.i+1] == '{':
			flush()
			n, err := p.form(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		default:
			lit.WriteByte(c)
			p.i++
		}
	}
	flush()
	return out, nil
}

// form reads one ${...}, p.i at its $.
func (p *parser) form(depth int) (node, error) {
	start := p.i
	if depth > maxDepth {
		return node{}, fmt.Errorf("%q: forms nest more than %d deep", p.s, maxDepth)
	}
	p.i += 2
	j := p.i
	for j < len(p.s) && (p.s[j] == '_' || isLetter(p.s[j]) || j > p.i && isDigit(p.s[j])) {
		j++
	}
	name := p.s[p.i:j]
	n := node{name: name}
	rest := p.s[j:]
	switch {
	case name == "" && strings.HasPrefix(rest, "}"):
		return node{}, fmt.Errorf("%q: ${} names no variable (write $${} for the text ${})", p.s)
	case name == "" && rest != "" && isDigit(rest[0]):
		return node{}, p.unsupported(start, "does not name an environment variable (a name is letters, digits and _, not starting with a digit)")
	case name == "":
		return node{}, p.unsupported(start, forms)
	case (name == "env" || name == "input") && strings.HasPrefix(rest, ":") && !strings.HasPrefix(rest, ":-") && !strings.HasPrefix(rest, ":+") && !strings.HasPrefix(rest, ":?"):
		if name == "env" {
			return node{}, p.unsupported(start, "is the form of VS Code and Cursor; write ${NAME}")
		}
		return node{}, p.unsupported(start, "is a prompt of VS Code; tenxgraph prompts for nothing: put the value in an environment variable and write ${NAME}")
	case strings.HasPrefix(rest, "}"):
		p.i = j + 1
		n.text = p.s[start:p.i]
		return n, nil
	}
	for _, op := range []string{":-", ":+", ":?", "-", "+", "?"} {
		if strings.HasPrefix(rest, op) {
			n.op = op
			break
		}
	}
	if n.op == "" {
		return node{}, p.unsupported(start, forms)
	}
	p.i = j + len(n.op)
	ws := p.i
	word, err := p.seq(depth, true)
	if err != nil {
		return node{}, err
	}
	if p.i >= len(p.s) {
		return node{}, p.unclosed(start)
	}
	n.word, n.wsrc = word, p.s[ws:p.i]
	p.i++
	n.text = p.s[start:p.i]
	return n, nil
}

// forms says which forms there are.
const forms = "is not supported: write ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:+alt}, ${VAR+alt}, ${VAR:?message} or ${VAR?message}"

// unsupported is the error for the form starting at start, quoted up to
// its closing } (or to the end when there is none).
func (p *parser) unsupported(start int, why string) error {
	end := strings.IndexByte(p.s[start:], '}')
	if end < 0 {
		return p.unclosed(start)
	}
	return fmt.Errorf("%s %s", p.s[start:start+end+1], why)
}

func (p *parser) unclosed(start int) error {
	return fmt.Errorf("%q: unclosed ${ at byte %d (close it with }, or write $$ for a literal $)", p.s, start)
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// String is the expression as written.
func (e *Expr) String() string { return e.src }

// Ref is one variable an expression names, and the outermost ${...} form
// that names it, as written: what an error about it quotes.
type Ref struct {
	Name string
	Form string
}

// Refs are the variables the expression names, wherever: in a default, an
// alternative or a message, nested or not. Each name comes once, in the
// order written.
func (e *Expr) Refs() []Ref {
	var out []Ref
	var walk func(nodes []node, form string)
	walk = func(nodes []node, form string) {
		for _, n := range nodes {
			if n.name == "" {
				continue
			}
			f := cmp.Or(form, n.text)
			if !slices.ContainsFunc(out, func(r Ref) bool { return r.Name == n.name }) {
				out = append(out, Ref{Name: n.name, Form: f})
			}
			walk(n.word, f)
		}
	}
	walk(e.nodes, "")
	return out
}

// Literal reports whether the expression names no variable; its value is
// then Expand's with any lookup.
func (e *Expr) Literal() bool { return len(e.Refs()) == 0 }

// Expand is the expression's value, each variable read with lookup. Only
// the variables the value needs are read: in ${A:-${B}}, B is not when A
// is set and not empty.
func (e *Expr) Expand(lookup func(string) (string, bool)) (string, error) {
	var b strings.Builder
	if err := expand(&b, e.nodes, "", lookup); err != nil {
		return "", err
	}
	return b.String(), nil
}

func expand(b *strings.Builder, nodes []node, form string, lookup func(string) (string, bool)) error {
	for _, n := range nodes {
		if n.name == "" {
			b.WriteString(n.text)
			continue
		}
		f := cmp.Or(form, n.text)
		v, set := lookup(n.name)
		full := set && v != ""
		word := func() error { return expand(b, n.word, f, lookup) }
		switch n.op {
		case "":
			if !set {
				return fmt.Errorf("environment variable %s is not set (referenced as %s; set it, or write ${%s:-default})", n.name, f, n.name)
			}
			b.WriteString(v)
		case ":-", "-":
			if full || set && n.op == "-" {
				b.WriteString(v)
			} else if err := word(); err != nil {
				return err
			}
		case ":+", "+":
			if full || set && n.op == "+" {
				if err := word(); err != nil {
					return err
				}
			}
		case ":?", "?":
			switch {
			case full || set && n.op == "?":
				b.WriteString(v)
			case n.wsrc == "":
				return fmt.Errorf("environment variable %s is %s (referenced as %s, which requires it)", n.name, unsetOrEmpty(set), f)
			default:
				// The message as written: a form in it is never expanded
				// into an error.
				return fmt.Errorf("environment variable %s is %s (referenced as %s): %s", n.name, unsetOrEmpty(set), f, n.wsrc)
			}
		}
	}
	return nil
}

func unsetOrEmpty(set bool) string {
	if set {
		return "empty"
	}
	return "not set"
}

// String parses and expands s in one step.
func String(s string, lookup func(string) (string, bool)) (string, error) {
	e, err := Parse(s)
	if err != nil {
		return "", err
	}
	return e.Expand(lookup)
}

// Rule is what an expression may name.
type Rule struct {
	// Secrets are the host's own secrets (its API tokens, the model key,
	// the store's credentials): no provider is given them, so an
	// expression naming one is refused wherever it is.
	Secrets []string
	// Argv marks an expression that goes on a command line (an MCP
	// server's command and args). Every local user can read a process's
	// command line (/proc/PID/cmdline, ps), so a variable whose name says
	// it holds a credential is refused there: it belongs in env.
	Argv bool
}

// Check reports what is wrong with s under r: its syntax, or each
// variable it names that r refuses. The errors quote the expression and
// name the variable; none reads the environment.
func Check(s string, r Rule) []error {
	e, err := Parse(s)
	if err != nil {
		return []error{err}
	}
	var errs []error
	for _, ref := range e.Refs() {
		what := ref.Form + " names " + ref.Name + ", which"
		if ref.Form == "${"+ref.Name+"}" {
			what = ref.Form
		}
		switch {
		case slices.Contains(r.Secrets, ref.Name) && r.Argv:
			errs = append(errs, fmt.Errorf("%s holds a secret of the host (an API token, the model key or the store's credentials) and is never given to a provider: give the server a credential of its own, and pass it through env, not on its command line, where every local user can read it (/proc/PID/cmdline)", what))
		case slices.Contains(r.Secrets, ref.Name):
			errs = append(errs, fmt.Errorf("%s holds a secret of the host (an API token, the model key or the store's credentials) and is never given to a provider; give the provider a credential of its own", what))
		case r.Argv && Credential(ref.Name):
			errs = append(errs, fmt.Errorf("%s would put %s on the command line, where every local user can read it (/proc/PID/cmdline, ps): its name says it holds a credential. Pass it through env instead (\"env\": {\"%s\": \"${%s}\"}), where only the server can read it", ref.Form, ref.Name, ref.Name, ref.Name))
		}
	}
	return errs
}

// Credential reports whether a variable's name says it holds a
// credential: it ends in TOKEN, KEY (as a word: API_KEY, APIKEY) or DSN,
// or holds SECRET, PASSWORD, PASSWD or CREDENTIAL, in any case.
func Credential(name string) bool {
	u := strings.ToUpper(name)
	for _, w := range []string{"SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(u, w) {
			return true
		}
	}
	return strings.HasSuffix(u, "TOKEN") || u == "KEY" || strings.HasSuffix(u, "_KEY") || strings.HasSuffix(u, "APIKEY") ||
		u == "DSN" || strings.HasSuffix(u, "_DSN")
}
