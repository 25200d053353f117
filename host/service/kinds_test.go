package service_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/service/internal/clock"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// A provider kind is one package and one import line (internal/clock,
// linked by this file's import): the schema lists its key, a config using
// it validates, a bad value in it is reported at its path along with the
// file's other mistakes in one pass, and the service starts its provider.
func TestANewProviderKindIsOnePackage(t *testing.T) {
	if s := config.Schema(); s.Properties[clock.Key] == nil || !slices.Contains(s.PropertyOrder, clock.Key) {
		t.Fatalf("the schema does not list %q: %v", clock.Key, s.PropertyOrder)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [{"match": "x", "text": "x"}]}`), 0o600)

	_, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "clock": {"tool": "sundial", "nod": "tools"},
	  "plugins": [{"name": "w", "command": ["w"], "sha256": "abc"}]}`), dir)
	var ps toolspec.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("a bad clock was accepted or not reported as problems: %v", err)
	}
	for _, want := range []string{
		`clock.tool: must be one of "current_time", got "sundial"`,
		`clock.nod: unknown key: did you mean "node"? (allowed: node, tool)`,
		`plugins[0].sha256: must be 64 hexadecimal characters`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in:\n%v", want, err)
		}
	}

	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "clock": {}, "checkpointer": {"type": "memory"}}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if c := clock.Of(cfg); c == nil || c.Node != config.DefaultNode || c.Tool != "current_time" {
		t.Fatalf("clock read as %+v, want its defaults", c)
	}
	s, err := service.New(context.Background(), cfg, service.Options{Store: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	var got []string
	for _, ti := range s.Tools() {
		got = append(got, ti.Provider+":"+ti.Name)
	}
	if !slices.Contains(got, "clock:current_time") {
		t.Errorf("tools %v, want clock:current_time", got)
	}
	if !slices.ContainsFunc(s.Profiles(), func(p service.Profile) bool { return p.Provider == clock.Key }) {
		t.Errorf("profiles %+v do not list the clock's process", s.Profiles())
	}
}
