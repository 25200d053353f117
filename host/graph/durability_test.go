package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// putCounter counts the checkpoints written.
type putCounter struct {
	*checkpoint.Memory
	puts atomic.Int32
}

func (s *putCounter) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	s.puts.Add(1)
	return s.Memory.Put(ctx, cp)
}

// A run of three steps writes three checkpoints with durability "sync" and
// one with "exit", which holds all the run did; the third step sees, in
// the store, every earlier step (sync) or nothing of the run (exit).
func TestDurabilityExitWritesWhereTheRunStops(t *testing.T) {
	for _, tc := range []struct {
		d          graph.Durability
		puts       int32
		seenByStep int // checkpoints of the run in the store when step 3 runs
	}{
		{graph.DurabilitySync, 3, 2},
		{graph.DurabilityExit, 1, 0},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			store := &putCounter{Memory: checkpoint.NewMemory()}
			seen := -1
			third := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
				h, err := store.History(ctx, in.Run.ThreadID, 0)
				if err != nil {
					return graph.Update{}, err
				}
				seen = len(h)
				return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "c")}}, nil
			})
			app, err := graph.New().AddNode("a", say("a")).AddNode("b", say("b")).AddNode("c", third).
				AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END).
				Compile(store, graph.WithDurability(tc.d))
			if err != nil {
				t.Fatal(err)
			}
			res, err := app.Invoke(ctx, user("x"), graph.RunConfig{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(res.Messages); !slices.Equal(got, []string{"x", "a", "b", "c"}) {
				t.Fatalf("messages %v", got)
			}
			if n := store.puts.Load(); n != tc.puts {
				t.Fatalf("%d checkpoints written, want %d", n, tc.puts)
			}
			if seen != tc.seenByStep {
				t.Fatalf("step 3 saw %d checkpoints of the run in the store, want %d", seen, tc.seenByStep)
			}
			th, err := app.Thread(ctx, "t")
			if err != nil || th.Status != graph.StatusCompleted || !slices.Equal(texts(th.Messages), texts(res.Messages)) {
				t.Fatalf("stored thread %s %v, %v", th.Status, texts(th.Messages), err)
			}
		})
	}
}

// A pause is where a run stops: with durability "exit" it is written, and
// the resume writes only where it stops in turn.
func TestDurabilityExitPauseAndResume(t *testing.T) {
	store := &putCounter{Memory: checkpoint.NewMemory()}
	ask := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if a, ok := in.Resume["q"]; ok {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "got "+string(a.Value))}}, nil
		}
		return graph.Update{Interrupts: []graph.Interrupt{{ID: "q"}}}, nil
	})
	app, err := graph.New().AddNode("a", say("a")).AddNode("ask", ask).AddNode("z", say("z")).
		AddEdge(graph.START, "a").AddEdge("a", "ask").AddEdge("ask", "z").AddEdge("z", graph.END).
		Compile(store, graph.WithDurability(graph.DurabilityExit))
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("x"), graph.RunConfig{ThreadID: "p"})
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("first run: %s, %v", res.Status, err)
	}
	if n := store.puts.Load(); n != 1 {
		t.Fatalf("%d checkpoints for a run that paused, want 1", n)
	}
	res, err = app.Invoke(ctx, nil, graph.RunConfig{ThreadID: "p", Resume: map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}})
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("resume: %s, %v", res.Status, err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"x", "a", `got "yes"`, "z"}) {
		t.Fatalf("messages %v", got)
	}
	if n := store.puts.Load(); n != 2 {
		t.Fatalf("%d checkpoints after the resume, want 2", n)
	}
}

// An unknown durability is refused before anything runs, naming the key,
// and so is one an App is compiled with.
func TestDurabilityUnknown(t *testing.T) {
	store := &putCounter{Memory: checkpoint.NewMemory()}
	app, err := graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END).Compile(store)
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Invoke(ctx, user("x"), graph.RunConfig{ThreadID: "t", Durability: "async"})
	if !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), `config.durability: must be "sync" or "exit", got "async"`) {
		t.Fatalf("err %v", err)
	}
	if n := store.puts.Load(); n != 0 {
		t.Fatalf("%d checkpoints written for a refused run", n)
	}
	if _, err := graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END).
		Compile(store, graph.WithDurability("always")); err == nil || !strings.Contains(err.Error(), `durability: must be "sync" or "exit", got "always"`) {
		t.Fatalf("Compile: %v", err)
	}
}
