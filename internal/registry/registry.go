// Package registry keeps the modules of one kind that the host's packages
// register from their inits (provider kinds, model providers, store
// kinds): each once, by name, listed in a stable order whatever order the
// inits run in.
package registry

import (
	"cmp"
	"fmt"
	"slices"
)

// List is the registered modules of one kind.
type List[T any] struct {
	// What names the kind in a panic ("model provider").
	What string
	// Name and Rank read a module's name and its place in the order
	// (then the name).
	Name func(T) string
	Rank func(T) int
	all  []T
}

// Add registers m. A name registered twice panics, as Caddy's registry
// refuses a module ID twice: one module would silently win.
func (l *List[T]) Add(m T) {
	if l.Name(m) == "" {
		panic(fmt.Sprintf("registry: a %s needs a name", l.What))
	}
	if _, ok := l.Find(l.Name(m)); ok {
		panic(fmt.Sprintf("registry: %s %q registered twice", l.What, l.Name(m)))
	}
	l.all = append(l.all, m)
}

// All are the registered modules, by rank, then name.
func (l *List[T]) All() []T {
	out := slices.Clone(l.all)
	slices.SortFunc(out, func(a, b T) int {
		return cmp.Or(cmp.Compare(l.Rank(a), l.Rank(b)), cmp.Compare(l.Name(a), l.Name(b)))
	})
	return out
}

// Find is the module registered under name.
func (l *List[T]) Find(name string) (T, bool) {
	return l.First(func(m T) bool { return l.Name(m) == name })
}

// First is the first registered module that ok accepts.
func (l *List[T]) First(ok func(T) bool) (T, bool) {
	if i := slices.IndexFunc(l.all, ok); i >= 0 {
		return l.all[i], true
	}
	var zero T
	return zero, false
}
