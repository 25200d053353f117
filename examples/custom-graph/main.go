// Command custom-graph is a code-first tenxgraph program: it builds its own
// graph in Go, registers it as "graph.agent:app", and hands over to the
// tenxgraph command line, so `custom-graph serve`, `validate`, `tools` and
// `run` work exactly as they do for the prebuilt agent.
//
// The graph is the react loop with two additions: a tool implemented right
// here in Go (word_count, in-process, no plugin), and a remote tool attached
// in code (ask_user) next to the ones the config declares.
package main

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/cli"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// Name is what the config's "agent" key names.
const Name = "graph.agent:app"

func init() { agent.Register(Name, build) }

func main() { cli.Main() }

type wordCountArgs struct {
	Text string `json:"text" jsonschema:"the text to count the words of"`
}

// wordCount is an ordinary Go function served as a tool.
func wordCount(_ context.Context, in wordCountArgs) (map[string]int, error) {
	return map[string]int{"words": len(strings.Fields(in.Text))}, nil
}

// build makes the graph from what the host configured: the model, and the
// providers for each ToolNode (builtin tools, plugins, the remote bridge).
func build(ctx context.Context, env agent.Env) (*graph.StateGraph, error) {
	local := sdk.MustTools("local", "1.0.0", sdk.MustTool("word_count", "Count the words in a text.", wordCount))
	providers := append([]sdk.Provider{local}, env.Providers["tools"]...)
	if env.Bridge != nil {
		providers = append(providers, env.Bridge)
	}
	tools, err := toolnode.New(ctx, "tools", providers...)
	if err != nil {
		return nil, err
	}
	g := graph.New().
		AddNode("model", &agent.ModelNode{Model: env.Model, Tools: tools, SystemPrompt: env.SystemPrompt, MaxSteps: env.MaxSteps}).
		AddNode("tools", tools).
		AddEdge(graph.START, "model").
		AddConditionalEdges("model", agent.ToolsCondition("tools"), "tools", graph.END).
		AddEdge("tools", "model").
		SetStepLimit(agent.StepLimit(env.MaxSteps)) // room for the model's max_steps calls and their tool steps
	// Remote tools can be declared in code too, validated by the same rules
	// as the config file's remote_tools (which the host attaches after this).
	err = g.AttachRemoteTools([]graph.RemoteToolConfig{{
		Node:        "tools",
		Name:        "ask_user",
		Description: "Ask the person a question and wait for the answer.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`),
	}})
	return g, err
}
