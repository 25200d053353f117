package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfine checks the path confinement of the file tools against the
// symlinks of makeTestLayout: confine never panics, refuses with a
// *pathError, and any path it accepts stays under the root, both as the
// model wrote it (symlinks resolved as the OS would) and as confine returns
// it (which must meet no symlink at all).
func FuzzConfine(f *testing.F) {
	root, outside := makeTestLayout(f)
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		f.Fatal(err)
	}
	realOutside, _ := filepath.EvalSymlinks(outside)
	w := &workspace{real: real}
	osRoot, err := os.OpenRoot(real)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { osRoot.Close() })

	for _, seed := range []string{
		"", ".", "..", "/", "a", "sub/a.txt", "./sub//a.txt", "sub/../top.txt", "../outside/secret.txt",
		"sub/../../x", "/etc/passwd", real + "/top.txt", "out_file", "out_dir/secret.txt", "out_dir/new/x",
		"sub/up_out/secret.txt", "sub/in_up/sub/in_up/out_dir", "in_dir/deeper/c.txt", "abs_link", "rel_link",
		"dangling", "sub/ring1/x", "sub/in_self/in_self/a.txt", "top.txt/x", "a\x00b", `..\x`, `C:\x`, "~/x",
		"sub/in_up/..", "in_dir/../..", "new/dir/file.txt",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := w.confine(p)
		if err != nil {
			var pe *pathError
			if !errors.As(err, &pe) {
				t.Fatalf("confine(%q): error %T %v, want a *pathError", p, err, err)
			}
			if strings.Contains(err.Error(), real) && !strings.Contains(p, real) {
				t.Fatalf("confine(%q): error reveals the root: %v", p, err)
			}
			return
		}
		if strings.IndexByte(p, 0) >= 0 || filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
			t.Fatalf("confine(%q) accepted a NUL byte or an absolute path: %q", p, rel)
		}
		if rel != "." && !filepath.IsLocal(rel) {
			t.Fatalf("confine(%q) = %q, not a local path", p, rel)
		}

		// The path as written, resolved as the OS resolves it: the deepest
		// existing part must lie under the root.
		if lex := filepath.Join(real, filepath.Clean(p)); !under(real, lex) {
			t.Fatalf("confine(%q) accepted a path that lexically leaves the root: %s", p, lex)
		}
		cur := filepath.Join(real, filepath.Clean(p))
		for cur != real {
			if _, err := os.Lstat(cur); err == nil {
				break
			}
			cur = filepath.Dir(cur)
		}
		resolved, err := filepath.EvalSymlinks(cur)
		if err != nil {
			t.Fatalf("confine(%q) = %q, but %s cannot be resolved: %v", p, rel, cur, err)
		}
		if !under(real, resolved) || under(realOutside, resolved) {
			t.Fatalf("confine(%q) = %q, but it resolves to %s, outside the root %s", p, rel, resolved, real)
		}

		// The returned path meets no symlink, so operating on it cannot be
		// redirected (and os.Root, which does the operations, agrees).
		prefix := real
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			if part == "." {
				continue
			}
			prefix = filepath.Join(prefix, part)
			fi, err := os.Lstat(prefix)
			if err != nil {
				break
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("confine(%q) = %q, which goes through the symlink %s", p, rel, prefix)
			}
		}
		if _, err := osRoot.Lstat(rel); err != nil && strings.Contains(err.Error(), "escapes") {
			t.Fatalf("confine(%q) = %q, which os.Root says escapes: %v", p, rel, err)
		}
	})
}

// under reports whether p is root or below it.
func under(root, p string) bool {
	r, err := filepath.Rel(root, p)
	return err == nil && (r == "." || filepath.IsLocal(r))
}
