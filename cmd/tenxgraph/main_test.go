package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain makes this test binary the tenxgraph binary when asked, so the
// tests below run the real program as a subprocess (and it can start its
// own plugins the same way).
func TestMain(m *testing.M) {
	// The providers the program starts get no TENXGRAPH_BE_MAIN (their
	// environment is default-deny): they are told apart by their arguments.
	if os.Getenv("TENXGRAPH_BE_MAIN") == "1" || len(os.Args) > 1 && os.Args[1] == "plugin" {
		main()
		return
	}
	code := m.Run()
	for _, f := range cleanups {
		f()
	}
	os.Exit(code)
}

// cleanups run once every test has.
var cleanups []func()

func tenxgraph(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TENXGRAPH_BE_MAIN=1")
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// The quickstart works as a newcomer runs it: no network, no key. The
// remote tool is answered on standard input, and the run resumes.
func TestQuickstartRun(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"10xgraph.json", "script.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o600)
	}
	out, errs, code := tenxgraph(t, "{\"text\": \"hello from stdin\"}\n", "run", "--config", filepath.Join(dir, "10xgraph.json"), "what is 2+3*4 and what is on my clipboard?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"running calculator (builtin)",
		"The model called the remote tool read_clipboard with {}.",
		"Result for read_clipboard (JSON or text; start with ! for an error)> ",
		"2+3*4 = 14. Your clipboard holds: hello from stdin",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".tenxgraph", "state.db")); err != nil {
		t.Errorf("the run did not use the embedded SQLite store: %v", err)
	}
	if out, _, code := tenxgraph(t, "", "version"); code != 0 || !strings.HasPrefix(out, "tenxgraph ") {
		t.Fatalf("version: %d %q", code, out)
	}
}
