package pluginhost

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// verified caches the hashes of binaries already checked, by path, size and
// modification time, so a large plugin is not re-hashed at every restart.
var (
	verifiedMu sync.Mutex
	verified   = map[string]string{}
)

// verify refuses a binary whose sha256 is not want.
func verify(path, want string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("verify %s: %w", path, err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	verifiedMu.Lock()
	got, ok := verified[key]
	verifiedMu.Unlock()
	if !ok {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("verify %s: %w", path, err)
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("verify %s: %w", path, err)
		}
		got = hex.EncodeToString(h.Sum(nil))
		verifiedMu.Lock()
		verified[key] = got
		verifiedMu.Unlock()
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(strings.ToLower(want))) != 1 {
		return fmt.Errorf("refusing to run %s: its sha256 is %s but the config pins %s; if you rebuilt the plugin on purpose, update plugins[].sha256 (sha256sum %s)", path, got, strings.ToLower(want), path)
	}
	return nil
}

// socketRoot is the folder this host's plugin sockets go in, one per host
// process, so a host can tell its own sockets from those of a host that
// died. The first call also removes the folders of hosts that are gone.
func socketRoot() string {
	base := filepath.Join(os.TempDir(), "tenxgraph-"+strconv.Itoa(os.Getuid()))
	dir := filepath.Join(base, "host-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "" // go-plugin falls back to the system temp folder
	}
	sweepOnce.Do(func() { sweep(base) })
	return dir
}

var sweepOnce sync.Once

// sweep removes socket folders left by hosts that no longer run (a host
// killed with SIGKILL cannot clean up after itself).
func sweep(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "host-"))
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Second {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// Cleanup removes this host's socket folder; call it when the host stops,
// after every plugin is shut down.
func Cleanup() {
	_ = os.RemoveAll(filepath.Join(os.TempDir(), "tenxgraph-"+strconv.Itoa(os.Getuid()), "host-"+strconv.Itoa(os.Getpid())))
}
