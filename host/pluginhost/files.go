package pluginhost

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
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
// process (sandbox.HostDir), so that a host can tell its own sockets from
// those of a host that died.
func socketRoot() string {
	dir, err := sandbox.HostDir()
	if err != nil {
		return "" // go-plugin falls back to the system temp folder
	}
	return dir
}

// Cleanup removes this host's socket folder; call it when the host stops,
// after every plugin is shut down.
func Cleanup() { sandbox.Cleanup() }
