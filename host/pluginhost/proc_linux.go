package pluginhost

import (
	"os/exec"
	"runtime"
	"syscall"
)

// setProcAttr puts the plugin in its own process group and asks the kernel
// to send it SIGTERM when the host dies. The SDK's Serve answers SIGTERM by
// ending the plugin's whole group, so its children go too.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// The parent-death signal fires when the *thread* that forked the child
// exits (golang/go#27505), and Go may retire threads. All plugins are
// therefore started from one goroutine locked to a thread that never exits.
var spawns = make(chan spawn)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the host
		for s := range spawns {
			s.done <- s.cmd.Start()
		}
	}()
}

func start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawns <- spawn{cmd, done}
	return <-done
}

func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
