// Package scratch is a store kind written the way a new one is (see
// docs/contributing.md, "A new model provider or store kind"): the
// checkpointer type "scratch" keeps threads in memory, in a Store of its
// own so that a test sees which kind the service opened. It exists for
// the service's tests, which link it with one import line.
package scratch

import (
	"context"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// Name is the kind's value of checkpointer.type.
const Name = "scratch"

func init() {
	checkpoint.RegisterKind(checkpoint.Kind{
		Name:    Name,
		Rank:    100,
		Summary: "a memory store for tests",
		Open: func(_ context.Context, _ checkpoint.Config, opts ...checkpoint.Option) (checkpoint.Checkpointer, error) {
			return &Store{Memory: checkpoint.NewMemory(opts...)}, nil
		},
	})
}

// Store is a scratch store: a memory store under a type of its own.
type Store struct{ *checkpoint.Memory }
