package graph

import (
	"encoding/json"
	"time"
)

// RemoteToolConfig declares a tool whose schema the server owns and whose
// implementation runs in the client. It is the code-first twin of an entry
// of remote_tools in 10xgraph.json and is validated by the same rules
// (package remotetool's, which a ToolNode applies: see RemoteToolNode).
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
	// Timeout is how long a call waits for the client's result before it
	// expires and the model is given an error result instead (0: the
	// node's default, see toolnode.DefaultRemoteTimeout).
	Timeout time.Duration
}

// RemoteToolNode is implemented by nodes that can offer remote tools: a
// ToolNode, whose package owns the rules remote tools follow.
type RemoteToolNode interface {
	Node
	// AttachRemoteTools judges tools, the graph's whole list, against g
	// and attaches each to the ToolNode it names; it attaches nothing
	// when anything is wrong, and returns every problem with its path in
	// the list ("[1].node").
	AttachRemoteTools(g *StateGraph, tools []RemoteToolConfig) error
}
