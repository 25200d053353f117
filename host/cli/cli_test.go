package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/cli"
)

// TestMain lets the test binary serve the builtin providers, as the
// tenxgraph binary does: the host starts "<this program> plugin NAME".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "plugin" {
		cli.Main()
	}
	os.Exit(m.Run())
}

// quickstart copies the quickstart into a temporary folder, so its SQLite
// state lands there.
func quickstart(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"10xgraph.json", "script.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "10xgraph.json")
}

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidate(t *testing.T) {
	cfg := quickstart(t)
	if code, out, errs := run(t, "", "validate", "--config", cfg); code != 0 || !strings.Contains(out, "is valid") {
		t.Fatalf("valid config: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(cfg), ".tenxgraph")); !os.IsNotExist(err) {
		t.Fatal("validate wrote state to disk")
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{
		"agent": "tenxgraph:react",
		"model": {"provider": "scripted", "script": "`+filepath.Join(filepath.Dir(cfg), "script.json")+`"},
		"remote_tools": [
			{"node": "tools", "name": "read_clipboard", "colour": "red"},
			{"node": "tools", "name": "read_clipboard"},
			{"node": "tools", "name": "x", "parameters": {"type": "array"}}
		],
		"sever": {}
	}`), 0o600)
	code, out, errs := run(t, "", "validate", "--config", bad)
	if code != 1 {
		t.Fatalf("invalid config: exit %d, want 1\n%s%s", code, out, errs)
	}
	for _, want := range []string{"remote_tools[0].colour", "remote_tools[1].name", "remote_tools[2].parameters", "sever"} {
		if !strings.Contains(errs, want) {
			t.Errorf("missing %q in:\n%s", want, errs)
		}
	}
	// Problems only the built graph can see come with config paths too.
	os.WriteFile(bad, []byte(`{"agent": "tenxgraph:react",
		"model": {"provider": "scripted", "script": "`+filepath.Join(filepath.Dir(cfg), "script.json")+`"},
		"builtin_tools": {"enable": ["calculator"]},
		"remote_tools": [{"node": "tolls", "name": "a"}, {"name": "calculator"}, {"node": "model", "name": "b"}]}`), 0o600)
	code, _, errs = run(t, "", "validate", "--config", bad)
	for _, want := range []string{`remote_tools[0].node: graph has no node "tolls"`, `remote_tools[1].name: node "tools" already has a server tool "calculator"`, `remote_tools[2].node: node "model" is not a ToolNode`} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("exit %d, missing %q in:\n%s", code, want, errs)
		}
	}
	if code, _, errs := run(t, "", "validate", "--config", filepath.Join(t.TempDir(), "none.json")); code != 1 || !strings.Contains(errs, "no config file at") {
		t.Fatalf("missing file: exit %d %s", code, errs)
	}
}

func TestTools(t *testing.T) {
	code, out, errs := run(t, "", "tools", "--config", quickstart(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`tools\s+calculator\s+builtin\s+server`, `tools\s+read_clipboard\s+remote\s+remote`, `tools\s+change_background\s+remote\s+remote`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}

// run asks for the remote tool's result at the prompt and resumes with it.
func TestRunAnswersRemoteToolsAtThePrompt(t *testing.T) {
	cfg := quickstart(t)
	code, out, errs := run(t, "{\"text\":\"hello from the clipboard\"}\n", "run", "--config", cfg, "--thread", "t1", "what is 2+3*4 and what is on my clipboard?")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"running calculator (builtin)", "The model called the remote tool read_clipboard", "Result for read_clipboard", "2+3*4 = 14. Your clipboard holds: hello from the clipboard"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	// Plain text is an answer too, and "!" makes it an error result.
	code, out, _ = run(t, "!permission denied\n", "run", "--config", cfg, "--thread", "t1", "what is on my clipboard?")
	if code != 0 || !strings.Contains(out, `I could not read your clipboard: permission denied`) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// A run whose prompt gets no answer leaves the thread paused; the next run
// on the thread asks again first.
func TestRunResumesAPausedThread(t *testing.T) {
	cfg := quickstart(t)
	code, _, errs := run(t, "", "run", "--config", cfg, "--thread", "p", "make the background teal")
	if code != 1 || !strings.Contains(errs, "stays paused") {
		t.Fatalf("no answer: exit %d %s", code, errs)
	}
	code, out, errs := run(t, "{\"ok\":true}\n", "run", "--config", cfg, "--thread", "p", "hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"waiting for 1 remote tool result", "change_background", "the background is now teal", "Hello! I am tenxgraph's scripted demo model"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	if code, _, errs := run(t, "", "frobnicate"); code != 2 || !strings.Contains(errs, "unknown command") {
		t.Fatalf("unknown command: %d %s", code, errs)
	}
	if code, _, _ := run(t, "", "run"); code != 2 {
		t.Fatalf("run without a message: %d", code)
	}
	if code, out, _ := run(t, "", "version"); code != 0 || !strings.HasPrefix(out, "tenxgraph ") {
		t.Fatalf("version: %d %q", code, out)
	}
}
