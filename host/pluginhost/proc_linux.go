package pluginhost

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the plugin in its own process group and asks the kernel
// to send it SIGTERM when the host dies. The SDK's Serve answers SIGTERM by
// ending the plugin's whole group, so its children go too.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
