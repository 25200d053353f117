//go:build !unix

package pluginhost

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func killGroup(int) {}
