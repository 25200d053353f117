package checkpoint

import (
	"context"
	"fmt"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/registry"
)

// A store kind (a value of checkpointer.type: sqlite, memory, postgres,
// or one a program adds) registers once, from an init, with RegisterKind:
// its name, what it says of itself, the keys of the checkpointer block
// only it takes and those it needs, its defaults, the host secrets it
// reads, and how it opens. Package config reads the checkpointer block by
// the registered kinds and package service opens the store by them;
// neither names one.

// Config is the "checkpointer" block of 10xgraph.json, as the stores read
// it (package config checks it and fills in its defaults). It lives here,
// with the kinds that open it, so that a kind depends on nothing above it.
type Config struct {
	// Type is "sqlite" (default: embedded, survives restarts), "memory"
	// (lost on exit) or "postgres": a registered kind's name.
	Type string `json:"type"`
	// Path is the sqlite file (absolute).
	Path string `json:"path"`
	// DSNEnv names the environment variable holding the postgres DSN, which
	// carries a password and so never sits in the file.
	DSNEnv string `json:"dsn_env"`
	// Lease is how long a run's claim on its thread lasts unless its
	// heartbeat renews it (0: DefaultLease, 30s): how long a thread
	// stays busy after the replica running it dies.
	Lease time.Duration `json:"lease"`
	// KeepHistory is how many checkpoints each thread keeps beyond its
	// latest (what a resume needs): older ones are deleted as new ones are
	// written, and History lists fewer snapshots. nil means the config's
	// default, -1 keeps them all. The messages are kept whole either way.
	KeepHistory *int `json:"keep_history"`
	// IdleTTL, when set, deletes the threads nobody has written for that
	// long (and that no run holds), and gives their space back.
	IdleTTL time.Duration `json:"idle_ttl"`
	// Durability is when runs write their checkpoints, unless a request
	// says otherwise: one of graph's durability modes, "" for the default
	// (DurabilitySync).
	Durability Durability `json:"durability"`
}

// Kind is one store kind.
type Kind struct {
	// Name is the value of checkpointer.type.
	Name string
	// Rank orders the kinds where messages and the schema list them
	// (then the name), whatever order the inits run in.
	Rank int
	// Default makes it the store of a block without a type; one kind is.
	Default bool
	// Summary says what it is, after its name in the schema; "" for
	// nothing more than the name.
	Summary string
	// Own are the keys of the block only it takes: another kind's block
	// with one is refused at the key, and reads without it.
	Own []string
	// Needs are the keys it cannot open without.
	Needs []string
	// Refuse words the problem of another kind's block (other, its
	// type) holding key, one of Own; nil says it is only used with this
	// kind.
	Refuse func(key, other string) string
	// Settle fills in its defaults once the block is read; resolve makes
	// a path of the file absolute against its folder. Nil for none.
	Settle func(c *Config, resolve func(string) string)
	// Secrets are the host's environment variables holding its
	// credentials, which no tool provider is ever given; nil for none.
	Secrets func(c Config) []string
	// Open opens the store a settled block describes.
	Open func(ctx context.Context, c Config, opts ...Option) (Checkpointer, error)
}

// Refusal is the problem of a block of kind other holding key, one of k's
// Own.
func (k Kind) Refusal(key, other string) string {
	if k.Refuse != nil {
		return k.Refuse(key, other)
	}
	return fmt.Sprintf("only used when type is %q", k.Name)
}

// kinds are the registered store kinds.
var kinds = registry.List[Kind]{What: "store kind",
	Name: func(k Kind) string { return k.Name }, Rank: func(k Kind) int { return k.Rank }}

// isDefault reports whether k is the store of a block without a type.
func isDefault(k Kind) bool { return k.Default }

// RegisterKind adds a store kind. Call it from an init. A name registered
// twice, or a second default, panics: one kind would silently win.
func RegisterKind(k Kind) {
	if k.Open == nil {
		panic(fmt.Sprintf("checkpoint.RegisterKind: kind %q has no Open", k.Name))
	}
	if d, ok := kinds.First(isDefault); ok && k.Default {
		panic(fmt.Sprintf("checkpoint.RegisterKind: %q and %q both claim to be the default", d.Name, k.Name))
	}
	kinds.Add(k)
}

// Kinds are the registered store kinds, by Rank, then name.
func Kinds() []Kind { return kinds.All() }

// LookupKind is the kind registered under name; "" is the default kind.
func LookupKind(name string) (Kind, bool) {
	if name == "" {
		return kinds.First(isDefault)
	}
	return kinds.Find(name)
}

// opened is what a kind's Open returns from its store's own opener, s,
// err: a failed one gives a nil Checkpointer, never a typed nil.
func opened[S Checkpointer](s S, err error) (Checkpointer, error) {
	if err != nil {
		return nil, err
	}
	return s, nil
}
