package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// mem is a process's resident memory, in KiB: all of it (VmRSS) and the
// part that is its own (RssAnon: heap, stacks), as opposed to file pages
// of the binary, which processes running the same binary share.
type mem struct{ rss, anon int }

// readMem reads a process's resident memory from /proc/PID/status.
func readMem(pid int) (mem, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return mem{}, fmt.Errorf("read memory of pid %d: %w", pid, err)
	}
	var m mem
	var found int
	for _, line := range splitLines(string(raw)) {
		k, v, ok := cut(line, ":")
		if !ok || (k != "VmRSS" && k != "RssAnon") {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(v, " kB"))
		if err != nil {
			return mem{}, fmt.Errorf("pid %d: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			m.rss = n
		} else {
			m.anon = n
		}
		found++
	}
	if found != 2 {
		return mem{}, fmt.Errorf("pid %d: no VmRSS and RssAnon in /proc/%d/status", pid, pid)
	}
	return m, nil
}

// pluginProcs lists the processes, other than this one, running this
// binary: every plugin this run started, whoever its parent is now.
func pluginProcs(self string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err != nil {
			continue // gone, a kernel thread, or not ours to see
		}
		if strings.TrimSuffix(exe, " (deleted)") == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitNoPlugins waits until no process of this binary but this one runs.
func waitNoPlugins(self string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		left := pluginProcs(self)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of this binary still running %v after shutdown: %v", within, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// cut splits "key<sep>value" and trims both.
func cut(line, sep string) (string, string, bool) {
	k, v, ok := strings.Cut(line, sep)
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}
