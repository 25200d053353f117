package builtin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// testWorkspace lays out a workspace and a folder outside it:
//
//	root/sub/a.txt          "alpha\n"
//	root/sub/b.bin          binary
//	root/sub/deeper/c.txt   "charlie"
//	root/top.txt            "top"
//	root/rel_link     -> sub/a.txt           (relative, inside)
//	root/abs_link     -> <root>/sub/a.txt    (absolute, inside)
//	root/in_dir       -> sub                 (directory, inside)
//	root/out_file     -> <outside>/secret.txt
//	root/out_dir      -> <outside>
//	root/sub/up_out   -> ../../<outside base> (relative, climbs out)
//	root/dangling     -> <outside>/missing.txt
//	outside/secret.txt      "secret"
type testWS struct {
	root, outside string
	p             sdk.Provider
}

func newTestWS(t *testing.T) *testWS {
	t.Helper()
	root, outside := makeTestLayout(t)
	p, err := New(Options{Enable: []string{"read_file", "write_file", "list_files"}, WorkspaceRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	return &testWS{root: root, outside: outside, p: p}
}

// makeTestLayout makes the folders testWS describes.
func makeTestLayout(t testing.TB) (root, outside string) {
	t.Helper()
	parent := t.TempDir()
	root = filepath.Join(parent, "root")
	outside = filepath.Join(parent, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "sub", "deeper")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"root/sub/a.txt":        "alpha\n",
		"root/sub/b.bin":        "\x00\x01\x02\xff",
		"root/sub/deeper/c.txt": "charlie",
		"root/top.txt":          "top",
		"outside/secret.txt":    "secret",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(parent, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"root/rel_link":    filepath.Join("sub", "a.txt"),
		"root/abs_link":    filepath.Join(root, "sub", "a.txt"),
		"root/in_dir":      "sub",
		"root/out_file":    filepath.Join(outside, "secret.txt"),
		"root/out_dir":     outside,
		"root/sub/up_out":  filepath.Join("..", "..", "outside"),
		"root/dangling":    filepath.Join(outside, "missing.txt"),
		"root/sub/ring1":   "ring2",
		"root/sub/ring2":   "ring1",
		"root/sub/in_up":   "..",
		"root/sub/in_self": ".",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(parent, name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	return root, outside
}

// call runs a tool and returns its JSON result, or its error message.
func (w *testWS) call(t *testing.T, tool string, args any) (json.RawMessage, string) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.p.CallTool(context.Background(), sdk.CallToolRequest{Name: tool, Arguments: raw})
	if err != nil {
		t.Fatalf("%s: call failed outright: %v", tool, err)
	}
	if resp.IsError {
		var msg string
		if err := json.Unmarshal(resp.Content, &msg); err != nil {
			t.Fatal(err)
		}
		// No message may reveal where the workspace or anything else is,
		// unless the model itself wrote it.
		if !bytes.Contains(raw, []byte(filepath.Dir(w.root))) && (strings.Contains(msg, w.root) || strings.Contains(msg, w.outside)) {
			t.Errorf("%s: error message reveals a host path: %s", tool, msg)
		}
		return nil, msg
	}
	return resp.Content, ""
}

func (w *testWS) ok(t *testing.T, tool string, args, out any) {
	t.Helper()
	raw, msg := w.call(t, tool, args)
	if msg != "" {
		t.Fatalf("%s %v: error result %s", tool, args, msg)
	}
	reflect.ValueOf(out).Elem().SetZero() // decode into a fresh value
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

func (w *testWS) fails(t *testing.T, tool string, args any, want ...string) {
	t.Helper()
	_, msg := w.call(t, tool, args)
	if msg == "" {
		t.Errorf("%s %v succeeded; want an error containing %q", tool, args, want)
		return
	}
	for _, s := range want {
		if !strings.Contains(msg, s) {
			t.Errorf("%s %v: error %q does not contain %q", tool, args, msg, s)
		}
	}
}

// checkOutsideUntouched fails if anything outside the workspace changed.
func (w *testWS) checkOutsideUntouched(t *testing.T) {
	t.Helper()
	ents, err := os.ReadDir(w.outside)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "secret.txt" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("the folder outside the workspace now holds %v", names)
	}
	if b, _ := os.ReadFile(filepath.Join(w.outside, "secret.txt")); string(b) != "secret" {
		t.Errorf("the file outside the workspace now holds %q", b)
	}
	parentEnts, _ := os.ReadDir(filepath.Dir(w.root))
	if len(parentEnts) != 2 {
		t.Errorf("the workspace's parent folder holds %d entries, want 2", len(parentEnts))
	}
}

func TestReadFile(t *testing.T) {
	w := newTestWS(t)
	var r readFileResult
	w.ok(t, "read_file", map[string]any{"path": "sub/a.txt"}, &r)
	if r != (readFileResult{Path: "sub/a.txt", Size: 6, Content: "alpha\n"}) {
		t.Errorf("got %+v", r)
	}
	// Symlinks that stay inside the workspace are followed, absolute or not.
	for _, p := range []string{"rel_link", "abs_link", "in_dir/a.txt", "sub/in_up/sub/a.txt", "./sub//in_self/a.txt", "sub/../sub/a.txt"} {
		var r readFileResult
		w.ok(t, "read_file", map[string]any{"path": p}, &r)
		if r.Content != "alpha\n" {
			t.Errorf("%s: got %+v", p, r)
		}
	}
	// Truncation.
	w.ok(t, "read_file", map[string]any{"path": "sub/deeper/c.txt", "max_bytes": 4}, &r)
	if r != (readFileResult{Path: "sub/deeper/c.txt", Size: 7, Content: "char", Truncated: true}) {
		t.Errorf("truncated: %+v", r)
	}
	w.ok(t, "read_file", map[string]any{"path": "sub/deeper/c.txt", "max_bytes": 7}, &r)
	if r.Truncated || r.Content != "charlie" {
		t.Errorf("max_bytes equal to the size: %+v", r)
	}
	// Binary content.
	w.ok(t, "read_file", map[string]any{"path": "sub/b.bin"}, &r)
	if got, _ := base64.StdEncoding.DecodeString(r.Content); r.Encoding != "base64" || !bytes.Equal(got, []byte("\x00\x01\x02\xff")) {
		t.Errorf("binary: %+v", r)
	}

	w.fails(t, "read_file", map[string]any{"path": "sub"}, `path "sub" is a directory`, "list_files")
	w.fails(t, "read_file", map[string]any{"path": "sub/nope.txt"}, `path "sub/nope.txt" does not exist`)
	w.fails(t, "read_file", map[string]any{"path": "top.txt/x"}, `path "top.txt/x"`)
	w.fails(t, "read_file", map[string]any{"path": "sub/a.txt", "max_bytes": 0}, "max_bytes 0 is out of range")
	w.fails(t, "read_file", map[string]any{"path": "sub/a.txt", "max_bytes": 16<<20 + 1}, "out of range")
	w.fails(t, "read_file", map[string]any{}, `missing "path"`)
}

func TestReadFileEscapes(t *testing.T) {
	w := newTestWS(t)
	cases := map[string]string{
		"../outside/secret.txt":          `path "../outside/secret.txt" leaves the workspace`,
		"sub/../../outside/secret.txt":   "leaves the workspace",
		"..":                             "leaves the workspace",
		"/etc/passwd":                    `path "/etc/passwd" is absolute`,
		filepath.Join(w.root, "top.txt"): "is absolute",
		"out_file":                       `path "out_file" leads outside the workspace through a symlink`,
		"out_dir/secret.txt":             `path "out_dir/secret.txt" leads outside the workspace`,
		"sub/up_out/secret.txt":          "leads outside the workspace",
		"dangling":                       `path "dangling" goes through a symlink that cannot be followed`,
		"sub/ring1":                      "cannot be followed",
		"sub/a.txt\x00":                  "NUL byte",
		"":                               "is empty",
	}
	for p, want := range cases {
		var r readFileResult
		raw, msg := w.call(t, "read_file", map[string]any{"path": p})
		if msg == "" {
			_ = json.Unmarshal(raw, &r)
			t.Errorf("read_file %q succeeded: %+v", p, r)
			continue
		}
		if !strings.Contains(msg, want) {
			t.Errorf("read_file %q: error %q does not contain %q", p, msg, want)
		}
	}
}

func TestWriteFile(t *testing.T) {
	w := newTestWS(t)
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(w.root, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	var r writeFileResult
	w.ok(t, "write_file", map[string]any{"path": "new.txt", "content": "hello"}, &r)
	if r != (writeFileResult{Path: "new.txt", BytesWritten: 5, Created: true}) || read("new.txt") != "hello" {
		t.Errorf("create: %+v, %q", r, read("new.txt"))
	}
	fi, err := os.Stat(filepath.Join(w.root, "new.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&^0o644 != 0 || perm&0o600 != 0o600 {
		t.Errorf("new file mode %v, want 0644 less the umask", perm)
	}

	// Replace: the content is swapped whole and the mode kept.
	if err := os.Chmod(filepath.Join(w.root, "new.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.ok(t, "write_file", map[string]any{"path": "new.txt", "content": "bye"}, &r)
	if r.Created || read("new.txt") != "bye" {
		t.Errorf("replace: %+v, %q", r, read("new.txt"))
	}
	if fi, _ := os.Stat(filepath.Join(w.root, "new.txt")); fi.Mode().Perm() != 0o600 {
		t.Errorf("replaced file mode %v, want the original 0600", fi.Mode().Perm())
	}

	// Append, to an existing file and to a new one.
	w.ok(t, "write_file", map[string]any{"path": "new.txt", "content": " again", "append": true}, &r)
	if r != (writeFileResult{Path: "new.txt", BytesWritten: 6, Appended: true}) || read("new.txt") != "bye again" {
		t.Errorf("append: %+v, %q", r, read("new.txt"))
	}
	w.ok(t, "write_file", map[string]any{"path": "log.txt", "content": "1\n", "append": true}, &r)
	w.ok(t, "write_file", map[string]any{"path": "log.txt", "content": "2\n", "append": true}, &r)
	if read("log.txt") != "1\n2\n" {
		t.Errorf("append twice: %q", read("log.txt"))
	}

	// Folders.
	w.fails(t, "write_file", map[string]any{"path": "a/b/c.txt", "content": "x"}, `its folder "a/b" does not exist`, `"create_dirs": true`)
	w.ok(t, "write_file", map[string]any{"path": "a/b/c.txt", "content": "x", "create_dirs": true}, &r)
	if r.Path != "a/b/c.txt" || read("a/b/c.txt") != "x" {
		t.Errorf("create_dirs: %+v", r)
	}
	w.fails(t, "write_file", map[string]any{"path": "top.txt/x.txt", "content": "x"}, `"top.txt" is a file, not a folder`)
	w.fails(t, "write_file", map[string]any{"path": "top.txt/x.txt", "content": "x", "create_dirs": true}, `cannot create the folders of "top.txt/x.txt"`)
	w.fails(t, "write_file", map[string]any{"path": "sub", "content": "x"}, `path "sub" is a directory`)
	w.fails(t, "write_file", map[string]any{"path": "in_dir", "content": "x"}, `path "in_dir" is a directory`)
	w.fails(t, "write_file", map[string]any{"path": ".", "content": "x"}, "is the workspace root")
	w.fails(t, "write_file", map[string]any{"path": "x.txt"}, `missing "content"`)
	if _, err := os.Stat(filepath.Join(w.root, "sub", "deeper")); err != nil {
		t.Errorf("a directory was replaced: %v", err)
	}

	// Writing through a symlink that stays inside writes its target and
	// keeps the link.
	w.ok(t, "write_file", map[string]any{"path": "rel_link", "content": "via link"}, &r)
	if read("sub/a.txt") != "via link" {
		t.Errorf("target holds %q", read("sub/a.txt"))
	}
	if fi, err := os.Lstat(filepath.Join(w.root, "rel_link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was replaced: %v %v", fi.Mode(), err)
	}
	w.ok(t, "write_file", map[string]any{"path": "in_dir/new_in_sub.txt", "content": "s"}, &r)
	if read("sub/new_in_sub.txt") != "s" || r.Path != "in_dir/new_in_sub.txt" {
		t.Errorf("write through a directory link: %+v", r)
	}

	// No temporary file is left behind.
	filepath.WalkDir(w.root, func(p string, d os.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tenxgraph-write-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
	w.checkOutsideUntouched(t)
}

func TestWriteFileEscapes(t *testing.T) {
	w := newTestWS(t)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"path": "../evil.txt", "content": "x"}, `path "../evil.txt" leaves the workspace`},
		{map[string]any{"path": "../outside/secret.txt", "content": "x", "append": true}, "leaves the workspace"},
		{map[string]any{"path": "sub/../../evil.txt", "content": "x", "create_dirs": true}, "leaves the workspace"},
		{map[string]any{"path": filepath.Join(w.outside, "secret.txt"), "content": "x"}, "is absolute"},
		{map[string]any{"path": "/tmp/evil.txt", "content": "x"}, `path "/tmp/evil.txt" is absolute`},
		{map[string]any{"path": "out_file", "content": "x"}, `path "out_file" leads outside the workspace through a symlink`},
		{map[string]any{"path": "out_file", "content": "x", "append": true}, "leads outside the workspace"},
		{map[string]any{"path": "out_dir/secret.txt", "content": "x"}, "leads outside the workspace"},
		{map[string]any{"path": "out_dir/new.txt", "content": "x"}, `path "out_dir/new.txt" leads outside the workspace`},
		{map[string]any{"path": "out_dir/d/new.txt", "content": "x", "create_dirs": true}, "leads outside the workspace"},
		{map[string]any{"path": "sub/up_out/new.txt", "content": "x"}, "leads outside the workspace"},
		{map[string]any{"path": "dangling", "content": "x"}, `path "dangling" goes through a symlink that cannot be followed`},
		{map[string]any{"path": "dangling", "content": "x", "append": true}, "cannot be followed"},
		{map[string]any{"path": "new\x00.txt", "content": "x"}, "NUL byte"},
	}
	for _, c := range cases {
		w.fails(t, "write_file", c.args, c.want)
	}
	w.checkOutsideUntouched(t)
}

func TestListFiles(t *testing.T) {
	w := newTestWS(t)
	type entry = listEntry
	size := func(n int64) *int64 { return &n }
	var r listFilesResult
	w.ok(t, "list_files", map[string]any{}, &r)
	want := []entry{
		{Path: "abs_link", Type: "symlink"},
		{Path: "dangling", Type: "symlink"},
		{Path: "in_dir", Type: "symlink"},
		{Path: "out_dir", Type: "symlink"},
		{Path: "out_file", Type: "symlink"},
		{Path: "rel_link", Type: "symlink"},
		{Path: "sub", Type: "dir"},
		{Path: "top.txt", Type: "file", Size: size(3)},
	}
	checkEntries(t, "root", r, ".", want, false)

	w.ok(t, "list_files", map[string]any{"path": "sub", "recursive": true}, &r)
	want = []entry{
		{Path: "sub/a.txt", Type: "file", Size: size(6)},
		{Path: "sub/b.bin", Type: "file", Size: size(4)},
		{Path: "sub/deeper", Type: "dir"},
		{Path: "sub/deeper/c.txt", Type: "file", Size: size(7)},
		{Path: "sub/in_self", Type: "symlink"},
		{Path: "sub/in_up", Type: "symlink"},
		{Path: "sub/ring1", Type: "symlink"},
		{Path: "sub/ring2", Type: "symlink"},
		{Path: "sub/up_out", Type: "symlink"},
	}
	checkEntries(t, "sub recursive", r, "sub", want, false)

	// The whole tree: symlinked folders are not entered, so nothing outside
	// shows, and nothing shows twice.
	w.ok(t, "list_files", map[string]any{"recursive": true}, &r)
	if len(r.Entries) != 17 || r.Truncated {
		t.Errorf("recursive root listing has %d entries (truncated %v), want 17: %+v", len(r.Entries), r.Truncated, r.Entries)
	}
	for _, e := range r.Entries {
		if strings.Contains(e.Path, "secret") {
			t.Errorf("listing shows %s from outside the workspace", e.Path)
		}
	}
	// A folder's contents come right after it.
	if r.Entries[6].Path != "sub" || r.Entries[7].Path != "sub/a.txt" || r.Entries[16].Path != "top.txt" {
		t.Errorf("recursive order: %+v", r.Entries)
	}

	// A symlinked folder inside the workspace can be listed, under its own name.
	w.ok(t, "list_files", map[string]any{"path": "in_dir/deeper"}, &r)
	checkEntries(t, "in_dir/deeper", r, "in_dir/deeper", []entry{{Path: "in_dir/deeper/c.txt", Type: "file", Size: size(7)}}, false)

	// max_entries.
	w.ok(t, "list_files", map[string]any{"recursive": true, "max_entries": 8}, &r)
	if len(r.Entries) != 8 || !r.Truncated || r.Entries[7].Path != "sub/a.txt" {
		t.Errorf("max_entries 8: %+v", r)
	}
	w.ok(t, "list_files", map[string]any{"path": "sub/deeper", "max_entries": 1}, &r)
	if len(r.Entries) != 1 || r.Truncated {
		t.Errorf("exactly max_entries is not truncated: %+v", r)
	}

	w.fails(t, "list_files", map[string]any{"path": "out_dir"}, `path "out_dir" leads outside the workspace through a symlink`)
	w.fails(t, "list_files", map[string]any{"path": "sub/up_out"}, "leads outside the workspace")
	w.fails(t, "list_files", map[string]any{"path": ".."}, "leaves the workspace")
	w.fails(t, "list_files", map[string]any{"path": "/"}, "is absolute")
	w.fails(t, "list_files", map[string]any{"path": "top.txt"}, `path "top.txt" is not a directory`, "read_file")
	w.fails(t, "list_files", map[string]any{"path": "missing"}, `path "missing" does not exist`)
	w.fails(t, "list_files", map[string]any{"path": "sub\x00"}, "NUL byte")
	w.fails(t, "list_files", map[string]any{"max_entries": 0}, "max_entries 0 is out of range")
}

func checkEntries(t *testing.T, what string, r listFilesResult, path string, want []listEntry, truncated bool) {
	t.Helper()
	got, _ := json.Marshal(r)
	exp, _ := json.Marshal(listFilesResult{Path: path, Entries: want, Truncated: truncated})
	if string(got) != string(exp) {
		t.Errorf("%s:\n got %s\nwant %s", what, got, exp)
	}
}

func TestWorkspaceRootThroughSymlink(t *testing.T) {
	// The root itself may be reached through a symlink (as /tmp is on
	// macOS); paths are still confined to the real folder.
	parent := t.TempDir()
	real := filepath.Join(parent, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(parent, "alias")); err != nil {
		t.Skip(err)
	}
	p, err := New(Options{Enable: []string{"write_file", "read_file"}, WorkspaceRoot: filepath.Join(parent, "alias")})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.CallTool(context.Background(), sdk.CallToolRequest{Name: "write_file", Arguments: json.RawMessage(`{"path": "f.txt", "content": "ok"}`)})
	if err != nil || resp.IsError {
		t.Fatalf("%s %v", resp.Content, err)
	}
	if b, err := os.ReadFile(filepath.Join(real, "f.txt")); err != nil || string(b) != "ok" {
		t.Errorf("%q %v", b, err)
	}
	resp, _ = p.CallTool(context.Background(), sdk.CallToolRequest{Name: "read_file", Arguments: json.RawMessage(`{"path": "../real/f.txt"}`)})
	if !resp.IsError {
		t.Errorf("../real/f.txt was read: %s", resp.Content)
	}
}
