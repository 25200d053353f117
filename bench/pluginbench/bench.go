package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// config holds the flags.
type config struct {
	warmup     int           // serial calls per path before timing
	calls      int           // timed serial calls per path
	block      int           // serial calls per path per interleaved block
	duration   time.Duration // one throughput run
	tpWarmup   time.Duration // untimed load before each throughput run
	tpSlice    time.Duration // throughput runs are interleaved in slices this long
	concs      []int         // concurrent callers of the throughput runs
	load       time.Duration // load run of builtin and remote before the second RSS reading
	starts     int           // timed starts per start-up measurement
	hostProf   string        // host CPU profile of the call phases
	pluginProf string        // folder for the echo plugins' CPU profiles
}

// bench is one run: what it started, so that all of it is stopped.
type bench struct {
	cfg  config
	self string
	log  hclog.Logger
	// profile is the sandbox profile builtin and remote start with (the
	// default one unless `pluginbench profiles` sets another).
	profile sandbox.Profile

	closers []func() error // run in reverse order at the end
}

// onClose registers a stop function for the end of the run (or a failure).
func (b *bench) onClose(f func() error) { b.closers = append(b.closers, f) }

// closeAll stops everything still running and checks no process of this
// binary is left.
func (b *bench) closeAll() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		if err := b.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	b.closers = nil
	pluginhost.Cleanup()
	if err := waitNoPlugins(b.self, 5*time.Second); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pluginbench: "+format+"\n", args...)
}
