package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// overheadTarget is the project's bound on what the host's path (c) may
// add to a bare go-plugin call (b), at p50.
const overheadTarget = 10.0

// startTarget bounds the quickstart's provider start-up, p50.
const startTarget = 150 * time.Millisecond

// printReport writes the markdown tables.
func printReport(w io.Writer, cfg config, st *startup, paths []*callPath, lp *longLived, loads []loadRun) {
	fmt.Fprintf(w, "\n<!-- pluginbench %s; %s -->\n\n", time.Now().UTC().Format(time.RFC3339), machine())

	fmt.Fprintf(w, "Tool call, echo of a %d-byte JSON object. Serial: %d warm-up + %d timed calls per path, each timed, the paths interleaved in blocks of %d. Throughput: closed loop, %v per cell after %v warm-up, the paths taking turns in slices of %v.\n\n",
		len(echoArgs), cfg.warmup, cfg.calls, cfg.block, cfg.duration, cfg.tpWarmup, cfg.tpSlice)
	fmt.Fprintf(w, "| path | p50 µs | p90 µs | p99 µs |")
	for _, c := range cfg.concs {
		fmt.Fprintf(w, " calls/s, %d caller%s |", c, plural(c))
	}
	fmt.Fprintf(w, "\n|---|---|---|---|%s\n", strings.Repeat("---|", len(cfg.concs)))
	for _, p := range paths {
		fmt.Fprintf(w, "| %s | %s | %s | %s |", p.name, micros(quantile(p.lat, .5)), micros(quantile(p.lat, .9)), micros(quantile(p.lat, .99)))
		for _, r := range p.tput {
			fmt.Fprintf(w, " %s |", thousands(r))
		}
		fmt.Fprintln(w)
	}
	b, c := paths[1], paths[2]
	over := func(q float64) float64 {
		return pct(float64(quantile(c.lat, q)), float64(quantile(b.lat, q)))
	}
	p50 := over(.5)
	verdict := "met"
	if p50 > overheadTarget {
		verdict = "**not met**"
	}
	fmt.Fprintf(w, "\nOverhead of c over b: p50 %+.1f %% (target ≤ %.0f %%: %s), p90 %+.1f %%, p99 %+.1f %%, %s µs at p50",
		p50, overheadTarget, verdict, over(.9), over(.99), signedMicros(quantile(c.lat, .5)-quantile(b.lat, .5)))
	for i, n := range cfg.concs {
		fmt.Fprintf(w, "; throughput with %d caller%s %+.1f %%", n, plural(n), pct(c.tput[i], b.tput[i]))
	}
	fmt.Fprintln(w, ".")

	fmt.Fprintf(w, "\nStart-up, %d timed starts per row after one untimed start (ms):\n\n", cfg.starts)
	fmt.Fprintln(w, "| what | p50 | p90 | min | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(name string, ds []time.Duration) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", name, millis(quantile(ds, .5)), millis(quantile(ds, .9)), millis(quantile(ds, 0)), millis(quantile(ds, 1)))
	}
	row("exec floor: fork, exec, inits and exit of this binary (`pluginbench noop`)", st.floor)
	row("bare go-plugin echo: `NewClient` → `Dispense` → first call answered", st.bare)
	row("**builtin + remote, concurrently: until both `pluginhost.Start` returned (tool lists read)**", st.pair)
	row("… builtin's `Start` alone (in the pair)", st.builtin)
	row("… remote's `Start` alone (in the pair)", st.remote)
	row("shutdown of both (`Plugin.Shutdown`, concurrently)", st.pairStop)
	row("bare go-plugin `Kill`", st.bareKill)
	verdict = "met"
	if quantile(st.pair, .5) >= startTarget {
		verdict = "**not met**"
	}
	fmt.Fprintf(w, "\nbuiltin + remote ready: p50 %s ms, p90 %s ms (target < %d ms: %s); the untimed first start took %s ms.\n",
		millis(quantile(st.pair, .5)), millis(quantile(st.pair, .9)), startTarget.Milliseconds(), verdict, millis(st.firstPair))

	fmt.Fprintln(w, "\nResident memory of each plugin process, VmRSS (of which RssAnon, the process's own pages; the rest are file pages of the binary, shared) in MiB:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| provider process | after start-up | after load | load |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for i, r := range lp.rss {
		load := "the echo latency and throughput runs above"
		if i < len(loads) {
			load = fmt.Sprintf("%s, 64 callers × %v: %s calls/s", loads[i].call, cfg.load, thousands(loads[i].rate))
		} else if i < 2 {
			load = "none (`-load 0`)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", r.name, mib(r.start), mib(r.end), load)
	}
	fmt.Fprintln(w)
}

func mib(m mem) string {
	return fmt.Sprintf("%.1f (%.1f)", float64(m.rss)/1024, float64(m.anon)/1024)
}

func pct(x, base float64) float64 { return (x - base) / base * 100 }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// micros formats a duration in µs with precision to match its size.
func micros(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us < 10:
		return strconv.FormatFloat(us, 'f', 2, 64)
	case us < 100:
		return strconv.FormatFloat(us, 'f', 1, 64)
	}
	return thousands(us)
}

func signedMicros(d time.Duration) string {
	if d < 0 {
		return "−" + micros(-d)
	}
	return "+" + micros(d)
}

func millis(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
}

// thousands rounds f and groups its digits with commas.
func thousands(f float64) string {
	s := strconv.FormatInt(int64(f+0.5), 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// machine describes where the numbers come from.
func machine() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range splitLines(string(raw)) {
			if k, v, ok := cut(line, ":"); ok && k == "model name" {
				model = v
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d CPUs, %s/%s, %s", model, runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}
