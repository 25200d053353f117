//go:build linux

// Package proctest finds processes through /proc, for tests that check
// what a provider left behind: its children, its process group, the
// processes carrying a marker in their environment.
package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
)

// stat is the fields of /proc/PID/stat after the command name: state,
// ppid, pgrp, ...; nil when the process is gone.
func stat(pid int) [][]byte {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'.
	return bytes.Fields(raw[bytes.LastIndexByte(raw, ')')+1:])
}

// pids lists the processes /proc shows.
func pids() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Alive reports whether pid runs: it exists and is not a zombie waiting
// for its parent.
func Alive(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && string(f[0]) != "Z"
}

// Marked lists the live processes whose environment holds key=value.
func Marked(key, value string) []int {
	want := []byte("\x00" + key + "=" + value + "\x00")
	var out []int
	for _, pid := range pids() {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		if Alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// Group lists the live processes of process group pgid.
func Group(pgid int) []int {
	var out []int
	for _, pid := range pids() {
		if f := stat(pid); len(f) > 2 && string(f[0]) != "Z" && string(f[2]) == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// Session is the session id of pid, 0 when it is gone.
func Session(pid int) int {
	f := stat(pid)
	if len(f) < 4 {
		return 0
	}
	sid, _ := strconv.Atoi(string(f[3]))
	return sid
}

// Zombie reports whether pid has exited and waits for its parent to reap
// it.
func Zombie(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && string(f[0]) == "Z"
}
