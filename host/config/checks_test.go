package config

import (
	"strings"
	"testing"
)

// Every env, of every provider entry and of provider_defaults, refuses a
// name no environment can hold, at its path, in the same pass.
func TestEnvNamesOfEveryEntry(t *testing.T) {
	_, err := Parse([]byte(`{"agent": "a",
	  "provider_defaults": {"env": {"D=1": "x"}},
	  "builtin_tools": {"enable": ["calculator"], "env": {"B=1": "x"}},
	  "plugins": [{"name": "p", "command": ["p"], "env": {"P=1": "x"}}],
	  "mcp_servers": {"m": {"command": "m", "env": {"M=1": "x"}}}}`), "/p")
	for _, path := range []string{`provider_defaults.env["D=1"]`, `builtin_tools.env["B=1"]`, `plugins[0].env["P=1"]`, `mcp_servers.m.env["M=1"]`} {
		if !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "is not an environment variable name") {
			t.Errorf("no problem at %s in:\n%v", path, err)
		}
	}
}

// A number past a bound names the bound as Go writes it, the largest
// int64 included (its float is one more).
func TestBoundsAreNamed(t *testing.T) {
	_, err := Parse([]byte(`{"agent": "a", "server": {"max_body_bytes": 12345678901234567890, "max_request_messages": 3000000000}}`), "/p")
	for _, want := range []string{
		"server.max_body_bytes: must be at most 9223372036854775807, got 12345678901234567890",
		"server.max_request_messages: must be at most 2147483647, got 3000000000",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
