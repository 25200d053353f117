//go:build unix && !linux

package pluginhost

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the plugin in its own process group. Without a
// parent-death signal, the SDK's parent watch ends the plugin when the host
// dies.
func setProcAttr(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
