package config_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/decl"
	"github.com/tenxgraph/tenxgraph/host/kind/builtintools"
	"github.com/tenxgraph/tenxgraph/host/kind/mcpservers"
	"github.com/tenxgraph/tenxgraph/host/kind/plugins"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// These tests read the provider kinds' values through their packages'
// accessors; the kinds register themselves when this file links them.

func TestDesignExample(t *testing.T) {
	cfg := config.MustParse(t, config.DesignExample, "/proj")
	want := &config.Config{
		Dir:   "/proj",
		Agent: "tenxgraph:react",
		RemoteTools: []decl.RemoteTool{{
			Node:        "tools",
			Name:        "read_clipboard",
			Description: "Read the current clipboard text.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"required":[]}`),
		}},
		Model: &config.Model{
			Provider:   "openai",
			Model:      "gpt-4o-mini",
			BaseURL:    "http://127.0.0.1:11434/v1",
			APIKeyEnv:  "OPENAI_API_KEY",
			MaxSteps:   25,
			MaxRetries: 2,
		},
		Checkpointer: config.Checkpointer{Type: "sqlite", Path: "/proj/.tenxgraph/state.db"},
		Server:       config.Server{Addr: "127.0.0.1:8123", MaxBodyBytes: 4 << 20, MaxRequestMessages: 1000},
	}
	want.SetProvider(builtintools.Key, &builtintools.Config{Node: "tools", Enable: []string{"calculator", "current_time"}})
	want.SetProvider(mcpservers.Key, &mcpservers.Servers{
		ByName: map[string]mcpservers.Server{
			"files": {
				Name: "files", Type: "stdio", Command: "npx",
				Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "./data"},
				Cwd:  "/proj", Node: "tools",
			},
			"search": {
				Name: "search", Type: "http", URL: "http://127.0.0.1:3001/mcp",
				Headers: map[string]string{"Authorization": "Bearer ${SEARCH_TOKEN}"},
				Node:    "tools",
			},
		},
		Order: []string{"files", "search"},
	})
	want.SetProvider(plugins.Key, []plugins.Plugin{{
		Name: "weather", Command: []string{"/proj/bin/weather-plugin"}, SHA256: config.WeatherSum,
		Node: "tools", Start: "startup",
	}})
	if !reflect.DeepEqual(cfg, want) {
		got, _ := json.MarshalIndent(cfg, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("got\n%s\nwant\n%s", got, exp)
	}
}

