package toolnode_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
)

// The node remembers which calls of a thread have results as the thread
// grows, and forgets them when the thread is re-created under its id: a
// call runs once per thread, and again in the new thread.
func TestAnsweredFollowsTheThread(t *testing.T) {
	node, err := toolnode.New(context.Background(), "tools", echo)
	if err != nil {
		t.Fatal(err)
	}
	call := func() message.Message {
		return message.Message{ID: "a", Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{}`)}}}
	}
	step := func(msgs []message.Message) []message.Message {
		t.Helper()
		u, err := node.Run(context.Background(), &graph.Input{State: graph.State{Messages: msgs}, Run: &graph.Run{ThreadID: "t", RunID: "run0123456789"}, Node: "tools"})
		if err != nil {
			t.Fatal(err)
		}
		return u.Messages
	}
	thread := []message.Message{message.Text(message.RoleUser, "go"), call()}
	added := step(thread)
	if len(added) != 1 || len(added[0].ToolResults()) != 1 {
		t.Fatalf("the call did not run: %+v", added)
	}
	// Grown by the result, and a call reusing the answered id.
	thread = append(append(thread[:len(thread):len(thread)], added...), call())
	if again := step(thread); len(again) != 0 {
		t.Fatalf("an answered call ran again: %+v", again)
	}
	// Re-created: the same ids, other messages, no result yet.
	fresh := []message.Message{message.Text(message.RoleUser, "go"), call()}
	if added := step(fresh); len(added) != 1 || len(added[0].ToolResults()) != 1 {
		t.Fatalf("the re-created thread's call did not run: %+v", added)
	}
}
