package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// remote_tools[].timeout and remote_tool_defaults.timeout are durations; a
// bad one is reported with its path, every one in the same pass.
func TestRemoteToolTimeouts(t *testing.T) {
	cfg := mustParse(t, `{"agent": "a", "remote_tools": [{"name": "a", "timeout": "1s"}, {"name": "b"}],
		"remote_tool_defaults": {"timeout": "2m"}}`, "/proj")
	if cfg.RemoteTools[0].Timeout != time.Second || cfg.RemoteTools[1].Timeout != 0 || cfg.RemoteToolTimeout != 2*time.Minute {
		t.Fatalf("timeouts %v %v, default %v", cfg.RemoteTools[0].Timeout, cfg.RemoteTools[1].Timeout, cfg.RemoteToolTimeout)
	}
	if cfg := mustParse(t, `{"agent": "a"}`, "/proj"); cfg.RemoteToolTimeout != 0 {
		t.Fatalf("default without the key: %v", cfg.RemoteToolTimeout)
	}
	_, err := Parse([]byte(`{"agent": "a", "remote_tools": [{"name": "a", "timeout": "soon"}, {"name": "b", "timeout": 30}, {"name": "c", "timeout": "-1s"}],
		"remote_tool_defaults": {"timeout": "0s", "max": 1}}`), "/proj")
	var ps toolspec.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("err %v", err)
	}
	for _, path := range []string{"remote_tools[0].timeout", "remote_tools[1].timeout", "remote_tools[2].timeout", "remote_tool_defaults.timeout", "remote_tool_defaults.max"} {
		if !strings.Contains(err.Error(), path+":") {
			t.Errorf("no problem at %s in:\n%v", path, err)
		}
	}
}
