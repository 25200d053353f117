// Package declared is a remote tool as a config or a program declares it,
// and the rules it can be judged by without a graph: its name, schema,
// timeout, node, and no two of one name. It sits below the graph, so the
// config loader (which must not depend on the engine) and the graph's own
// AttachRemoteTools share one type and one set of rules.
package declared

import (
	"encoding/json"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Config declares a tool whose schema the server owns and whose
// implementation runs in the client: an entry of remote_tools in
// 10xgraph.json, or what a code-first program passes to
// graph.StateGraph.AttachRemoteTools (graph.RemoteToolConfig is this type).
type Config struct {
	// Node is the ToolNode that offers the tool.
	Node string `json:"node"`
	// Name is the tool's name; the client registers its handler under it.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments (an object schema);
	// nil means the tool takes no arguments.
	Parameters json.RawMessage `json:"parameters"`
	// Timeout is how long a call waits for the client's result before it
	// expires and the model is given an error result instead (0: the
	// node's default, see toolnode.DefaultRemoteTimeout).
	Timeout time.Duration `json:"timeout"`
}

// Spec is a declared remote tool as the model sees it.
func Spec(c Config) sdk.ToolSpec {
	params := c.Parameters
	if len(params) == 0 {
		params = sdk.EmptyObjectSchema
	}
	return sdk.ToolSpec{Name: c.Name, Description: c.Description, Parameters: params}
}

// Check checks what can be known without a graph: names, schemas, timeouts
// and duplicates. Paths are relative to the list ("[1].parameters").
func Check(tools []Config) toolspec.Problems {
	var ps toolspec.Problems
	first := map[string]int{}
	for i, t := range tools {
		at := toolspec.Index(i)
		if t.Node == "" {
			ps.Add(at+".node", "missing: name the ToolNode that offers the tool")
		}
		ps.Merge(at, toolspec.Check(Spec(t)))
		if t.Timeout < 0 {
			ps.Add(at+".timeout", "must be longer than zero, got %s (zero means the node's default)", t.Timeout)
		}
		if t.Name == "" {
			continue
		}
		if j, dup := first[t.Name]; dup {
			ps.Add(at+".name", "duplicate tool name %q (first declared at [%d])", t.Name, j)
			continue
		}
		first[t.Name] = i
	}
	return ps
}
