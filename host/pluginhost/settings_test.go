package pluginhost_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
)

// Settings as the config writes them become the limits the host enforces:
// what an entry sets is kept, what it leaves at zero takes the default,
// and the limits name the entry's key.
func TestSettingsLimits(t *testing.T) {
	got := pluginhost.Settings{}.Limits("plugins[0]")
	want := pluginhost.Limits{Timeout: pluginhost.DefaultTimeout, MaxArgumentBytes: pluginhost.DefaultMaxArgumentBytes,
		MaxResultBytes: pluginhost.DefaultMaxResultBytes, Key: "plugins[0]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("zero settings: %+v, want %+v", got, want)
	}
	tools := map[string]time.Duration{"render": time.Minute}
	got = pluginhost.Settings{Timeout: time.Second, ToolTimeouts: tools, MaxArgumentBytes: 10, MaxResultBytes: 20}.Limits("builtin_tools")
	want = pluginhost.Limits{Timeout: time.Second, ToolTimeouts: tools, MaxArgumentBytes: 10, MaxResultBytes: 20, Key: "builtin_tools"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("set settings: %+v, want %+v", got, want)
	}
}
