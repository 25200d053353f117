package config_test

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind/plugins"
)

// Check returns what it could read beside the problems, so the validate
// command can go on to the graph's checks.
func TestCheckReturnsThePartialConfig(t *testing.T) {
	cfg, ps := config.Check([]byte(`{"agent": "tenxgraph:react",
	  "remote_tools": [{"node": "tols", "name": "read_clipboard", "description": "Read."}],
	  "plugins": [{"name": "weather", "command": ["weather"], "sha256": "abc", "node": "research", "prefix": "wx_"},
	              {"name": "other", "command": ["other"], "prefix": "no spaces"}]}`), t.TempDir())
	if cfg == nil {
		t.Fatal("no config")
	}
	if len(ps) != 2 || ps[0].Path != "plugins[0].sha256" || ps[1].Path != "plugins[1].prefix" {
		t.Errorf("problems %v, want plugins[0].sha256 and plugins[1].prefix", ps)
	}
	if cfg.Agent != "tenxgraph:react" || len(cfg.RemoteTools) != 1 || cfg.RemoteTools[0].Node != "tols" {
		t.Errorf("agent %q, remote tools %+v", cfg.Agent, cfg.RemoteTools)
	}
	if len(plugins.Of(cfg)) != 2 || plugins.Of(cfg)[0].Node != "research" || plugins.Of(cfg)[0].Prefix != "wx_" || plugins.Of(cfg)[1].Prefix != "" {
		t.Errorf("plugins %+v", plugins.Of(cfg))
	}
	if _, err := config.Parse([]byte(`{"agent": "a", "plugins": [{"name": "w", "command": ["w"], "sha256": "abc"}]}`), t.TempDir()); err == nil {
		t.Error("Parse accepted a config with a problem")
	}
}
