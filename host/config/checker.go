package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

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

var (
	durationType = reflect.TypeFor[time.Duration]()
	rawType      = reflect.TypeFor[json.RawMessage]()
)

// decode sets *dst from v, the value at path, by dst's json tags: a field
// tagged "a.b" reads key b of object a, an embedded struct or one tagged
// ",inline" reads the same object. Durations are strings such as "30s";
// json.RawMessage keeps a value as written. What the schema refused is
// left as it was (the schema said why), so defaults set before decode
// stay where a value is wrong.
func (c *checker) decode(path string, v *value, dst any) {
	c.decodeValue(path, v, reflect.ValueOf(dst).Elem())
}

func (c *checker) decodeValue(path string, v *value, dst reflect.Value) {
	if v == nil || c.refused(path) {
		return
	}
	switch dst.Type() {
	case durationType:
		if v.kind == kindString {
			if d, msg := parseDuration(v.text); msg != "" {
				c.add(path, "%s", msg)
			} else {
				dst.SetInt(int64(d))
			}
		}
		return
	case rawType:
		var buf bytes.Buffer
		v.encode(&buf)
		dst.SetBytes(buf.Bytes())
		return
	}
	switch dst.Kind() {
	case reflect.Pointer:
		if dst.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
		}
		c.decodeValue(path, v, dst.Elem())
	case reflect.String:
		if v.kind == kindString {
			dst.SetString(v.text)
		}
	case reflect.Bool:
		if v.kind == kindBool {
			dst.SetBool(v.b)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if v.kind != kindNumber {
			return
		}
		n, err := strconv.ParseInt(v.text, 10, 64)
		switch {
		case err != nil && strings.ContainsAny(v.text, ".eE"):
			c.add(path, "must be a whole number, got %s", v.text)
		case err != nil || dst.OverflowInt(n):
			c.add(path, "%s is out of range", v.text)
		default:
			dst.SetInt(n)
		}
	case reflect.Slice:
		if v.kind != kindArray {
			return
		}
		s := reflect.MakeSlice(dst.Type(), 0, len(v.items))
		for i, it := range v.items {
			p := toolspec.Join(path, toolspec.Index(i))
			if c.refused(p) {
				continue
			}
			e := reflect.New(dst.Type().Elem()).Elem()
			c.decodeValue(p, it, e)
			s = reflect.Append(s, e)
		}
		dst.Set(s)
	case reflect.Map:
		if v.kind != kindObject {
			return
		}
		m := reflect.MakeMapWithSize(dst.Type(), len(v.keys))
		for i, k := range v.keys {
			p := toolspec.Join(path, pathKey(k))
			if c.refused(p) {
				continue
			}
			e := reflect.New(dst.Type().Elem()).Elem()
			c.decodeValue(p, v.vals[i], e)
			m.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
		}
		dst.Set(m)
	case reflect.Struct:
		if v.kind != kindObject {
			return
		}
		t := dst.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, opt, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case !f.IsExported() || name == "-":
			case name == "" && (f.Anonymous || opt == "inline"):
				c.decodeValue(path, v, dst.Field(i))
			case name != "":
				fv, fp := v, path
				for k := range strings.SplitSeq(name, ".") {
					fv, fp = fv.field(k), toolspec.Join(fp, pathKey(k))
					if fv == nil {
						break
					}
				}
				c.decodeValue(fp, fv, dst.Field(i))
			}
		}
	}
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
