package builtin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// File tool limits.
const (
	defaultReadMaxBytes = 1 << 20
	maxReadMaxBytes     = 16 << 20
	maxWriteBytes       = 16 << 20
	defaultMaxEntries   = 1000
	maxMaxEntries       = 10000
)

// ---- read_file ----

const readFileDescription = `Read a file from the workspace folder and return its content. ` +
	`Use it to look at a file you know or found with list_files before you answer about it or change it. ` +
	`The path is relative to the workspace root, with "/" between folders (e.g. "notes/todo.md"); absolute paths, ".." above the root and symlinks leading out of the workspace are refused. ` +
	`Returns the path, the file's size in bytes and its content: text for UTF-8 files, or base64 with "encoding": "base64" for binary ones. ` +
	`At most max_bytes (default 1 MiB, up to 16 MiB) are returned; a longer file is cut and "truncated" is true.`

const readFileSchema = `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "The file's path relative to the workspace root, e.g. \"README.md\" or \"src/main.go\"."
    },
    "max_bytes": {
      "type": "integer",
      "minimum": 1,
      "maximum": 16777216,
      "description": "The most bytes of content to return (default 1048576, i.e. 1 MiB). A larger file is cut and \"truncated\" is true."
    }
  },
  "required": ["path"],
  "additionalProperties": false
}`

type readFileResult struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Content   string `json:"content"`
	Encoding  string `json:"encoding,omitempty"`
	Truncated bool   `json:"truncated"`
}

func readFileTool(w *workspace) sdk.Tool {
	return sdk.Func("read_file", readFileDescription, json.RawMessage(readFileSchema), func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var args struct {
			Path     *string `json:"path"`
			MaxBytes *int64  `json:"max_bytes"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		if args.Path == nil {
			return nil, errors.New(`missing "path": pass the file's path relative to the workspace root, e.g. {"path": "README.md"}`)
		}
		limit := int64(defaultReadMaxBytes)
		if args.MaxBytes != nil {
			if *args.MaxBytes < 1 || *args.MaxBytes > maxReadMaxBytes {
				return nil, fmt.Errorf("max_bytes %d is out of range: pass 1 to %d, or omit it for %d", *args.MaxBytes, maxReadMaxBytes, defaultReadMaxBytes)
			}
			limit = *args.MaxBytes
		}
		return w.readFile(*args.Path, limit)
	})
}

func (w *workspace) readFile(p string, limit int64) (any, error) {
	root, err := w.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rel, err := w.confine(p)
	if err != nil {
		return nil, err
	}
	// Stat before opening: opening a FIFO would block until a writer came.
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, fileError(p, err)
	}
	if err := checkReadable(p, fi); err != nil {
		return nil, err
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fileError(p, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, fileError(p, err)
	}
	if err := checkReadable(p, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileError(p, err)
	}
	truncated := int64(len(data)) > limit
	if truncated {
		data = data[:limit]
	}
	content, encoding := encodeContent(data, truncated)
	return readFileResult{Path: displayPath(p), Size: fi.Size(), Content: content, Encoding: encoding, Truncated: truncated}, nil
}

func checkReadable(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return &pathError{displayPath(p), "is a directory: use list_files to see what it contains"}
	case !fi.Mode().IsRegular():
		return &pathError{displayPath(p), "is not a regular file (it is a device, pipe or socket): only regular files can be read"}
	}
	return nil
}

// ---- write_file ----

const writeFileDescription = `Write text to a file in the workspace folder, creating the file or replacing its whole content, or appending to it with "append": true. ` +
	`Use it to save results, notes or code the user asked for; read the file first if you mean to change only part of it, and write the complete new content. ` +
	`The path is relative to the workspace root, with "/" between folders (e.g. "out/report.md"); absolute paths, ".." above the root and symlinks leading out of the workspace are refused. ` +
	`The parent folder must exist unless "create_dirs" is true. A replaced file is swapped in whole, so readers never see half of it. ` +
	`Content is at most 16 MiB of text. Returns the path, the bytes written and whether the file was created.`

