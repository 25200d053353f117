package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
)

// ErrMaxSteps: the model kept calling tools past max_steps.
var ErrMaxSteps = errors.New("model called tools too many times without a final answer")

// React builds the prebuilt agent: a "model" node and a ToolNode "tools",
// looping while the model calls tools.
func React(ctx context.Context, env Env) (*graph.StateGraph, error) {
	if env.Model == nil {
		return nil, fmt.Errorf("%s needs a model: add a \"model\" section to the config", ReactName)
	}
	tools, err := env.ToolNode(ctx, "tools")
	if err != nil {
		return nil, err
	}
	g := graph.New().
		AddNode("model", &ModelNode{Model: env.Model, Tools: tools, SystemPrompt: env.SystemPrompt, MaxSteps: env.MaxSteps}).
		AddNode("tools", tools).
		AddEdge(graph.START, "model").
		AddConditionalEdges("model", ToolsCondition("tools"), "tools", graph.END).
		AddEdge("tools", "model").
		SetStepLimit(StepLimit(env.MaxSteps))
	return g, nil
}

// StepLimit is the super-step bound of a graph whose loop is a ModelNode
// and a ToolNode, for a model allowed maxSteps calls (config.DefaultMaxSteps
// when zero): each call is followed by at most one tool step, so the
// model's own bound (ErrMaxSteps, which says which setting to raise) comes
// first; never below the engine's default.
func StepLimit(maxSteps int) int {
	if maxSteps <= 0 {
		maxSteps = config.DefaultMaxSteps
	}
	return max(graph.DefaultStepLimit, 2*maxSteps+2)
}

// ToolsCondition routes to the ToolNode when the last message calls tools,
// and to END otherwise.
func ToolsCondition(toolNode string) graph.Router {
	return func(s graph.State) []string {
		if n := len(s.Messages); n > 0 {
			last := s.Messages[n-1]
			if last.Role == message.RoleAssistant && len(last.ToolCalls()) > 0 {
				return []string{toolNode}
			}
		}
		return []string{graph.END}
	}
}

// ModelNode calls a chat model with the thread and the tools of a ToolNode.
// It is the model half of the react agent, usable in any graph.
type ModelNode struct {
	Model model.ChatModel
	// Tools is the ToolNode whose tools the model is offered (may be nil).
	Tools *toolnode.Node
	// SystemPrompt, when set, is sent first.
	SystemPrompt string
	// MaxSteps bounds the node's model calls per run
	// (config.DefaultMaxSteps, model.max_steps's default, when zero).
	MaxSteps int

	views views                         // per thread: what the model was last sent, to extend
	calls graph.RunLocal[*atomic.Int32] // per run: the model calls made
}

// Run implements graph.Node.
func (m *ModelNode) Run(ctx context.Context, in *graph.Input) (graph.Update, error) {
	counter, _ := m.calls.Get(in.Run, func() (*atomic.Int32, error) { return new(atomic.Int32), nil })
	limit := m.MaxSteps
	if limit <= 0 {
		limit = config.DefaultMaxSteps
	}
	if n := counter.Add(1); int(n) > limit {
		return graph.Update{}, fmt.Errorf("%w (max_steps is %d; raise model.max_steps if the task needs more)", ErrMaxSteps, limit)
	}
	view := m.views.Get(in.Run.Key())
	defer func() { m.views.Counted(in.Run.Key(), view, view.v.Size()) }()
	// The model reads the media the messages hold by reference through
	// the run: the thread's blobs, and those this run took in and may not
	// have written yet.
	req := model.Request{ThreadID: in.Run.Key(), Messages: view.history(in.State.Messages, m.SystemPrompt), Blobs: in.Run}
	if m.Tools != nil {
		ts, err := m.Tools.ToolSet(ctx, in.Run)
		if err != nil {
			return graph.Update{}, err
		}
		req.Tools = ts.Specs()
	}
	// The message's id is chosen before the model speaks, so streamed text
	// and the stored message share it (AG-UI clients match them by id).
	id := in.Run.RunID[:12] + "-m" + strconv.Itoa(len(in.State.Messages))
	// Text is streamed only to a listener: a plain invoke gets the answer
	// in one piece, which costs both sides less than a stream of chunks.
	if in.Run.Listening() {
		req.OnDelta = func(text string) {
			in.Run.Emit(graph.Event{Type: graph.EventTextDelta, Data: graph.TextDelta{Node: in.Node, MessageID: id, Text: text}})
		}
	}
	resp, err := m.Model.Generate(ctx, req)
	if err != nil {
		return graph.Update{}, fmt.Errorf("model: %w", err)
	}
	if in.Run.Emitting() {
		in.Run.Emit(graph.Event{Type: graph.EventUsage, Data: graph.Usage{Node: in.Node, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}})
	}
	msg := resp.Message
	// The engine names the calls (ids unique to the thread's life, see
	// graph.Update), whatever ids the model gave them.
	msg.ID, msg.Role = id, message.RoleAssistant
	return graph.Update{Messages: []message.Message{msg}}, nil
}
