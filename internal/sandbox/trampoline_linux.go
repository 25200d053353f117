package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// A binary that imports this package is the trampoline when its first
// argument is ExecArg: the stages start here, before the packages that
// come later in initialization order (most of a program) initialize,
// which makes a start cheaper.
func init() {
	if len(os.Args) > 1 && os.Args[1] == ExecArg {
		trampolineMain()
	}
}

// trampolineMain is the trampoline, run as `EXE ExecArg STAGE`. It never
// returns.
//
// The init stage stays for the life of the provider, as its reaper: it
// joins the provider's cgroups, mounts a fresh /proc when it is the init
// of a PID namespace of its own, starts the exec stage, passes SIGTERM,
// SIGINT, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 on to it, reaps every
// process the provider leaves behind, and exits as the target did. The
// exec stage sets rlimits, the account, no_new_privs and the Landlock
// domain, then replaces itself with the target.
//
// Why a resident init rather than the target as PID 1: the init of a PID
// namespace adopts every orphan of the namespace, and a program that does
// not expect it (a Go plugin, node, python) never reaps them, so zombies
// pile up (the MCP bridge left one per server crash when it was the init);
// and an init ignores every signal it has no handler for, so a server
// without a SIGTERM handler would not stop when asked. The init is also
// outside the target's Landlock domain, so the target can neither trace
// it nor (Landlock ABI 6) signal it.
func trampolineMain() {
	if len(os.Args) > 2 {
		switch os.Args[2] {
		case stageInit:
			runInit()
		case stageProbe:
			os.Exit(0)
		}
	}
	runExec()
}

// instructions reads what the host asked for.
func instructions(st status) trampoline {
	var t trampoline
	if err := json.Unmarshal([]byte(os.Getenv(envTrampoline)), &t); err != nil {
		st.fail("read its instructions: %v", err)
	}
	return t
}

func (t *trampoline) key(k string) string {
	if t.Key == "" {
		return k
	}
	return t.Key + "." + k
}

// status writes the trampoline's report to the host (statusFD).
type status struct{ f *os.File }

func newStatus() status { return status{os.NewFile(statusFD, "status")} }

func (s status) send(fields ...string) {
	for i, f := range fields {
		fields[i] = strings.NewReplacer("\n", " ", "\t", " ").Replace(f)
	}
	_, _ = s.f.WriteString(strings.Join(fields, "\t") + "\n")
}

func (s status) warn(format string, args ...any) { s.send("warn", fmt.Sprintf(format, args...)) }

// fail reports why the provider cannot start, on stderr too (for a
// trampoline run by hand), and exits with 126.
func (s status) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	fmt.Fprintf(os.Stderr, "tenxgraph sandbox: %s\n", msg)
	s.send("fail", msg)
	os.Exit(126)
}

func runInit() {
	// The exec stage's parent-death signal follows the thread that
	// started it: this one, which lives as long as the process.
	runtime.LockOSThread()
	st := newStatus()
	t := instructions(st)
	for _, cg := range t.Cgroups {
		// "0" is the writing process: this one, and so all it starts.
		if err := os.WriteFile(filepath.Join(cg.Dir, "cgroup.procs"), []byte("0"), 0); err != nil {
			if cg.Key != "" {
				st.fail("%s: join cgroup %s: %v", t.key(cg.Key), cg.Dir, err)
			}
			st.warn("its processes are not held in cgroup %s (%v): what escapes its reaper survives it", cg.Dir, err)
		}
	}
	if t.PIDNS {
		mountProc(st)
	} else if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		st.warn("cannot reap its orphans (PR_SET_CHILD_SUBREAPER: %v)", err)
	}
	parent := os.Getppid()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2)

	var pid int
	if t.PIDNS {
		// The init of a PID namespace is safe from its target without a
		// domain of its own (a namespace's init gets only the signals it
		// handles, never SIGKILL, from inside), so it confines itself and
		// starts the target directly: one exec of the host's binary
		// fewer per start.
		pid = startTarget(st, t)
	} else {
		pid = startExecStage(st, t)
	}
	_ = st.f.Close() // the host reads until the target runs

	go func() {
		for sig := range sigs {
			if !t.PIDNS && (sig == syscall.SIGUSR2 || sig == syscall.SIGTERM && os.Getppid() != parent) {
				// The host asks for the whole tree to end (SIGUSR2), or is
				// gone (the parent-death signal). In a PID namespace the
				// parent-death signal is SIGKILL and the kernel ends
				// everything.
				_ = syscall.Kill(pid, syscall.SIGKILL)
				killChildren()
				os.Exit(128 + int(syscall.SIGKILL))
			}
			_ = syscall.Kill(pid, sig.(syscall.Signal))
		}
	}()
	ws := reap(pid)
	if !t.PIDNS {
		// In a PID namespace the kernel ends what is left when this
		// process exits; here the orphans it adopted are its own to end.
		killChildren()
	}
	if ws.Signaled() {
		if ws.Signal() == syscall.SIGKILL {
			// Die the same way, so the host sees that the target was
			// killed (by the OOM killer, its CPU limit); the init of a
			// PID namespace cannot, and exits 137 like a shell.
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}

// startExecStage starts the exec stage, which confines itself and
// becomes the target, and returns its pid. This init stays outside the
// target's Landlock domain, so the target can neither trace nor (ABI 6)
// signal it.
func startExecStage(st status, t trampoline) int {
	raw, _ := json.Marshal(t)
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if t.NetNone {
		sys.Cloneflags |= syscall.CLONE_NEWNET
		if t.UserNS {
			// This process is dumpable (a fresh exec), so it may write its
			// child's uid_map; the host is not.
			sys.Cloneflags |= syscall.CLONE_NEWUSER
			sys.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
			sys.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
			sys.GidMappingsEnableSetgroups = false
		}
	}
	pid, err := syscall.ForkExec(t.Self, []string{t.Self, ExecArg, stageExec}, &syscall.ProcAttr{
		Env:   stageEnv(raw),
		Files: []uintptr{0, 1, 2, statusFD},
		Sys:   sys,
	})
	if err != nil {
		if t.NetNone && refused(err) {
			st.fail("%s is \"none\", and the kernel refused a new network namespace (%v): run the host as root or allow unprivileged user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone), or set network to \"host\"", t.key("network"), err)
		}
		st.fail("start %s: %v", t.Self, err)
	}
	return pid
}

// startTarget confines this process as the exec stage would (rlimits,
// no_new_privs, Landlock), then starts the target as its child, as the
// profile's account, and returns its pid.
func startTarget(st status, t trampoline) int {
	confineSelf(st, t)
	sys := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if t.UID != nil && t.GID != nil {
		sys.Credential = &syscall.Credential{Uid: *t.UID, Gid: *t.GID, Groups: []uint32{}}
	}
	if t.NetNone {
		sys.Cloneflags |= syscall.CLONE_NEWNET // as root: no user namespace needed
	}
	syscall.CloseOnExec(statusFD)
	pid, err := syscall.ForkExec(t.Path, t.Args, &syscall.ProcAttr{Env: t.Env, Files: []uintptr{0, 1, 2}, Sys: sys})
	if err != nil {
		switch {
		case t.NetNone && refused(err):
			st.fail("%s is \"none\", and the kernel refused a new network namespace (%v)", t.key("network"), err)
		case t.UID != nil && refused(err):
			st.fail("%s: the kernel refused to start the process as uid %d: %v", t.key("user"), *t.UID, err)
		}
		st.fail("start %s: %v", t.Path, err)
	}
	return pid
}

// mountProc gives the init's mount namespace a /proc that shows only its
// PID namespace. The old one is detached first, so that a process with
// the capability to unmount finds nothing of the host's beneath.
func mountProc(st status) {
	// Nothing mounted here may propagate to the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		st.warn("its /proc shows the host's processes (making its mounts private: %v)", err)
		return
	}
	_ = unix.Unmount("/proc", unix.MNT_DETACH)
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		st.warn("it has no /proc (mounting one for its PID namespace: %v)", err)
		return
	}
	st.send("proc")
}

// reap waits for every child until the target exits, and returns how it
// exited. Only this process's own children are waited for.
func reap(target int) syscall.WaitStatus {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || pid == target {
			return ws
		}
	}
}

// killChildren kills every child of this process, and the children of
// those that it adopts as they die, until none is left.
func killChildren() {
	for {
		for _, pid := range childrenOf(os.Getpid()) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); errors.Is(err, syscall.ECHILD) {
			return
		}
	}
}