func TestDefaults(t *testing.T) {
	cfg := config.MustParse(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "s.json"}}`, "/p")
	if cfg.Model.MaxSteps != config.DefaultMaxSteps || cfg.Model.MaxRetries != config.DefaultMaxRetries || cfg.Model.Timeout != 0 || cfg.Model.APIKeyEnv != "" {
		t.Errorf("model defaults: %+v", cfg.Model)
	}
	if builtintools.Of(cfg) != nil || mcpservers.Of(cfg) != nil || plugins.Of(cfg) != nil || cfg.RemoteTools != nil {
		t.Errorf("absent sections should stay empty: %+v", cfg)
	}
	if want := (config.Checkpointer{Type: "sqlite", Path: "/p/.tenxgraph/state.db"}); cfg.Checkpointer != want {
		t.Errorf("checkpointer: %+v", cfg.Checkpointer)
	}
	if cfg.Server.Addr != config.DefaultAddr || cfg.Server.MaxBodyBytes != 4<<20 || cfg.Server.MaxRequestMessages != config.DefaultMaxRequestMessages || cfg.Server.Auth != nil {
		t.Errorf("server: %+v", cfg.Server)
	}
}

func TestFullValues(t *testing.T) {
	cfg := config.MustParse(t, `{
	  "agent": "a",
	  "model": {"provider": "openai", "model": "m", "system_prompt": "be brief", "max_steps": 7,
	            "timeout": "1m30s", "max_retries": 0},
	  "builtin_tools": {"node": "fs", "enable": ["read_file", "http_fetch", "list_files"],
	    "http_fetch": {"allow_hosts": ["api.example.com", "*.example.org:8443"], "max_bytes": 1000, "timeout": "5s"},
	    "workspace": {"root": "/abs/ws"}},
	  "mcp_servers": {
	    "z": {"type": "sse", "url": "https://h/sse", "timeout": "10s", "deny_tools": ["rm"], "disabled": true, "node": "n2"},
	    "a": {"type": "streamable_http", "url": "${MCP_URL}"},
	    "m": {"command": "srv", "env": {"K": "${V}"}, "allow_tools": ["t1", "t2"], "max_output_bytes": 65536}
	  },
	  "plugins": [{"name": "p", "command": ["p-bin", "--flag", ""], "sha256": "`+strings.ToUpper(config.WeatherSum)+`",
	               "env": {"X": "1"}, "start": "lazy", "node": "n3"}],
	  "checkpointer": {"type": "postgres", "dsn_env": "DATABASE_URL"},
	  "server": {"addr": ":0", "auth": {"tokens_env": ["T1", "T2"]},
	             "cors": {"allow_origins": ["http://localhost:5173", "*"]}, "max_body_bytes": 1024, "max_request_messages": 50}
	}`, "/p")
	m := cfg.Model
	if m.APIKeyEnv != config.DefaultAPIKeyEnv || m.SystemPrompt != "be brief" || m.MaxSteps != 7 || m.Timeout != 90*time.Second || m.MaxRetries != 0 {
		t.Errorf("model: %+v", m)
	}
	b := builtintools.Of(cfg)
	if b.Node != "fs" || !slices.Equal(b.Enable, []string{"read_file", "http_fetch", "list_files"}) ||
		!slices.Equal(b.HTTPFetch.AllowHosts, []string{"api.example.com", "*.example.org:8443"}) ||
		b.HTTPFetch.MaxBytes != 1000 || b.HTTPFetch.Timeout != 5*time.Second || b.Workspace.Root != "/abs/ws" {
		t.Errorf("builtin: %+v", b)
	}
	if !slices.Equal(mcpservers.Of(cfg).Order, []string{"z", "a", "m"}) {
		t.Errorf("order: %v", mcpservers.Of(cfg).Order)
	}
	z, a, mm := mcpservers.Of(cfg).ByName["z"], mcpservers.Of(cfg).ByName["a"], mcpservers.Of(cfg).ByName["m"]
	if z.Type != "sse" || z.Timeout != 10*time.Second || !z.Disabled || z.Node != "n2" || !slices.Equal(z.DenyTools, []string{"rm"}) {
		t.Errorf("z: %+v", z)
	}
	if a.Type != "http" || a.URL != "${MCP_URL}" || a.Cwd != "" {
		t.Errorf("a: %+v", a)
	}
	if mm.Type != "stdio" || mm.Command != "srv" || mm.Env["K"] != "${V}" || !slices.Equal(mm.AllowTools, []string{"t1", "t2"}) || mm.MaxOutputBytes != 65536 || z.MaxOutputBytes != 0 {
		t.Errorf("m: %+v", mm)
	}
	p := plugins.Of(cfg)[0]
	if !slices.Equal(p.Command, []string{"p-bin", "--flag", ""}) || p.SHA256 != config.WeatherSum || p.Env["X"] != "1" || p.Start != "lazy" || p.Node != "n3" {
		t.Errorf("plugin: %+v", p)
	}
	if want := (config.Checkpointer{Type: "postgres", DSNEnv: "DATABASE_URL"}); cfg.Checkpointer != want {
		t.Errorf("checkpointer: %+v", cfg.Checkpointer)
	}
	s := cfg.Server
	if s.Addr != ":0" || !slices.Equal(s.Auth.TokensEnv, []string{"T1", "T2"}) || !slices.Equal(s.CORS.AllowOrigins, []string{"http://localhost:5173", "*"}) || s.MaxBodyBytes != 1024 || s.MaxRequestMessages != 50 {
		t.Errorf("server: %+v", s)
	}
	cfg = config.MustParse(t, `{"agent": "a", "checkpointer": {"type": "memory"}}`, "/p")
	if want := (config.Checkpointer{Type: "memory"}); cfg.Checkpointer != want {
		t.Errorf("memory checkpointer: %+v", cfg.Checkpointer)
	}
}

func TestPathResolution(t *testing.T) {
	src := `{
	  "agent": "a",
	  "model": {"provider": "scripted", "script": "scripts/rules.json"},
	  "builtin_tools": {"enable": ["write_file"], "workspace": {"root": "./ws/../workspace"}},
	  "mcp_servers": {
	    "rel": {"command": "./servers/srv", "cwd": "data"},
	    "bare": {"command": "npx"},
	    "abs": {"command": "/usr/bin/srv", "cwd": "/var/x"},
	    "env": {"command": "${NODE}/bin/srv", "cwd": "${HOME}/x"}
	  },
	  "plugins": [
	    {"name": "rel", "command": ["bin/p", "./arg"]},
	    {"name": "bare", "command": ["p"]},
	    {"name": "abs", "command": ["/opt/p"]}
	  ],
	  "checkpointer": {"path": "state/db.sqlite"}
	}`
	dir := t.TempDir()
	cfg := config.MustParse(t, src, dir)
	j := func(p string) string { return filepath.Join(dir, p) }
	checks := []struct{ what, got, want string }{
		{"Dir", cfg.Dir, dir},
		{"script", cfg.Model.Script, j("scripts/rules.json")},
		{"workspace", builtintools.Of(cfg).Workspace.Root, j("workspace")},
		{"rel command", mcpservers.Of(cfg).ByName["rel"].Command, j("servers/srv")},
		{"rel cwd", mcpservers.Of(cfg).ByName["rel"].Cwd, j("data")},
		{"bare command", mcpservers.Of(cfg).ByName["bare"].Command, "npx"},
		{"bare cwd defaults to the config folder", mcpservers.Of(cfg).ByName["bare"].Cwd, dir},
		{"abs command", mcpservers.Of(cfg).ByName["abs"].Command, "/usr/bin/srv"},
		{"abs cwd", mcpservers.Of(cfg).ByName["abs"].Cwd, "/var/x"},
		{"${} command", mcpservers.Of(cfg).ByName["env"].Command, "${NODE}/bin/srv"},
		{"${} cwd", mcpservers.Of(cfg).ByName["env"].Cwd, "${HOME}/x"},
		{"plugin rel", plugins.Of(cfg)[0].Command[0], j("bin/p")},
		{"plugin arg untouched", plugins.Of(cfg)[0].Command[1], "./arg"},
		{"plugin bare", plugins.Of(cfg)[1].Command[0], "p"},
		{"plugin abs", plugins.Of(cfg)[2].Command[0], "/opt/p"},
		{"sqlite", cfg.Checkpointer.Path, j("state/db.sqlite")},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}

	// A relative dir is made absolute too.
	cfg = config.MustParse(t, `{"agent": "a"}`, "sub")
	wd, _ := os.Getwd()
	if want := filepath.Join(wd, "sub"); cfg.Dir != want || cfg.Checkpointer.Path != filepath.Join(want, config.DefaultSQLitePath) {
		t.Errorf("relative dir: Dir %q, sqlite %q; want under %q", cfg.Dir, cfg.Checkpointer.Path, want)
	}
}

// require_approval is true or a list of tool names on every provider entry.
func TestRequireApproval(t *testing.T) {
	cfg := config.MustParse(t, `{"agent": "a",
	  "builtin_tools": {"enable": ["calculator"], "require_approval": true},
	  "plugins": [{"name": "w", "command": ["./w"], "require_approval": ["forecast"]}],
	  "mcp_servers": {"files": {"command": "x", "require_approval": false}}}`, t.TempDir())
	if !builtintools.Of(cfg).RequireApproval.All {
		t.Errorf("builtin_tools: %+v", builtintools.Of(cfg).RequireApproval)
	}
	if got := plugins.Of(cfg)[0].RequireApproval; got.All || !slices.Equal(got.Tools, []string{"forecast"}) {
		t.Errorf("plugins[0]: %+v", got)
	}
	if mcpservers.Of(cfg).ByName["files"].RequireApproval.Set() {
		t.Errorf("mcp_servers.files: %+v", mcpservers.Of(cfg).ByName["files"].RequireApproval)
	}
	_, err := config.Parse([]byte(`{"agent": "a",
	  "builtin_tools": {"enable": ["calculator"], "require_approval": "yes"},
	  "plugins": [{"name": "w", "command": ["./w"], "require_approval": ["f", "f", ""]}],
	  "mcp_servers": {"files": {"command": "x", "require_approval": []}}}`), t.TempDir())
	if err == nil {
		t.Fatal("bad require_approval values were accepted")
	}
	for _, want := range []string{
		"builtin_tools.require_approval: want true, false or a list",
		"plugins[0].require_approval[1]: \"f\" is listed twice",
		"plugins[0].require_approval[2]: must not be empty",
		"mcp_servers.files.require_approval: an empty list",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}
}

// Profiles are read on every provider entry, on top of provider_defaults.
func TestSandboxProfiles(t *testing.T) {
	cfg := config.MustParse(t, `{"agent": "a",
	  "provider_defaults": {"env": {"A": "1", "B": "1"}, "pass_env": ["LANGUAGE"], "limits": {"memory_mb": 512, "processes": 64}, "network": "none"},
	  "builtin_tools": {"enable": ["calculator"], "env": {"B": "2"}, "limits": {"memory_mb": 128}},
	  "plugins": [{"name": "p", "command": ["p"], "pass_env": ["GITHUB_TOKEN", "LANGUAGE"], "network": "host", "user": "nobody", "group": "nogroup", "cwd": "work"}],
	  "mcp_servers": {"s": {"command": "srv", "env": {"C": "${X}"}, "limits": {"cpu_seconds": 9}}}}`, "/proj")
	if want := (sandbox.Profile{Env: map[string]string{"A": "1", "B": "1"}, PassEnv: []string{"LANGUAGE"}, Limits: sandbox.Limits{MemoryMB: 512, Processes: 64}, Network: "none"}); !config.EqualProfile(cfg.SandboxDefaults, want) {
		t.Errorf("defaults %+v", cfg.SandboxDefaults)
	}
	b := builtintools.Of(cfg).Sandbox
	if b.Env["A"] != "1" || b.Env["B"] != "2" || b.Limits.MemoryMB != 128 || b.Limits.Processes != 64 || b.Network != "none" {
		t.Errorf("builtin %+v", b)
	}
	p := plugins.Of(cfg)[0]
	if !slices.Equal(p.Sandbox.PassEnv, []string{"LANGUAGE", "GITHUB_TOKEN"}) || p.Sandbox.Network != "host" || p.Sandbox.User != "nobody" || p.Sandbox.Group != "nogroup" || p.Cwd != "/proj/work" {
		t.Errorf("plugin %+v, cwd %q", p.Sandbox, p.Cwd)
	}
	m := mcpservers.Of(cfg).ByName["s"].Sandbox
	if m.Env["C"] != "${X}" || m.Env["A"] != "1" || m.Limits.CPUSeconds != 9 || m.Limits.MemoryMB != 512 {
		t.Errorf("mcp %+v", m)
	}
}

// provider_defaults sets the shared keys of every provider entry; an entry's
// own keys win; tool_timeouts belong to the entry.
func TestProviderDefaults(t *testing.T) {
	cfg := config.MustParse(t, `{
  "agent": "a",
  "provider_defaults": {"timeout": "5s", "max_argument_bytes": 100, "max_result_bytes": 2000000},
  "builtin_tools": {"enable": ["calculator"], "timeout": "2m"},
  "plugins": [{"name": "p", "command": ["p"], "max_result_bytes": 300, "tool_timeouts": {"slow": "10m", "quick": "500ms"}}],
  "mcp_servers": {"m": {"command": "m", "max_argument_bytes": 7}},
  "server": {"shutdown_grace": "3s"}
}`, "/proj")
	b, p, m := builtintools.Of(cfg).ProviderSettings, plugins.Of(cfg)[0].ProviderSettings, mcpservers.Of(cfg).ByName["m"].ProviderSettings
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
	cfg = config.MustParse(t, `{"agent": "a", "plugins": [{"name": "p", "command": ["p"]}]}`, "/proj")
	if s := plugins.Of(cfg)[0].ProviderSettings; s.Timeout != 0 || s.MaxArgumentBytes != 0 || s.MaxResultBytes != 0 || cfg.Server.ShutdownGrace != 0 {
		t.Errorf("defaults: %+v, grace %s", s, cfg.Server.ShutdownGrace)
	}
}

// A URL with no ${VAR} is checked as written, $$ read as $; one with a
// ${VAR} is checked once expanded.
func TestURLLiterals(t *testing.T) {
	cfg := config.MustParse(t, `{"agent": "a", "mcp_servers": {"a": {"url": "${MCP_URL}"}, "b": {"url": "https://h.example/mcp?p=$$x"}}}`, "/proj")
	if mcpservers.Of(cfg).ByName["b"].URL != "https://h.example/mcp?p=$$x" {
		t.Errorf("url kept as written for the bridge: %q", mcpservers.Of(cfg).ByName["b"].URL)
	}
	_, err := config.Parse([]byte(`{"agent": "a", "mcp_servers": {"c": {"url": "$${MCP_URL}"}}}`), "/proj")
	if err == nil || !strings.Contains(err.Error(), `mcp_servers.c.url: "${MCP_URL}" is not an http or https URL`) {
		t.Errorf("a literal ${...} URL: %v", err)
	}
}
