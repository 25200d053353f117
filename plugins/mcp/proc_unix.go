//go:build unix && !linux

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcAttr leaves a stdio server in the bridge's process group, which
// the host ends with the bridge.
func setProcAttr(*exec.Cmd) {}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(syscall.SIGTERM) }
