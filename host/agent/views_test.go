package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// recorder is a chat model that keeps what it was sent and calls a tool
// with the same id every time, as some OpenAI-compatible servers do.
type recorder struct{ got [][]message.Message }

func (r *recorder) Generate(_ context.Context, req model.Request) (model.Response, error) {
	r.got = append(r.got, req.Messages)
	return model.Response{Message: message.Message{Content: []message.Block{
		message.ToolCallBlock{ID: "call_0", Name: "t", Arguments: json.RawMessage(`{}`)},
		message.ToolCallBlock{ID: "call_0", Name: "t", Arguments: json.RawMessage(`{}`)},
	}}}, nil
}

// Over a growing thread, with and without a system prompt and across
// threads, the model is sent the prompt and message.ForModel of the
// thread. (The calls it makes keep the model's ids here: the engine names
// them as it adds them to the thread, as this test does.)
func TestModelNodeSendsForModel(t *testing.T) {
	for _, prompt := range []string{"", "be brief"} {
		rec := &recorder{}
		node := &ModelNode{Model: rec, SystemPrompt: prompt, MaxSteps: 1000}
		threads := map[string][]message.Message{}
		for i := range 120 {
			thread := fmt.Sprintf("t%d", i%3)
			msgs := threads[thread]
			run := &graph.Run{ThreadID: thread, RunID: fmt.Sprintf("run%09d", i)}
			u, err := node.Run(context.Background(), &graph.Input{State: graph.State{Messages: msgs}, Run: run, Node: "model"})
			if err != nil {
				t.Fatal(err)
			}
			want := message.ForModel(msgs)
			if prompt != "" {
				want = append([]message.Message{message.Text(message.RoleSystem, prompt)}, want...)
			}
			if got := rec.got[len(rec.got)-1]; len(want) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("prompt %q, call %d: sent\n%+v\nwant\n%+v", prompt, i, got, want)
			}
			reply := u.Messages[0]
			for j, b := range reply.Content {
				c := b.(message.ToolCallBlock)
				c.ID = fmt.Sprintf("c%d_%d", i, j)
				reply.Content[j] = c
			}
			calls := reply.ToolCalls()
			// The thread grows as a graph's does: a copy with the reply and,
			// every other time, the results (some turns leave the calls
			// unanswered, so that a later result moves up).
			next := append(append([]message.Message(nil), msgs...), reply)
			if i%2 == 0 {
				next = append(next, message.Message{ID: fmt.Sprintf("r%d", i), Role: message.RoleTool, Content: []message.Block{
					message.ToolResultBlock{ToolCallID: calls[0].ID, Content: json.RawMessage(`1`)},
				}})
			}
			next = append(next, message.Text(message.RoleUser, "again"))
			threads[thread] = next
		}
	}
}

// The views stay within their bounds, dropping the least recently used.
func TestViewsBounded(t *testing.T) {
	var vs views
	const maxViews, maxViewBytes = memo.DefaultThreads, memo.DefaultBytes
	for i := range maxViews + 10 {
		thread := fmt.Sprintf("t%d", i)
		v := vs.Get(thread)
		v.history([]message.Message{message.Text(message.RoleUser, "hi")}, "")
		vs.Counted(thread, v, v.v.Size())
	}
	if vs.Len() != maxViews {
		t.Fatalf("%d views, want %d", vs.Len(), maxViews)
	}
	if vs.Has("t0") {
		t.Fatal("the least recently used view was kept")
	}
	big := vs.Get("big")
	text := string(make([]byte, maxViewBytes/4))
	var msgs []message.Message
	for range 5 {
		msgs = append(msgs, message.Text(message.RoleUser, text))
	}
	big.history(msgs, "")
	vs.Counted("big", big, big.v.Size())
	if vs.Bytes() > maxViewBytes && vs.Len() > 1 {
		t.Fatalf("%d bytes in %d views, over the bound %d", vs.Bytes(), vs.Len(), maxViewBytes)
	}
	if vs.Len() != 1 || !vs.Has("big") || vs.Get("big") != big {
		t.Fatalf("%d views after one over the byte bound, want that one alone", vs.Len())
	}
}
