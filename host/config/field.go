package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// checker collects problems while the tree is read into a Config.
type checker struct {
	dir      string
	ps       toolspec.Problems
	defaults ProviderSettings // provider_defaults, read before the entries
	// sandboxDefaults is provider_defaults' sandbox profile, read first.
	sandboxDefaults sandbox.Profile
	// passEnv lists every pass_env read, to check against the secrets
	// once the whole file is read.
	passEnv []passEnvAt
	// envs lists every entry's own env, to check its expressions the
	// same way.
	envs []envAt
}

func (c *checker) add(path, format string, args ...any) { c.ps.Add(path, format, args...) }

// covered reports whether a problem is already recorded at path or at one
// of its ancestors, so a later check does not say the same thing twice.
func (c *checker) covered(path string) bool {
	for _, p := range c.ps {
		if p.Path == path || strings.HasPrefix(path, p.Path+".") || strings.HasPrefix(path, p.Path+"[") {
			return true
		}
	}
	return false
}

// field is a value at a path, or the absence of one (v == nil). Its
// accessors report a wrong type at the path and return ok == false, so
// callers only handle values that are present and well-typed.
type field struct {
	c    *checker
	path string
	v    *value
}

func (f field) present() bool { return f.v != nil }

func (f field) wrongType(want string) {
	f.c.add(f.path, "must be %s, got %s", want, f.v.kind)
}

// object views f as an object whose keys must be among allowed. An absent
// or mistyped f gives an empty object, so reading on is always safe.
func (f field) object(allowed ...string) field {
	if f.v == nil {
		return f
	}
	if f.v.kind != kindObject {
		f.wrongType("an object")
		return field{c: f.c, path: f.path}
	}
	for _, k := range f.v.keys {
		if !contains(allowed, k) {
			f.c.add(toolspec.Join(f.path, pathKey(k)), "unknown key%s (allowed: %s)", suggest(k, allowed), strings.Join(allowed, ", "))
		}
	}
	return f
}

// get is the field key of an object view.
func (f field) get(key string) field {
	out := field{c: f.c, path: toolspec.Join(f.path, pathKey(key))}
	if f.v != nil {
		out.v = f.v.field(key)
	}
	return out
}

// members is an object's keys and values in file order.
func (f field) members() ([]string, []field) {
	if f.v == nil {
		return nil, nil
	}
	if f.v.kind != kindObject {
		f.wrongType("an object")
		return nil, nil
	}
	fs := make([]field, len(f.v.keys))
	for i, k := range f.v.keys {
		fs[i] = field{c: f.c, path: toolspec.Join(f.path, pathKey(k)), v: f.v.vals[i]}
	}
	return f.v.keys, fs
}

// items is an array's elements.
func (f field) items() ([]field, bool) {
	if f.v == nil {
		return nil, false
	}
	if f.v.kind != kindArray {
		f.wrongType("an array")
		return nil, false
	}
	fs := make([]field, len(f.v.items))
	for i, it := range f.v.items {
		fs[i] = field{c: f.c, path: toolspec.Join(f.path, toolspec.Index(i)), v: it}
	}
	return fs, true
}

func (f field) str() (string, bool) {
	if f.v == nil {
		return "", false
	}
	if f.v.kind != kindString {
		f.wrongType("a string")
		return "", false
	}
	return f.v.text, true
}

// text is a string that must not be empty when present.
func (f field) text() (string, bool) {
	s, ok := f.str()
	if ok && s == "" {
		f.c.add(f.path, "must not be empty")
		return "", false
	}
	return s, ok
}

// required is a non-empty string that must be present; hint says what to
// put there.
func (f field) required(hint string) (string, bool) {
	if f.v == nil {
		f.c.add(f.path, "missing: %s", hint)
		return "", false
	}
	s, ok := f.str()
	if ok && s == "" {
		f.c.add(f.path, "must not be empty: %s", hint)
		return "", false
	}
	return s, ok
}

// oneOf is a string that must be one of options.
func (f field) oneOf(options ...string) (string, bool) {
	s, ok := f.str()
	if ok && !contains(options, s) {
		f.c.add(f.path, "must be one of %s, got %q", quoteList(options), s)
		return "", false
	}
	return s, ok
}

