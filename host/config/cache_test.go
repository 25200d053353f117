package config

import (
	"strings"
	"testing"
)

func TestCacheMaxBytes(t *testing.T) {
	for src, want := range map[string]int64{
		`{"agent": "a"}`:                                  0, // thread.DefaultCacheBytes
		`{"agent": "a", "cache": {}}`:                     0,
		`{"agent": "a", "cache": {"max_bytes": 1048576}}`: 1 << 20,
	} {
		cfg, err := Parse([]byte(src), "/p")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if cfg.Cache.MaxBytes != want {
			t.Errorf("%s: max_bytes %d, want %d", src, cfg.Cache.MaxBytes, want)
		}
	}
	for src, msg := range map[string]string{
		`{"agent": "a", "cache": {"max_bytes": -1}}`:    "at least 1",
		`{"agent": "a", "cache": {"max_bytes": "1GB"}}`: "whole number",
		`{"agent": "a", "cache": {"max_bytes": 1.5e9}}`: "whole number",
		`{"agent": "a", "cache": {"max_entries": 10}}`:  "allowed: max_bytes",
		`{"agent": "a", "cache": 268435456}`:            "object",
	} {
		_, err := Parse([]byte(src), "/p")
		ps := problems(t, err)
		if got := paths(ps); len(got) != 1 || !strings.HasPrefix(got[0], "cache") {
			t.Errorf("%s: paths %q, want one under cache", src, got)
		}
		if !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want it to say %q", src, err, msg)
		}
	}
}
