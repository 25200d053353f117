package sandbox

import "os/exec"

// start starts cmd like cmd.Start, from the process's one spawning thread
// on Linux, so that a parent-death signal set in cmd.SysProcAttr is
// delivered when this process dies, and only then.
//
// On Linux the kernel can signal a child when its parent dies
// (PR_SET_PDEATHSIG), but the signal fires when the *thread* that forked the
// child exits (golang/go#27505), and the Go runtime retires threads. Every
// child is therefore forked from one goroutine locked to a thread that lives
// as long as the process. Elsewhere it is exec.Cmd.Start, and the child
// relies on its own watchdog (sdk.Serve polls its parent).
func start(cmd *exec.Cmd) error { return spawnStart(cmd) }
