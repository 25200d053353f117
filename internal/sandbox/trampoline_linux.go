package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	"golang.org/x/sys/unix"
)

// Exec is the trampoline: it joins the process's cgroup, sets its rlimits
// and no_new_privs, then replaces itself with the target. It never
// returns: on failure it says why on stderr and exits with status 126.
// The working directory, process group, namespaces, account and
// parent-death signal were set when it was started and carry over.
func Exec() {
	var t trampoline
	if err := json.Unmarshal([]byte(os.Getenv(envTrampoline)), &t); err != nil {
		fail(fmt.Errorf("read its instructions: %w", err))
	}
	if t.Cgroup != "" {
		// "0" is the writing process: this one, and so all it starts.
		if err := os.WriteFile(filepath.Join(t.Cgroup, "cgroup.procs"), []byte("0"), 0); err != nil {
			fail(fmt.Errorf("limits.processes: join cgroup %s: %w", t.Cgroup, err))
		}
	}
	set := func(key string, res int, v uint64) {
		// syscall's Setrlimit, not x/sys's: it also stops Exec from
		// restoring the open-files limit Go raised at start.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			fail(fmt.Errorf("%s: setrlimit: %w", key, err))
		}
	}
	if t.Limits.MemoryMB > 0 {
		set("limits.memory_mb", unix.RLIMIT_DATA, uint64(t.Limits.MemoryMB)<<20)
	}
	if t.Limits.CPUSeconds > 0 {
		// Soft equal to hard: the kernel kills at the limit, rather than
		// sending SIGXCPU, which Go programs ignore.
		set("limits.cpu_seconds", unix.RLIMIT_CPU, uint64(t.Limits.CPUSeconds))
	}
	if t.Limits.OpenFiles > 0 {
		set("limits.open_files", unix.RLIMIT_NOFILE, uint64(t.Limits.OpenFiles))
	}
	if t.NProc > 0 {
		set("limits.processes", unix.RLIMIT_NPROC, uint64(t.NProc))
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		fail(fmt.Errorf("set no_new_privs: %w", err))
	}
	if t.FS {
		if err := confine(t.Read, t.Write); err != nil {
			fail(fmt.Errorf("filesystem: %w", err))
		}
	}
	err := syscall.Exec(t.Path, t.Args, t.Env)
	fail(fmt.Errorf("exec %s: %w", t.Path, err))
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "tenxgraph sandbox: %v\n", err)
	os.Exit(126)
}

// confine restricts this process, and what it executes, to read (and
// execute) the paths of read and to use those of write fully, with
// Landlock (ABI 3, Linux 6.2, at least: truncation is restricted too). A
// kernel without it is an error, never a process left unconfined. Paths
// that do not exist are skipped.
func confine(read, write []string) error {
	var rules []landlock.Rule
	add := func(paths []string, dirs, files func(...string) landlock.FSRule) {
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			if fi.IsDir() {
				rules = append(rules, dirs(p))
			} else {
				rules = append(rules, files(p))
			}
		}
	}
	add(read, landlock.RODirs, landlock.ROFiles)
	add(write, landlock.RWDirs, landlock.RWFiles)
	if err := landlock.V3.RestrictPaths(rules...); err != nil {
		return fmt.Errorf("the kernel refused Landlock (it needs Linux 6.2 or later with Landlock enabled): %w", err)
	}
	return nil
}
