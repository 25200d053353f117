// Package toolnode is the ToolNode: the graph node that runs the tools the
// model called.
//
// A ToolNode offers the model three kinds of tools: server tools from its
// providers, remote tools declared on the server (config or
// AttachRemoteTools), and the run's own client tools. Server tools run here,
// all of a step's calls concurrently; remote calls become RemoteToolCallBlocks
// and the node asks the graph to pause. Because the graph checkpoints the
// step's whole update before pausing, a server tool that ran is never run
// again on resume.
package toolnode

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/toolspec"
)

// Kind says where a tool runs.
type Kind string

// Tool kinds, as `tenxgraph tools` prints them.
const (
	// KindServer tools run in the host, through a provider.
	KindServer Kind = "server"
	// KindRemote tools are declared on the server and run in the client.
	KindRemote Kind = "remote"
	// KindRunRemote tools are a client's own, for one run.
	KindRunRemote Kind = "remote (per-run)"
)

// Tool is one entry of a tool set.
type Tool struct {
	Spec sdk.ToolSpec
	Kind Kind
	// Provider names the provider that answers calls: the one that runs a
	// server tool, or the remote bridge that hands a remote call over.
	Provider string

	// NeedsApproval: a person approves each call before it runs (the
	// config requires it of the tool, or its provider asks for it).
	NeedsApproval bool

	// Timeout is how long a call to a remote tool waits for the client's
	// result (0: the node's default, SetRemoteTimeout).
	Timeout time.Duration

	provider sdk.Provider
	schema   *toolspec.Schema // server tools: the host validates their arguments
}

// bridge is a provider whose tools run in the client: it judges remote
// calls and the run's client tools (plugins/remote).
type bridge interface {
	sdk.Provider
	sdk.RunToolsProvider
}

// Node is a ToolNode. Build it with New; it is safe for concurrent runs.
type Node struct {
	name       string
	bridge     bridge
	bridgeName string

	mu      sync.RWMutex
	sources []*source // the server tool providers, in the order given
	server  []Tool    // sorted by name; changes only when a provider's list does
	remote  []Tool    // configured remote tools, in declaration order
	byName  map[string]*Tool
	// base is the tool set of a run without client tools, shared by all
	// such runs (a ToolSet is never modified once built).
	base *ToolSet
	// gen counts changes of the server tools: a run's tool set is built
	// once per generation.
	gen uint64
	// remoteTimeout is how long a remote call without a timeout of its own
	// waits for its result (SetRemoteTimeout).
	remoteTimeout time.Duration

	answered *memo.Fold[map[string]bool] // per thread, the calls with a result
	sets     graph.RunLocal[*runSets]    // per run, its tool sets
}

// DefaultRemoteTimeout is how long a remote call waits for the client's
// result unless its tool or the node says otherwise: ten minutes, as long as
// OpenAI's Assistants API lets a run wait for tool outputs before it
// expires. Long enough for a person at a browser to answer; short enough
// that a client that went away does not hold the thread for hours.
const DefaultRemoteTimeout = 10 * time.Minute

// SetRemoteTimeout sets how long the node's remote calls wait for the
// client's result when their tool has no Timeout: per-run client tools and
// remote tools declared without one. d <= 0 restores DefaultRemoteTimeout.
// Past it a call expires: the model gets an error result saying so and a
// late result is refused.
func (n *Node) SetRemoteTimeout(d time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.remoteTimeout = d
}

