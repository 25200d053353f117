//go:build unix && !linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Exec exits: the trampoline is never started off Linux.
func Exec() {
	fmt.Fprintln(os.Stderr, "tenxgraph sandbox: limits need Linux")
	os.Exit(126)
}

// errUnsupported: the protection needs Linux.
var errUnsupported = errors.New("this protection needs Linux")

type credentials struct{ Uid, Gid uint32 }

type cgroup struct{ dir string }

func newCgroup(string, int64) (*cgroup, error) { return nil, errUnsupported }
func (c *cgroup) kill()                        {}
func (c *cgroup) remove()                      {}

func credential(s *Spec) (*credentials, error) {
	if s.Profile.User != "" || s.Profile.Group != "" {
		return nil, fmt.Errorf("%s: %w", s.key("user"), errUnsupported)
	}
	return nil, nil
}

func sysProcAttr(cmd *exec.Cmd, s *Spec, _ *credentials) error {
	if s.Profile.Network == NetworkNone {
		return fmt.Errorf("%s: %w", s.key("network"), errUnsupported)
	}
	if s.Profile.Limits.any() {
		return fmt.Errorf("%s: %w", s.key("limits"), errUnsupported)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return nil
}

func explain(_ *Spec, err error) error { return err }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }
