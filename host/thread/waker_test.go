package thread_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

var ctx = context.Background()

func say(name string) graph.Node {
	return graph.NodeFunc(func(context.Context, *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, name)}}, nil
	})
}

func texts(ms []message.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text())
	}
	return out
}

func user(s string) []message.Message { return []message.Message{message.Text(message.RoleUser, s)} }

// asker is a graph whose "ask" node raises interrupts with the given
// deadlines and, resumed, writes what each answer was ("q1=expired",
// "q2=\"large\""), then "after" runs.
func asker(t *testing.T, runs *atomic.Int32, deadlines map[string]time.Time) *graph.StateGraph {
	t.Helper()
	ask := graph.NodeFunc(func(_ context.Context, in *graph.Input) (graph.Update, error) {
		runs.Add(1)
		if in.Resume == nil {
			var its []graph.Interrupt
			for _, id := range slices.Sorted(maps.Keys(deadlines)) {
				its = append(its, graph.Interrupt{ID: id, Value: json.RawMessage(`{}`), Deadline: deadlines[id]})
			}
			return graph.Update{Interrupts: its}, nil
		}
		var parts []string
		for _, it := range in.Interrupts {
			a := in.Resume[it.ID]
			if a.Expired {
				parts = append(parts, it.ID+"=expired")
				continue
			}
			parts = append(parts, it.ID+"="+string(a.Value))
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, strings.Join(parts, " "))}}, nil
	})
	return graph.New().AddNode("ask", ask).AddNode("after", say("after")).
		AddEdge(graph.START, "ask").AddEdge("ask", "after").AddEdge("after", graph.END)
}

// A Waker finds a due thread in the store and expires it without anyone
// asking, and stops on Shutdown.
func TestWakerExpiresDueThreads(t *testing.T) {
	var runs atomic.Int32
	cp := checkpoint.NewMemory()
	app, err := asker(t, &runs, map[string]time.Time{"q1": time.Now().Add(50 * time.Millisecond)}).Compile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Invoke(ctx, user("go"), graph.RunConfig{ThreadID: "w"}); err != nil {
		t.Fatal(err)
	}
	w := &thread.Waker{App: app, Interval: 10 * time.Millisecond, OnError: func(id string, err error) { t.Errorf("%s: %v", id, err) }}
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		th, err := app.Thread(ctx, "w")
		if err == nil && th.Status == graph.StatusCompleted {
			if got := texts(th.Messages); !slices.Equal(got, []string{"go", "q1=expired", "after"}) {
				t.Fatalf("messages %q", got)
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
