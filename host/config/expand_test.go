package config

import (
	"slices"
	"strings"
	"testing"
)

// Every expression of the file answers to one rule, in every form: a
// secret of the host named anywhere (in a default, an alternative, a
// nested form) is refused at its path, and so is a credential on a
// command line; a $$ literal names nothing.
func TestExpressionsNameNoSecret(t *testing.T) {
	_, ps := Check([]byte(`{"agent": "a",
	  "server": {"auth": {"tokens_env": ["TENX_TOKEN"]}},
	  "model": {"provider": "openai", "model": "m", "api_key_env": "MODEL_KEY"},
	  "checkpointer": {"type": "postgres", "dsn_env": "DATABASE_URL"},
	  "provider_defaults": {"env": {"D": "${X:+${MODEL_KEY}}"}},
	  "builtin_tools": {"enable": ["calculator"], "env": {"B": "${PGPASSWORD:-none}"}},
	  "plugins": [{"name": "p", "command": ["p"], "env": {"A": "${TENX_TOKEN:-x}", "L": "$${TENX_TOKEN}", "U": "${Q/a/b}"}}],
	  "mcp_servers": {
	    "s": {"command": "${BIN:-${TENX_TOKEN}}", "args": ["--token", "${TENX_TOKEN:-x}", "${GITHUB_TOKEN}", "$${GITHUB_TOKEN}", "${HOME}/data", "$${TENX_TOKEN}"],
	          "env": {"N": "${X:-${Y:-${DATABASE_URL}}}", "G": "${GITHUB_TOKEN}", "L": "$${DATABASE_URL}"}, "cwd": "${PGSSLPASSWORD?}"},
	    "h": {"url": "https://h.example/mcp?k=${X-${MODEL_KEY}}", "headers": {"Authorization": "Bearer ${TENX_TOKEN:?set it}", "X": "${env:GITHUB_TOKEN}"}}
	  }}`), "/proj")
	want := map[string]string{
		"provider_defaults.env.D":             "${X:+${MODEL_KEY}} names MODEL_KEY, which holds a secret of the host",
		"builtin_tools.env.B":                 "${PGPASSWORD:-none} names PGPASSWORD, which holds a secret of the host",
		"plugins[0].env.A":                    "${TENX_TOKEN:-x} names TENX_TOKEN, which holds a secret of the host",
		"plugins[0].env.U":                    "${Q/a/b} is not supported",
		"mcp_servers.s.command":               "${BIN:-${TENX_TOKEN}} names TENX_TOKEN, which holds a secret of the host (an API token, the model key or the store's credentials) and is never given to a provider: give the server a credential of its own, and pass it through env, not on its command line",
		"mcp_servers.s.args[1]":               "${TENX_TOKEN:-x} names TENX_TOKEN, which holds a secret of the host",
		"mcp_servers.s.args[2]":               `${GITHUB_TOKEN} would put GITHUB_TOKEN on the command line, where every local user can read it (/proc/PID/cmdline, ps): its name says it holds a credential. Pass it through env instead ("env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"})`,
		"mcp_servers.s.env.N":                 "${X:-${Y:-${DATABASE_URL}}} names DATABASE_URL, which holds a secret of the host",
		"mcp_servers.s.cwd":                   "${PGSSLPASSWORD?} names PGSSLPASSWORD, which holds a secret",
		"mcp_servers.h.url":                   "${X-${MODEL_KEY}} names MODEL_KEY, which holds a secret",
		"mcp_servers.h.headers.Authorization": "${TENX_TOKEN:?set it} names TENX_TOKEN, which holds a secret",
		"mcp_servers.h.headers.X":             "${env:GITHUB_TOKEN} is the form of VS Code and Cursor; write ${NAME}",
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Path] += p.Message
	}
	for path, msg := range want {
		if !strings.Contains(got[path], msg) {
			t.Errorf("%s: got %q, want %q", path, got[path], msg)
		}
	}
	// A literal $${...}, a credential in env, a plain variable in args are
	// fine.
	for _, path := range []string{"plugins[0].env.L", "mcp_servers.s.args[3]", "mcp_servers.s.args[4]", "mcp_servers.s.args[5]", "mcp_servers.s.env.G", "mcp_servers.s.env.L"} {
		if msg, bad := got[path]; bad {
			t.Errorf("%s: refused: %s", path, msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(got), len(want), ps)
	}
}

// The store's password variables are the host's secrets only for a
// postgres store.
func TestPostgresSecrets(t *testing.T) {
	pg := mustParse(t, `{"agent": "a", "checkpointer": {"type": "postgres", "dsn_env": "DATABASE_URL"}}`, "/proj")
	if s := pg.Secrets(); !slices.Contains(s, "PGPASSWORD") || !slices.Contains(s, "PGSSLPASSWORD") || !slices.Contains(s, "DATABASE_URL") {
		t.Errorf("postgres: %v", s)
	}
	if s := mustParse(t, `{"agent": "a"}`, "/proj").Secrets(); slices.Contains(s, "PGPASSWORD") {
		t.Errorf("sqlite: %v", s)
	}
}
