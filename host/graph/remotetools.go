package graph

import "github.com/tenxgraph/tenxgraph/host/decl"

// RemoteToolConfig declares a tool whose schema the server owns and whose
// implementation runs in the client. It is the code-first twin of an entry
// of remote_tools in 10xgraph.json, the same plain type (decl.RemoteTool),
// and is validated by the same rules (package remotetool/declared's, which
// a ToolNode applies: see RemoteToolNode).
type RemoteToolConfig = decl.RemoteTool

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
