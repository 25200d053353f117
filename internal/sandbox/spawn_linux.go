package sandbox

import (
	"os/exec"
	"runtime"
)

var spawns = make(chan spawn)

type spawn struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for s := range spawns {
			s.done <- s.cmd.Start()
		}
	}()
}

func spawnStart(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	spawns <- spawn{cmd, done}
	return <-done
}
