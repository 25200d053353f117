//go:build !linux

package procfs

import "os/exec"

// dieWithParent does nothing where the kernel has no parent-death signal:
// stop the benchmark with an interrupt, which reaches its process group.
func dieWithParent(*exec.Cmd) {}
