//go:build !unix

package sdktest

import "os/exec"

func ownGroup(*exec.Cmd) {}

func killGroup(*exec.Cmd) {}
