package graph_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// A run appends to the thread in place, but no state handed out changes:
// not the state a node was given (even when the node appends to it), nor
// a finished run's result, through this run or the next ones.
func TestAppendsLeaveHandedOutStatesAlone(t *testing.T) {
	type seen struct {
		msgs  []message.Message
		texts []string
	}
	var mu sync.Mutex
	var states []seen
	node := func(name string) graph.Node {
		return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			mu.Lock()
			states = append(states, seen{in.State.Messages, texts(in.State.Messages)})
			mu.Unlock()
			// A careless node: appending to the state must not write
			// into the thread.
			_ = append(in.State.Messages, message.Text(message.RoleAssistant, "junk"))
			return graph.Update{Messages: []message.Message{
				message.Text(message.RoleAssistant, name+"1"),
				message.Text(message.RoleAssistant, name+"2"),
			}}, nil
		})
	}
	g := graph.New().AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddEdge("b", graph.END).AddEdge("c", graph.END)
	app, err := g.Compile(checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	var results []seen
	var want []string
	for i := range 20 {
		in := fmt.Sprintf("u%d", i)
		res, err := app.Invoke(ctx, user(in), graph.RunConfig{ThreadID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, in, "a1", "a2", "b1", "b2", "c1", "c2")
		if got := texts(res.Messages); !slices.Equal(got, want) {
			t.Fatalf("run %d: thread %q, want %q", i, got, want)
		}
		results = append(results, seen{res.Messages, texts(res.Messages)})
	}
	for i, s := range append(states, results...) {
		if got := texts(s.msgs); !slices.Equal(got, s.texts) {
			t.Fatalf("state %d changed after it was handed out: %q, was %q", i, got, s.texts)
		}
	}
}
