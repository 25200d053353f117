//go:build unix

package pluginhost

import "syscall"

func alive(pid int) bool { return syscall.Kill(pid, 0) != syscall.ESRCH }
