package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// store compact deletes idle threads when asked and reports what it gave
// back; the threads written since stay.
func TestStoreCompact(t *testing.T) {
	cfg := quickstart(t)
	for _, thread := range []string{"a", "b"} {
		if code, out, errs := run(t, "", "run", "--config", cfg, "--thread", thread, "hello"); code != 0 {
			t.Fatalf("run: exit %d\n%s%s", code, out, errs)
		}
	}
	db := filepath.Join(filepath.Dir(cfg), ".tenxgraph", "state.db")
	if _, err := os.Stat(db); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "store", "compact", "--config", cfg)
	if code != 0 || !strings.Contains(out, "returned to the file system") || strings.Contains(out, "deleted") {
		t.Fatalf("store compact: exit %d\n%s%s", code, out, errs)
	}
	// Nothing is idle for an hour yet.
	code, out, errs = run(t, "", "store", "compact", "--config", cfg, "--delete-idle", "1h")
	if code != 0 || !strings.Contains(out, "deleted 0 thread(s)") {
		t.Fatalf("store compact --delete-idle 1h: exit %d\n%s%s", code, out, errs)
	}
	// An idle thread holding an image, as a client's run would leave it.
	s, err := checkpoint.OpenSQLite(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte("x"), 300<<10)
	if err := s.Put(context.Background(), checkpoint.Checkpoint{ThreadID: "pictures", Seq: 1, CreatedAt: time.Now().Add(-2 * time.Hour),
		Blobs: []checkpoint.Blob{{Ref: checkpoint.BlobRef(img), MimeType: "image/png", Size: int64(len(img)), Data: img}}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	code, out, errs = run(t, "", "store", "compact", "--config", cfg)
	if code != 0 || !strings.Contains(out, "media: 1 blob(s), 300.0 KiB, held by 1 thread link(s)") {
		t.Fatalf("store compact with a blob: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(t, "", "store", "compact", "--config", cfg, "--delete-idle", "1ns")
	if code != 0 || !strings.Contains(out, "deleted 3 thread(s)") || !strings.Contains(out, "media: 0 blob(s), 0 bytes, held by 0 thread link(s)") {
		t.Fatalf("store compact --delete-idle 1ns: exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"agent": "tenxgraph:react", "checkpointer": {"idle_ttl": 5}}`), 0o600)
	if code, out, errs := run(t, "", "store", "compact", "--config", bad); code == 0 || !strings.Contains(errs, "checkpointer.idle_ttl") {
		t.Fatalf("store compact with a bad config: exit %d\n%s%s", code, out, errs)
	}
}
