//go:build unix

package builtin

import (
	"os"
	"path/filepath"
	"strings"
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

// TestWriteRefusesHardLinks plants hard links in the workspace, to a file
// outside it and to another file inside it, and checks that no way of
// writing goes through them, and that nothing changes when refused.
func TestWriteRefusesHardLinks(t *testing.T) {
	w := newTestWS(t)
	secret := filepath.Join(w.outside, "secret.txt")
	if err := os.Link(secret, filepath.Join(w.root, "planted.txt")); err != nil {
		t.Skipf("hard links unavailable: %v", err)
	}
	inside := filepath.Join(w.root, "sub", "deeper", "c_again.txt")
	if err := os.Link(filepath.Join(w.root, "sub", "deeper", "c.txt"), inside); err != nil {
		t.Fatal(err)
	}
	writes := []map[string]any{
		{"content": "pwned"},
		{"content": "pwned", "append": true},
		{"content": "pwned", "create_dirs": true},
		{"content": "pwned", "append": true, "create_dirs": true},
	}
	for _, path := range []string{"planted.txt", "./sub/../planted.txt", "sub/deeper/c_again.txt", "in_dir/deeper/c.txt"} {
		for _, args := range writes {
			args["path"] = path
			w.fails(t, "write_file", args, "has 2 hard links", "the file tools do not write to a file with other names")
		}
	}
	w.checkOutsideUntouched(t)
	for name, want := range map[string]string{"planted.txt": "secret", "sub/deeper/c.txt": "charlie", "sub/deeper/c_again.txt": "charlie"} {
		if b, err := os.ReadFile(filepath.Join(w.root, name)); err != nil || string(b) != want {
			t.Errorf("%s now holds %q (%v), want %q", name, b, err, want)
		}
	}
	// No temporary file was left behind.
	for _, dir := range []string{w.root, filepath.Join(w.root, "sub", "deeper")} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if filepath.Ext(e.Name()) == ".tmp" {
				t.Errorf("a temporary file was left: %s", e.Name())
			}
		}
	}

	// Once the other name is gone, the file is the workspace's alone again.
	if err := os.Remove(inside); err != nil {
		t.Fatal(err)
	}
	var r writeFileResult
	w.ok(t, "write_file", map[string]any{"path": "sub/deeper/c.txt", "content": "!", "append": true}, &r)
	w.ok(t, "write_file", map[string]any{"path": "sub/deeper/c.txt", "content": "delta"}, &r)
	if b, _ := os.ReadFile(filepath.Join(w.root, "sub", "deeper", "c.txt")); string(b) != "delta" {
		t.Errorf("c.txt holds %q, want \"delta\"", b)
	}
}

// TestCheckOpenedForWriteUsesTheDescriptor checks that the link count an
// append relies on is the opened file's: a link made after the path was
// checked and the file opened is still caught before anything is written.
func TestCheckOpenedForWriteUsesTheDescriptor(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "f.txt")
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := checkOpenedForWrite("f.txt", f); err != nil {
		t.Fatalf("a file with one link: %v", err)
	}
	if err := os.Link(name, filepath.Join(dir, "other.txt")); err != nil {
		t.Skipf("hard links unavailable: %v", err)
	}
	// The path is renamed away: only the descriptor still names the file.
	if err := os.Rename(name, filepath.Join(dir, "moved.txt")); err != nil {
		t.Fatal(err)
	}
	err = checkOpenedForWrite("f.txt", f)
	if err == nil || !strings.Contains(err.Error(), `path "f.txt" has 2 hard links`) {
		t.Errorf("after a second link: %v", err)
	}
}
