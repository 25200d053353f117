package toolnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// TestStepCallsRunConcurrently: the calls of one step run at once. Each
// tool waits until every call of the step has started, so calls made one
// after the other would never finish (the wait is bounded, and then fails).
func TestStepCallsRunConcurrently(t *testing.T) {
	const calls = 3
	wait := meet(calls)
	var tools []sdk.Tool
	for i := range calls {
		tools = append(tools, sdk.Func(fmt.Sprint("wait", i), "Wait for the others.", nil, wait))
	}
	first := true
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		if !first {
			return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
		}
		first = false
		msg := message.Message{Role: message.RoleAssistant}
		for i := range calls {
			msg.Content = append(msg.Content, message.ToolCallBlock{ID: fmt.Sprint("c", i), Name: fmt.Sprint("wait", i), Arguments: json.RawMessage(`{}`)})
		}
		return model.Response{Message: msg}, nil
	})
	res := invokeWaiters(t, m, tools, nil)
	results, asked := res.Messages[2].ToolResults(), res.Messages[1].ToolCalls()
	if len(results) != calls || len(asked) != calls {
		t.Fatalf("%d results of %d calls, want %d: %+v", len(results), len(asked), calls, res.Messages[2])
	}
	for i, r := range results {
		if r.IsError || string(r.Content) != `"together"` || r.ToolCallID != asked[i].ID {
			t.Errorf("result %d: %+v, want call %d (%s) answered \"together\"", i, r, i, asked[i].ID)
		}
	}
}

// TestRemoteCallsBesideConcurrentCalls: remote calls in a step do not take
// the server calls' concurrency from them. Two server tools wait until
// both have started, between two remote calls; the step pauses for the
// remote calls with both server results in the thread.
func TestRemoteCallsBesideConcurrentCalls(t *testing.T) {
	wait := meet(2)
	tools := []sdk.Tool{sdk.Func("wait0", "Wait for the other.", nil, wait), sdk.Func("wait1", "Wait for the other.", nil, wait)}
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "r0", Name: "read_clipboard", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c0", Name: "wait0", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "r1", Name: "read_clipboard", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c1", Name: "wait1", Arguments: json.RawMessage(`{}`)},
		}}}, nil
	})
	res := invokeWaiters(t, m, tools, []graph.RemoteToolConfig{{Node: "tools", Name: "read_clipboard", Description: "Read the clipboard.",
		Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}})
	asked := res.Messages[1].ToolCalls() // as the host named them
	if len(asked) != 4 {
		t.Fatalf("%d calls, want 4: %+v", len(asked), res.Messages[1])
	}
	if res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 2 || res.RemoteToolCalls[0].ID != asked[0].ID || res.RemoteToolCalls[1].ID != asked[2].ID {
		t.Fatalf("status %s, remote calls %+v; want interrupted for calls 0 and 2 of %+v", res.Status, res.RemoteToolCalls, asked)
	}
	results := res.Messages[2].ToolResults()
	if len(results) != 2 {
		t.Fatalf("%d results, want 2: %+v", len(results), res.Messages[2])
	}
	for i, r := range results {
		if want := asked[2*i+1].ID; r.IsError || string(r.Content) != `"together"` || r.ToolCallID != want {
			t.Errorf("result %d: %+v, want %s answered \"together\"", i, r, want)
		}
	}
}

// meet returns a tool function that n calls share: each waits until all n
// have started and then answers "together". The wait is bounded, and then
// fails, so calls made one after the other never answer "together".
func meet(n int) func(context.Context, json.RawMessage) (any, error) {
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	return func(context.Context, json.RawMessage) (any, error) {
		started.Done()
		select {
		case <-all:
			return "together", nil
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("the other calls of the step never started")
		}
	}
}

// invokeWaiters runs a ReAct graph whose node "tools" serves tools and the
// remote tools, on a memory store, once, and returns its result.
func invokeWaiters(t *testing.T, m model.ChatModel, tools []sdk.Tool, remote []graph.RemoteToolConfig) graph.Result {
	t.Helper()
	sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {sdk.MustTools("waiters", "1", tools...)}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.AttachRemoteTools(remote); err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(sg, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}
