// Package graph is the StateGraph engine: named nodes joined by static and
// conditional edges, run in super-steps, with a checkpoint after every step
// (written while the next step runs with DurabilityAsync, or only where a
// run stops with DurabilityExit).
//
// A run starts from the thread's latest checkpoint. Each super-step runs the
// active nodes concurrently, applies their updates in declaration order,
// picks the next nodes from the edges and writes a checkpoint. A node may ask
// to pause by returning interrupts (Update.Interrupts): the graph stops
// after that step with the thread "interrupted" and the interrupts saved;
// once every interrupt is answered, the node runs again with the answers
// (Input.Resume) and the graph goes on. The engine knows nothing of what
// is asked: a ToolNode (package toolnode) asks for remote results and
// approvals this way. When one node of a parallel step fails, the nodes
// that finished keep their writes, and a retry runs only the failed ones.
package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// START and END are the graph's virtual entry and exit.
const (
	START = "__start__"
	END   = "__end__"
)

// State is what flows through the graph and what a checkpoint holds. Nodes
// must treat it as read-only and return changes as an Update.
type State struct {
	// Messages is the thread, append-only.
	Messages []message.Message `json:"messages"`
	// Values holds named values for custom graphs; an Update replaces a
	// value by key.
	Values map[string]json.RawMessage `json:"values,omitempty"`
}

// Update is what a node returns.
type Update struct {
	// Messages are appended to the thread. IDs are assigned when empty.
	// Tool calls are renamed, whatever ids they came with: the engine gives
	// each an id unique to the thread's life (a model's ids are not, and a
	// thread deleted and created again must not take a result sent for a
	// call of its old life). A block of the same update that names one of
	// its calls (a tool_result, say) follows the rename; a later step finds
	// the new ids in the state, as a ToolNode does.
	Messages []message.Message
	// Values are set (replacing earlier values of the same key).
	Values map[string]json.RawMessage
	// Interrupt pauses the graph after this super-step, with nothing to
	// answer (LangGraph's interrupt_after, decided by the node): a later
	// run continues with the next nodes. The step's updates are saved
	// first, so nothing that finished in it runs again.
	Interrupt bool
	// Interrupts pause the graph after this super-step until each is
	// answered; the node then runs again with the answers in
	// Input.Resume. Messages and Values of the same update are saved with
	// the pause. IDs must be unique within the thread.
	Interrupts []Interrupt
}

// Node is one step of a graph.
type Node interface {
	Run(ctx context.Context, in *Input) (Update, error)
}

// NodeFunc adapts a function to Node.
type NodeFunc func(ctx context.Context, in *Input) (Update, error)

// Run implements Node.
func (f NodeFunc) Run(ctx context.Context, in *Input) (Update, error) { return f(ctx, in) }

// Input is what a node sees: the state before the step and the run.
type Input struct {
	State State
	Run   *Run
	// Node is the name the node runs under.
	Node string
	// Resume holds the answers to the node's interrupts, by interrupt id,
	// when the node runs again after its pause; nil otherwise.
	Resume map[string]Answer
	// Interrupts are the interrupts being answered (the node's, in the
	// order it raised them), when Resume is set.
	Interrupts []Interrupt
}

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

// Node returns the node called name, or nil.
func (g *StateGraph) Node(name string) Node { return g.nodes[name] }

// ToolNodes lists the names of nodes that can offer remote tools.
func (g *StateGraph) ToolNodes() []string {
	var out []string
	for _, name := range g.order {
		if _, ok := g.nodes[name].(RemoteToolNode); ok {
			out = append(out, name)
		}
	}
	return out
}

// AttachRemoteTools declares remote tools on the graph's ToolNodes. It is
// validated here, once: names, schemas, duplicates, nodes that are missing
// or are not ToolNodes, and names the node already serves. Any problem
// rejects the whole list, with paths like "[1].node". The rules are the
// ToolNodes' (package remotetool): the engine only hands the list over.
func (g *StateGraph) AttachRemoteTools(tools []RemoteToolConfig) error {
	if len(tools) == 0 {
		return nil
	}
	for _, name := range g.order {
		if n, ok := g.nodes[name].(RemoteToolNode); ok {
			return n.AttachRemoteTools(g, tools)
		}
	}
	return errors.New("remote tools need a ToolNode to offer them, and the graph has none: add one (package toolnode)")
}
