// Package graph is the StateGraph engine: named nodes joined by static and
// conditional edges, run in super-steps, with a checkpoint after every step.
//
// A run starts from the thread's latest checkpoint. Each super-step runs the
// active nodes concurrently, applies their updates in declaration order,
// picks the next nodes from the edges and hands the checkpoint to a Saver.
// A node may ask to pause by returning interrupts (Update.Interrupts): the
// graph stops after that step with the thread "interrupted" and the
// interrupts saved; once every interrupt is answered, the node runs again
// with the answers (Input.Resume) and the graph goes on. The engine knows
// nothing of what is asked: a ToolNode (package toolnode) asks for remote
// results and approvals this way. When one node of a parallel step fails,
// the nodes that finished keep their writes, and a retry runs only the
// failed ones.
//
// The engine keeps no threads: the runtime beside it (package thread)
// claims a thread, reads its latest checkpoint, hands it to Compiled.Run
// and writes what the run saves to a store. Tools, leases and stores are
// not the engine's.
package graph

import (
	"fmt"
	"slices"
)

// START and END are the graph's virtual entry and exit.
const (
	START = "__start__"
	END   = "__end__"
)

// Router picks the next node(s) after a node with conditional edges. It
// returns node names, or END.
type Router func(s State) []string

// StateGraph is a graph under construction. Methods record mistakes instead
// of returning them one at a time; Compile reports them all.
type StateGraph struct {
	order    []string
	nodes    map[string]Node
	edges    map[string][]string
	routers  map[string]routeSpec
	problems []string
	// stepLimit bounds a run's super-steps (SetStepLimit); 0: DefaultStepLimit.
	stepLimit int
	// interruptAfter are the nodes after which a run pauses (InterruptAfter).
	interruptAfter []string
}

type routeSpec struct {
	route    Router
	possible []string
}

// New returns an empty graph.
func New() *StateGraph {
	return &StateGraph{nodes: map[string]Node{}, edges: map[string][]string{}, routers: map[string]routeSpec{}}
}

// AddNode adds a node under a unique name.
func (g *StateGraph) AddNode(name string, n Node) *StateGraph {
	switch {
	case name == "" || name == START || name == END:
		g.problems = append(g.problems, fmt.Sprintf("node name %q is reserved or empty", name))
	case n == nil:
		g.problems = append(g.problems, fmt.Sprintf("node %q is nil", name))
	case g.nodes[name] != nil:
		g.problems = append(g.problems, fmt.Sprintf("node %q added twice", name))
	default:
		g.nodes[name] = n
		g.order = append(g.order, name)
	}
	return g
}

// AddEdge runs to after from (START for the entry, END to finish).
func (g *StateGraph) AddEdge(from, to string) *StateGraph {
	g.edges[from] = append(g.edges[from], to)
	return g
}

// AddConditionalEdges lets route pick what follows from. possible lists
// every name route may return, so Compile can check them and a mistyped
// route fails at startup instead of mid-run.
func (g *StateGraph) AddConditionalEdges(from string, route Router, possible ...string) *StateGraph {
	if _, dup := g.routers[from]; dup {
		g.problems = append(g.problems, fmt.Sprintf("node %q has two routers", from))
	}
	g.routers[from] = routeSpec{route: route, possible: possible}
	return g
}

// SetStepLimit bounds the super-steps of one run, so a graph that loops
// forever fails with ErrStepLimit instead of hanging (DefaultStepLimit when
// never set; n <= 0 sets it back). The graph's author knows its loops: an
// agent whose model may call tools a given number of times sets what that
// loop needs.
func (g *StateGraph) SetStepLimit(n int) *StateGraph {
	g.stepLimit = max(n, 0)
	return g
}

// InterruptAfter pauses the graph after any of the named nodes, whatever
// they return, in the manner of LangGraph's interrupt_after: a run with no
// new input continues. An unknown name is reported by Compile.
func (g *StateGraph) InterruptAfter(nodes ...string) *StateGraph {
	g.interruptAfter = append(g.interruptAfter, nodes...)
	return g
}

// Node returns the node called name, or nil.
func (g *StateGraph) Node(name string) Node { return g.nodes[name] }

// Nodes lists the names of the graph's nodes, in the order they were added.
func (g *StateGraph) Nodes() []string { return slices.Clone(g.order) }
