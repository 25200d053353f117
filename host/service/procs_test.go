package service

import (
	"os"
	"runtime"
	"testing"
)

// The providers this binary ships run on one processor, unless their
// environment (provider_defaults.env, an entry's env) sets GOMAXPROCS.
func TestProvidersRunOnOneProcessor(t *testing.T) {
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	for _, c := range []struct {
		env  string // "" for unset
		want int
	}{
		{"", 1},
		{"3", 3},
	} {
		runtime.GOMAXPROCS(3) // as the runtime set it from the environment or the CPUs
		t.Setenv("GOMAXPROCS", c.env)
		if c.env == "" {
			os.Unsetenv("GOMAXPROCS")
		}
		oneProcessor()
		if got := runtime.GOMAXPROCS(0); got != c.want {
			t.Errorf("GOMAXPROCS=%q: the provider runs on %d processors, want %d", c.env, got, c.want)
		}
	}
}
