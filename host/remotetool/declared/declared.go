// Package declared holds the rules a declared remote tool (decl.RemoteTool)
// can be judged by without a graph: its name, schema, timeout, node, and no
// two of one name. It does not import the graph, so the config loader
// (which must not depend on the engine) and the graph's ToolNodes share
// one set of rules.
package declared

import (
	"github.com/tenxgraph/tenxgraph/host/decl"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Spec is a declared remote tool as the model sees it.
func Spec(c decl.RemoteTool) sdk.ToolSpec {
	params := c.Parameters
	if len(params) == 0 {
		params = sdk.EmptyObjectSchema
	}
	return sdk.ToolSpec{Name: c.Name, Description: c.Description, Parameters: params}
}

// Check checks what can be known without a graph: names, schemas, timeouts
// and duplicates. Paths are relative to the list ("[1].parameters").
func Check(tools []decl.RemoteTool) toolspec.Problems {
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
