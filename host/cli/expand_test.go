package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validate refuses a host secret named in any form of an expression, at
// its path, with the secrets really set in the environment, and prints
// none of their values; a $${...} literal of the same name passes.
func TestValidateRefusesSecretsInEveryForm(t *testing.T) {
	values := map[string]string{"TENX_TOKEN": "tok-31f9-never-printed", "TENX_MODEL_KEY": "key-8a0c-never-printed", "GITHUB_TOKEN": "gh-5e77-never-printed"}
	for k, v := range values {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [{"match": "x", "text": "x"}]}`), 0o600)
	cfg := filepath.Join(dir, "10xgraph.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(cfg, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// What leaked before: the token in a default, in the args of a server
	// that fails to start, went through the check and into the error
	// saying the server would not start.
	write(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "server": {"auth": {"tokens_env": ["TENX_TOKEN"]}},
	  "mcp_servers": {"m": {"command": "sh", "args": ["-c", "exit 1", "sh", "${TENX_TOKEN:-x}"]}}}`)
	code, out, errs := run(t, "", "validate", "--config", cfg)
	if code != 1 || !strings.Contains(errs, "mcp_servers.m.args[3]: ${TENX_TOKEN:-x} names TENX_TOKEN, which holds a secret of the host") || strings.Contains(out+errs, values["TENX_TOKEN"]) {
		t.Errorf("exit %d, want the token refused and not printed:\n%s%s", code, out, errs)
	}

	// Every form, each at its path.
	write(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "server": {"auth": {"tokens_env": ["TENX_TOKEN"]}},
	  "mcp_servers": {"m": {"command": "sh", "args": ["-c", "exit 1", "sh", "${TENX_TOKEN:-x}"],
	                        "env": {"A": "${X:-${TENX_TOKEN}}", "B": "${X:+${Y:-${TENX_TOKEN}}}", "L": "$${TENX_TOKEN}"}},
	                  "gh": {"command": "sh", "args": ["-c", "exit 1", "sh", "--token=${GITHUB_TOKEN}"]}},
	  "plugins": [{"name": "p", "command": ["p"], "env": {"K": "${TENX_TOKEN?}"}}]}`)
	code, out, errs = run(t, "", "validate", "--config", cfg)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{
		"mcp_servers.m.args[3]: ${TENX_TOKEN:-x} names TENX_TOKEN, which holds a secret of the host",
		"mcp_servers.m.env.A: ${X:-${TENX_TOKEN}} names TENX_TOKEN",
		"mcp_servers.m.env.B: ${X:+${Y:-${TENX_TOKEN}}} names TENX_TOKEN",
		"mcp_servers.gh.args[3]: ${GITHUB_TOKEN} would put GITHUB_TOKEN on the command line",
		`Pass it through env instead ("env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"})`,
		"plugins[0].env.K: ${TENX_TOKEN?} names TENX_TOKEN",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("missing %q in:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "mcp_servers.m.env.L") {
		t.Errorf("the literal $${TENX_TOKEN} was refused:\n%s", errs)
	}
	for k, v := range values {
		if strings.Contains(out+errs, v) {
			t.Errorf("validate printed the value of %s:\n%s%s", k, out, errs)
		}
	}

	// A variable that is not set is named at its path before anything
	// starts, in a provider's env as in an MCP server's settings.
	write(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "provider_defaults": {"env": {"D": "${TENX_UNSET_D}"}},
	  "plugins": [{"name": "p", "command": ["p"], "env": {"P": "${TENX_UNSET_A:-${TENX_UNSET_B}}"}}],
	  "mcp_servers": {"m": {"url": "https://h.example/mcp", "headers": {"Authorization": "Bearer ${TENX_UNSET_C:?the API token of h.example}"}}}}`)
	code, out, errs = run(t, "", "validate", "--config", cfg)
	for _, want := range []string{
		"provider_defaults.env.D: environment variable TENX_UNSET_D is not set (referenced as ${TENX_UNSET_D};",
		"plugins[0].env.P: environment variable TENX_UNSET_B is not set (referenced as ${TENX_UNSET_A:-${TENX_UNSET_B}};",
		"mcp_servers.m.headers.Authorization: environment variable TENX_UNSET_C is not set (referenced as ${TENX_UNSET_C:?the API token of h.example}): the API token of h.example",
	} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, missing %q in:\n%s%s", code, want, out, errs)
		}
	}
	if n := strings.Count(errs, "provider_defaults.env.D"); n != 1 {
		t.Errorf("provider_defaults.env.D reported %d times:\n%s", n, errs)
	}
}
