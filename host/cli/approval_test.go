package cli_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// gatedQuickstart is the quickstart with the calculator behind an approval.
func gatedQuickstart(t *testing.T) string {
	t.Helper()
	path := quickstart(t)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["builtin_tools"].(map[string]any)["require_approval"] = []string{"calculator"}
	raw, _ = json.Marshal(cfg)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// tenxgraph run asks y/n before a tool that needs approval: y runs it, n
// gives the model the reason.
func TestRunAsksForApproval(t *testing.T) {
	cfg := gatedQuickstart(t)
	code, out, errs := run(t, "maybe\ny\n", "run", "--config", cfg, "--thread", "a1", "what is 2+3*4?")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"The model wants to run calculator", "Allow calculator? [y/n", "Please answer y or n.", "running calculator (builtin)", "14"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	code, out, errs = run(t, "n not now\n", "run", "--config", cfg, "--thread", "a2", "what is 2+3*4?")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if strings.Contains(out, "running calculator") {
		t.Errorf("the denied tool ran:\n%s", out)
	}
	if !strings.Contains(out, "not now") {
		t.Errorf("the reason did not reach the model's answer:\n%s", out)
	}
	// A misspelt name is refused at start-up, at its config path.
	raw, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte(strings.Replace(string(raw), `["calculator"]`, `["calculater"]`, 1)), 0o600)
	code, out, errs = run(t, "", "run", "--config", cfg, "hello")
	if code == 0 || !strings.Contains(out+errs, `builtin_tools.require_approval[0]: the provider has no tool "calculater"`) {
		t.Fatalf("misspelt name: exit %d\n%s%s", code, out, errs)
	}
}

// tenxgraph tools says which tools a person approves before each call.
func TestToolsShowsApproval(t *testing.T) {
	code, out, errs := run(t, "", "tools", "--config", gatedQuickstart(t))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{`(?m)^NODE\s+TOOL\s+PROVIDER\s+KIND\s+APPROVAL\s+DESCRIPTION$`, `tools\s+calculator\s+builtin\s+server\s+required\s`, `tools\s+current_time\s+builtin\s+server\s+-\s`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("no line matching %q in:\n%s", want, out)
		}
	}
}
