//go:build !linux

package sandbox

import "os/exec"

func spawnStart(cmd *exec.Cmd) error { return cmd.Start() }
