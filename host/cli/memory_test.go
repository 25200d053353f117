package cli

import (
	"runtime/debug"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/thread"
)

// restoreGC puts the runtime's GOGC and memory limit back after a test.
func restoreGC(t *testing.T) {
	t.Helper()
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

func gcPercentNow() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestLimitMemorySetsLimitAndGOGC(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "")
	debug.SetGCPercent(100)
	limitMemory(0)
	if got, want := debug.SetMemoryLimit(-1), int64(thread.DefaultCacheBytes+memoryHeadroom); got != want {
		t.Errorf("memory limit = %d, want the cache's budget plus headroom, %d", got, want)
	}
	if got := gcPercentNow(); got != gcPercent {
		t.Errorf("GOGC = %d, want %d", got, gcPercent)
	}
	limitMemory(64 << 20)
	if got, want := debug.SetMemoryLimit(-1), int64(64<<20)+memoryHeadroom; got != want {
		t.Errorf("memory limit with cache.max_bytes 64 MiB = %d, want %d", got, want)
	}
}

func TestLimitMemoryLeavesTheEnvironmentsSettings(t *testing.T) {
	restoreGC(t)
	// GOGC set: the limit is set, GOGC is the operator's.
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	limitMemory(0)
	if got := gcPercentNow(); got != 150 {
		t.Errorf("GOGC=150 in the environment: GOGC = %d, want 150", got)
	}
	// GOMEMLIMIT set: neither is changed, so the heap never grows past
	// GOGC=100's bound without a limit to stop it.
	t.Setenv("GOMEMLIMIT", "1GiB")
	t.Setenv("GOGC", "")
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(1 << 30)
	limitMemory(0)
	if got := gcPercentNow(); got != 100 {
		t.Errorf("GOMEMLIMIT in the environment: GOGC = %d, want 100 (unchanged)", got)
	}
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("GOMEMLIMIT in the environment: memory limit = %d, want 1 GiB (unchanged)", got)
	}
}
