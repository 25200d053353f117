package config

import (
	"bytes"
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// checker collects the problems of one file: the schema's (schema) and
// the sections' own checks' (ps), which say more where both speak of one
// path.
type checker struct {
	dir    string
	ps     toolspec.Problems
	schema toolspec.Problems
	// choices are the schema's failed oneOf, anyOf and not, reported only
	// where no check said what is wrong.
	choices  []choice
	defaults ProviderSettings // provider_defaults, read before the entries
	// sandboxDefaults is provider_defaults' sandbox profile, read first.
	sandboxDefaults sandbox.Profile
	// passEnv lists every pass_env read, to check against the secrets
	// once the whole file is read.
	passEnv []passEnvAt
	// envs lists every entry's own env, to check its expressions the
	// same way.
	envs []envAt
	// exprs are the expressions providers expand (Reader.Expression), to
	// check the same way.
	exprs []exprAt
}

func (c *checker) add(path, format string, args ...any) { c.ps.Add(path, format, args...) }

func (c *checker) schemaProblem(path, format string, args ...any) {
	c.schema.Add(path, format, args...)
}

// under reports whether path is at or under at.
func under(path, at string) bool {
	return at == "" || path == at || strings.HasPrefix(path, at+".") || strings.HasPrefix(path, at+"[")
}

// refused reports whether the schema refused the value at path or one
// holding it: such a value is left at its default.
func (c *checker) refused(path string) bool {
	return slices.ContainsFunc(c.schema, func(p toolspec.Problem) bool { return under(path, p.Path) })
}

// covered reports whether a problem is recorded at path, under it or at
// one of its ancestors, so a later check does not say the same thing
// twice.
func (c *checker) covered(path string) bool {
	near := func(p toolspec.Problem) bool { return under(p.Path, path) || under(path, p.Path) }
	return slices.ContainsFunc(c.ps, near) || slices.ContainsFunc(c.schema, near)
}

// problems are the file's problems in the order of the file: a check's
// over the schema's at the same path, and each failed choice no problem
// explains.
func (c *checker) problems(root *value) toolspec.Problems {
	out := slices.Clone(c.ps)
	for _, p := range c.schema {
		if !slices.ContainsFunc(c.ps, func(q toolspec.Problem) bool { return q.Path == p.Path }) {
			out = append(out, p)
		}
	}
	for _, ch := range c.choices {
		if !slices.ContainsFunc(out, func(p toolspec.Problem) bool { return under(p.Path, ch.path) }) {
			out.Add(ch.path, "%s", ch.message)
		}
	}
	if root == nil {
		return out
	}
	rank := map[string]int{}
	root.walk("", func(path string) { rank[path] = len(rank) })
	at := func(path string) int {
		for {
			if r, ok := rank[path]; ok {
				return r
			}
			i := strings.LastIndexAny(path, ".[")
			if i <= 0 {
				return 0
			}
			path = path[:i]
		}
	}
	slices.SortStableFunc(out, func(a, b toolspec.Problem) int { return cmp.Compare(at(a.Path), at(b.Path)) })
	return out
}

// walk calls f with the path of v and of every value in it, in file order.
func (v *value) walk(path string, f func(string)) {
	f(path)
	for i, k := range v.keys {
		v.vals[i].walk(toolspec.Join(path, pathKey(k)), f)
	}
	for i, it := range v.items {
		it.walk(toolspec.Join(path, toolspec.Index(i)), f)
	}
}

// decode sets *dst from v, the value at path, with json v2 by dst's json
// tags (",embed" reads the same object). Durations are strings such as
// "30s"; json.RawMessage keeps a value as written. What the schema refused
// is left out of what is decoded, so defaults set before decode stay where
// a value is wrong (the schema said why); a duration or a whole number the
// schema let through but the field cannot hold is reported at its path,
// and decoding goes on.
func (c *checker) decode(path string, v *value, dst any) {
	if v == nil || c.refused(path) {
		return
	}
	var buf bytes.Buffer
	v.encodeKept(path, &buf, c.refused)
	// at is the config path of the value dec is about to read.
	at := func(dec *jsontext.Decoder) string {
		p, cur := path, v
		for tok := range dec.StackPointer().Tokens() {
			if cur != nil && cur.kind == kindArray {
				// The tok-th element decoded, counting only those kept.
				n, _ := strconv.Atoi(tok)
				for i, it := range cur.items {
					ip := toolspec.Join(p, toolspec.Index(i))
					if c.refused(ip) {
						continue
					}
					if n--; n < 0 {
						p, cur = ip, it
						break
					}
				}
			} else {
				p, cur = toolspec.Join(p, pathKey(tok)), cur.field(tok)
			}
		}
		return p
	}
	duration := func(dec *jsontext.Decoder, d *time.Duration) error {
		p := at(dec)
		tok, err := dec.ReadToken()
		if err != nil || tok.Kind() != '"' {
			return err // the schema refused any other kind, so it was left out
		}
		got, msg := parseDuration(tok.String())
		if msg != "" {
			c.add(p, "%s", msg)
			return nil
		}
		*d = got
		return nil
	}
	err := json.Unmarshal(buf.Bytes(), dst, json.WithUnmarshalers(json.JoinUnmarshalers(
		json.UnmarshalFromFunc(duration),
		json.UnmarshalFromFunc(func(dec *jsontext.Decoder, n *int) error { return whole(c, at(dec), dec, n) }),
		json.UnmarshalFromFunc(func(dec *jsontext.Decoder, n *int32) error { return whole(c, at(dec), dec, n) }),
		json.UnmarshalFromFunc(func(dec *jsontext.Decoder, n *int64) error { return whole(c, at(dec), dec, n) }),
	)))
	if err != nil {
		c.add(path, "%v", err) // the schema and the functions above leave nothing that fails here
	}
}

// whole reads a whole number into *n, reporting one that is not whole or
// does not fit at path and leaving *n as it was.
func whole[N int | int32 | int64](c *checker, path string, dec *jsontext.Decoder, n *N) error {
	tok, err := dec.ReadToken()
	if err != nil || tok.Kind() != '0' {
		return err
	}
	text := tok.String()
	i, err := strconv.ParseInt(text, 10, 64)
	switch {
	case err != nil && strings.ContainsAny(text, ".eE"):
		c.add(path, "must be a whole number, got %s", text)
	case err != nil || int64(N(i)) != i:
		c.add(path, "%s is out of range", text)
	default:
		*n = N(i)
	}
	return nil
}

// parseDuration reads a positive Go duration; msg says what is wrong with
// one it cannot take. Numbers are refused rather than guessed at (by the
// schema): tools in the wild read a bare 30 as seconds or as milliseconds.
func parseDuration(s string) (d time.Duration, msg string) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Sprintf("%q is not a duration: use a number with a unit, such as \"30s\", \"1m30s\" or \"500ms\"", s)
	}
	if d <= 0 {
		return 0, fmt.Sprintf("must be longer than zero, got %q", s)
	}
	return d, ""
}

