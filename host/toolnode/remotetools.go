package toolnode

import (
	"context"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/remotetool/declared"
)

// AttachRemoteTools implements graph.RemoteToolNode with the rules of
// package remotetool.
func (n *Node) AttachRemoteTools(g *graph.StateGraph, tools []graph.RemoteToolConfig) error {
	return remotetool.Attach(g, tools)
}

// ToolOwner implements remotetool.Node: the kind and provider of the
// node's tool called name.
func (n *Node) ToolOwner(name string) (kind, provider string, ok bool) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	t, ok := n.byName[name]
	if !ok {
		return "", "", false
	}
	return string(t.Kind), t.Provider, true
}

// AddRemoteTools implements remotetool.Node: it adds tools that
// remotetool.Attach judged.
func (n *Node) AddRemoteTools(tools []graph.RemoteToolConfig) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range tools {
		n.remote = append(n.remote, Tool{Spec: declared.Spec(t), Kind: KindRemote, Provider: n.bridgeName, provider: n.bridge, Timeout: t.Timeout})
	}
	n.reindex()
}

// CheckRun implements graph.RunChecker: the run's client tools must pass
// the remote bridge (names, schemas) before the run changes anything. The
// tool set it builds is the run's.
func (n *Node) CheckRun(ctx context.Context, r *graph.Run) error {
	_, err := n.ToolSet(ctx, r)
	return err
}

var _ remotetool.Node = (*Node)(nil)
