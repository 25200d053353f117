package expand

import (
	"slices"
	"strings"
	"testing"
)

// secret is a value no error may hold.
const secret = "s3cret-value-9f2c"

var env = map[string]string{"TOKEN": secret, "EMPTY": "", "B": "bee", "HOME": "/home/x"}

func lookup(k string) (string, bool) { v, ok := env[k]; return v, ok }

func TestExpand(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer ${TOKEN}":           "Bearer " + secret,
		"${TOKEN}${TOKEN}":          secret + secret,
		"${MISSING:-fallback}":      "fallback",
		"${EMPTY:-fallback}":        "fallback",
		"${EMPTY-fallback}":         "",
		"${MISSING-fallback}":       "fallback",
		"${EMPTY}":                  "",
		"${B:+alt}":                 "alt",
		"${EMPTY:+alt}":             "",
		"${EMPTY+alt}":              "alt",
		"${MISSING+alt}":            "",
		"${B:?needed}":              "bee",
		"${EMPTY?needed}":           "",
		"$$HOME and $HOME":          "$HOME and $HOME",
		"$${X}":                     "${X}",
		"$$${B}":                    "$bee",
		"$$$${B}":                   "$${B}",
		"no variables":              "no variables",
		"price: $5, ^a$":            "price: $5, ^a$",
		"}{$":                       "}{$",
		"${TOKEN:-x}/${MISSING:-}":  secret + "/",
		"${MISSING:-${B}}":          "bee",
		"${MISSING:-${NOPE:-${B}}}": "bee",
		"${MISSING:-a$${B}b}":       "a${Bb}", // the first } closes the form, as in sh
		"${B:-${NOPE}}":             "bee",    // NOPE is not needed, so not read
		"${MISSING:-x}}":            "x}",
		"${MISSING:-}":              "",
		"${MISSING:-${NOPE:-http://127.0.0.1:3001}/mcp}": "http://127.0.0.1:3001/mcp", // docs/mcp.md
	} {
		got, err := String(in, lookup)
		if err != nil || got != want {
			t.Errorf("String(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestErrors(t *testing.T) {
	for in, want := range map[string]string{
		"Bearer ${MISSING}":             "environment variable MISSING is not set (referenced as ${MISSING};",
		"${A:-${MISSING}}":              "environment variable MISSING is not set (referenced as ${A:-${MISSING}};",
		"${unclosed":                    "unclosed ${ at byte 0",
		"${A:-${B}":                     "unclosed ${ at byte 0",
		"${1BAD}":                       "${1BAD} does not name an environment variable",
		"${}":                           "${} names no variable",
		"${#TOKEN}":                     "${#TOKEN} is not supported: write ${VAR}",
		"${TOKEN/a/b}":                  "${TOKEN/a/b} is not supported",
		"${TOKEN:1:2}":                  "${TOKEN:1:2} is not supported",
		"${!TOKEN}":                     "${!TOKEN} is not supported",
		"${TOKEN%x}":                    "${TOKEN%x} is not supported",
		"${env:TOKEN}":                  "${env:TOKEN} is the form of VS Code and Cursor; write ${NAME}",
		"${input:key}":                  "${input:key} is a prompt of VS Code",
		"${MISSING:?set it to the key}": "environment variable MISSING is not set (referenced as ${MISSING:?set it to the key}): set it to the key",
		"${EMPTY:?}":                    "environment variable EMPTY is empty (referenced as ${EMPTY:?}, which requires it)",
		"${MISSING?${TOKEN}}":           "): ${TOKEN}", // the message as written, never expanded
		strings.Repeat("${A:-", 9) + "x" + strings.Repeat("}", 9): "nest more than 8 deep",
	} {
		_, err := String(in, lookup)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("String(%q): %v, want an error with %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("String(%q): the error holds the value of TOKEN: %v", in, err)
		}
	}
	// The nesting limit is a limit, not an off-by-one.
	if _, err := String(strings.Repeat("${A:-", 8)+"x"+strings.Repeat("}", 8), lookup); err != nil {
		t.Errorf("8 levels: %v", err)
	}
	// ${env:-x} is a variable named env with a default, not Cursor's form.
	if got, err := String("${env:-x}", lookup); err != nil || got != "x" {
		t.Errorf("${env:-x} = %q, %v", got, err)
	}
}

func TestRefs(t *testing.T) {
	e, err := Parse("a ${X:-${TOKEN}} $${LIT} ${Y:+${Z:?${W}}} ${X} $HOME")
	if err != nil {
		t.Fatal(err)
	}
	want := []Ref{{"X", "${X:-${TOKEN}}"}, {"TOKEN", "${X:-${TOKEN}}"}, {"Y", "${Y:+${Z:?${W}}}"}, {"Z", "${Y:+${Z:?${W}}}"}, {"W", "${Y:+${Z:?${W}}}"}}
	if got := e.Refs(); !slices.Equal(got, want) {
		t.Errorf("Refs = %v, want %v", got, want)
	}
	for _, lit := range []string{"$${TOKEN}", "plain", "$HOME", "$$$$"} {
		if e, err := Parse(lit); err != nil || !e.Literal() {
			t.Errorf("%q: want a literal, got %v", lit, err)
		}
	}
}

func TestCheck(t *testing.T) {
	secrets := Rule{Secrets: []string{"TOKEN", "DATABASE_URL"}}
	argv := Rule{Secrets: secrets.Secrets, Argv: true}
	for _, c := range []struct {
		in   string
		rule Rule
		want string // "" for no error
	}{
		{"${TOKEN}", secrets, "${TOKEN} holds a secret of the host"},
		{"${TOKEN:-x}", secrets, "${TOKEN:-x} names TOKEN, which holds a secret of the host"},
		{"${X:-${TOKEN}}", secrets, "${X:-${TOKEN}} names TOKEN, which holds a secret"},
		{"${X:+${Y:-${DATABASE_URL}}}", secrets, "names DATABASE_URL, which holds a secret"},
		{"${X?${TOKEN}}", secrets, "names TOKEN, which holds a secret"},
		{"${TOKEN+set}", secrets, "names TOKEN, which holds a secret"},
		{"$${TOKEN}", secrets, ""},
		{"$$${X:-$${TOKEN}}", secrets, ""},
		{"${GITHUB_TOKEN}", secrets, ""},
		{"${GITHUB_TOKEN}", argv, "${GITHUB_TOKEN} would put GITHUB_TOKEN on the command line"},
		{"--key=${X:-${OPENAI_API_KEY}}", argv, "${X:-${OPENAI_API_KEY}} would put OPENAI_API_KEY on the command line"},
		{"${TOKEN:-x}", argv, "pass it through env, not on its command line"},
		{"${HOME}/data", argv, ""},
		{"$${GITHUB_TOKEN}", argv, ""},
		{"${A/b}", secrets, "is not supported"},
	} {
		errs := Check(c.in, c.rule)
		switch {
		case c.want == "" && len(errs) > 0:
			t.Errorf("Check(%q, %+v): %v, want none", c.in, c.rule, errs)
		case c.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want)):
			t.Errorf("Check(%q, %+v): %v, want one error with %q", c.in, c.rule, errs, c.want)
		}
	}
}

