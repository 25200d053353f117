package thread_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

var ctx = context.Background()

// waiting is a graph whose one node asks a question that expires at
// deadline and, resumed, says whether it expired ("q1=expired") or what the
// answer was.
func waiting(deadline time.Time) *graph.StateGraph {
	ask := graph.NodeFunc(func(_ context.Context, in *graph.Input) (graph.Update, error) {
		if in.Resume == nil {
			return graph.Update{Interrupts: []graph.Interrupt{{ID: "q1", Value: json.RawMessage(`{}`), Deadline: deadline}}}, nil
		}
		said := "q1=" + string(in.Resume["q1"].Value)
		if in.Resume["q1"].Expired {
			said = "q1=expired"
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, said)}}, nil
	})
	return graph.New().AddNode("ask", ask).AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
}

// A Waker finds a due thread in the store and expires it without anyone
// asking, and stops on Shutdown.
func TestWakerExpiresDueThreads(t *testing.T) {
	app, err := thread.Compile(waiting(time.Now().Add(50*time.Millisecond)), checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Invoke(ctx, []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "w"}); err != nil {
		t.Fatal(err)
	}
	w := &thread.Waker{App: app, Interval: 10 * time.Millisecond, OnError: func(id string, err error) { t.Errorf("%s: %v", id, err) }}
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		th, err := app.Thread(ctx, "w")
		if err == nil && th.Status == graph.StatusCompleted {
			if n := len(th.Messages); n != 2 || th.Messages[1].Text() != "q1=expired" {
				t.Fatalf("messages %+v, want the question's expiry after the input", th.Messages)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread was not woken: %s %v", th.Status, err)
		}
		time.Sleep(10 * time.Millisecond) // polling
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	if err := w.Run(ctx); err == nil {
		t.Fatal("a Waker ran twice")
	}
	// Shut down before it runs, a Waker returns at once.
	early := &thread.Waker{App: app}
	if err := early.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := early.Run(ctx); err != nil {
		t.Fatal(err)
	}
}