const writeFileSchema = `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "description": "The file's path relative to the workspace root, e.g. \"notes/summary.md\". It must not be a directory."
    },
    "content": {
      "type": "string",
      "description": "The text to write (UTF-8). Without append, it becomes the file's entire content."
    },
    "append": {
      "type": "boolean",
      "default": false,
      "description": "true adds content at the end of the file (creating it if missing) instead of replacing the file."
    },
    "create_dirs": {
      "type": "boolean",
      "default": false,
      "description": "true creates missing parent folders; otherwise writing into a folder that does not exist fails."
    }
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

type writeFileResult struct {
	Path         string `json:"path"`
	BytesWritten int    `json:"bytes_written"`
	Created      bool   `json:"created"`
	Appended     bool   `json:"appended"`
}

func writeFileTool(w *workspace) sdk.Tool {
	return sdk.Func("write_file", writeFileDescription, json.RawMessage(writeFileSchema), func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var args struct {
			Path       *string `json:"path"`
			Content    *string `json:"content"`
			Append     bool    `json:"append"`
			CreateDirs bool    `json:"create_dirs"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		if args.Path == nil {
			return nil, errors.New(`missing "path": pass the file's path relative to the workspace root, e.g. {"path": "notes.md", "content": "..."}`)
		}
		if args.Content == nil {
			return nil, errors.New(`missing "content": pass the text to write (an empty string makes an empty file)`)
		}
		if len(*args.Content) > maxWriteBytes {
			return nil, fmt.Errorf("content is %d bytes; the limit is %d (16 MiB): write a smaller file, or several", len(*args.Content), maxWriteBytes)
		}
		return w.writeFile(*args.Path, *args.Content, args.Append, args.CreateDirs)
	})
}

func (w *workspace) writeFile(p, content string, appendTo, createDirs bool) (any, error) {
	root, err := w.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rel, err := w.confine(p)
	if err != nil {
		return nil, err
	}
	disp := displayPath(p)
	if rel == "." {
		return nil, &pathError{disp, "is the workspace root, a directory: pass a file path such as \"notes.md\""}
	}

	parent := filepath.Dir(rel)
	if createDirs {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("cannot create the folders of %q: %v", disp, describeFSError(err))
		}
	} else {
		fi, err := root.Stat(parent)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("cannot write %q: its folder %q does not exist; pass \"create_dirs\": true to create it", disp, relPath(filepath.Dir(filepath.Clean(p))))
		case err != nil:
			return nil, fileError(p, err)
		case !fi.IsDir():
			return nil, fmt.Errorf("cannot write %q: %q is a file, not a folder", disp, relPath(filepath.Dir(filepath.Clean(p))))
		}
	}

	existing, err := root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		existing = nil
	case err != nil:
		return nil, fileError(p, err)
	case existing.IsDir():
		return nil, &pathError{disp, "is a directory: write_file does not replace directories; choose a file path inside it"}
	case !existing.Mode().IsRegular():
		// confine resolved every symlink, so a symlink here appeared since.
		return nil, &pathError{disp, "is not a regular file (it is a device, pipe, socket or symlink): only regular files can be written"}
	}

	if appendTo {
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_APPEND|os.O_CREATE|openNoBlock, 0o644)
		if err != nil {
			return nil, fileError(p, err)
		}
		// Judge the file opened, not the path: a link or a special file
		// swapped in since the checks above is caught here, before a byte
		// is written.
		if err := checkOpenedForWrite(disp, f); err != nil {
			_ = f.Close()
			return nil, err
		}
		n, err := f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("appending to %q failed after %d bytes: %v", disp, n, describeFSError(err))
		}
		return writeFileResult{Path: disp, BytesWritten: n, Created: existing == nil, Appended: true}, nil
	}

	// A replace never writes into the existing file (the rename swaps the
	// directory entry), so judging its links by path cannot be raced into
	// writing outside; it is refused all the same, so a hard-linked file is
	// never changed by either mode.
	if existing != nil {
		n, err := statLinkCount(root, rel, existing)
		if err != nil {
			return nil, fileError(p, err)
		}
		if n > 1 {
			return nil, hardLinkError(disp, n)
		}
	}

	// Replace atomically: write a temporary file next to the target, then
	// rename it over the target. A replaced file keeps its permissions; a
	// new one gets 0644 (less the umask).
	tmp, f, err := createTemp(root, parent)
	if err != nil {
		return nil, fmt.Errorf("cannot write %q: creating a temporary file in its folder failed: %v", disp, describeFSError(err))
	}
	committed := false
	defer func() {
		if !committed {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if existing != nil {
		if err := f.Chmod(existing.Mode().Perm()); err != nil {
			return nil, fmt.Errorf("cannot write %q: %v", disp, describeFSError(err))
		}
	}
	n, err := f.WriteString(content)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("writing %q failed: %v", disp, describeFSError(err))
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("writing %q failed: %v", disp, describeFSError(err))
	}
	if err := root.Rename(tmp, rel); err != nil {
		_ = root.Remove(tmp)
		committed = true // closed and removed
		return nil, fmt.Errorf("cannot replace %q: %v", disp, describeFSError(err))
	}
	committed = true
	return writeFileResult{Path: disp, BytesWritten: n, Created: existing == nil}, nil
}

