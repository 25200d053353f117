package mcp

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Expand replaces ${VAR} with the value of the environment variable VAR,
// and ${VAR:-default} with default when VAR is unset or empty. An unset VAR
// without a default is an error naming it: a header sent as a literal
// "Bearer ${TOKEN}" fails far from where the mistake is. "$$" stands for a
// literal "$"; any other "$" is kept as it is.
func Expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("%q: unclosed ${ (write $$ for a literal $)", s)
		}
		ref := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf("%q: ${%s} does not name an environment variable", s, ref)
		}
		v, ok := lookup(name)
		switch {
		case ok && v != "":
		case hasDef:
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (referenced as ${%s}; set it, or write ${%s:-default})", name, name, name)
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), nil
}

func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// Problem is one thing wrong with a server entry, at a path below the
// entry ("env.TOKEN", "headers.Authorization").
type Problem struct {
	Path    string
	Message string
}

// Expanded returns s with every ${VAR} in command, args, env, cwd, url and
// headers replaced from lookup (os.LookupEnv when nil), or the problems
// found, each with its path below the entry.
func (s Server) Expanded(lookup func(string) (string, bool)) (Server, []Problem) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var ps []Problem
	one := func(path, v string) string {
		out, err := Expand(v, lookup)
		if err != nil {
			ps = append(ps, Problem{Path: path, Message: err.Error()})
		}
		return out
	}
	out := s
	out.Command = one("command", s.Command)
	out.Cwd = one("cwd", s.Cwd)
	out.URL = one("url", s.URL)
	if s.Args != nil {
		out.Args = make([]string, len(s.Args))
		for i, a := range s.Args {
			out.Args[i] = one(fmt.Sprintf("args[%d]", i), a)
		}
	}
	expandMap := func(kind string, m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		res := make(map[string]string, len(m))
		for _, k := range sortedKeys(m) {
			res[k] = one(kind+"."+k, m[k])
		}
		return res
	}
	out.Env = expandMap("env", s.Env)
	out.Headers = expandMap("headers", s.Headers)
	return out, ps
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
