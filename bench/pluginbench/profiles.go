package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// runProfiles is `pluginbench profiles [-starts N]`: the start-up of
// builtin + remote (concurrently, until their tool lists are read) under
// each sandbox protection, the pair started N times per profile, the
// profiles taking turns so that machine noise hits all alike. It prints a
// markdown table for docs/benchmarks.md.
func runProfiles() error {
	fs := flag.NewFlagSet("profiles", flag.ExitOnError)
	starts := fs.Int("starts", 20, "timed starts per profile")
	_ = fs.Parse(os.Args[2:])
	self, err := os.Executable()
	if err != nil {
		return err
	}
	limits := sandbox.Limits{MemoryMB: 1024, CPUSeconds: 3600, OpenFiles: 1024, Processes: 256}
	profiles := []struct {
		name string
		p    sandbox.Profile
	}{
		{"default (environment default-deny, private HOME/TMPDIR; init, PID namespace, Landlock, cgroup where the kernel allows)", sandbox.Profile{}},
		{"network \"none\"", sandbox.Profile{Network: sandbox.NetworkNone}},
		{"limits (memory, processes: cgroups; cpu, open files: rlimits)", sandbox.Profile{Limits: limits}},
		{"all of them", sandbox.Profile{Network: sandbox.NetworkNone, Limits: limits}},
	}
	b := &bench{self: self, log: hclog.NewNullLogger()}
	ctx := context.Background()
	times := make([][]time.Duration, len(profiles))
	for i := range *starts + 1 {
		for j, pr := range profiles {
			b.profile = pr.p
			ps, total, _, _, err := b.startProviders(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", pr.name, err)
			}
			if _, err := ps.shutdown(); err != nil {
				return fmt.Errorf("%s: shut down: %w", pr.name, err)
			}
			if i > 0 { // the first round warms the page cache
				times[j] = append(times[j], total)
			}
		}
	}
	fmt.Printf("| builtin + remote ready, %d starts | p50 | min | max |\n|---|---|---|---|\n", *starts)
	for j, pr := range profiles {
		ds := times[j]
		fmt.Printf("| %s | %s | %s | %s |\n", pr.name, ms(quantile(ds, 0.5)), ms(slices.Min(ds)), ms(slices.Max(ds)))
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
