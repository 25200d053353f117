package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// measureLatency times every serial call of every path. After each path's
// warm-up, the timed calls run in blocks of block calls per path, the paths
// taking turns (and rotating who goes first), so that the machine's drifts
// in speed fall on all paths alike and the paths can be compared.
func measureLatency(ctx context.Context, paths []*callPath, warmup, calls, block int) error {
	for _, p := range paths {
		for range warmup {
			if err := p.call(ctx); err != nil {
				return fmt.Errorf("%s: %w", p.short, err)
			}
		}
		p.lat = make([]time.Duration, 0, calls)
	}
	for round := 0; len(paths[0].lat) < calls; round++ {
		k := min(block, calls-len(paths[0].lat))
		for j := range paths {
			p := paths[(round+j)%len(paths)]
			for range k {
				t0 := time.Now()
				err := p.call(ctx)
				d := time.Since(t0)
				if err != nil {
					return fmt.Errorf("%s: %w", p.short, err)
				}
				p.lat = append(p.lat, d)
			}
		}
	}
	return nil
}

// measureThroughput gives each path's calls/s with callers concurrent
// callers in a closed loop. After each path's warm-up, the d of each path
// is cut into slices of about slice, the paths taking turns, for the same
// reason as the latency blocks.
func measureThroughput(ctx context.Context, paths []*callPath, callers int, warm, d, slice time.Duration) error {
	for _, p := range paths {
		if _, _, err := closedLoop(ctx, p.call, callers, warm); err != nil {
			return fmt.Errorf("%s: %w", p.short, err)
		}
	}
	k := max(1, int(d/slice))
	calls := make([]int64, len(paths))
	took := make([]time.Duration, len(paths))
	for round := range k {
		for j := range paths {
			i := (round + j) % len(paths)
			n, el, err := closedLoop(ctx, paths[i].call, callers, d/time.Duration(k))
			if err != nil {
				return fmt.Errorf("%s: %w", paths[i].short, err)
			}
			calls[i] += n
			took[i] += el
		}
	}
	for i, p := range paths {
		p.tput = append(p.tput, float64(calls[i])/took[i].Seconds())
	}
	return nil
}

// throughput is calls/s of one call with callers concurrent callers in a
// closed loop for d, after an untimed warm-up.
func throughput(ctx context.Context, call func(context.Context) error, callers int, warm, d time.Duration) (float64, error) {
	if _, _, err := closedLoop(ctx, call, callers, warm); err != nil {
		return 0, err
	}
	n, el, err := closedLoop(ctx, call, callers, d)
	if err != nil {
		return 0, err
	}
	return float64(n) / el.Seconds(), nil
}

// closedLoop runs callers goroutines, each calling as soon as its previous
// call is answered, for d; it returns the calls answered and the time from
// the first call to the last answer.
func closedLoop(ctx context.Context, call func(context.Context) error, callers int, d time.Duration) (int64, time.Duration, error) {
	if d <= 0 {
		return 0, 0, nil
	}
	var stop atomic.Bool
	var total atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	t0 := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for !stop.Load() {
				if err := call(ctx); err != nil {
					errOnce.Do(func() { firstErr = err })
					stop.Store(true)
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-ctx.Done():
		timer.Stop()
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(t0)
	if firstErr != nil {
		return 0, 0, firstErr
	}
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	return total.Load(), elapsed, nil
}

// quantile is the nearest-rank q-quantile of ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

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

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		if n < 1 {
			return nil, errors.New("callers must be at least 1")
		}
		out = append(out, n)
	}
	return out, nil
}

func splitLines(s string) []string { return strings.Split(s, "\n") }

// cut splits "key<sep>value" and trims both.
func cut(line, sep string) (string, string, bool) {
	k, v, ok := strings.Cut(line, sep)
	return strings.TrimSpace(k), strings.TrimSpace(v), ok
}
