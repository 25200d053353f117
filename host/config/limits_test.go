package config

import (
	"strings"
	"testing"
)

// Every wrong limit is reported at once, at its path.
func TestLimitProblems(t *testing.T) {
	_, err := Parse([]byte(`{
  "agent": "a",
  "provider_defaults": {"timeout": 30, "max_result_bytes": 0, "tool_timeouts": {}, "sandbox": {}},
  "builtin_tools": {"enable": ["calculator"], "max_argument_bytes": 1.5},
  "plugins": [{"name": "p", "command": ["p"], "timeout": "-1s", "tool_timeouts": {"echo": "fast", "": "1s"}, "timeot": "1s"}],
  "mcp_servers": {"m": {"command": "m", "max_output_bytes": 5000, "max_result_bytes": 4000}},
  "server": {"shutdown_grace": "soon"}
}`), "/proj")
	ps := problems(t, err)
	want := map[string]string{
		"provider_defaults.timeout":          "duration string",
		"provider_defaults.max_result_bytes": "at least 1",
		"provider_defaults.tool_timeouts":    "unknown key",
		"provider_defaults.sandbox":          "unknown key",
		"builtin_tools.max_argument_bytes":   "whole number",
		"plugins[0].timeout":                 "longer than zero",
		"plugins[0].tool_timeouts.echo":      "not a duration",
		`plugins[0].tool_timeouts[""]`:       "cannot be empty",
		"plugins[0].timeot":                  "allowed: name, command, sha256, node, env, start, timeout",
		"mcp_servers.m.max_output_bytes":     "more than max_result_bytes (4000)",
		"server.shutdown_grace":              "not a duration",
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
