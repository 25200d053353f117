package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttr leaves a stdio server in the bridge's process group (the host
// starts the bridge as a group leader and ends the whole group with it) and
// asks the kernel to send it SIGTERM if the bridge dies without cleaning
// up, so a server never outlives the bridge.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(syscall.SIGTERM) }
