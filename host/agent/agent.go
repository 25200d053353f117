// Package agent holds the registry of named graphs that a config's "agent"
// key picks from, and the prebuilt "tenxgraph:react" agent.
//
// A code-first program registers its own graph under a name (the seed's
// "graph.agent:app") before calling the CLI entry point, and the config file
// selects it exactly as it selects the prebuilt one.
package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// Env is what the host hands a graph builder: the configured model and the
// tool providers configured for each node.
type Env struct {
	// Model is the configured chat model (nil when the config has none).
	Model model.ChatModel
	// SystemPrompt is model.system_prompt from the config.
	SystemPrompt string
	// MaxSteps bounds the model calls of one run (model.max_steps).
	MaxSteps int
	// Providers are the server tool providers by ToolNode name.
	Providers map[string][]sdk.Provider
	// Bridge is the remote-client bridge every ToolNode uses (nil: the
	// bridge runs in-process).
	Bridge sdk.Provider
}

// ToolNode builds a ToolNode called name with the providers configured for
// it and the remote bridge.
func (e Env) ToolNode(ctx context.Context, name string) (*toolnode.Node, error) {
	providers := e.Providers[name]
	if e.Bridge != nil {
		providers = append(slices.Clip(providers), e.Bridge)
	}
	return toolnode.New(ctx, name, providers...)
}

// Builder makes a graph from the host's environment. The host compiles it
// with its checkpointer and attaches the configured remote tools.
type Builder func(ctx context.Context, env Env) (*graph.StateGraph, error)

var (
	mu       sync.RWMutex
	registry = map[string]Builder{}
)

// Register makes a graph available to configs under name. Like Caddy's
// module registry it refuses an empty name, a nil builder and a name already
// taken, by panicking: registration happens at init, where the mistake is
// found at once.
func Register(name string, b Builder) {
	mu.Lock()
	defer mu.Unlock()
	switch {
	case name == "":
		panic("agent: Register with an empty name")
	case b == nil:
		panic(fmt.Sprintf("agent: Register %q with a nil builder", name))
	case registry[name] != nil:
		panic(fmt.Sprintf("agent: %q is already registered", name))
	}
	registry[name] = b
}

// Lookup returns the builder registered under name.
func Lookup(name string) (Builder, bool) {
	mu.RLock()
	defer mu.RUnlock()
	b, ok := registry[name]
	return b, ok
}

// Names lists the registered graphs, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ReactName is the prebuilt agent's registered name.
const ReactName = "tenxgraph:react"

func init() { Register(ReactName, React) }