func (c *checker) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.dir, p)
}

// resolveAll makes each path of list absolute.
func (c *checker) resolveAll(list []string) []string {
	for i, p := range list {
		list[i] = c.resolve(p)
	}
	return list
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// joinLast joins parts with ", ", and last before the last part.
func joinLast(parts []string, last string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + last + parts[len(parts)-1]
}

// OrList is "a", "a or b", "a, b or c": how a message or a description
// offers a choice.
func OrList(parts []string) string { return joinLast(parts, " or ") }

// andList is "a", "a and b", "a, b and c".
func andList(parts []string) string { return joinLast(parts, " and ") }

// suggest names the allowed key an unknown key most likely meant
// (strictjson.Closest, the rule plugins' options follow too).
func suggest(key string, allowed []string) string {
	if n := strictjson.Closest(key, allowed); n != "" {
		return fmt.Sprintf(": did you mean %q?", n)
	}
	return ""
}

// envAt is an entry's own env where the file has it.
type envAt struct {
	path string
	vars map[string]string
}

// passEnvAt is a pass_env list where the file has it.
type passEnvAt struct {
	path  string
	names []string
}

// choice is a failed oneOf, anyOf or not, which a section's check is
// expected to explain at or under path.
type choice struct {
	path, message string
}

// exprAt is an expression to check for secrets where the file has it.
type exprAt struct {
	path, s string
	argv    bool
}
