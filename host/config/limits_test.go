package config

import (
	"strings"
	"testing"
	"time"
)

// provider_defaults sets the shared keys of every provider entry; an entry's
// own keys win; tool_timeouts belong to the entry.
func TestProviderDefaults(t *testing.T) {
	cfg := mustParse(t, `{
  "agent": "a",
  "provider_defaults": {"timeout": "5s", "max_argument_bytes": 100, "max_result_bytes": 2000000},
  "builtin_tools": {"enable": ["calculator"], "timeout": "2m"},
  "plugins": [{"name": "p", "command": ["p"], "max_result_bytes": 300, "tool_timeouts": {"slow": "10m", "quick": "500ms"}}],
  "mcp_servers": {"m": {"command": "m", "max_argument_bytes": 7}},
  "server": {"shutdown_grace": "3s"}
}`, "/proj")
	b, p, m := cfg.BuiltinTools.ProviderSettings, cfg.Plugins[0].ProviderSettings, cfg.MCPServers["m"].ProviderSettings
	if b.Timeout != 2*time.Minute || b.MaxArgumentBytes != 100 || b.MaxResultBytes != 2000000 || b.ToolTimeouts != nil {
		t.Errorf("builtin_tools: %+v", b)
	}
	if p.Timeout != 5*time.Second || p.MaxArgumentBytes != 100 || p.MaxResultBytes != 300 ||
		p.ToolTimeouts["slow"] != 10*time.Minute || p.ToolTimeouts["quick"] != 500*time.Millisecond || len(p.ToolTimeouts) != 2 {
		t.Errorf("plugins[0]: %+v", p)
	}
	if m.Timeout != 5*time.Second || m.MaxArgumentBytes != 7 || m.MaxResultBytes != 2000000 {
		t.Errorf("mcp_servers.m: %+v", m)
	}
	if cfg.Server.ShutdownGrace != 3*time.Second {
		t.Errorf("server.shutdown_grace: %s", cfg.Server.ShutdownGrace)
	}

	// Without provider_defaults, the zero values mean the built-in defaults.
	cfg = mustParse(t, `{"agent": "a", "plugins": [{"name": "p", "command": ["p"]}]}`, "/proj")
	if s := cfg.Plugins[0].ProviderSettings; s.Timeout != 0 || s.MaxArgumentBytes != 0 || s.MaxResultBytes != 0 || cfg.Server.ShutdownGrace != 0 {
		t.Errorf("defaults: %+v, grace %s", s, cfg.Server.ShutdownGrace)
	}
}

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
