package toolnode

import (
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/toolnode/remotespec"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// RemoteSpec is a declared remote tool as the model sees it.
func RemoteSpec(c remotetool.Config) sdk.ToolSpec { return remotespec.Spec(c) }

// CheckRemoteTools checks what can be known without a graph: names, schemas
// and duplicates (remotespec.Check, the rules the config loader uses too).
func CheckRemoteTools(tools []remotetool.Config) toolspec.Problems {
	return remotespec.Check(tools)
}

// CheckRemoteTools implements graph.RemoteToolNode: each tool's name and
// schema must be valid, its timeout not negative, and a remote tool may not take a name the node
// already serves.
func (n *Node) CheckRemoteTools(tools []remotetool.Config, indexes []int) graph.Problems {
	n.mu.RLock()
	defer n.mu.RUnlock()
	var ps graph.Problems
	for i, t := range tools {
		at := toolspec.Index(indexes[i])
		for _, p := range toolspec.Check(RemoteSpec(t)) {
			ps = append(ps, graph.Problem{Path: toolspec.Join(at, p.Path), Message: p.Message})
		}
		if t.Timeout < 0 {
			ps = append(ps, graph.Problem{Path: at + ".timeout", Message: fmt.Sprintf("must be longer than zero, got %s (zero means the node's default)", t.Timeout)})
		}
		if prev, ok := n.byName[t.Name]; ok {
			ps = append(ps, graph.Problem{Path: at + ".name", Message: fmt.Sprintf("node %q already has a %s tool %q (from %s); a remote tool cannot shadow it", n.name, prev.Kind, t.Name, prev.Provider)})
		}
	}
	return ps
}

// AttachRemoteTools implements graph.RemoteToolNode.
func (n *Node) AttachRemoteTools(tools []remotetool.Config) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range tools {
		n.remote = append(n.remote, Tool{Spec: RemoteSpec(t), Kind: KindRemote, Provider: n.bridgeName, provider: n.bridge, Timeout: t.Timeout})
	}
	n.reindex()
}

type runToolsKey struct{}

// CheckRun implements graph.RunChecker: the run's client tools must parse
// (names, schemas) before the run changes anything.
func (n *Node) CheckRun(r *graph.Run) error {
	_, err := runTools(r)
	return err
}

// runTools parses the run's client tools once per run.
func runTools(r *graph.Run) ([]sdk.ToolSpec, error) {
	if r.RemoteTools == nil {
		return nil, nil
	}
	v, err := r.Memo(runToolsKey{}, func() (any, error) {
		specs, err := toolspec.ParseRunTools(r.RemoteTools)
		if err != nil {
			return nil, fmt.Errorf("%w: config.%v", graph.ErrInvalidInput, err)
		}
		return specs, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]sdk.ToolSpec), nil
}
