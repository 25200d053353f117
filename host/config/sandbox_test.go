package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

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
