package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a process prepared by Command: its exec.Cmd, and what was
// made for it (a private folder, cgroups) that Release takes away.
type Process struct {
	// Cmd is the command to run. Callers may set Stdin, Stdout and Stderr
	// (or take pipes) before Start; they must not change Path, Args, Env,
	// Dir, ExtraFiles or SysProcAttr.
	Cmd *exec.Cmd

	spec Spec
	home string
	cg   *cgroup
	// tramp is true when Cmd is the trampoline's init, which reports on
	// statusFD.
	tramp bool
	// reaperOnly: neither a PID namespace nor a cgroup holds the tree;
	// the init ends it when asked (SIGUSR2).
	reaperOnly bool

	mu       sync.Mutex
	pid      int
	iso      Isolation
	released bool
}

// Command prepares spec to run: it checks the profile against what this
// host can enforce, makes the private folder and the cgroups, and builds
// the command. Nothing runs until Start. A Process that is not started
// must still be released.
//
// The process is started through the trampoline (spec.Trampoline) as the
// init of a PID namespace of its own where the host may (as root), in its
// own cgroups where a hierarchy is writable, and in a Landlock domain of
// its own where the kernel has Landlock. What the kernel lacks of these
// defaults is a warning in Isolation; what the profile asks for and the
// kernel refuses is an error naming the key.
func Command(spec Spec) (_ *Process, err error) {
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	ProtectHost()
	p := &Process{spec: spec}
	defer func() {
		if err != nil {
			p.Release()
		}
	}()
	cred, err := credential(&spec)
	if err != nil {
		return nil, err
	}
	if err := checkNetwork(&spec); err != nil {
		return nil, err
	}
	if !haveTrampoline {
		if err := unsupported(&spec); err != nil {
			return nil, err
		}
		spec.Trampoline = ""
	}
	if p.home, err = privateDir(spec.HomeIn, spec.Name, cred); err != nil {
		return nil, fmt.Errorf("%s: make its private HOME and TMPDIR: %w", spec.Name, err)
	}
	env, err := spec.Environ(p.home)
	if err != nil {
		return nil, err
	}
	lim := spec.Profile.Limits
	cmd := &exec.Cmd{Path: path, Args: append([]string{path}, spec.Args...), Env: env, Dir: spec.Dir}
	if spec.Trampoline == "" {
		switch {
		case spec.Profile.Filesystem != nil:
			return nil, fmt.Errorf("%s: confining the filesystem needs the host's executable to apply it, and none was given", spec.key("filesystem"))
		case lim.any():
			return nil, fmt.Errorf("%s: limits need the host's executable to apply them, and none was given", spec.key("limits"))
		case spec.Profile.Network == NetworkNone:
			return nil, fmt.Errorf("%s: a network namespace needs the host's executable to make it, and none was given", spec.key("network"))
		}
		// Only the environment, the private folder, the process group
		// and the account apply.
		if err := directAttr(cmd, cred); err != nil {
			return nil, err
		}
		p.Cmd = cmd
		p.iso = assess(Isolation{Root: runsAsRoot(cred), HostDumpable: hostDumpable(),
			Warnings: []string{"started without the sandbox's trampoline: no PID namespace, no Landlock domain, no cgroup"}})
		return p, nil
	}

	t := trampoline{Key: spec.Key, Self: spec.Trampoline, Path: path, Args: cmd.Args, Env: env, Limits: lim,
		NetNone: spec.Profile.Network == NetworkNone, UserNS: os.Geteuid() != 0, Landlock: true}
	iso := Isolation{Root: runsAsRoot(cred), HostDumpable: hostDumpable()}
	if cred != nil {
		t.UID, t.GID = &cred.Uid, &cred.Gid
	}
	if p.cg, err = newCgroup(spec.Name, lim); err != nil {
		if lim.Processes > 0 || lim.MemoryMB > 0 {
			return nil, fmt.Errorf("%s: %w", spec.key("limits"), err)
		}
		iso.Warnings = append(iso.Warnings, fmt.Sprintf("no cgroup (%v)", err))
		p.cg = nil
	}
	if p.cg != nil {
		t.Cgroups = p.cg.dirs
		iso.Cgroup = p.cg.kind()
	}
	if lim.Processes > 0 && (p.cg == nil || p.cg.pids == "") {
		if cred == nil || cred.Uid == 0 {
			return nil, fmt.Errorf("%s: no writable cgroup with the pids controller was found (checked /proc/self/cgroup and the cgroup mounts); a process limit needs one (run as root, or delegate a cgroup to this service), or a dedicated account in %s so that RLIMIT_NPROC applies", spec.key("limits.processes"), spec.key("user"))
		}
		t.NProc = lim.Processes // RLIMIT_NPROC, which binds a non-root account
	}
	if lim.MemoryMB > 0 {
		if p.cg != nil && p.cg.memory != "" {
			t.Limits.MemoryMB = 0 // the cgroup's, not RLIMIT_DATA
			iso.Memory = "cgroup " + p.cg.memory
		} else {
			iso.Memory = "RLIMIT_DATA"
		}
	}
	if fs := spec.Profile.Filesystem; fs != nil {
		t.FS = true
		t.Read = append(append([]string{path}, systemPaths...), fs.Read...)
		t.Write = append(append([]string{}, devicePaths...), fs.Write...)
		if p.home != "" {
			t.Write = append(t.Write, p.home)
		}
		if spec.HomeIn != "" {
			t.Write = append(t.Write, spec.HomeIn) // a plugin's socket goes there
		}
	}
	t.PIDNS = pidNamespaces(spec.Trampoline)
	iso.PIDNamespace = t.PIDNS
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	// ps shows what each init runs.
	cmd.Args = append([]string{spec.Trampoline, ExecArg, stageInit, "--"}, cmd.Args...)
	cmd.Path = spec.Trampoline
	cmd.Env = stageEnv(raw)
	initAttr(cmd, t.PIDNS)
	p.Cmd, p.tramp, p.iso = cmd, true, iso
	p.reaperOnly = !t.PIDNS && p.cg == nil
	return p, nil
}