// timeout is how long a call to t waits for the client.
func (n *Node) timeout(t *Tool) time.Duration {
	if t != nil && t.Timeout > 0 {
		return t.Timeout
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if n.remoteTimeout > 0 {
		return n.remoteTimeout
	}
	return DefaultRemoteTimeout
}

// source is a provider of server tools and the list it gave last.
type source struct {
	p    sdk.Provider
	name string
	md   sdk.MetadataResponse
	// changed is closed when the provider's list changed since md was
	// read; nil for a provider whose list never changes.
	changed <-chan struct{}
	gate    *gated
}

// gated is a provider whose calls need approval (RequireApproval).
type gated struct {
	sdk.Provider
	names []string // nil: every tool
}

func (g *gated) covers(tool string) bool {
	return g != nil && (g.names == nil || slices.Contains(g.names, tool))
}

// RequireApproval marks p's tools as needing a person's approval before
// each call, when p is given to New: every tool when names is nil, else the
// tools named. A call to such a tool pauses the run (an approval_request)
// and runs only once approved, with the arguments the model gave.
func RequireApproval(p sdk.Provider, names []string) sdk.Provider {
	return &gated{Provider: p, names: names}
}

// New builds a ToolNode serving the providers' tools. It lists every
// provider once, now: a provider that cannot describe itself, a tool with an
// invalid spec, or a name two providers share is an error at startup rather
// than a surprise mid-conversation.
//
// A provider announcing sdk.CapabilityRemote is the node's remote bridge:
// remote calls and the run's client tools go through it. Without one, the
// node uses the bridge in-process (remote.New).
func New(ctx context.Context, name string, providers ...sdk.Provider) (*Node, error) {
	n := &Node{name: name, answered: newAnswered()}
	var errs []string
	seen := map[string]string{} // tool name -> provider name
	for i, p := range providers {
		gate, _ := p.(*gated)
		if gate != nil {
			p = gate.Provider
		}
		var changed <-chan struct{}
		if w, ok := p.(sdk.ToolsWatcher); ok {
			changed = w.ToolsChanged() // before reading, so no change is missed
		}
		md, err := p.Metadata(ctx, sdk.MetadataRequest{})
		if err != nil {
			return nil, fmt.Errorf("tool node %q: provider %d: list tools: %w", name, i, err)
		}
		pname := md.Name
		if pname == "" {
			pname = fmt.Sprintf("provider-%d", i)
		}
		kind := KindServer
		if slices.Contains(md.Capabilities, sdk.CapabilityRemote) {
			b, ok := p.(bridge)
			switch {
			case !ok:
				errs = append(errs, fmt.Sprintf("provider %q says its tools are remote but cannot judge client tools (it lacks PrepareRun)", pname))
				continue
			case n.bridge != nil:
				errs = append(errs, fmt.Sprintf("providers %q and %q are both remote bridges; a node has one", n.bridgeName, pname))
				continue
			}
			n.bridge, n.bridgeName, kind = b, pname, KindRemote
		} else {
			n.sources = append(n.sources, &source{p: p, name: pname, md: md, changed: changed, gate: gate})
		}
		for _, spec := range md.Tools {
			if ps := toolspec.Check(spec); len(ps) > 0 {
				errs = append(errs, fmt.Sprintf("provider %q, tool %q: %v", pname, spec.Name, strings.ReplaceAll(ps.Error(), "\n", "; ")))
				continue
			}
			if prev, dup := seen[spec.Name]; dup {
				errs = append(errs, fmt.Sprintf("tool %q is served by both %q and %q; tool names must be unique on a node: give one of the plugins a \"prefix\" for its tool names", spec.Name, prev, pname))
				continue
			}
			seen[spec.Name] = pname
			t := Tool{Spec: spec, Kind: kind, Provider: pname, provider: p, NeedsApproval: kind == KindServer && (spec.RequiresApproval || gate.covers(spec.Name))}
			if kind == KindServer {
				t.schema, _ = toolspec.Compile(spec.Parameters) // checked above
				n.server = append(n.server, t)
			} else {
				n.remote = append(n.remote, t)
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("tool node %q:\n  %s", name, strings.Join(errs, "\n  "))
	}
	if n.bridge == nil {
		n.bridge, n.bridgeName = remote.New(), remote.Name
	}
	sort.Slice(n.server, func(i, j int) bool { return n.server[i].Spec.Name < n.server[j].Spec.Name })
	n.reindex()
	return n, nil
}

func (n *Node) reindex() {
	n.byName = make(map[string]*Tool, len(n.server)+len(n.remote))
	for i := range n.server {
		n.byName[n.server[i].Spec.Name] = &n.server[i]
	}
	for i := range n.remote {
		n.byName[n.remote[i].Spec.Name] = &n.remote[i]
	}
	n.base = &ToolSet{tools: slices.Concat(n.server, n.remote), byName: n.byName}
	n.base.specs = specsOf(n.base.tools)
}

func specsOf(tools []Tool) []sdk.ToolSpec {
	specs := make([]sdk.ToolSpec, len(tools))
	for i, t := range tools {
		specs[i] = t.Spec
	}
	return specs
}

// stale says whether a provider announced a change not yet read.
func (n *Node) stale() bool {
	n.mu.RLock()
	defer n.mu.RUnlock()
	for _, s := range n.sources {
		select {
		case <-s.changed: // a nil channel (never changes) is never ready
			return true
		default:
		}
	}
	return false
}

// reading is a provider's tool list as refresh read it, and the channel
// that announces its next change.
type reading struct {
	s    *source
	md   sdk.MetadataResponse
	next <-chan struct{}
}

// refresh re-reads the tool lists of the providers that announced a change,
// so that the next model step is offered the new tools. It costs one
// non-blocking channel receive per provider when nothing changed. A tool
// the node cannot take (an invalid spec, or a name another of its tools
// has) is left out and reported on r's events.
func (n *Node) refresh(ctx context.Context, r *graph.Run) {
	if !n.stale() {
		return
	}
	// The providers are asked without the lock: never hold it across I/O.
	var stale []*source
	n.mu.RLock()
	for _, s := range n.sources {
		select {
		case <-s.changed:
			stale = append(stale, s)
		default:
		}
	}
	n.mu.RUnlock()
	var read []reading
	for _, s := range stale {
		next := s.p.(sdk.ToolsWatcher).ToolsChanged()
		md, err := s.p.Metadata(ctx, sdk.MetadataRequest{})
		if err != nil {
			continue // the closed channel stays: tried again at the next step
		}
		read = append(read, reading{s, md, next})
	}
	if len(read) == 0 {
		return
	}
	// The tools left out are reported once the lock is let go: an event
	// goes into the run's stream, whose reader may be slow, and no other
	// run's tool set may wait for it.
	for _, e := range n.reread(read) {
		r.Emit(graph.Event{Type: EventToolIgnored, Data: e})
	}
}

// reread takes the lists read, under the lock, and returns the tools it
// left out.
func (n *Node) reread(read []reading) (ignored []ToolIgnored) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, rd := range read {
		rd.s.md, rd.s.changed = rd.md, rd.next
	}
	remote := make(map[string]bool, len(n.remote))
	for _, t := range n.remote {
		remote[t.Spec.Name] = true
	}
	seen := map[string]string{}
	var server []Tool
	for _, s := range n.sources {
		for _, spec := range s.md.Tools {
			reason := ""
			if ps := toolspec.Check(spec); len(ps) > 0 {
				reason = strings.ReplaceAll(ps.Error(), "\n", "; ")
			} else if prev, dup := seen[spec.Name]; dup {
				reason = fmt.Sprintf("%q already serves a tool of that name", prev)
			} else if remote[spec.Name] {
				reason = "a configured remote tool has that name"
			}
			if reason != "" {
				ignored = append(ignored, ToolIgnored{Node: n.name, Name: spec.Name,
					Reason: fmt.Sprintf("provider %q added the tool, but the node cannot offer it: %s", s.name, reason)})
				continue
			}
			seen[spec.Name] = s.name
			t := Tool{Spec: spec, Kind: KindServer, Provider: s.name, provider: s.p, NeedsApproval: spec.RequiresApproval || s.gate.covers(spec.Name)}
			t.schema, _ = toolspec.Compile(spec.Parameters) // checked above
			server = append(server, t)
		}
	}
	sort.Slice(server, func(i, j int) bool { return server[i].Spec.Name < server[j].Spec.Name })
	n.server = server
	n.gen++
	n.reindex()
	return ignored
}

// Name is the node's name in the graph.
func (n *Node) Name() string { return n.name }

// Tools lists the node's tools without a run: server tools, then configured
// remote tools.
func (n *Node) Tools() []Tool {
	n.refresh(context.Background(), &graph.Run{})
	n.mu.RLock()
	defer n.mu.RUnlock()
	return slices.Concat(n.server, n.remote)
}

// ToolSet is the tools one run offers the model.
type ToolSet struct {
	tools  []Tool
	byName map[string]*Tool
	specs  []sdk.ToolSpec
}

// Specs are the tools as the model sees them.
func (ts *ToolSet) Specs() []sdk.ToolSpec { return ts.specs }

// Tools are the set's entries.
func (ts *ToolSet) Tools() []Tool { return ts.tools }

// runSets are a run's tool sets of one node, by the generation of the
// node's server tools they were built for.
type runSets struct {
	mu    sync.Mutex
	byGen map[uint64]*runSet
}

type runSet struct {
	once sync.Once
	ts   *ToolSet
	err  error
}

// ToolSet returns the tools this run offers: the node's own plus the run's
// client tools whose names are free. It is built once per run, and again
// when a provider's tool list changed (see sdk.ToolsWatcher): the model
// step after a change sees the new tools. The remote bridge judges the
// run's client tools and leaves out one that would shadow one of the
// node's, and the run's events report it (EventToolIgnored).
func (n *Node) ToolSet(ctx context.Context, r *graph.Run) (*ToolSet, error) {
	n.refresh(ctx, r)
	n.mu.RLock()
	gen := n.gen
	n.mu.RUnlock()
	sets, _ := n.sets.Get(r, func() (*runSets, error) { return &runSets{byGen: map[uint64]*runSet{}}, nil })
	sets.mu.Lock()
	set := sets.byGen[gen]
	if set == nil {
		set = &runSet{}
		sets.byGen[gen] = set
	}
	sets.mu.Unlock()
	set.once.Do(func() { set.ts, set.err = n.buildToolSet(ctx, r) })
	return set.ts, set.err
}

func (n *Node) buildToolSet(ctx context.Context, r *graph.Run) (*ToolSet, error) {
	// A snapshot, so that the bridge is asked without the lock held: the
	// index and the slices are replaced on a change, never modified.
	n.mu.RLock()
	base, byName, server, remoteTools := n.base, n.byName, n.server, n.remote
	n.mu.RUnlock()
	runTools, err := remotetool.RunTools(r)
	if err != nil || len(runTools) == 0 {
		return base, err
	}
	// The run's client tools go to the bridge as the client sent them:
	// the bridge reads them, once, and judges them.
	req := sdk.PrepareRunRequest{RunTools: runTools, Taken: make([]string, 0, len(byName))}
	for name := range byName {
		req.Taken = append(req.Taken, name)
	}
	sort.Strings(req.Taken)
	resp, err := n.bridge.PrepareRun(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("tool node %q: the remote bridge could not judge the run's client tools: %w", n.name, err)
	}
	if len(resp.Problems) > 0 {
		return nil, fmt.Errorf("%w: config.%v", graph.ErrInvalidInput, toolspec.Problems(resp.Problems))
	}
	for _, ig := range resp.Ignored {
		r.Emit(graph.Event{Type: EventToolIgnored, Data: ToolIgnored{Node: n.name, Name: ig.Name,
			Reason: fmt.Sprintf("%s (node %q)", ig.Reason, n.name)}})
	}
	ts := &ToolSet{
		tools:  slices.Concat(server, remoteTools, make([]Tool, 0, len(resp.Tools))),
		byName: make(map[string]*Tool, len(byName)+len(resp.Tools)),
	}
	for _, spec := range resp.Tools {
		if _, taken := byName[spec.Name]; taken {
			continue // a bridge that failed to leave it out does not get to shadow
		}
		ts.tools = append(ts.tools, Tool{Spec: spec, Kind: KindRunRemote, Provider: n.bridgeName, provider: n.bridge})
	}
	for i := range ts.tools {
		ts.byName[ts.tools[i].Spec.Name] = &ts.tools[i]
	}
	ts.specs = specsOf(ts.tools)
	return ts, nil
}

var _ graph.RemoteToolNode = (*Node)(nil)

// lookup finds a tool for a call, or says why there is none.
func (ts *ToolSet) lookup(name string) (*Tool, bool) {
	t, ok := ts.byName[name]
	return t, ok
}

func (ts *ToolSet) names() string {
	names := make([]string, len(ts.tools))
	for i, t := range ts.tools {
		names[i] = t.Spec.Name
	}
	return strings.Join(names, ", ")
}

// lastCalls returns the calls of the thread's last assistant message.
func lastCalls(msgs []message.Message) []message.ToolCallBlock {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == message.RoleAssistant {
			return msgs[i].ToolCalls()
		}
	}
	return nil
}
