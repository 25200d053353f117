//go:build !unix

package mcp

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func startProcess(cmd *exec.Cmd) error { return cmd.Start() }

func terminate(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
