package sandbox

import (
	"bufio"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is a cgroup made for one process, with the pids controller: its
// pids.max bounds the process and everything it starts, and it lets Kill
// reach descendants that left the process group.
type cgroup struct {
	dir string
	v2  bool
}

var cgroupSeq atomic.Uint64

// newCgroup makes a cgroup for one process under this host's own, in the
// unified hierarchy when the pids controller is delegated there, else in
// the v1 pids hierarchy.
func newCgroup(name string, pids int64) (*cgroup, error) {
	parent, v2, err := pidsParent()
	if err != nil {
		return nil, err
	}
	var salt [4]byte
	_, _ = rand.Read(salt[:])
	// The pid alone is not unique: a process that is the init of a PID
	// namespace of its own (the MCP bridge) is pid 1.
	dir := filepath.Join(parent, fmt.Sprintf("tenxgraph-%d-%x-%s-%d", os.Getpid(), salt, safeName(name), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make cgroup %s: %w", dir, err)
	}
	cg := &cgroup{dir: dir, v2: v2}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatInt(pids, 10)), 0); err != nil {
		cg.remove()
		return nil, fmt.Errorf("set pids.max in %s: %w", dir, err)
	}
	return cg, nil
}

// pidsParent finds the cgroup folder under which this process may make
// cgroups with the pids controller.
func pidsParent() (dir string, v2 bool, err error) {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false, err
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return "", false, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" { // the unified hierarchy
			root, ok := mounts["cgroup2"]
			if !ok {
				continue
			}
			d := filepath.Join(root, parts[2])
			ctl, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
			if slices.Contains(strings.Fields(string(ctl)), "pids") && writable(d) {
				return d, true, nil
			}
			continue
		}
		if slices.Contains(strings.Split(parts[1], ","), "pids") {
			root, ok := mounts["pids"]
			if !ok {
				continue
			}
			d := filepath.Join(root, parts[2])
			if writable(d) {
				return d, false, nil
			}
		}
	}
	return "", false, errors.New("no writable cgroup with the pids controller was found (checked /proc/self/cgroup and the cgroup mounts)")
}

// cgroupMounts maps "cgroup2", and each v1 controller, to where its
// hierarchy is mounted.
func cgroupMounts() (map[string]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		switch tail[0] {
		case "cgroup2":
			if _, ok := out["cgroup2"]; !ok {
				out["cgroup2"] = fields[4]
			}
		case "cgroup":
			for _, opt := range strings.Split(tail[2], ",") {
				if _, ok := out[opt]; !ok {
					out[opt] = fields[4]
				}
			}
		}
	}
	return out, sc.Err()
}

func writable(dir string) bool { return syscall.Access(dir, 2 /* W_OK */) == nil }

// kill ends every process in the cgroup: through cgroup.kill where the
// kernel has it, else by reading cgroup.procs until it is empty.
func (c *cgroup) kill() {
	if c.v2 {
		if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	for range 100 {
		raw, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
		if err != nil || len(strings.TrimSpace(string(raw))) == 0 {
			return
		}
		for _, f := range strings.Fields(string(raw)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(time.Millisecond) // let the killed leave before reading again
	}
}

// remove deletes the cgroup once its processes are gone (they leave it as
// they exit, before they are reaped).
func (c *cgroup) remove() {
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := syscall.Rmdir(c.dir)
		if err == nil || errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
			return
		}
		c.kill()
		time.Sleep(5 * time.Millisecond)
	}
}
