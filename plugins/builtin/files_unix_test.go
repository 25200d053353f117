//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestFileToolsRefuseSpecialFiles(t *testing.T) {
	w := newTestWS(t)
	if err := syscall.Mkfifo(filepath.Join(w.root, "pipe"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Opening a FIFO for reading would block until a writer came.
		w.fails(t, "read_file", map[string]any{"path": "pipe"}, `path "pipe" is not a regular file (it is a device, pipe or socket)`)
		w.fails(t, "write_file", map[string]any{"path": "pipe", "content": "x"}, `path "pipe" is not a regular file`)
		w.fails(t, "write_file", map[string]any{"path": "pipe", "content": "x", "append": true}, `path "pipe" is not a regular file`)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a file tool blocked on a FIFO")
	}
	var r listFilesResult
	w.ok(t, "list_files", map[string]any{}, &r)
	found := false
	for _, e := range r.Entries {
		if e.Path == "pipe" {
			found = e.Type == "other" && e.Size == nil
		}
	}
	if !found {
		t.Errorf("the FIFO is not listed as other: %+v", r.Entries)
	}
}

func TestWorkspaceRootRemoved(t *testing.T) {
	w := newTestWS(t)
	if err := os.RemoveAll(w.root); err != nil {
		t.Fatal(err)
	}
	w.fails(t, "list_files", map[string]any{}, "the workspace folder cannot be opened")
	w.fails(t, "write_file", map[string]any{"path": "x.txt", "content": "x"}, "the workspace folder cannot be opened")
}
