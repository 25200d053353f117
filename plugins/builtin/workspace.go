package builtin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// workspace is the folder the file tools are confined to.
//
// Confinement has two layers. confine checks every path first: it must be
// relative, must not climb out with "..", and, once every symlink that
// exists along it is resolved, must still be inside the root; it yields the
// resolved path, so the operation itself meets no symlink. The operation then
// runs through an os.Root opened on the root, which refuses by construction
// any access that would leave it, so a symlink swapped in between the check
// and the use (by another process; no tool creates symlinks) still cannot
// lead outside.
type workspace struct {
	// real is the absolute root with its own symlinks resolved; every
	// resolved path is compared against it.
	real string
}

// newWorkspace checks the configured root: it must be given, exist and be a
// directory, and not be the file system's root.
func newWorkspace(root string, enabled []string) (*workspace, []string) {
	tools := strings.Join(enabled, ", ")
	if strings.TrimSpace(root) == "" {
		return nil, []string{fmt.Sprintf("workspace_root is empty: %s is enabled, and the file tools work only inside that folder; set it to an existing directory", tools)}
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, []string{fmt.Sprintf("workspace_root %q: %v", root, err)}
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, []string{fmt.Sprintf("workspace_root %q does not exist: create the folder first (the file tools never create it)", root)}
		}
		return nil, []string{fmt.Sprintf("workspace_root %q cannot be resolved: %v", root, err)}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, []string{fmt.Sprintf("workspace_root %q: %v", root, err)}
	}
	if !fi.IsDir() {
		return nil, []string{fmt.Sprintf("workspace_root %q is not a directory", root)}
	}
	if filepath.Dir(real) == real {
		return nil, []string{fmt.Sprintf("workspace_root %q is the root of the file system: choose a folder set aside for the agent", root)}
	}
	return &workspace{real: real}, nil
}

var errWorkspaceGone = errors.New("the workspace folder cannot be opened; it may have been removed or its permissions changed: tell the user")

// open opens the root for one call. Opening per call, rather than once,
// keeps no descriptor for the provider's lifetime.
func (w *workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.real)
	if err != nil {
		return nil, errWorkspaceGone
	}
	return r, nil
}

// pathError is a path the file tools refuse; its message names the path as
// the model gave it (relative to the root) and never the host's absolute
// paths.
type pathError struct {
	path string
	msg  string
}

func (e *pathError) Error() string { return fmt.Sprintf("path %q %s", e.path, e.msg) }

// confine maps p, a path relative to the workspace root as a model wrote it,
// to the path to use with the os.Root: cleaned, with every existing symlink
// along it resolved, relative to the root, in the OS's separators ("." for
// the root itself). It refuses NUL bytes, absolute paths, paths that climb
// out with "..", and paths that leave the root through a symlink, as well
// as paths through a symlink that cannot be resolved (dangling or looping),
// since where it would lead once its target appears cannot be checked now.
//
// ".." is resolved lexically, before symlinks, as filepath.Clean does:
// "a/../b" is "b" whatever a is.
func (w *workspace) confine(p string) (string, error) {
	switch {
	case p == "":
		return "", &pathError{p, "is empty: pass a path relative to the workspace root, such as \"notes/todo.md\", or \".\" for the root"}
	case strings.IndexByte(p, 0) >= 0:
		return "", &pathError{p, "contains a NUL byte, which no file name can hold"}
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return "", &pathError{p, "is absolute: paths are relative to the workspace root, such as \"notes/todo.md\"; the root itself is \".\""}
	}
	clean := filepath.Clean(p)
	if clean != "." && !filepath.IsLocal(clean) {
		return "", &pathError{p, "leaves the workspace: paths must stay inside the workspace root, so \"..\" may not climb above it"}
	}

	// Find the deepest part of the path that exists (a dangling symlink
	// counts: it is there, it just points nowhere), resolve its symlinks,
	// and check that it is still inside the root. The parts below it do not
	// exist, so they hold no symlink.
	cur, rest := filepath.Join(w.real, clean), ""
	for cur != w.real {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = filepath.Dir(cur)
	}
	resolved, err := filepath.EvalSymlinks(cur)
	if err != nil {
		if _, rerr := os.Stat(w.real); rerr != nil {
			return "", errWorkspaceGone
		}
		return "", &pathError{p, "goes through a symlink that cannot be followed (its target is missing, or it loops): the file tools do not use such links"}
	}
	rel, err := filepath.Rel(w.real, resolved)
	if err != nil || (rel != "." && !filepath.IsLocal(rel)) {
		return "", &pathError{p, "leads outside the workspace through a symlink: the file tools only follow symlinks that stay inside the workspace root"}
	}
	return filepath.Join(rel, rest), nil
}

// relPath turns a path from confine back into the slash-separated form the
// tools return.
func relPath(p string) string { return filepath.ToSlash(p) }
