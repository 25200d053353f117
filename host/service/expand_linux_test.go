package service_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind/mcpservers"
	"github.com/tenxgraph/tenxgraph/host/kind/plugins"
	"github.com/tenxgraph/tenxgraph/host/service"
)

// cmdline reads a process's arguments, the program's included.
func cmdline(t *testing.T, pid int) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		t.Fatalf("read the command line of %d: %v", pid, err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
}

// $${...} is the literal text ${...}: a real stdio MCP server receives it
// as it is in its arguments and its environment, and so does a plugin in
// its environment, while the forms around it expand, nested defaults
// included. No process gets the value of the host's token, which a
// literal merely spells the name of.
func TestLiteralsReachTheProcesses(t *testing.T) {
	const token = "tok-b8e1-host-secret"
	t.Setenv("TENX_TOKEN", token)
	t.Setenv("TENX_LEVEL", "debug")
	mark := "literal" + strconv.Itoa(os.Getpid())
	startHostile(t, `, "env": {"HOSTILE_MARK": "`+mark+`-plugin", "LIT": "$${TENX_TOKEN}", "LEVEL": "${TENX_NOPE:-${TENX_LEVEL}}", "DOLLAR": "$$HOME $HOME"}`,
		`, "server": {"auth": {"tokens_env": ["TENX_TOKEN"]}},
		   "mcp_servers": {"evil": {"command": `+js(hostile(t))+`,
		     "args": ["mcp", "$${TENX_TOKEN}", "--level=${TENX_NOPE:-${TENX_ALSO_NOPE:-${TENX_LEVEL}}}", "$$HOME", "${TENX_NOPE+set}"],
		     "env": {"HOSTILE_MARK": "`+mark+`-mcp", "LIT": "$${TENX_TOKEN}", "LEVEL": "${TENX_LEVEL:?needed}"}}}`)

	var server int
	for _, pid := range marked(mark + "-mcp") {
		if args := cmdline(t, pid); len(args) > 1 && args[1] == "mcp" {
			server = pid
		}
	}
	if server == 0 {
		t.Fatalf("no MCP server runs with the mark %s", mark+"-mcp")
	}
	if args, want := cmdline(t, server)[1:], []string{"mcp", "${TENX_TOKEN}", "--level=debug", "$HOME", ""}; !slices.Equal(args, want) {
		t.Errorf("the MCP server's arguments: %q, want %q", args, want)
	}
	if env := environOf(t, server); env["LIT"] != "${TENX_TOKEN}" || env["LEVEL"] != "debug" {
		t.Errorf("the MCP server's env: LIT=%q LEVEL=%q", env["LIT"], env["LEVEL"])
	}
	plugin := marked(mark + "-plugin")
	if len(plugin) != 1 {
		t.Fatalf("%d plugins run with the mark %s, want 1", len(plugin), mark+"-plugin")
	}
	if env := environOf(t, plugin[0]); env["LIT"] != "${TENX_TOKEN}" || env["LEVEL"] != "debug" || env["DOLLAR"] != "$HOME $HOME" {
		t.Errorf("the plugin's env: LIT=%q LEVEL=%q DOLLAR=%q", env["LIT"], env["LEVEL"], env["DOLLAR"])
	}
	for pid, cmd := range descendants(os.Getpid()) {
		raw, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if strings.Contains(cmd, token) || strings.Contains(string(raw), token) {
			t.Errorf("%s (%d) holds the host's token", cmd, pid)
		}
	}
}

// A host secret reads as unset to every expansion, even in a config built
// in code that never went through the file's check: the start fails with
// the variable's name, never its value.
func TestExpansionNeverReadsAHostSecret(t *testing.T) {
	const token = "tok-4d2a-host-secret"
	t.Setenv("TENX_TOKEN", token)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [{"match": "x", "text": "x"}]}`), 0o600)
	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "server": {"auth": {"tokens_env": ["TENX_TOKEN"]}},
	  "plugins": [{"name": "p", "command": ["/bin/true"], "env": {"A": "${TENX_NOPE:-x}"}}],
	  "mcp_servers": {"m": {"command": "/bin/true", "env": {"A": "x"}}}}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	plugins.Of(cfg)[0].Env["A"] = "${TENX_NOPE:-${TENX_TOKEN}}"
	plugins.Of(cfg)[0].Sandbox.Env["A"] = plugins.Of(cfg)[0].Env["A"]
	m := mcpservers.Of(cfg).ByName["m"]
	m.Sandbox.Env["A"] = "${TENX_TOKEN}"
	mcpservers.Of(cfg).ByName["m"] = m
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := service.New(ctx, cfg, service.Options{})
	if err == nil {
		s.Shutdown(ctx)
		t.Fatal("the service started")
	}
	for _, want := range []string{"plugins[0].env.A: environment variable TENX_TOKEN is not set", "mcp_servers.m.env.A: environment variable TENX_TOKEN is not set"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), token) {
		t.Errorf("the error holds the token: %v", err)
	}
}
