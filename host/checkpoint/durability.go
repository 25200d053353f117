package checkpoint

import "fmt"

// Durability is when a run's checkpoints are written, as in LangGraph's
// durability modes of the same names: every super-step, before or while
// the next one runs, or only where the run stops. It trades what a crash
// mid-run loses for a run's latency and writes.
type Durability string

// The durability modes.
const (
	// DurabilitySync, the default, writes each super-step's checkpoint
	// before the next step starts. A run that stops mid-way (the process
	// dies, its lease is lost) is continued from its last finished step,
	// and the thread's history shows every step.
	DurabilitySync Durability = "sync"
	// DurabilityAsync writes each super-step's checkpoint while the next
	// step runs, so a run does not wait for the writes of the steps it goes
	// on from (LangGraph's default). Where the run stops (a pause, the end,
	// a failure, a cancellation) it waits for them all, in order, before it
	// answers, and a write that failed fails the run there. If the process
	// dies mid-run, the step whose write was in flight may be lost with
	// the step after it, and the client's retry runs them again; the
	// history shows every step.
	DurabilityAsync Durability = "async"
	// DurabilityExit writes a run's checkpoint only where the run stops:
	// when it pauses, completes, fails or is cancelled. A run of n steps
	// costs one write instead of n. If the process dies mid-run, the run's
	// steps are lost with it, and the client's retry runs them again
	// (model calls and server tools included); the history shows one
	// checkpoint per run.
	DurabilityExit Durability = "exit"
)

// ParseDurability reads a mode a client or a config named: one of the
// modes, or an error naming them (the empty string too, since whoever
// names a mode must name one).
func ParseDurability(s string) (Durability, error) {
	switch d := Durability(s); d {
	case DurabilitySync, DurabilityAsync, DurabilityExit:
		return d, nil
	}
	return "", fmt.Errorf("must be %q, %q or %q, got %q", DurabilitySync, DurabilityAsync, DurabilityExit, s)
}

// Check returns ParseDurability's error, but accepts "", which in a
// graph's RunConfig or WithDurability means the default.
func (d Durability) Check() error {
	if d == "" {
		return nil
	}
	_, err := ParseDurability(string(d))
	return err
}
