package config

import (
	"strings"
	"testing"
	"time"
)

func TestRetentionValues(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a", "checkpointer": {"keep_history": 0, "idle_ttl": "720h"}}`, "/p")
	if c := cfg.Checkpointer; c.KeepHistory == nil || *c.KeepHistory != 0 || c.IdleTTL != 720*time.Hour {
		t.Fatalf("checkpointer: %+v", c)
	}
	cfg = mustParse(t, `{"agent": "a"}`, "/p")
	if c := cfg.Checkpointer; c.KeepHistory != nil || c.IdleTTL != 0 {
		t.Fatalf("default checkpointer: %+v, want keep_history and idle_ttl unset", c)
	}
	cfg = mustParse(t, `{"agent": "a", "checkpointer": {"keep_history": -1}}`, "/p")
	if c := cfg.Checkpointer; c.KeepHistory == nil || *c.KeepHistory != -1 {
		t.Fatalf("keep_history -1 (keep all): %+v", c)
	}
}

// Both wrong retention settings are reported at once, at their paths.
func TestRetentionProblems(t *testing.T) {
	_, err := Parse([]byte(`{"agent": "a", "checkpointer": {"keep_history": -2, "idle_ttl": "a month"}}`), "/proj")
	ps := problems(t, err)
	want := map[string]string{
		"checkpointer.keep_history": "at least -1",
		"checkpointer.idle_ttl":     "not a duration",
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Path] = p.Message
	}
	for path, frag := range want {
		if !strings.Contains(got[path], frag) {
			t.Errorf("%s: %q, want it to say %q", path, got[path], frag)
		}
	}
	if len(ps) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(ps), len(want), ps)
	}
}