// checkOpenedForWrite refuses to write to f, just opened for writing as
// disp, unless it is a regular file with a single hard link. Another link
// may be a name outside the workspace (a hard link, unlike a symlink, cannot
// be told from the file itself), and writing would change that file too.
func checkOpenedForWrite(disp string, f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return &pathError{disp, "failed: " + describeFSError(err).Error()}
	}
	if !fi.Mode().IsRegular() {
		return &pathError{disp, "is not a regular file (it is a device, pipe, socket or symlink): only regular files can be written"}
	}
	n, err := linkCount(f)
	if err != nil {
		return &pathError{disp, "cannot be written: its hard links cannot be counted (" + err.Error() + ")"}
	}
	if n > 1 {
		return hardLinkError(disp, n)
	}
	return nil
}

func hardLinkError(disp string, n uint64) error {
	return &pathError{disp, fmt.Sprintf("has %d hard links: the file tools do not write to a file with other names, which may lie outside the workspace; write to a new file instead, or ask the user to copy this one", n)}
}

// createTemp creates a new, empty file in dir with a random name.
func createTemp(root *os.Root, dir string) (string, *os.File, error) {
	for range 10 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		name := filepath.Join(dir, ".tenxgraph-write-"+hex.EncodeToString(b[:])+".tmp")
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("no free temporary file name")
}

// ---- list_files ----

const listFilesDescription = `List the files and folders in a folder of the workspace, optionally with everything below it. ` +
	`Use it to find out which files exist before reading or writing them, instead of guessing paths. ` +
	`The path is relative to the workspace root ("." or omitted for the root itself, "src" for a folder); absolute paths, ".." above the root and symlinks leading out of the workspace are refused. ` +
	`Each entry has its path relative to the workspace root (ready to pass to read_file), its type ("file", "dir", "symlink" or "other") and, for files, its size in bytes. ` +
	`Entries are sorted by path, a folder's contents right after the folder. Symlinks are listed but not followed. ` +
	`At most max_entries entries are returned (default 1000); when there are more, "truncated" is true: list a subfolder, or without "recursive".`

const listFilesSchema = `{
  "type": "object",
  "properties": {
    "path": {
      "type": "string",
      "minLength": 1,
      "maxLength": 4096,
      "default": ".",
      "description": "The folder to list, relative to the workspace root, e.g. \"src\". Omit it, or pass \".\", for the workspace root."
    },
    "recursive": {
      "type": "boolean",
      "default": false,
      "description": "true lists everything below the folder, not only its direct contents."
    },
    "max_entries": {
      "type": "integer",
      "minimum": 1,
      "maximum": 10000,
      "description": "The most entries to return (default 1000)."
    }
  },
  "additionalProperties": false
}`

