package mcp

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/tenxgraph/tenxgraph/internal/expand"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// fields calls f with each setting of s that takes ${VAR}s: its path
// below the entry, whether it goes on the server's command line, and the
// value, which f may replace.
func (s *Server) fields(f func(path string, argv bool, v *string)) {
	f("command", true, &s.Command)
	for i := range s.Args {
		f(fmt.Sprintf("args[%d]", i), true, &s.Args[i])
	}
	f("cwd", false, &s.Cwd)
	f("url", false, &s.URL)
	each := func(kind string, m map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			v := m[k]
			if f(kind+"."+k, false, &v); v != m[k] {
				m[k] = v
			}
		}
	}
	each("env", s.Env)
	each("headers", s.Headers)
}

// Vars are the host variables s names, wherever (in a default or a nested
// form too): the ones whose values the host sends the bridge.
func (s Server) Vars() []string {
	var out []string
	s.fields(func(_ string, _ bool, v *string) {
		e, err := expand.Parse(*v)
		if err != nil {
			return
		}
		for _, r := range e.Refs() {
			if !slices.Contains(out, r.Name) {
				out = append(out, r.Name)
			}
		}
	})
	return out
}

// Expanded returns s with every ${VAR} in command, args, env, cwd, url and
// headers expanded (the grammar of internal/expand) from lookup
// (os.LookupEnv when nil), or the problems found, each with its path below
// the entry ("env.TOKEN", "headers.Authorization"). A command or argument naming a variable that holds a
// credential is refused: a command line is readable by every local user.
// No problem holds a value read from lookup.
func (s Server) Expanded(lookup func(string) (string, bool)) (Server, []sdk.Problem) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var ps []sdk.Problem
	out := s
	out.Args = slices.Clone(s.Args)
	out.Env, out.Headers = maps.Clone(s.Env), maps.Clone(s.Headers)
	out.fields(func(path string, argv bool, v *string) {
		errs := expand.Check(*v, expand.Rule{Argv: argv})
		if len(errs) == 0 {
			x, err := expand.String(*v, lookup)
			if err == nil {
				*v = x
				return
			}
			errs = append(errs, err)
		}
		*v = ""
		for _, err := range errs {
			ps = append(ps, sdk.Problem{Path: path, Message: err.Error()})
		}
	})
	return out, ps
}
