package service_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// writeConfig writes the scripted model's script and cfg into a new folder
// and returns the config's path.
func writeConfig(t *testing.T, cfg string) string {
	t.Helper()
	return writeConfigScript(t, cfg, script)
}

func writeConfigScript(t *testing.T, cfg, script string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(script), 0o600)
	path := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(path, []byte(cfg), 0o600)
	return path
}

// wantProblems checks that err lists exactly the problems at paths, each
// with the words given.
func wantProblems(t *testing.T, err error, want map[string]string) {
	t.Helper()
	ps, ok := err.(toolspec.Problems)
	if !ok {
		t.Fatalf("err = %v (%T), want problems", err, err)
	}
	got := map[string]string{}
	for _, p := range ps {
		if _, dup := got[p.Path]; dup {
			t.Errorf("%s reported twice: %v", p.Path, ps)
		}
		got[p.Path] = p.Message
	}
	for path, words := range want {
		if msg, ok := got[path]; !ok || !strings.Contains(msg, words) {
			t.Errorf("%s: %q, want it to say %q (all: %v)", path, msg, words, ps)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d: %v", len(got), len(want), ps)
	}
}

// A provider entry whose node the graph lacks is an error with its path,
// as for remote tools, instead of tools that silently vanish.
func TestProviderNodeMustExist(t *testing.T) {
	path := writeConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "builtin_tools": {"node": "tool", "enable": ["calculator"]},
	  "plugins": [{"name": "second", "command": ["`+os.Args[0]+`", "plugin", "remote"], "node": "model"}]}`)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = service.New(context.Background(), cfg, service.Options{Store: checkpoint.NewMemory()})
	wantProblems(t, err, map[string]string{
		"builtin_tools.node": `graph "tenxgraph:react" has no node "tool" (ToolNodes: tools)`,
		"plugins[0].node":    `node "model" is not a ToolNode (ToolNodes: tools)`,
	})
}

// validate reports the file's own problems and the graph's in one pass.
func TestValidateReportsEveryProblemInOnePass(t *testing.T) {
	path := writeConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "builtin_tools": {"node": "tool", "enable": ["calculator"]},
	  "mcp_servers": {"files": {"command": "true", "node": "elsewhere"}},
	  "remote_tools": [{"node": "tols", "name": "read_clipboard", "description": "Read the clipboard."},
	                   {"name": "bad name", "description": "x"}],
	  "plugins": [{"name": "weather", "command": ["./weather"], "sha256": "abc", "node": "nowhere"}]}`)
	s, err := service.Validate(context.Background(), path, service.Options{Store: checkpoint.NewMemory()})
	if s != nil {
		s.Shutdown(context.Background())
		t.Fatal("a config with problems gave a service")
	}
	wantProblems(t, err, map[string]string{
		// the file's own
		"plugins[0].sha256":    "64 hexadecimal characters",
		"remote_tools[1].name": "not a valid tool name",
		// the graph's
		"remote_tools[0].node":   `graph has no node "tols"`,
		"builtin_tools.node":     `has no node "tool"`,
		"mcp_servers.files.node": `has no node "elsewhere"`,
		"plugins[0].node":        `has no node "nowhere"`,
	})
}

// A valid config is started, so its providers are checked too.
func TestValidateStartsAValidConfig(t *testing.T) {
	path := writeConfig(t, cfgJSON)
	s, err := service.Validate(context.Background(), path, service.Options{Store: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	if len(s.Tools()) == 0 {
		t.Error("no tools")
	}
}

// Two plugins exporting one name: an error that names the fix, and with a
// prefix on one of them both are offered and each call reaches its plugin.
func TestPluginPrefixResolvesACollision(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testplugin")
	if out, err := exec.Command("go", "-C", "../../sdk", "build", "-o", bin, "./sdktest/testdata/testplugin").CombinedOutput(); err != nil {
		t.Fatalf("build test plugin: %v\n%s", err, out)
	}
	plugins := func(prefix string) string {
		return `"plugins": [{"name": "one", "command": ["` + bin + `"]},
		                    {"name": "two", "command": ["` + bin + `"]` + prefix + `, "tool_timeouts": {"echo": "5s"}}]`
	}
	base := `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"}, "checkpointer": {"type": "memory"}, `

	cfg, err := config.Load(writeConfig(t, base+plugins("")+`}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = service.New(context.Background(), cfg, service.Options{Store: checkpoint.NewMemory()})
	if err == nil || !strings.Contains(err.Error(), `tool "echo" is served by both "one" and "two"`) || !strings.Contains(err.Error(), "prefix") {
		t.Fatalf("a collision gave %v, want it named with the prefix fix", err)
	}

	if _, err := config.Load(writeConfig(t, base+plugins(`, "prefix": "two."`)+`}`)); err == nil || !strings.Contains(err.Error(), "plugins[1].prefix") {
		t.Errorf("a prefix with a dot: %v", err)
	}

	cfg, err = config.Load(writeConfigScript(t, base+plugins(`, "prefix": "two_"`)+`}`, `{"rules": [
	  {"match": "both", "tool_calls": [{"name": "echo", "arguments": {"text": "to one"}}, {"name": "two_echo", "arguments": {"text": "to two"}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.New(context.Background(), cfg, service.Options{Store: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	byName := map[string]string{}
	for _, ti := range s.Tools() {
		byName[ti.Name] = ti.Provider
	}
	if byName["echo"] != "one" || byName["two_echo"] != "two" || byName["two_sleep"] != "two" || byName["sleep"] != "one" {
		t.Fatalf("tools %v, want echo from one and two_echo from two", byName)
	}
	r := invoke(t, s, "prefix", "both")
	slices.Sort(r.tools) // the two calls run at once
	if strings.Join(r.tools, " ") != "one:echo two:two_echo" {
		t.Errorf("tools started: %v", r.tools)
	}
	var texts []string
	for _, m := range r.res.Messages {
		for _, tr := range m.ToolResults() {
			var out struct{ Text string }
			if tr.IsError || json.Unmarshal(tr.Content, &out) != nil {
				t.Errorf("result %s (is_error %v)", tr.Content, tr.IsError)
			}
			texts = append(texts, out.Text)
		}
	}
	if strings.Join(texts, ",") != "to one,to two" {
		t.Errorf("results %v, want each call answered by its plugin", texts)
	}
}
