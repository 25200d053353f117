package graph

import (
	"cmp"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/media"
)

// Option configures a compiled App.
type Option func(*App)

// WithInterruptAfter pauses the graph after any of the named nodes, whatever
// they return, in the manner of LangGraph's interrupt_after. A run with no
// new input continues.
func WithInterruptAfter(nodes ...string) Option {
	return func(a *App) {
		for _, n := range nodes {
			a.interruptAfter[n] = true
		}
	}
}

// DefaultStepLimit is the super-step bound when none is set: deep enough for
// any reasonable agent loop, small enough to stop a runaway one in seconds.
const DefaultStepLimit = 100

// App is a compiled graph bound to a checkpointer. It is safe for concurrent
// use; runs on one thread are serialised (a second concurrent run on a thread
// fails with ErrThreadBusy rather than racing), across every process sharing
// the store: a run claims its thread there (checkpoint.Leaser) before it
// does any work.
type App struct {
	g              *StateGraph
	cp             checkpoint.Checkpointer
	index          map[string]int
	interruptAfter map[string]bool
	stepLimit      int

	mu    sync.Mutex
	busy  map[string]struct{} // the keys of the threads a run (or delete) of this process holds
	idGen func() string
	cache *threadCache // nil when the store cannot confirm a copy is current

	observer func(Event)

	cacheBytes int64 // the cache's budget (WithCacheBytes); <= 0: no cache

	leaseTTL time.Duration

	durability Durability // of runs whose RunConfig names none (WithDurability)

	media *media.Checker // what media runs take in (WithMedia)
}

// Observe has fn receive every event of every run, Invoke's included, on the
// run's goroutine: for metrics and logs, which must not slow a run down or
// make it do work only a listener needs. Call it before the app serves runs.
func (a *App) Observe(fn func(Event)) { a.observer = fn }

// Compile checks the graph and binds it to cp. Every structural problem is
// reported at once: edges to unknown nodes, nodes nothing reaches, nodes with
// no way out, a missing entry.
func (g *StateGraph) Compile(cp checkpoint.Checkpointer, opts ...Option) (*App, error) {
	problems := append([]string(nil), g.problems...)
	known := func(n string) bool { return n == END || g.nodes[n] != nil }
	if len(g.edges[START]) == 0 {
		problems = append(problems, "no entry: add an edge from START")
	}
	for from, tos := range g.edges {
		if from != START && g.nodes[from] == nil {
			problems = append(problems, fmt.Sprintf("edge from unknown node %q", from))
		}
		for _, to := range tos {
			if !known(to) {
				problems = append(problems, fmt.Sprintf("edge %s -> %s: unknown node %q", from, to, to))
			}
		}
	}
	for from, r := range g.routers {
		if g.nodes[from] == nil {
			problems = append(problems, fmt.Sprintf("router on unknown node %q", from))
		}
		if r.route == nil {
			problems = append(problems, fmt.Sprintf("router on %q is nil", from))
		}
		if len(r.possible) == 0 {
			problems = append(problems, fmt.Sprintf("router on %q lists no possible targets", from))
		}
		for _, to := range r.possible {
			if !known(to) {
				problems = append(problems, fmt.Sprintf("router on %q: unknown target %q", from, to))
			}
		}
		if len(g.edges[from]) > 0 {
			problems = append(problems, fmt.Sprintf("node %q has both edges and a router", from))
		}
	}
	for _, n := range g.order {
		if len(g.edges[n]) == 0 && g.routers[n].route == nil {
			problems = append(problems, fmt.Sprintf("node %q has no outgoing edge (add an edge to END to finish there)", n))
		}
	}
	if cp == nil {
		problems = append(problems, "no checkpointer")
	}
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p)
		}
		return nil, fmt.Errorf("graph: %w", errors.Join(errs...))
	}
	a := &App{
		g: g, cp: cp,
		index:          map[string]int{},
		interruptAfter: map[string]bool{},
		stepLimit:      cmp.Or(g.stepLimit, DefaultStepLimit),
		busy:           map[string]struct{}{},
		idGen:          newID,
		cacheBytes:     DefaultCacheBytes,
		leaseTTL:       DefaultLease,
		durability:     DurabilitySync,
		media:          media.Default(),
	}
	for i, n := range g.order {
		a.index[n] = i
	}
	for _, o := range opts {
		o(a)
	}
	if err := a.durability.Check(); err != nil {
		return nil, fmt.Errorf("graph: durability: %w", err)
	}
	a.cache = newThreadCache(cp, a.cacheBytes)
	for n := range a.interruptAfter {
		if g.nodes[n] == nil {
			return nil, fmt.Errorf("graph: interrupt after unknown node %q", n)
		}
	}
	return a, nil
}

// Graph returns the graph the app was compiled from.
func (a *App) Graph() *StateGraph { return a.g }

// Checkpointer returns the store the app writes to.
func (a *App) Checkpointer() checkpoint.Checkpointer { return a.cp }