// Start starts the process (from the one spawning thread on Linux, so
// that the parent-death signal follows this process's life) and, through
// the trampoline, waits until the target runs: a protection the profile
// asks for that the kernel refuses is an error here, naming the key.
func (p *Process) Start() error {
	var status *os.File
	if p.tramp {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("%s: start %s: %w", p.spec.Name, p.spec.Path, err)
		}
		status = r
		defer r.Close()
		p.Cmd.ExtraFiles = append([]*os.File{w}, p.Cmd.ExtraFiles...) // statusFD
		err = start(p.Cmd)
		_ = w.Close()
		if err != nil {
			return fmt.Errorf("%s: start %s: %w", p.spec.Name, p.spec.Path, explain(&p.spec, err))
		}
	} else if err := start(p.Cmd); err != nil {
		return fmt.Errorf("%s: start %s: %w", p.spec.Name, p.spec.Path, explain(&p.spec, err))
	}
	p.mu.Lock()
	p.pid = p.Cmd.Process.Pid
	p.mu.Unlock()
	if status == nil {
		return nil
	}
	// The report ends when the target runs, or the trampoline failed.
	timer := time.AfterFunc(startReportWait, func() { _ = p.Cmd.Process.Kill() })
	defer timer.Stop()
	var fail string
	iso := p.Isolation()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		kind, msg, _ := strings.Cut(sc.Text(), "\t")
		switch kind {
		case "fail":
			fail = msg
		case "warn":
			iso.Warnings = append(iso.Warnings, msg)
		case "proc":
			iso.FreshProc = true
		case "landlock":
			iso.Landlock, _ = strconv.Atoi(msg)
		}
	}
	p.mu.Lock()
	p.iso = assess(iso)
	p.mu.Unlock()
	if fail != "" {
		_ = p.Cmd.Wait()
		return fmt.Errorf("%s: %s", p.spec.Name, fail)
	}
	return nil
}

// startReportWait bounds how long Start waits for the trampoline to say
// the target runs: a few milliseconds normally.
const startReportWait = 30 * time.Second

// Isolation is what the process got from the kernel: complete once Start
// returned.
func (p *Process) Isolation() Isolation {
	p.mu.Lock()
	defer p.mu.Unlock()
	iso := p.iso
	iso.Warnings = slices.Clone(iso.Warnings)
	return iso
}

// PID is the process's id once started, 0 before. Started through the
// trampoline, it is the trampoline's init.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Kill ends the process and everything it started: its PID namespace
// (when its init is killed, the kernel kills the rest), its cgroups, its
// process group, and otherwise what its init adopted. It may be called at
// any time, any number of times; a process already gone is no error.
func (p *Process) Kill() {
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid > 0 && p.reaperOnly {
		// Neither a namespace nor a cgroup holds the tree: the init ends
		// what it adopted, then itself.
		if p.Cmd.Process.Signal(syscall.SIGUSR2) == nil {
			waitGone(p.Cmd.Process, time.Second)
		}
	}
	if pid > 0 {
		killGroup(pid)
	}
	if p.cg != nil {
		p.cg.kill()
	}
}

// Release kills what is left of the process's group and removes its
// private folder and cgroups. Call it once the process has exited (after
// Wait), on every exit path: a crash, a restart, a stop.
func (p *Process) Release() {
	p.Kill()
	p.mu.Lock()
	done := p.released
	p.released = true
	p.mu.Unlock()
	if done {
		return
	}
	if p.cg != nil {
		p.cg.remove()
	}
	if p.home != "" {
		_ = os.RemoveAll(p.home)
	}
}

// HostDir is this host process's own folder for sockets and private
// homes, one per host process, so that a host can tell its own from those
// of a host that died. The first call removes the folders of hosts that
// are gone (a host killed with SIGKILL cannot clean up after itself).
func HostDir() (string, error) {
	base := filepath.Join(os.TempDir(), "tenxgraph-"+strconv.Itoa(os.Getuid()))
	dir := filepath.Join(base, "host-"+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// Others may pass through (not list) to the folders made for providers
	// that run as another user; each of those is 0700 or 0770.
	_ = os.Chmod(base, 0o711)
	_ = os.Chmod(dir, 0o711)
	sweepOnce.Do(func() { sweep(base) })
	return dir, nil
}

var sweepOnce sync.Once

// sweep removes the folders left by hosts that no longer run.
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

// privateDir makes the process's HOME and TMPDIR inside base (HostDir when
// empty), owned by the account it runs as.
func privateDir(base, name string, cred *credentials) (_ string, err error) {
	if base == "" {
		if base, err = HostDir(); err != nil {
			return "", err
		}
	}
	dir, err := os.MkdirTemp(base, "home-"+safeName(name)+"-")
	if err != nil {
		return "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

// systemPaths are read by every dynamically linked program as it starts.
var systemPaths = []string{"/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache"}

// devicePaths are the harmless devices programs expect to open.
var devicePaths = []string{"/dev/null", "/dev/zero", "/dev/urandom"}

// Cleanup removes this host's folder; call it when the host stops, after
// every process is released.
func Cleanup() {
	_ = os.RemoveAll(filepath.Join(os.TempDir(), "tenxgraph-"+strconv.Itoa(os.Getuid()), "host-"+strconv.Itoa(os.Getpid())))
}
