package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// cgroup is the set of cgroups made for one process: one in the unified
// hierarchy where it is writable (it holds the whole tree, and cgroup.kill
// ends it), and one in each v1 hierarchy whose controller a limit needs
// and the unified hierarchy does not offer. A process joins them all
// before anything of it runs, and nothing it starts can leave them
// without privileges (root, or the delegation, that a provider should not
// have).
type cgroup struct {
	dirs []cgroupJoin
	v2   string // the unified hierarchy's folder, or ""
	// memory says what enforces limits.memory_mb: "v2", "v1", or "" (not
	// asked, or no memory cgroup: RLIMIT_DATA).
	memory string
	// pids says what enforces limits.processes: "v2", "v1" or "".
	pids string
}

// hierarchy is one cgroup hierarchy in which this process may make
// cgroups.
type hierarchy struct {
	own string // this process's cgroup folder in it
	v2  bool
	// ctl are the controllers a child cgroup gets: for the unified
	// hierarchy those in own's cgroup.subtree_control, for a v1 one the
	// hierarchy's own.
	ctl []string
}

// hierarchies lists the hierarchies where this process may make cgroups,
// the unified one first; found once.
var hierarchies = sync.OnceValue(func() []hierarchy {
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil
	}
	var out []hierarchy
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
			if !writable(d) {
				continue
			}
			ctl, _ := os.ReadFile(filepath.Join(d, "cgroup.subtree_control"))
			out = slices.Insert(out, 0, hierarchy{own: d, v2: true, ctl: strings.Fields(string(ctl))})
			continue
		}
		ctls := strings.Split(parts[1], ",")
		if len(ctls) == 0 || strings.HasPrefix(ctls[0], "name=") {
			continue
		}
		root, ok := mounts[ctls[0]]
		if !ok {
			continue
		}
		if d := filepath.Join(root, parts[2]); writable(d) {
			out = append(out, hierarchy{own: d, ctl: ctls})
		}
	}
	return out
})

// find returns the hierarchy where a cgroup gets controller ctl, the
// unified one first.
func find(hs []hierarchy, ctl string) (hierarchy, bool) {
	for _, h := range hs {
		if slices.Contains(h.ctl, ctl) {
			return h, true
		}
	}
	return hierarchy{}, false
}

var cgroupSeq atomic.Uint64

// cgroupPrefix starts the name of every cgroup this host makes:
// "tenxgraph-PID-START-", START being the host's start time, so that a
// later host can tell a cgroup of a host that died from one of a live host
// that got the same pid.
var cgroupPrefix = sync.OnceValue(func() string {
	return fmt.Sprintf("tenxgraph-%d-%d-", os.Getpid(), startTime(os.Getpid()))
})

// newCgroup makes the cgroups for one process: for containment always
// (where some hierarchy is writable), for each limit of lim that a
// controller enforces. A limit whose controller no writable hierarchy
// has is left out (memory, pids fields stay ""); the caller decides. It
// returns nil when no hierarchy is writable.
func newCgroup(name string, lim Limits) (*cgroup, error) {
	hs := hierarchies()
	if len(hs) == 0 {
		return nil, nil
	}
	sweepCgroups(hs)
	leaf := cgroupPrefix() + safeName(name) + "-" + strconv.FormatUint(cgroupSeq.Add(1), 10)
	cg := &cgroup{}
	made := map[string]bool{}
	mk := func(h hierarchy, key string) (string, error) {
		dir := filepath.Join(h.own, leaf)
		if !made[dir] {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return "", fmt.Errorf("make cgroup %s: %w", dir, err)
			}
			made[dir] = true
			cg.dirs = append(cg.dirs, cgroupJoin{Dir: dir})
			if h.v2 {
				cg.v2 = dir
			}
		}
		for i := range cg.dirs {
			if cg.dirs[i].Dir == dir && key != "" && cg.dirs[i].Key == "" {
				cg.dirs[i].Key = key
			}
		}
		return dir, nil
	}
	fail := func(err error) (*cgroup, error) {
		cg.remove()
		return nil, err
	}
	write := func(dir, file, value string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("set %s in %s: %w", file, dir, err)
		}
		return nil
	}
	// Containment: the unified hierarchy, else whichever v1 one a limit
	// uses, else the first writable one.
	if hs[0].v2 {
		if _, err := mk(hs[0], ""); err != nil {
			return fail(err)
		}
	}
	if lim.Processes > 0 {
		if h, ok := find(hs, "pids"); ok {
			dir, err := mk(h, "limits.processes")
			if err != nil {
				return fail(err)
			}
			if err := write(dir, "pids.max", strconv.FormatInt(lim.Processes, 10)); err != nil {
				return fail(err)
			}
			cg.pids = map[bool]string{true: "v2", false: "v1"}[h.v2]
		}
	}
	if lim.MemoryMB > 0 {
		if h, ok := find(hs, "memory"); ok {
			dir, err := mk(h, "limits.memory_mb")
			if err != nil {
				return fail(err)
			}
			bytes := strconv.FormatInt(lim.MemoryMB<<20, 10)
			if h.v2 {
				// Every kind of memory (anonymous, shared, tmpfs, kernel)
				// counts, swap is not a way around it, and an OOM kills
				// the whole group, not one process of it.
				for _, kv := range [][2]string{{"memory.max", bytes}, {"memory.swap.max", "0"}, {"memory.oom.group", "1"}} {
					if err := write(dir, kv[0], kv[1]); err != nil && (kv[0] == "memory.max" || !errors.Is(err, os.ErrNotExist)) {
						return fail(err)
					}
				}
				cg.memory = "v2"
			} else {
				if err := write(dir, "memory.limit_in_bytes", bytes); err != nil {
					return fail(err)
				}
				// Memory and swap together, where the kernel accounts swap.
				if err := write(dir, "memory.memsw.limit_in_bytes", bytes); err != nil && !errors.Is(err, os.ErrNotExist) {
					return fail(err)
				}
				cg.memory = "v1"
			}
		}
	}
	if len(cg.dirs) == 0 {
		h := hs[0]
		for _, ctl := range []string{"pids", "freezer", "memory"} {
			if c, ok := find(hs, ctl); ok {
				h = c
				break
			}
		}
		if _, err := mk(h, ""); err != nil {
			return fail(err)
		}
	}
	return cg, nil
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

