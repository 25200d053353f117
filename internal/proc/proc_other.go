//go:build !linux

package proc

import "os/exec"

func start(cmd *exec.Cmd) error { return cmd.Start() }
