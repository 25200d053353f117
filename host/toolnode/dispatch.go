package toolnode

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// Run implements graph.Node. It answers every unanswered call of the last
// assistant message, in call order: server tools run and remote calls go to
// the bridge, all concurrently; a deferred call becomes a
// RemoteToolCallBlock and the node asks the graph to pause. A call that
// cannot be made (unknown tool, arguments that fail the schema) gets an
// error result the model can read, so a model mistake never pauses the graph
// for the client.
func (n *Node) Run(ctx context.Context, in *graph.Input) (graph.Update, error) {
	calls := lastCalls(in.State.Messages)
	if len(calls) == 0 {
		return graph.Update{}, nil
	}
	ts, err := n.ToolSet(ctx, in.Run)
	if err != nil {
		return graph.Update{}, err
	}
	answered := message.Answered(in.State.Messages)
	blocks := make([]message.Block, len(calls))
	type job struct {
		i    int
		tool *Tool
	}
	var jobs []job
	for i, c := range calls {
		if _, done := answered[c.ID]; done {
			continue // answered in an earlier step: never run twice
		}
		t, ok := ts.lookup(c.Name)
		bad, invalidJSON := message.InvalidArguments(c.Arguments)
		switch {
		case invalidJSON:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("tool %q: the arguments are not a JSON object: %q. Call the tool again with a JSON object that matches its schema.", c.Name, bad))
		case !ok:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, ts.names()))
		case t.schema != nil && t.schema.Validate(c.Arguments) != nil:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("tool %q: %v. Fix the arguments and call it again.", c.Name, t.schema.Validate(c.Arguments)))
		default:
			jobs = append(jobs, job{i, t})
		}
	}
	call := func(j job) error {
		b, err := n.call(ctx, in.Run, j.tool, calls[j.i])
		blocks[j.i] = b
		return err
	}
	switch len(jobs) {
	case 0:
	case 1:
		if err := call(jobs[0]); err != nil {
			return graph.Update{}, err
		}
	default:
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for k, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = call(j)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return graph.Update{}, err
			}
		}
	}
	content := blocks[:0]
	remote := false
	for _, b := range blocks {
		if b != nil {
			content = append(content, b)
		}
		if _, ok := b.(message.RemoteToolCallBlock); ok {
			remote = true
		}
	}
	if len(content) == 0 {
		return graph.Update{}, nil
	}
	return graph.Update{
		Messages:  []message.Message{{Role: message.RoleTool, Content: content}},
		Interrupt: remote,
	}, nil
}

// call runs one tool through its provider: a server tool runs; a remote
// tool goes to the bridge, which checks the arguments and defers the call to
// the client. A provider failing (as opposed to the tool reporting an error)
// still gives the model an error result naming the provider; only the run
// being cancelled fails the step, so that a cancelled run saves nothing
// half-done.
func (n *Node) call(ctx context.Context, r *graph.Run, t *Tool, c message.ToolCallBlock) (message.Block, error) {
	req := sdk.CallToolRequest{Name: c.Name, Arguments: c.Arguments, CallID: c.ID, ThreadID: r.ThreadID}
	if t.Kind != KindServer {
		req.RunTool = &t.Spec
	}
	ev := graph.ToolEvent{Node: n.name, ID: c.ID, Name: c.Name, Provider: t.Provider}
	if t.Kind == KindServer {
		r.Emit(graph.Event{Type: graph.EventToolStarted, Data: ev})
		if r.Listening() {
			ctx = sdk.WithProgress(ctx, func(p sdk.Progress) {
				r.Emit(graph.Event{Type: graph.EventToolProgress, Data: graph.ToolProgress{Node: n.name, ID: c.ID, Name: c.Name,
					Provider: t.Provider, Progress: p.Progress, Total: p.Total, Message: p.Message}})
			})
		}
	}
	start := time.Now()
	resp, err := t.provider.CallTool(ctx, req)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("tool %q: %w", c.Name, context.Cause(ctx))
	}
	var b message.Block
	switch content := resp.Content; {
	case err != nil:
		b = errorResult(c.ID, fmt.Sprintf("provider %q could not run tool %q: %v", t.Provider, c.Name, err))
	case resp.Deferred:
		return message.RemoteToolCallBlock{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Node: n.name}, nil
	case len(content) == 0:
		b = message.ToolResultBlock{ToolCallID: c.ID, Content: json.RawMessage("null"), IsError: resp.IsError}
	case !json.Valid(content):
		b = errorResult(c.ID, fmt.Sprintf("provider %q returned a result for tool %q that is not valid JSON", t.Provider, c.Name))
	default:
		b = message.ToolResultBlock{ToolCallID: c.ID, Content: content, IsError: resp.IsError}
	}
	if t.Kind == KindServer {
		ev.IsError, ev.Duration = b.(message.ToolResultBlock).IsError, time.Since(start)
		r.Emit(graph.Event{Type: graph.EventToolFinished, Data: ev})
	}
	return b, nil
}

func errorResult(id, msg string) message.ToolResultBlock {
	raw, _ := json.Marshal(msg) // strings always encode
	return message.ToolResultBlock{ToolCallID: id, Content: raw, IsError: true}
}
