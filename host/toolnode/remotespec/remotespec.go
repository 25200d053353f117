// Package remotespec holds the rules of a declared remote tool, shared by
// the config loader and the ToolNode, so a tool is judged the same way
// wherever it is declared. It imports no provider: the config may use it.
package remotespec

import (
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Spec is a declared remote tool as the model sees it.
func Spec(c remotetool.Config) sdk.ToolSpec {
	params := c.Parameters
	if len(params) == 0 {
		params = sdk.EmptyObjectSchema
	}
	return sdk.ToolSpec{Name: c.Name, Description: c.Description, Parameters: params}
}

// Check checks what can be known without a graph: names, schemas and
// duplicates. Paths are relative to the list ("[1].parameters").
func Check(tools []remotetool.Config) toolspec.Problems {
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
