package checkpoint

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file whose pages are corrupted is refused at open, naming the problem,
// instead of opening and failing every call later.
func TestSQLiteCorruptFileRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		cp := Checkpoint{ThreadID: "t" + strings.Repeat("x", i), Seq: 1, RunID: "r", Status: StatusCompleted, State: []byte(`{"s":"` + strings.Repeat("y", 3000) + `"}`)}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 8*4096 {
		t.Fatalf("the database is %d bytes, too small to corrupt a page of", len(data))
	}
	for i := 2 * 4096; i < 6*4096; i++ { // pages 3 to 6; the header page stays
		data[i] = 0xA5
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenSQLite(ctx, path); err == nil {
		s.Close()
		t.Fatal("a corrupted file opened")
	} else if !strings.Contains(err.Error(), "corrupt") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q should say the file at its path is corrupt", err)
	}
}