type listEntry struct {
	Path string `json:"path"`
	Type string `json:"type"`
	Size *int64 `json:"size,omitempty"`
}

type listFilesResult struct {
	Path      string      `json:"path"`
	Entries   []listEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

func listFilesTool(w *workspace) sdk.Tool {
	return sdk.Func("list_files", listFilesDescription, json.RawMessage(listFilesSchema), func(ctx context.Context, raw json.RawMessage) (any, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var args struct {
			Path       *string `json:"path"`
			Recursive  bool    `json:"recursive"`
			MaxEntries *int    `json:"max_entries"`
		}
		if err := decodeArgs(raw, &args); err != nil {
			return nil, err
		}
		p := "."
		if args.Path != nil {
			p = *args.Path
		}
		limit := defaultMaxEntries
		if args.MaxEntries != nil {
			if *args.MaxEntries < 1 || *args.MaxEntries > maxMaxEntries {
				return nil, fmt.Errorf("max_entries %d is out of range: pass 1 to %d, or omit it for %d", *args.MaxEntries, maxMaxEntries, defaultMaxEntries)
			}
			limit = *args.MaxEntries
		}
		return w.listFiles(ctx, p, args.Recursive, limit)
	})
}

func (w *workspace) listFiles(ctx context.Context, p string, recursive bool, limit int) (any, error) {
	root, err := w.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	rel, err := w.confine(p)
	if err != nil {
		return nil, err
	}
	disp := displayPath(p)
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, fileError(p, err)
	}
	if !fi.IsDir() {
		return nil, &pathError{disp, "is not a directory: use read_file to read a file"}
	}
	res := listFilesResult{Path: disp, Entries: []listEntry{}}
	// walk lists dir (a path for the os.Root) whose entries are shown under
	// shown (the path as the model wrote it). It returns false when the
	// listing must stop.
	var walk func(dir, shown string) (bool, error)
	walk = func(dir, shown string) (bool, error) {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		f, err := root.Open(dir)
		if err != nil {
			return false, fileError(shown, err)
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			return false, fileError(shown, err)
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range ents {
			if len(res.Entries) == limit {
				res.Truncated = true
				return false, nil
			}
			entry := listEntry{Path: path.Join(shown, e.Name()), Type: fileKind(e.Type())}
			if e.Type().IsRegular() {
				if info, err := e.Info(); err == nil {
					size := info.Size()
					entry.Size = &size
				}
			}
			res.Entries = append(res.Entries, entry)
			if recursive && e.IsDir() {
				more, err := walk(filepath.Join(dir, e.Name()), entry.Path)
				if err != nil || !more {
					return false, err
				}
			}
		}
		return true, nil
	}
	if _, err := walk(rel, disp); err != nil {
		return nil, err
	}
	return res, nil
}

// ---- shared ----

// displayPath is how a path the model gave is echoed: cleaned, with "/".
func displayPath(p string) string { return relPath(filepath.Clean(p)) }

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// fileError describes a failed file operation on p, the path as the model
// gave it, with what to do about the common cases.
func fileError(p string, err error) error {
	disp := displayPath(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &pathError{disp, "does not exist: check the path with list_files"}
	case errors.Is(err, syscall.ENOTDIR):
		return &pathError{disp, "goes through a file as if it were a folder: check the path with list_files"}
	case errors.Is(err, fs.ErrPermission):
		return &pathError{disp, "cannot be accessed: permission denied"}
	}
	return &pathError{disp, "failed: " + describeFSError(err).Error()}
}

// describeFSError drops the path from an *fs.PathError: the caller names
// the path as the model gave it.
func describeFSError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return fmt.Errorf("%s: %w", le.Op, le.Err)
	}
	return err
}
