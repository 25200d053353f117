// Package procfs is what the benchmark programs read of the processes they
// start: where a server listens, and its CPU time, memory and writes from
// Linux's /proc.
package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// StartAndRead starts cmd and returns the first match of pattern's group in
// its standard output; the rest of the output is discarded.
func StartAndRead(cmd *exec.Cmd, pattern string) (string, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = os.Stderr
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return "", err
	}
	re := regexp.MustCompile(pattern)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return m[1], nil
		}
	}
	return "", fmt.Errorf("%s did not say where it listens", filepath.Base(cmd.Path))
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ), 100 on
// every Linux this runs on.
const clockTick = 10 * time.Millisecond

// CPU is the user and system CPU time, in µs, of pid alone.
func CPU(pid int) (int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(stat), nil
}

// statCPU reads the user and system CPU time, in µs, from a /proc/PID/stat.
func statCPU(stat []byte) int64 {
	// Fields after the command's closing parenthesis: state is 3, utime 14
	// and stime 15 (man 5 proc).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return (ut + st) * clockTick.Microseconds()
}

// TreeCPU is the user and system CPU time, in µs, of pid and every process
// descended from it (the plugins, and their sandbox's processes).
func TreeCPU(pid int) (int64, error) {
	var total int64
	pids := []int{pid}
	for len(pids) > 0 {
		p := pids[len(pids)-1]
		pids = pids[:len(pids)-1]
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			if p == pid {
				return 0, err
			}
			continue // exited meanwhile
		}
		total += statCPU(stat)
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			for _, k := range strings.Fields(string(kids)) {
				if n, err := strconv.Atoi(k); err == nil {
					pids = append(pids, n)
				}
			}
		}
	}
	return total, nil
}

// WriteBytes is what pid has caused to be written to storage so far
// (/proc/PID/io write_bytes).
func WriteBytes(pid int) (int64, error) {
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(io), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/io has no write_bytes", pid)
}

// Status reads a kB field of /proc/PID/status, such as VmRSS.
func Status(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, key)
}
