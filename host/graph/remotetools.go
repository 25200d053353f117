package graph

import (
	"errors"

	"github.com/tenxgraph/tenxgraph/host/decl"
)

// This file is the code-first door to remote tools, and only a door: the
// engine hands the list to the graph's ToolNodes, whose packages
// (toolnode, remotetool) hold every rule remote tools follow.

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
