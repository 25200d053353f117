// Command pluginbench measures what a tool provider plugin costs the host,
// and prints markdown tables for docs/benchmarks.md:
//
//   - a trivial tool call (echo of a small JSON object) in-process, over a
//     bare go-plugin gRPC connection, and through the host's path
//     (pluginhost supervisor + sdk adapters + sdk.Tools): serial latency
//     and closed-loop throughput;
//   - the start-up of the quickstart's providers (builtin and remote,
//     started concurrently as host/service does) until their tool lists are
//     read;
//   - the resident memory of each provider process.
//
// Run it from the repository root:
//
//	go run ./bench/pluginbench
//
// The program is also every plugin it measures: it re-executes itself as
// `pluginbench serve-bare` (plugin.Serve with a minimal toolprovider.v1
// server), `pluginbench serve-sdk` (sdk.Serve of an sdk.Tools echo provider)
// and `pluginbench plugin builtin|remote` (service.ServePlugin, what
// `tenxgraph plugin NAME` runs). It stops every process it started, checks
// that none is left, and exits non-zero on any failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenxgraph/tenxgraph/host/service"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "profiles":
			if err := runProfiles(); err != nil {
				fmt.Fprintln(os.Stderr, "pluginbench: FAILED:", err)
				os.Exit(1)
			}
			return
		case "serve-bare":
			withProfile(serveBare)
			return
		case "serve-sdk":
			withProfile(serveSDK)
			return
		case "plugin":
			if len(os.Args) != 3 {
				fmt.Fprintln(os.Stderr, "usage: pluginbench plugin builtin|remote")
				os.Exit(2)
			}
			if err := service.ServePlugin(os.Args[2]); err != nil {
				fmt.Fprintln(os.Stderr, "pluginbench:", err)
				os.Exit(1)
			}
			return
		case "noop":
			return // the exec floor: start the binary, run its inits, exit
		}
	}
	cfg := parseFlags()
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench: FAILED:", err)
		os.Exit(1)
	}
}

func parseFlags() config {
	var cfg config
	var concs string
	flag.IntVar(&cfg.warmup, "warmup", 2000, "untimed serial calls per path before the timed ones")
	flag.IntVar(&cfg.calls, "calls", 20000, "timed serial calls per path (each call timed)")
	flag.IntVar(&cfg.block, "block", 1000, "the serial calls of the three paths are interleaved in blocks of this many, so machine noise hits all paths alike")
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "length of one closed-loop throughput run")
	flag.DurationVar(&cfg.tpWarmup, "tp-warmup", 300*time.Millisecond, "untimed load before each throughput run")
	flag.DurationVar(&cfg.tpSlice, "tp-slice", 500*time.Millisecond, "each path's throughput run is cut into slices this long, the paths taking turns")
	flag.StringVar(&concs, "concurrency", "1,64", "concurrent callers of the throughput runs, comma-separated")
	flag.DurationVar(&cfg.load, "load", 3*time.Second, "load run (64 callers) of builtin and remote before their second RSS reading; 0 skips it")
	flag.IntVar(&cfg.starts, "starts", 20, "timed starts (each started and shut down) per start-up measurement; one untimed start precedes them")
	flag.StringVar(&cfg.hostProf, "cpuprofile", "", "write a CPU profile of the host process during the call phases (latency and throughput) to this file")
	flag.StringVar(&cfg.pluginProf, "plugin-cpuprofile", "", "write CPU profiles of the two echo plugins (bare.pprof, sdk.pprof; their whole life) into this folder")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./bench/pluginbench [flags]\n\nMeasures plugin tool calls, start-up and memory; prints markdown tables.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	if cfg.concs, err = parseInts(concs); err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench: -concurrency:", err)
		os.Exit(2)
	}
	switch {
	case cfg.warmup < 0, cfg.calls < 1, cfg.block < 1, cfg.duration <= 0, cfg.tpWarmup < 0, cfg.tpSlice <= 0, cfg.load < 0, cfg.starts < 1:
		fmt.Fprintln(os.Stderr, "pluginbench: counts and durations must be positive")
		os.Exit(2)
	}
	return cfg
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

func run(cfg config) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to re-execute as plugins: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return err
	}
	if cfg.pluginProf != "" {
		if err := os.MkdirAll(cfg.pluginProf, 0o755); err != nil {
			return err
		}
	}
	b := &bench{cfg: cfg, self: self, log: service.DefaultLogger()}
	defer func() {
		if cerr := b.closeAll(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("stopping plugins: %w", cerr))
		}
	}()
	if leftover := pluginProcs(self); len(leftover) > 0 {
		return fmt.Errorf("processes of this binary already running: %v", leftover)
	}
	began := time.Now()

	progress("start-up: exec floor, bare go-plugin, builtin+remote via pluginhost.Start (%d starts each)", cfg.starts)
	st, err := b.measureStartup(ctx)
	if err != nil {
		return fmt.Errorf("start-up: %w", err)
	}

	progress("starting the long-lived plugins (builtin, remote, bare echo, sdk echo)")
	lp, err := b.startLongLived(ctx)
	if err != nil {
		return err
	}

	if cfg.hostProf != "" {
		f, err := os.Create(cfg.hostProf)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return err
		}
		b.onClose(func() error { pprof.StopCPUProfile(); return f.Close() })
	}
	paths := lp.paths()
	progress("serial latency: %d warm-up + %d timed calls per path, interleaved in blocks of %d", cfg.warmup, cfg.calls, cfg.block)
	if err := measureLatency(ctx, paths, cfg.warmup, cfg.calls, cfg.block); err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	for _, c := range cfg.concs {
		progress("throughput: %d caller(s), %v per path in slices of %v", c, cfg.duration, cfg.tpSlice)
		if err := measureThroughput(ctx, paths, c, cfg.tpWarmup, cfg.duration, cfg.tpSlice); err != nil {
			return fmt.Errorf("throughput with %d callers: %w", c, err)
		}
	}
	if cfg.hostProf != "" {
		pprof.StopCPUProfile()
	}
	lrs, err := lp.loadProviders(ctx, cfg.tpWarmup, cfg.load)
	if err != nil {
		return err
	}
	if err := lp.readRSS(false); err != nil {
		return err
	}

	progress("stopping every plugin")
	if err := b.closeAll(); err != nil {
		return err
	}
	progress("all plugin processes stopped; total %v", time.Since(began).Round(time.Millisecond))

	printReport(os.Stdout, cfg, st, paths, lp, lrs)
	return nil
}