// kill ends every process in the cgroups.
func (c *cgroup) kill() {
	for _, d := range c.dirs {
		killCgroup(d.Dir, d.Dir == c.v2)
	}
}

// killCgroup ends every process in the cgroup at dir and its
// descendants: through cgroup.kill in the unified hierarchy where the
// kernel has it (5.14), else by killing what cgroup.procs lists until it
// is empty.
func killCgroup(dir string, v2 bool) {
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	subs, _ := os.ReadDir(dir)
	for _, e := range subs {
		if e.IsDir() {
			killCgroup(filepath.Join(dir, e.Name()), v2)
		}
	}
	for range 100 {
		raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
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

// remove deletes the cgroups once their processes are gone (they leave as
// they exit, before they are reaped).
func (c *cgroup) remove() {
	for _, d := range c.dirs {
		removeCgroup(d.Dir, d.Dir == c.v2, 2*time.Second)
	}
}

// removeCgroup deletes the cgroup at dir and those below it, killing
// what they still hold, within about wait.
func removeCgroup(dir string, v2 bool, wait time.Duration) {
	subs, _ := os.ReadDir(dir)
	for _, e := range subs {
		if e.IsDir() {
			removeCgroup(filepath.Join(dir, e.Name()), v2, wait)
		}
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Rmdir(dir)
		if err == nil || errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
			return
		}
		killCgroup(dir, v2)
		time.Sleep(5 * time.Millisecond)
	}
}

var sweepCgroupsOnce sync.Once

// sweepCgroups removes, once per process, the cgroups beside this
// host's that hosts which are gone left: a host killed with SIGKILL runs
// no code, so its providers' cgroups (and whatever still runs in them)
// stay until the next host of the same cgroup starts. A cgroup whose host
// still runs, or whose pid was taken by another process since, is told
// apart by the start time in its name.
func sweepCgroups(hs []hierarchy) {
	sweepCgroupsOnce.Do(func() {
		for _, h := range hs {
			entries, _ := os.ReadDir(h.own)
			for _, e := range entries {
				if !e.IsDir() {
					continue
				}
				pid, start, ok := cgroupHost(e.Name())
				if !ok || startTime(pid) == start {
					continue
				}
				removeCgroup(filepath.Join(h.own, e.Name()), h.v2, 2*time.Second)
			}
		}
	})
}

// cgroupHost reads the host's pid and start time from a cgroup's name.
func cgroupHost(name string) (pid int, start uint64, ok bool) {
	rest, ok := strings.CutPrefix(name, "tenxgraph-")
	if !ok {
		return 0, 0, false
	}
	f := strings.SplitN(rest, "-", 3)
	if len(f) < 3 {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(f[0])
	start, err2 := strconv.ParseUint(f[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil
}

// startTime is when a process started, in clock ticks since boot (field
// 22 of /proc/PID/stat), or 0 when it does not exist.
func startTime(pid int) uint64 {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// kind names the hierarchies holding the process: "v2", "v1" or "v2+v1".
func (c *cgroup) kind() string {
	v1 := len(c.dirs) > 1 || (len(c.dirs) == 1 && c.v2 == "")
	switch {
	case c.v2 != "" && v1:
		return "v2+v1"
	case c.v2 != "":
		return "v2"
	case v1:
		return "v1"
	}
	return ""
}
