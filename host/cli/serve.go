package cli

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/tenxgraph/tenxgraph/host/telemetry"

	"github.com/spf13/cobra"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/server"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// providerStopWait bounds stopping the providers once the server is down:
// each is stopped at once and in parallel, and a provider's stop is bounded
// (about 2s, see pluginhost), so this is a margin, not a wait.
const providerStopWait = 2 * time.Second

// traceFlushWait bounds exporting the last spans at exit.
const traceFlushWait = 2 * time.Second

func serveCmd() *cobra.Command {
	var addr string
	var grace time.Duration
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "serve [--addr HOST:PORT]",
		Short: "Serve the HTTP API and the AG-UI endpoint",
		Long: `serve validates the config, starts the tool providers, and serves the
HTTP API (docs/api.md) until interrupted. On SIGINT or SIGTERM it stops
accepting requests, lets runs in flight finish for the grace period (30s
unless --shutdown-grace or server.shutdown_grace say otherwise), cancels the
runs still going, then stops the providers, and exits 0 within the grace
period plus 5 seconds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 {
				return fmt.Errorf("--shutdown-grace %s: must not be negative", grace)
			}
			// Tracing first: the providers and the model are set up
			// for it as they start.
			traces, err := telemetry.Setup(cmd.Context(), service.DefaultLogger())
			if err != nil {
				return fail(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), traceFlushWait)
				defer cancel()
				if err := traces.Shutdown(ctx); err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "shutting down: tracing: %v\n", err)
				}
			}()
			return withService(cmd, nil, func(s *service.Service) error {
				limitMemory(s.Config.Cache.MaxBytes)
				srv, err := server.New(s, server.Options{})
				if err != nil {
					return fail(err)
				}
				if addr == "" {
					addr = s.Config.Server.Addr
				}
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return fail(fmt.Errorf("listen on %s: %w (another server running? pass --addr)", addr, err))
				}
				if cpuProfile != "" {
					stop, err := startCPUProfile(cpuProfile)
					if err != nil {
						return fail(err)
					}
					defer stop()
				}
				fmt.Fprintf(cmd.OutOrStdout(), "tenxgraph %s: serving %q on http://%s (playground at /, API under /v1, health at /healthz)\n", Version, s.Config.Agent, ln.Addr())
				errc := make(chan error, 1)
				go func() { errc <- srv.Serve(ln) }()
				select {
				case err := <-errc:
					return fail(err)
				case <-cmd.Context().Done():
				}
				if grace == 0 {
					grace = cmp.Or(s.Config.Server.ShutdownGrace, config.DefaultShutdownGrace)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "shutting down: letting runs in flight finish (up to %s)\n", grace)
				ctx, cancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), grace)
				defer cancel()
				if err := srv.Shutdown(ctx); err != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "shutting down: %v\n", err)
				}
				pctx, pcancel := context.WithTimeout(context.WithoutCancel(cmd.Context()), providerStopWait)
				defer pcancel()
				if err := s.Shutdown(pctx); err != nil {
					fmt.Fprintf(cmd.OutOrStdout(), "shutting down: %v\n", err)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "listen address (default: server.addr from the config, 127.0.0.1:8123)")
	cmd.Flags().DurationVar(&grace, "shutdown-grace", 0, "how long runs in flight may finish on SIGINT or SIGTERM before they are cancelled (default: server.shutdown_grace from the config, 30s)")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the server to this file, from when it listens until it stops (for go tool pprof)")
	return cmd
}

// memoryHeadroom is the soft memory limit of a server above its thread
// cache's budget: room for the runs in flight, the requests and responses,
// the plugins' connections and the runtime. The process's RSS is about
// 90 MiB more (the binary's pages, SQLite's own allocations): a full cache
// of the default 256 MiB measured 448 MiB at its peak.
const memoryHeadroom = 96 << 20

// gcPercent is the collector's GOGC in a server whose memory limit
// limitMemory sets. A busy server's live heap is small next to that limit
// (tens of MiB against 352 by default), and at GOGC=100 it was collected
// many times a second: about 15 % of the server's CPU per round trip with
// 100 runs in flight. At 400 the heap may grow to five times what is live
// between collections, still never past the limit, where the collector
// works harder as before.
const gcPercent = 400

// limitMemory sets the Go runtime's soft memory limit to the thread cache's
// budget plus memoryHeadroom, and GOGC to gcPercent, unless GOMEMLIMIT sets
// a limit (then GOGC is left as it is too: the heap must stay bounded).
// Without a limit the collector lets the heap grow to twice what is live,
// so a full cache of 256 MiB made a server of 723 MiB; with it, the
// collector works harder as the heap nears the limit instead. It is a soft
// limit: a server that needs more memory gets it (the collector then uses
// at most about half the CPU). GOGC in the environment wins over
// gcPercent.
func limitMemory(cacheBytes int64) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(cmp.Or(cacheBytes, thread.DefaultCacheBytes) + memoryHeadroom)
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// startCPUProfile profiles the process into path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
