//go:build !unix

package pluginhost

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func start(cmd *exec.Cmd) error { return cmd.Start() }

func killGroup(int) {}