func (f field) boolean() (bool, bool) {
	if f.v == nil {
		return false, false
	}
	if f.v.kind != kindBool {
		f.wrongType("a boolean (true or false)")
		return false, false
	}
	return f.v.b, true
}

// integer is a whole number from min to max.
func (f field) integer(min, max int64) (int64, bool) {
	if f.v == nil {
		return 0, false
	}
	if f.v.kind != kindNumber {
		f.wrongType("a whole number")
		return 0, false
	}
	n, err := strconv.ParseInt(f.v.text, 10, 64)
	if err != nil {
		if _, ferr := strconv.ParseFloat(f.v.text, 64); ferr == nil && strings.ContainsAny(f.v.text, ".eE") {
			f.c.add(f.path, "must be a whole number, got %s", f.v.text)
		} else {
			f.c.add(f.path, "%s is out of range", f.v.text)
		}
		return 0, false
	}
	if n < min {
		f.c.add(f.path, "must be at least %d, got %d", min, n)
		return 0, false
	}
	if n > max {
		f.c.add(f.path, "must be at most %d, got %d", max, n)
		return 0, false
	}
	return n, true
}

// duration is a positive Go duration string. Numbers are refused rather
// than guessed at: tools in the wild read a bare 30 as seconds or as
// milliseconds.
func (f field) duration() (time.Duration, bool) {
	if f.v == nil {
		return 0, false
	}
	if f.v.kind != kindString {
		f.c.add(f.path, "must be a duration string such as \"30s\" or \"2m\", got %s", f.v.kind)
		return 0, false
	}
	d, err := time.ParseDuration(f.v.text)
	if err != nil {
		f.c.add(f.path, "%q is not a duration: use a number with a unit, such as \"30s\", \"1m30s\" or \"500ms\"", f.v.text)
		return 0, false
	}
	if d <= 0 {
		f.c.add(f.path, "must be longer than zero, got %q", f.v.text)
		return 0, false
	}
	return d, true
}

// list is an array of strings, each read by item (field.str allows empty
// strings, field.text does not).
func (f field) list(item func(field) (string, bool)) ([]string, bool) {
	if f.v != nil && f.v.kind == kindString {
		f.c.add(f.path, "must be an array of strings, such as [%s], got a string", strconv.Quote(f.v.text))
		return nil, false
	}
	items, ok := f.items()
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		if s, ok := item(it); ok {
			out = append(out, s)
		}
	}
	return out, len(out) == len(items)
}

// strMap is an object of strings; checkKey and checkVal, when set, judge
// each key and value.
func (f field) strMap(checkKey, checkVal func(string) error) (map[string]string, bool) {
	if f.v == nil {
		return nil, false
	}
	keys, vals := f.members()
	if f.v.kind != kindObject {
		return nil, false
	}
	out := make(map[string]string, len(keys))
	for i, k := range keys {
		if checkKey != nil {
			if err := checkKey(k); err != nil {
				f.c.add(vals[i].path, "%v", err)
				continue
			}
		}
		s, ok := vals[i].str()
		if !ok {
			continue
		}
		if checkVal != nil {
			if err := checkVal(s); err != nil {
				f.c.add(vals[i].path, "%v", err)
				continue
			}
		}
		out[k] = s
	}
	return out, true
}

// path is a file path, made absolute against the config's folder so the
// host does the same thing whatever directory it was started from.
func (f field) filePath() (string, bool) {
	s, ok := f.text()
	if !ok {
		return "", false
	}
	return f.c.resolve(s), true
}

func (c *checker) resolve(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(c.dir, p)
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// envName is the name of an environment variable that holds a secret; the
// secret itself never belongs in the file.
func (f field) envName() (string, bool) {
	s, ok := f.text()
	if ok && !envNamePattern.MatchString(s) {
		f.c.add(f.path, "%q is not an environment variable name: use letters, digits and '_', not starting with a digit (the file names the variable, not its value)", s)
		return "", false
	}
	return s, ok
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteList(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// suggest names the allowed key an unknown key most likely meant
// (strictjson.Closest, the rule plugins' options follow too).
func suggest(key string, allowed []string) string {
	if n := strictjson.Closest(key, allowed); n != "" {
		return fmt.Sprintf(": did you mean %q?", n)
	}
	return ""
}
