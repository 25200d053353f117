package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// Profiles are read on every provider entry, on top of provider_defaults.
func TestSandboxProfiles(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a",
	  "provider_defaults": {"env": {"A": "1", "B": "1"}, "pass_env": ["LANGUAGE"], "limits": {"memory_mb": 512, "processes": 64}, "network": "none"},
	  "builtin_tools": {"enable": ["calculator"], "env": {"B": "2"}, "limits": {"memory_mb": 128}},
	  "plugins": [{"name": "p", "command": ["p"], "pass_env": ["GITHUB_TOKEN", "LANGUAGE"], "network": "host", "user": "nobody", "group": "nogroup", "cwd": "work"}],
	  "mcp_servers": {"s": {"command": "srv", "env": {"C": "${X}"}, "limits": {"cpu_seconds": 9}}}}`, "/proj")
	if want := (sandbox.Profile{Env: map[string]string{"A": "1", "B": "1"}, PassEnv: []string{"LANGUAGE"}, Limits: sandbox.Limits{MemoryMB: 512, Processes: 64}, Network: "none"}); !equalProfile(cfg.SandboxDefaults, want) {
		t.Errorf("defaults %+v", cfg.SandboxDefaults)
	}
	b := cfg.BuiltinTools.Sandbox
	if b.Env["A"] != "1" || b.Env["B"] != "2" || b.Limits.MemoryMB != 128 || b.Limits.Processes != 64 || b.Network != "none" {
		t.Errorf("builtin %+v", b)
	}
	p := cfg.Plugins[0]
	if !slices.Equal(p.Sandbox.PassEnv, []string{"LANGUAGE", "GITHUB_TOKEN"}) || p.Sandbox.Network != "host" || p.Sandbox.User != "nobody" || p.Sandbox.Group != "nogroup" || p.Cwd != "/proj/work" {
		t.Errorf("plugin %+v, cwd %q", p.Sandbox, p.Cwd)
	}
	m := cfg.MCPServers["s"].Sandbox
	if m.Env["C"] != "${X}" || m.Env["A"] != "1" || m.Limits.CPUSeconds != 9 || m.Limits.MemoryMB != 512 {
		t.Errorf("mcp %+v", m)
	}
}

func equalProfile(a, b sandbox.Profile) bool {
	return a.Network == b.Network && a.User == b.User && a.Group == b.Group && a.Limits == b.Limits &&
		slices.Equal(a.PassEnv, b.PassEnv) && len(a.Env) == len(b.Env) && strings.Join(sortedEnv(a.Env), ",") == strings.Join(sortedEnv(b.Env), ",")
}

func sortedEnv(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// Every profile mistake is reported at its path, in one pass.
func TestSandboxProfileProblems(t *testing.T) {
	_, err := Parse([]byte(`{"agent": "a",
	  "provider_defaults": {"network": "bridge", "limits": {"memory_mb": 0, "swap": 1}},
	  "plugins": [{"name": "p", "command": ["p"], "group": "g", "pass_env": ["not=ok"]}],
	  "mcp_servers": {"h": {"url": "http://127.0.0.1:1/mcp", "pass_env": ["X"], "network": "none"}}}`), "/proj")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`provider_defaults.network: must be one of "host", "none", got "bridge"`,
		`provider_defaults.limits.memory_mb: must be at least 1`,
		`provider_defaults.limits.swap: unknown key`,
		`plugins[0].group: set user too`,
		`plugins[0].pass_env[0]`,
		`mcp_servers.h.pass_env: only used by "stdio" servers`,
		`mcp_servers.h.network: only used by "stdio" servers`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}
