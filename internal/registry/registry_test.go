package registry

import (
	"slices"
	"testing"
)

type mod struct {
	name string
	rank int
}

func list() *List[mod] {
	return &List[mod]{What: "test module", Name: func(m mod) string { return m.name }, Rank: func(m mod) int { return m.rank }}
}

func TestAllIsByRankThenName(t *testing.T) {
	l := list()
	for _, m := range []mod{{"c", 20}, {"b", 10}, {"a", 20}} {
		l.Add(m)
	}
	var got []string
	for _, m := range l.All() {
		got = append(got, m.name)
	}
	if want := []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("All: %v, want %v", got, want)
	}
	if m, ok := l.Find("a"); !ok || m.rank != 20 {
		t.Errorf("Find(a) = %v, %v", m, ok)
	}
	if _, ok := l.Find("z"); ok {
		t.Error("Find(z) found a module never registered")
	}
}

func TestANameRegisteredTwicePanics(t *testing.T) {
	l := list()
	l.Add(mod{"a", 1})
	defer func() {
		if recover() == nil {
			t.Error("a second \"a\" was accepted")
		}
	}()
	l.Add(mod{"a", 2})
}
