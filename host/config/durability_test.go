package config

import (
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/thread"
)

func TestDurability(t *testing.T) {
	for in, want := range map[string]thread.Durability{
		`{"agent": "a"}`: "",
		`{"agent": "a", "checkpointer": {"durability": "exit"}}`:  thread.DurabilityExit,
		`{"agent": "a", "checkpointer": {"durability": "sync"}}`:  thread.DurabilitySync,
		`{"agent": "a", "checkpointer": {"durability": "async"}}`: thread.DurabilityAsync,
	} {
		if got := mustParse(t, in, "/p").Checkpointer.Durability; got != want {
			t.Errorf("%s: durability %q, want %q", in, got, want)
		}
	}
	// A wrong value is reported at its path, with the other problems.
	_, err := Parse([]byte(`{"agent": "a", "checkpointer": {"durability": "eventually", "keep_history": -2}}`), "/p")
	got := map[string]string{}
	for _, p := range problems(t, err) {
		got[p.Path] = p.Message
	}
	if m := got["checkpointer.durability"]; !strings.Contains(m, `"sync", "async", "exit"`) || !strings.Contains(m, `"eventually"`) {
		t.Errorf("checkpointer.durability: %q", m)
	}
	if len(got) != 2 {
		t.Errorf("problems %v, want durability and keep_history", got)
	}
}
