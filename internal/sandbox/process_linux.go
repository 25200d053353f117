package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
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

// sysProcAttr makes the process lead its own process group, asks the
// kernel to send it SIGTERM when the host dies, and sets up the network
// namespace and the account the profile asks for.
func sysProcAttr(cmd *exec.Cmd, s *Spec, cred *credentials) error {
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: cred}
	if s.Init && os.Geteuid() == 0 {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	switch s.Profile.Network {
	case "", NetworkHost:
	case NetworkNone:
		attr.Cloneflags |= syscall.CLONE_NEWNET
		if os.Geteuid() != 0 {
			// An unprivileged host makes the network namespace inside a
			// user namespace of its own, mapping only its own ids.
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
	default:
		return fmt.Errorf("%s: %q is not a network mode: use %q or %q", s.key("network"), s.Profile.Network, NetworkHost, NetworkNone)
	}
	cmd.SysProcAttr = attr
	return nil
}

// explain turns the kernel refusing what the profile asks for into an
// error naming the profile key.
func explain(s *Spec, err error) error {
	if !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOSPC) && !errors.Is(err, syscall.EUSERS) {
		return err
	}
	if s.Profile.Network == NetworkNone {
		return fmt.Errorf("%s is \"none\", and the kernel refused a new network namespace (%w): run the host as root or allow unprivileged user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone), or set network to \"host\"", s.key("network"), err)
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
