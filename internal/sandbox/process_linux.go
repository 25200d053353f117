package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// credentials is the account a process runs as; nil for the host's own.
type credentials = syscall.Credential

// credential resolves the profile's user and group. Only root can start
// a process as another account.
func credential(s *Spec) (*credentials, error) {
	p := s.Profile
	if p.User == "" {
		if p.Group != "" {
			return nil, fmt.Errorf("%s: set user too: a group alone does not change the account a provider runs as", s.key("group"))
		}
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("%s: only a host running as root can start a provider as another user; leave user out, or run the host as root", s.key("user"))
	}
	u, err := user.Lookup(p.User)
	if err != nil {
		if u, err = user.LookupId(p.User); err != nil {
			return nil, fmt.Errorf("%s: no account %q on this machine", s.key("user"), p.User)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if p.Group != "" {
		g, err := user.LookupGroup(p.Group)
		if err != nil {
			if g, err = user.LookupGroupId(p.Group); err != nil {
				return nil, fmt.Errorf("%s: no group %q on this machine", s.key("group"), p.Group)
			}
		}
		gid, _ = strconv.ParseUint(g.Gid, 10, 32)
	}
	return &credentials{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// checkNetwork refuses a network mode that is not one.
func checkNetwork(s *Spec) error {
	switch s.Profile.Network {
	case "", NetworkHost, NetworkNone:
		return nil
	}
	return fmt.Errorf("%s: %q is not a network mode: use %q or %q", s.key("network"), s.Profile.Network, NetworkHost, NetworkNone)
}

// directAttr starts a process without the trampoline: its own process
// group, a parent-death signal, its account.
func directAttr(cmd *exec.Cmd, cred *credentials) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: cred}
	return nil
}

// initAttr starts the trampoline's init as the leader of its own process
// group, and as the init of new PID and mount namespaces when pidns. It
// gets SIGKILL when the host dies if it is such an init (the kernel then
// ends everything in the namespace), SIGTERM otherwise (it then ends
// what it adopted, and itself).
func initAttr(cmd *exec.Cmd, pidns bool) {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if pidns {
		attr.Cloneflags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNS
		attr.Pdeathsig = syscall.SIGKILL
	}
	cmd.SysProcAttr = attr
}

// pidNamespaces reports whether providers get a PID namespace of their
// own: the host is root and the kernel allowed one when tried, once, with
// the trampoline in its probe stage (a container without CAP_SYS_ADMIN,
// or a seccomp profile, refuses).
func pidNamespaces(trampoline string) bool {
	if os.Geteuid() != 0 {
		return false
	}
	pidnsOnce.Do(func() {
		pid, err := syscall.ForkExec(trampoline, []string{trampoline, ExecArg, stageProbe}, &syscall.ProcAttr{
			Env: []string{}, Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS}})
		if err != nil {
			pidnsErr = err
			return
		}
		var ws syscall.WaitStatus
		for {
			_, err := syscall.Wait4(pid, &ws, 0, nil)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if !ws.Exited() || ws.ExitStatus() != 0 {
			pidnsErr = fmt.Errorf("the probe exited with status %d", ws.ExitStatus())
		}
		pidnsProbed.Store(true)
	})
	return pidnsErr == nil
}

// pidnsProbed is set once pidNamespaces tried.
var pidnsProbed atomic.Bool

// Predict is the isolation a process with profile p gets on this host
// when started through the trampoline, worked out from the same probes
// Command uses, without starting anything: for processes the host does
// not start itself (the MCP bridge's servers).
func Predict(p Profile) Isolation {
	root := os.Geteuid() == 0 && (p.User == "" || p.User == "root" || p.User == "0")
	pidns := os.Geteuid() == 0 && (!pidnsProbed.Load() || pidnsErr == nil)
	iso := Isolation{PIDNamespace: pidns, FreshProc: pidns, Landlock: landlockABI(), Root: root, HostDumpable: hostDumpable()}
	hs := hierarchies()
	v2, v1 := false, false
	for _, h := range hs {
		if h.v2 {
			v2 = true
		}
	}
	need := func(ctl string, asked bool) string {
		if !asked {
			return ""
		}
		h, ok := find(hs, ctl)
		switch {
		case !ok:
			return ""
		case h.v2:
			return "v2"
		}
		v1 = true
		return "v1"
	}
	if m := need("memory", p.Limits.MemoryMB > 0); m != "" {
		iso.Memory = "cgroup " + m
	} else if p.Limits.MemoryMB > 0 {
		iso.Memory = "RLIMIT_DATA"
	}
	need("pids", p.Limits.Processes > 0)
	if !v2 && len(hs) > 0 {
		v1 = true
	}
	iso.Cgroup = map[[2]bool]string{{true, true}: "v2+v1", {true, false}: "v2", {false, true}: "v1"}[[2]bool{v2, v1}]
	return assess(iso)
}

// Host describes what this host's kernel gives providers: PID
// namespaces, the Landlock ABI, the cgroup hierarchies where cgroups can
// be made (with their controllers), and whether the host is dumpable.
func Host() string {
	var parts []string
	switch {
	case os.Geteuid() != 0:
		parts = append(parts, "pid namespaces: no (the host is not root)")
	case pidnsProbed.Load() && pidnsErr != nil:
		parts = append(parts, fmt.Sprintf("pid namespaces: refused (%v)", pidnsErr))
	default:
		parts = append(parts, "pid namespaces: yes")
	}
	if abi := landlockABI(); abi > 0 {
		parts = append(parts, fmt.Sprintf("landlock: ABI %d", abi))
	} else {
		parts = append(parts, "landlock: none")
	}
	var cgs []string
	for _, h := range hierarchies() {
		if !h.v2 && !slices.ContainsFunc(h.ctl, func(c string) bool { return c == "pids" || c == "memory" || c == "freezer" }) {
			continue // a controller the sandbox does not use
		}
		kind := "v1"
		if h.v2 {
			kind = "v2"
		}
		ctl := strings.Join(h.ctl, " ")
		if ctl == "" {
			ctl = "no controllers"
		}
		cgs = append(cgs, fmt.Sprintf("%s %s (%s)", kind, h.own, ctl))
	}
	if len(cgs) == 0 {
		cgs = append(cgs, "none writable")
	}
	parts = append(parts, "cgroups: "+strings.Join(cgs, ", "))
	if hostDumpable() {
		parts = append(parts, "host: dumpable")
	} else {
		parts = append(parts, "host: not dumpable")
	}
	return strings.Join(parts, "; ")
}

// haveTrampoline: on Linux every process with a trampoline starts
// through it.
const haveTrampoline = true

func unsupported(*Spec) error { return nil }

var (
	pidnsOnce sync.Once
	pidnsErr  error
)

// explain turns the kernel refusing what the profile asks for into an
// error naming the profile key.
func explain(s *Spec, err error) error {
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EUSERS) {
		return err
	}
	if s.Profile.User != "" {
		return fmt.Errorf("%s: the kernel refused to start the process as %q: %w", s.key("user"), s.Profile.User, err)
	}
	return err
}

// killGroup ends a process group, leader and members alike.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// alive reports whether a process exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

// waitGone waits, up to d, until p has exited (a zombie, or reaped).
func waitGone(p *os.Process, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if p.Signal(syscall.Signal(0)) != nil {
			return // reaped
		}
		raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.Pid), "stat"))
		if err != nil {
			return
		}
		if f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:])); len(f) > 0 && f[0] == "Z" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ProtectHost makes this process not dumpable: no core dump with its
// secrets, and a process of the same account without CAP_SYS_PTRACE can
// neither trace it nor read its /proc/PID/environ or mem. Command calls it;
// a program holding secrets calls it first thing, before anything else
// runs. Its own children are dumpable again after their exec.
func ProtectHost() {
	protectOnce.Do(func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

var protectOnce sync.Once

// hostDumpable reports whether this process can be traced or read by
// processes of its account.
func hostDumpable() bool {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return err != nil || v != 0
}

// runsAsRoot reports whether a process started with cred runs as root.
func runsAsRoot(cred *credentials) bool {
	if cred != nil {
		return cred.Uid == 0
	}
	return os.Geteuid() == 0
}
