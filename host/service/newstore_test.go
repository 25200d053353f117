package service

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/config"
)

// A SQLite store about to be created where the config expected one (no
// file, or an empty one) is logged as a warning naming the path; an
// existing store is not.
func TestWarnNewStore(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	full := filepath.Join(dir, "full.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte("SQLite format 3\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, want string
	}{
		{filepath.Join(dir, "missing.db"), "no SQLite file"},
		{empty, "empty (0 bytes)"},
		{full, ""},
	} {
		var buf bytes.Buffer
		warnNewStore(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info}), config.Checkpointer{Type: "sqlite", Path: c.path})
		out := buf.String()
		switch {
		case c.want == "" && out != "":
			t.Errorf("%s: logged %q for an existing store", c.path, out)
		case c.want != "" && (!strings.Contains(out, "[WARN]") || !strings.Contains(out, c.want) || !strings.Contains(out, c.path)):
			t.Errorf("%s: logged %q, want a warning saying %q and naming the path", c.path, out, c.want)
		}
	}
}
