package graph

import "github.com/tenxgraph/tenxgraph/host/checkpoint"

// Durability is when a run's checkpoints are written (sync, async or
// exit, as in LangGraph): checkpoint.Durability, which the config reads
// without depending on the engine.
type Durability = checkpoint.Durability

// The durability modes (see checkpoint.DurabilitySync and the others).
const (
	DurabilitySync  = checkpoint.DurabilitySync
	DurabilityAsync = checkpoint.DurabilityAsync
	DurabilityExit  = checkpoint.DurabilityExit
)

// ParseDurability reads a mode a client or a config named (see
// checkpoint.ParseDurability).
func ParseDurability(s string) (Durability, error) { return checkpoint.ParseDurability(s) }

// WithDurability sets the durability of runs whose RunConfig names none
// (DurabilitySync when unset).
func WithDurability(d Durability) Option {
	return func(a *App) {
		if d != "" {
			a.durability = d
		}
	}
}
