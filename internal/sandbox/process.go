package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Process is a process prepared by Command: its exec.Cmd, and what was
// made for it (a private folder, a cgroup) that Release takes away.
type Process struct {
	// Cmd is the command to run. Callers may set Stdin, Stdout and Stderr
	// (or take pipes) before Start; they must not change Path, Args, Env,
	// Dir or SysProcAttr.
	Cmd *exec.Cmd

	spec Spec
	home string
	cg   *cgroup

	mu       sync.Mutex
	pid      int
	released bool
}

// Command prepares spec to run: it checks the profile against what this
// host can enforce, makes the private folder and the cgroup, and builds the
// command. Nothing runs until Start. A Process that is not started must
// still be released.
func Command(spec Spec) (_ *Process, err error) {
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
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
	if p.home, err = privateDir(spec.HomeIn, spec.Name, cred); err != nil {
		return nil, fmt.Errorf("%s: make its private HOME and TMPDIR: %w", spec.Name, err)
	}
	env, err := spec.Environ(p.home)
	if err != nil {
		return nil, err
	}
	lim := spec.Profile.Limits
	if lim.Processes > 0 {
		if p.cg, err = newCgroup(spec.Name, lim.Processes); err != nil {
			if cred == nil || cred.Uid == 0 {
				return nil, fmt.Errorf("%s: %w; a process limit needs a writable cgroup with the pids controller (run as root, or delegate a cgroup to this service), or a dedicated account in %s so that RLIMIT_NPROC applies", spec.key("limits.processes"), err, spec.key("user"))
			}
			p.cg = nil // RLIMIT_NPROC, which binds a non-root account
		}
	}
	cmd := &exec.Cmd{Path: path, Args: append([]string{path}, spec.Args...), Env: env, Dir: spec.Dir}
	if fs := spec.Profile.Filesystem; fs != nil && spec.Trampoline == "" {
		return nil, fmt.Errorf("%s: confining the filesystem needs the host's executable to apply it, and none was given", spec.key("filesystem"))
	}
	if lim.any() || spec.Profile.Filesystem != nil {
		if spec.Trampoline == "" {
			return nil, fmt.Errorf("%s: limits need the host's executable to apply them, and none was given", spec.key("limits"))
		}
		t := trampoline{Path: path, Args: cmd.Args, Env: env, Limits: lim}
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
		if p.cg != nil {
			t.Cgroup = p.cg.dir
		} else if lim.Processes > 0 {
			t.NProc = lim.Processes
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		cmd.Path = spec.Trampoline
		cmd.Args = []string{spec.Trampoline, ExecArg}
		cmd.Env = []string{envTrampoline + "=" + string(raw)}
	}
	if err := sysProcAttr(cmd, &spec, cred); err != nil {
		return nil, err
	}
	p.Cmd = cmd
	return p, nil
}

// Start starts the process (from the one spawning thread on Linux, so
// that the parent-death signal follows this process's life).
func (p *Process) Start() error {
	if err := start(p.Cmd); err != nil {
		return fmt.Errorf("%s: start %s: %w", p.spec.Name, p.spec.Path, explain(&p.spec, err))
	}
	p.mu.Lock()
	p.pid = p.Cmd.Process.Pid
	p.mu.Unlock()
	return nil
}

// PID is the process's id once started, 0 before.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pid
}

// Kill ends the process and everything it started: its process group
// and, where it has one, its cgroup. It may be called at any time, any
// number of times; a process already gone is no error.
func (p *Process) Kill() {
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid > 0 {
		killGroup(pid)
	}
	if p.cg != nil {
		p.cg.kill()
	}
}

// Release kills what is left of the process's group and removes its
// private folder and cgroup. Call it once the process has exited (after
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

// safeName keeps a name usable in a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
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