func TestCredential(t *testing.T) {
	for _, name := range []string{"GITHUB_TOKEN", "GITHUB_PERSONAL_ACCESS_TOKEN", "HF_TOKEN", "OPENAI_API_KEY", "APIKEY", "BRAVE_APIKEY",
		"AWS_SECRET_ACCESS_KEY", "CLIENT_SECRET", "PGPASSWORD", "DB_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "SENTRY_DSN", "api_key", "KEY"} {
		if !Credential(name) {
			t.Errorf("%s: want a credential", name)
		}
	}
	for _, name := range []string{"HOME", "PATH", "PWD", "MAX_TOKENS", "MONKEY", "KEYBOARD", "NODE_PATH", "DATA_DIR", "LANG"} {
		if Credential(name) {
			t.Errorf("%s: not a credential", name)
		}
	}
}

// FuzzParse: any string parses or fails without panicking, an expression
// without forms is its own value, and no error holds a looked-up value.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"${A:-${B}}", "$${X}", "${A", "${A:?m}", "}}${", "$$$", "${env:X}", "${A:+${B:-${C}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		_, err = e.Expand(func(string) (string, bool) { return secret, true })
		if err != nil {
			t.Fatalf("%q: every variable set, yet %v", s, err)
		}
		if _, err := e.Expand(func(string) (string, bool) { return "", false }); err != nil && strings.Contains(err.Error(), secret) && !strings.Contains(s, secret) {
			t.Fatalf("%q: %v", s, err)
		}
		if !strings.Contains(s, "$") {
			if v, _ := e.Expand(lookup); v != s {
				t.Fatalf("%q expands to %q", s, v)
			}
		}
	})
}
