package graph

import (
	"encoding/json"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// RemoteToolConfig declares a tool whose schema the server owns and whose
// implementation runs in the client. It is the code-first twin of an entry
// of remote_tools in 10xgraph.json and is validated by the same rules.
type RemoteToolConfig struct {
	// Node is the ToolNode that offers the tool.
	Node string
	// Name is the tool's name; the client registers its handler under it.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments (an object schema);
	// nil means the tool takes no arguments.
	Parameters json.RawMessage
}

// Spec is the tool as the model sees it.
func (c RemoteToolConfig) Spec() sdk.ToolSpec {
	params := c.Parameters
	if len(params) == 0 {
		params = sdk.EmptyObjectSchema
	}
	return sdk.ToolSpec{Name: c.Name, Description: c.Description, Parameters: params}
}

// CheckRemoteTools checks what can be known without a graph: names, schemas
// and duplicates. Paths are relative to the list ("[1].parameters"). The
// config loader and AttachRemoteTools both call it, so a tool is judged the
// same way wherever it is declared.
func CheckRemoteTools(tools []RemoteToolConfig) toolspec.Problems {
	var ps toolspec.Problems
	first := map[string]int{}
	for i, t := range tools {
		at := toolspec.Index(i)
		if t.Node == "" {
			ps.Add(at+".node", "missing: name the ToolNode that offers the tool")
		}
		ps.Merge(at, toolspec.Check(t.Spec()))
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
