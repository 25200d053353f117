//go:build unix

package sdktest

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the plugin in a process group of its own, so that the end
// of a test also ends whatever the plugin started.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup ends the plugin's process group; go-plugin ends only the plugin.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
