package config

import (
	"slices"
	"strings"
	"testing"
)

// require_approval is true or a list of tool names on every provider entry.
func TestRequireApproval(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a",
	  "builtin_tools": {"enable": ["calculator"], "require_approval": true},
	  "plugins": [{"name": "w", "command": ["./w"], "require_approval": ["forecast"]}],
	  "mcp_servers": {"files": {"command": "x", "require_approval": false}}}`, t.TempDir())
	if !cfg.BuiltinTools.RequireApproval.All {
		t.Errorf("builtin_tools: %+v", cfg.BuiltinTools.RequireApproval)
	}
	if got := cfg.Plugins[0].RequireApproval; got.All || !slices.Equal(got.Tools, []string{"forecast"}) {
		t.Errorf("plugins[0]: %+v", got)
	}
	if cfg.MCPServers["files"].RequireApproval.Set() {
		t.Errorf("mcp_servers.files: %+v", cfg.MCPServers["files"].RequireApproval)
	}
	_, err := Parse([]byte(`{"agent": "a",
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
