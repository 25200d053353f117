package mcp

import (
	"os/exec"
	"runtime"
	"syscall"
)

// setProcAttr leaves a stdio server in the bridge's process group (the host
// starts the bridge as a group leader and ends the whole group with it) and
// asks the kernel to send it SIGTERM if the bridge dies without cleaning
// up, so a server never outlives the bridge.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

// The parent-death signal fires when the *thread* that forked the child
// exits (golang/go#27505), and Go retires threads: servers are started from
// one goroutine locked to a thread that lives as long as the bridge.
var spawns = make(chan spawn)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked
		for s := range spawns {
			s.done <- s.cmd.Start()
		}
	}()
}

func startProcess(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawns <- spawn{cmd, done}
	return <-done
}

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Signal(syscall.SIGTERM) }
