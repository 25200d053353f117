package config_test

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/kind/plugins"
)

// A plugin's options are kept as written, for the plugin (and its options
// schema) to judge; only an object is accepted.
func TestPluginOptions(t *testing.T) {
	cfg, ps := config.Check([]byte(`{"agent": "tenxgraph:react",
	  "plugins": [{"name": "a", "command": ["a"], "options": {"units": "imperial", "stations": [1, 2]}},
	              {"name": "b", "command": ["b"]},
	              {"name": "c", "command": ["c"], "options": ["units"]}]}`), t.TempDir())
	if len(ps) != 1 || ps[0].Path != "plugins[2].options" {
		t.Fatalf("problems %v, want one at plugins[2].options", ps)
	}
	if got := string(plugins.Of(cfg)[0].Options); got != `{"units":"imperial","stations":[1,2]}` {
		t.Errorf("plugins[0].options = %s", got)
	}
	if plugins.Of(cfg)[1].Options != nil || plugins.Of(cfg)[2].Options != nil {
		t.Errorf("options of plugins without good ones: %s, %s", plugins.Of(cfg)[1].Options, plugins.Of(cfg)[2].Options)
	}
}
