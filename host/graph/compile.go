package graph

import (
	"cmp"
	"errors"
	"fmt"
)

// DefaultStepLimit is the super-step bound when none is set: deep enough for
// any reasonable agent loop, small enough to stop a runaway one in seconds.
const DefaultStepLimit = 100

// Compiled is a checked graph, ready to run (Run) on the threads a runtime
// keeps (package thread compiles and runs it on a checkpoint store). It is
// safe for concurrent use.
type Compiled struct {
	g              *StateGraph
	interruptAfter map[string]bool
	stepLimit      int
}

// Compile checks the graph. Every structural problem is reported at once:
// edges to unknown nodes, nodes nothing reaches, nodes with no way out, a
// missing entry.
func (g *StateGraph) Compile() (*Compiled, error) {
	if problems := g.check(); len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p)
		}
		return nil, fmt.Errorf("graph: %w", errors.Join(errs...))
	}
	c := &Compiled{g: g, interruptAfter: map[string]bool{}, stepLimit: cmp.Or(g.stepLimit, DefaultStepLimit)}
	for _, n := range g.interruptAfter {
		c.interruptAfter[n] = true
	}
	return c, nil
}

// Graph returns the graph c was compiled from.
func (c *Compiled) Graph() *StateGraph { return c.g }

// check lists what is wrong with the graph's structure.
func (g *StateGraph) check() []string {
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
	for _, n := range g.interruptAfter {
		if g.nodes[n] == nil {
			problems = append(problems, fmt.Sprintf("interrupt after unknown node %q", n))
		}
	}
	return problems
}