// childrenOf lists pid's children, from its threads' children files
// (CONFIG_PROC_CHILDREN), else by reading every process's parent.
func childrenOf(pid int) []int {
	var out []int
	tasks, err := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	if err == nil && len(tasks) > 0 {
		for _, f := range tasks {
			raw, _ := os.ReadFile(f)
			for _, s := range strings.Fields(string(raw)) {
				if c, err := strconv.Atoi(s); err == nil {
					out = append(out, c)
				}
			}
		}
		return out
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces.
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

func runExec() {
	// The parent-death signal set below belongs to this thread, which
	// then execs.
	runtime.LockOSThread()
	st := newStatus()
	t := instructions(st)
	ppid := os.Getppid()
	setRlimits(st, t)
	if t.UID != nil {
		if err := syscall.Setgroups([]int{}); err != nil {
			st.fail("%s: setgroups: %v", t.key("user"), err)
		}
		if t.GID != nil {
			if err := syscall.Setgid(int(*t.GID)); err != nil {
				st.fail("%s: setgid %d: %v", t.key("group"), *t.GID, err)
			}
		}
		if err := syscall.Setuid(int(*t.UID)); err != nil {
			st.fail("%s: setuid %d: %v", t.key("user"), *t.UID, err)
		}
		// A change of account clears the parent-death signal.
		if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil || os.Getppid() != ppid {
			os.Exit(126)
		}
	}
	landlockSelf(st, t)
	syscall.CloseOnExec(statusFD)
	err := syscall.Exec(t.Path, t.Args, t.Env)
	st.fail("exec %s: %v", t.Path, err)
}

// confineSelf applies the profile's rlimits, no_new_privs and Landlock
// domain to this process, and so to what it starts.
func confineSelf(st status, t trampoline) {
	setRlimits(st, t)
	landlockSelf(st, t)
}

func setRlimits(st status, t trampoline) {
	set := func(key string, res int, v uint64) {
		// syscall's Setrlimit, not x/sys's: it also stops Exec from
		// restoring the open-files limit Go raised at start.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			st.fail("%s: setrlimit: %v", t.key(key), err)
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
}

// landlockSelf sets no_new_privs and puts this process in the profile's
// Landlock domain: the filesystem confinement when asked (an error if the
// kernel refuses it), else the default domain where the kernel has
// Landlock (a warning if it refuses).
func landlockSelf(st status, t trampoline) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		st.fail("set no_new_privs: %v", err)
	}
	abi := landlockABI()
	switch {
	case t.FS:
		if err := confine(abi, t.Read, t.Write); err != nil {
			st.fail("%s: %v", t.key("filesystem"), err)
		}
		st.send("landlock", strconv.Itoa(abi))
	case t.Landlock && abi > 0:
		if err := defaultDomain(abi); err != nil {
			st.warn("no Landlock domain (%v): it can read the environment of every process of its account that it can see", err)
		} else {
			st.send("landlock", strconv.Itoa(abi))
		}
	}
}

// landlockABI is the kernel's Landlock ABI, 0 without Landlock. An ABI 6
// whose signal scoping has a known bug (fixed by errata 2) counts as 5.
func landlockABI() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		if errata, err := llsys.LandlockGetErrata(); err != nil || errata&0x2 == 0 {
			v = 5
		}
	}
	return v
}

// scopes are Landlock's IPC scopes (ABI 6): signals and abstract unix
// sockets may reach only processes of the same domain or nested ones.
var scopes = landlock.V6.Scoped

// defaultDomain puts this process in a Landlock domain of its own that
// restricts no file access: being in a domain is what stops it tracing,
// or reading through /proc, any process outside (the host, the init,
// other providers). With ABI 6 the domain scopes signals and abstract
// sockets; before, it has to handle some file access, and handles only
// making block devices.
func defaultDomain(abi int) error {
	if abi >= 6 {
		return landlock.Config{Scoped: scopes}.Restrict()
	}
	return landlock.Config{HandledAccessFS: llsys.AccessFSMakeBlock}.Restrict()
}

// confine restricts this process, and what it executes, to read (and
// execute) the paths of read and to use those of write fully, with
// Landlock (ABI 3, Linux 6.2, at least: truncation is restricted too), and
// scopes its signals and abstract sockets where the kernel can (ABI 6). A
// kernel without Landlock is an error, never a process left unconfined.
// Paths that do not exist are skipped.
func confine(abi int, read, write []string) error {
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
	cfg := landlock.Config{HandledAccessFS: landlock.V3.HandledAccessFS}
	if abi >= 6 {
		cfg.Scoped = scopes
	}
	if err := cfg.Restrict(rules...); err != nil {
		return fmt.Errorf("the kernel refused Landlock (it needs Linux 6.2 or later with Landlock enabled): %w", err)
	}
	return nil
}

// refused reports whether the kernel refused a namespace or a limit for
// want of privilege or support.
func refused(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS) || errors.Is(err, syscall.EACCES)
}
