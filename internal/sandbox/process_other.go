//go:build unix && !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// errUnsupported: the protection needs Linux.
var errUnsupported = errors.New("this protection needs Linux")

type credentials struct{ Uid, Gid uint32 }

func credential(s *Spec) (*credentials, error) {
	if s.Profile.User != "" || s.Profile.Group != "" {
		return nil, fmt.Errorf("%s: %w", s.key("user"), errUnsupported)
	}
	return nil, nil
}

func checkNetwork(s *Spec) error {
	switch s.Profile.Network {
	case "", NetworkHost:
		return nil
	case NetworkNone:
		return fmt.Errorf("%s: %w", s.key("network"), errUnsupported)
	}
	return fmt.Errorf("%s: %q is not a network mode: use %q or %q", s.key("network"), s.Profile.Network, NetworkHost, NetworkNone)
}

func directAttr(cmd *exec.Cmd, _ *credentials) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

// initAttr is never reached: Command starts no trampoline off Linux.
func initAttr(cmd *exec.Cmd, _ bool) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func pidNamespaces(string) bool { return false }

// haveTrampoline: off Linux, processes start without it.
const haveTrampoline = false

// unsupported refuses what only the trampoline can apply.
func unsupported(s *Spec) error {
	if s.Profile.Limits.any() {
		return fmt.Errorf("%s: %w", s.key("limits"), errUnsupported)
	}
	if s.Profile.Filesystem != nil {
		return fmt.Errorf("%s: %w", s.key("filesystem"), errUnsupported)
	}
	return nil
}

func explain(_ *Spec, err error) error { return err }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }

func waitGone(*os.Process, time.Duration) {}

// ProtectHost does nothing off Linux.
func ProtectHost() {}

func hostDumpable() bool { return true }

func runsAsRoot(*credentials) bool { return os.Geteuid() == 0 }

// Predict is the isolation a process with profile p gets: off Linux,
// none.
func Predict(Profile) Isolation {
	return assess(Isolation{Root: os.Geteuid() == 0, HostDumpable: true})
}

// Host describes what this host gives providers: off Linux, nothing.
func Host() string { return "no sandbox off Linux: the environment and the process group only" }
