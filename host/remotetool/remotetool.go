// Package remotetool is the host's side of remote tools, where their
// rules meet the graph (those that need none are package declared's): a declared remote tool's name, schema, timeout
// and node, no two of one name, none shadowing a tool its node already
// has. The config loader judges a file's remote_tools with declared.Check; code-first
// graph.StateGraph.AttachRemoteTools comes here through the graph's
// ToolNodes (Attach). A run's own client tools are judged by the remote
// bridge (plugins/remote), which the ToolNode asks once per run.
package remotetool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/remotetool/declared"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Node is a graph node that offers remote tools: a ToolNode.
type Node interface {
	graph.RemoteToolNode
	// ToolOwner says where the node's tool called name comes from (its
	// kind, "server" say, and provider), if the node has one.
	ToolOwner(name string) (kind, provider string, ok bool)
	// AddRemoteTools adds remote tools Attach has judged.
	AddRemoteTools(tools []graph.RemoteToolConfig)
}

// Attach judges tools against g, with declared.Check's rules and the graph's: each
// names a node of g that is a Node, and no tool takes a name its node
// already has. Any problem rejects the whole list, every problem listed
// with its path ("[1].node"), and nothing is attached; otherwise each node
// gets its tools.
func Attach(g *graph.StateGraph, tools []graph.RemoteToolConfig) error {
	ps := declared.Check(tools)
	byNode := map[string][]graph.RemoteToolConfig{}
	var order []string
	for i, t := range tools {
		if t.Node == "" {
			continue // Check said so
		}
		at := toolspec.Index(i)
		n, ok := g.Node(t.Node).(Node)
		switch {
		case g.Node(t.Node) == nil:
			ps.Add(at+".node", "graph has no node %q (ToolNodes: %s)", t.Node, listOrNone(ToolNodes(g)))
			continue
		case !ok:
			ps.Add(at+".node", "node %q is not a ToolNode (ToolNodes: %s)", t.Node, listOrNone(ToolNodes(g)))
			continue
		}
		if kind, provider, taken := n.ToolOwner(t.Name); taken {
			ps.Add(at+".name", "%s", toolspec.Shadowed(t.Node, kind, t.Name, provider))
		}
		if byNode[t.Node] == nil {
			order = append(order, t.Node)
		}
		byNode[t.Node] = append(byNode[t.Node], t)
	}
	if len(ps) > 0 {
		slices.SortStableFunc(ps, func(a, b toolspec.Problem) int { return cmp.Compare(entry(a.Path), entry(b.Path)) })
		return ps
	}
	for _, name := range order {
		g.Node(name).(Node).AddRemoteTools(byNode[name])
	}
	return nil
}

// ToolNodes lists the names of g's nodes that can offer remote tools
// (Nodes), in the graph's order.
func ToolNodes(g *graph.StateGraph) []string {
	var out []string
	for _, name := range g.Nodes() {
		if _, ok := g.Node(name).(Node); ok {
			out = append(out, name)
		}
	}
	return out
}

// A run's own client tools reach its ToolNodes as one of the run's
// configurable values (graph.Run.Configurable), under configurableKey:
// the engine keeps them with the run's checkpoints, so that a resume that
// carries none offers the paused run's again, and knows nothing else of
// them.
const configurableKey = "remote_tools"

// Configurable returns the configurable values (thread.RunConfig's) that
// offer tools, each in the flat or the OpenAI shape, as a run's client
// tools: an empty list offers none, even on a resume. The ToolNode judges
// them (names, schemas, no shadowing) when the run starts.
func Configurable(tools []json.RawMessage) map[string]json.RawMessage {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		// A tool that is not JSON: the ToolNode refuses the list.
		raw = json.RawMessage(`"not JSON"`)
	}
	return map[string]json.RawMessage{configurableKey: raw}
}

// RunTools returns the run's client tools (Configurable), none when it has
// none, or an error wrapping graph.ErrInvalidInput.
func RunTools(r *graph.Run) ([]json.RawMessage, error) {
	raw := r.Configurable(configurableKey)
	if raw == nil {
		return nil, nil
	}
	var tools []json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, fmt.Errorf("%w: config.remote_tools: must be a list of tools: %v", graph.ErrInvalidInput, err)
	}
	return tools, nil
}

// entry is the list index a path starts with ("[3].name": 3).
func entry(path string) int {
	var i int
	fmt.Sscanf(path, "[%d]", &i)
	return i
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
