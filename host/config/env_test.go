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
