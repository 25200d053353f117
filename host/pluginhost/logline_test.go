package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
)

// A plugin's JSON log lines are filed at their level whichever common form
// their timestamp takes (RFC 3339 with Z or +00:00, or strftime's +0000),
// with other languages' level names; and fields of the wrong type, which
// go-plugin's client would panic on, do not take the host down.
func TestPluginLogLinesInCommonForms(t *testing.T) {
	script := filepath.Join(t.TempDir(), "logger")
	lines := []string{
		`{"@level":"info","@message":"zulu time","@timestamp":"2026-05-01T12:00:00Z"}`,
		`{"@level":"WARNING","@message":"colon offset","@timestamp":"2026-05-01T14:00:00.5+02:00","city":"Paris"}`,
		`{"@level":"error","@message":"strftime offset","@timestamp":"2026-05-01T12:00:00+0000"}`,
		`{"@level":"critical","@message":"python critical","@timestamp":"2026-05-01T12:00:00.123456+00:00"}`,
		`{"@level":"info","@message":5,"@timestamp":7}`,
		`{"@level":["x"],"@message":"a level that is not a string"}`,
		`not json at all`,
	}
	body := "#!/bin/sh\n"
	for _, l := range lines {
		body += "echo '" + l + "' >&2\necho >&2\n" // blank lines between, as in a Go panic
	}
	body += "exit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	l := &logs{}
	_, err := pluginhost.Start(context.Background(), pluginhost.Config{Name: "logger", Command: []string{script},
		Logger: hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Debug})})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("a script that exits at once: %v", err)
	}
	if strings.Contains(err.Error(), ").;") || strings.Contains(err.Error(), "|  |") {
		t.Errorf("the start error has a stray period or blank lines: %v", err)
	}
	want := map[string][]string{
		"zulu time":                    {"[INFO]", "timestamp=2026-05-01T12:00:00.000Z"},
		"colon offset":                 {"[WARN]", `timestamp="2026-05-01T14:00:00.500+0200"`, "city=Paris"},
		"strftime offset":              {"[ERROR]", "timestamp=2026-05-01T12:00:00.000Z"},
		"python critical":              {"[ERROR]", "timestamp=2026-05-01T12:00:00.123Z"},
		"a level that is not a string": {"[DEBUG]"},
		"not json at all":              {"[DEBUG]"},
	}
	deadline := time.Now().Add(10 * time.Second)
	for msg, parts := range want {
		var line string
		for line == "" {
			for _, ln := range strings.Split(l.String(), "\n") {
				if strings.Contains(ln, msg) {
					line = ln
				}
			}
			if line == "" {
				if time.Now().After(deadline) {
					t.Fatalf("no line %q in the host's log:\n%s", msg, l)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		for _, p := range parts {
			if !strings.Contains(line, p) {
				t.Errorf("the line of %q lacks %q: %s", msg, p, line)
			}
		}
	}
}
