package procfs

import (
	"os/exec"
	"syscall"
)

// dieWithParent has cmd's process receive SIGTERM when the benchmark that
// starts it dies before it stops it (its output closed under it, as
// `| grep -m1` does, which kills it with SIGPIPE): left running, a server
// and its plugins would share the machine with the next measurement. The
// signal comes when the thread that started the process exits; Go ends no
// thread it has not locked, so that is when the benchmark does.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
