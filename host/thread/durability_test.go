package thread_test

import (
	"context"
	"encoding/json"
	"errors"
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

// putCounter counts the checkpoints written.
type putCounter struct {
	*checkpoint.Memory
	puts atomic.Int32
}

func (s *putCounter) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	s.puts.Add(1)
	return s.Memory.Put(ctx, cp)
}

// threeSteps compiles START → a → b → c → END on store.
func threeSteps(t *testing.T, store checkpoint.Checkpointer, d thread.Durability, a, b, c graph.Node) *thread.App {
	t.Helper()
	app, err := thread.Compile(graph.New().AddNode("a", a).AddNode("b", b).AddNode("c", c).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", "c").AddEdge("c", graph.END),
		store, thread.WithDurability(d))

	if err != nil {
		t.Fatal(err)
	}
	return app
}

// A run of three steps writes three checkpoints with durability "sync" and
// one with "exit", which holds all the run did; the third step sees, in
// the store, every earlier step (sync) or nothing of the run (exit).
func TestDurabilityExitWritesWhereTheRunStops(t *testing.T) {
	for _, tc := range []struct {
		d          thread.Durability
		puts       int32
		seenByStep int // checkpoints of the run in the store when step 3 runs
	}{
		{thread.DurabilitySync, 3, 2},
		{thread.DurabilityExit, 1, 0},
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
			app := threeSteps(t, store, tc.d, say("a"), say("b"), third)
			res, err := app.Invoke(ctx, user("x"), thread.RunConfig{ThreadID: "t"})
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
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddNode("ask", ask).AddNode("z", say("z")).
		AddEdge(graph.START, "a").AddEdge("a", "ask").AddEdge("ask", "z").AddEdge("z", graph.END),
		store, thread.WithDurability(thread.DurabilityExit))

	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("x"), thread.RunConfig{ThreadID: "p"})
	if err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("first run: %s, %v", res.Status, err)
	}
	if n := store.puts.Load(); n != 1 {
		t.Fatalf("%d checkpoints for a run that paused, want 1", n)
	}
	res, err = app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "p", Resume: map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}})
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
	app, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), store)
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Invoke(ctx, user("x"), thread.RunConfig{ThreadID: "t", Durability: "eventually"})
	if !errors.Is(err, graph.ErrInvalidInput) || !strings.Contains(err.Error(), `config.durability: must be "sync", "async" or "exit", got "eventually"`) {
		t.Fatalf("err %v", err)
	}
	if n := store.puts.Load(); n != 0 {
		t.Fatalf("%d checkpoints written for a refused run", n)
	}
	if _, err := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END),
		store, thread.WithDurability("always")); err == nil || !strings.Contains(err.Error(), `durability: must be "sync", "async" or "exit", got "always"`) {
		t.Fatalf("Compile: %v", err)
	}
}

// gatedStore holds the Put of one checkpoint until gate closes, and fails
// the Put of another.
type gatedStore struct {
	*checkpoint.Memory
	puts   atomic.Int32
	holdAt int64         // the seq whose Put waits for gate
	gate   chan struct{} // closed by the test
	failAt int64         // the seq whose Put fails
}

var errDiskFull = errors.New("disk full")

func (s *gatedStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	s.puts.Add(1)
	if cp.Seq == s.holdAt {
		select {
		case <-s.gate:
		case <-time.After(10 * time.Second):
			return errors.New("the write was held for 10 s: nothing ran while it was in flight")
		}
	}
	if cp.Seq == s.failAt {
		return errDiskFull
	}
	return s.Memory.Put(ctx, cp)
}

// With durability "async" a step's checkpoint is written while the next
// step runs: the write of step 1 is held until step 2 has started, which
// under "sync" would never happen. Where the run stops, every write is in
// the store, one per step, as with "sync".
func TestDurabilityAsyncOverlapsTheNextStep(t *testing.T) {
	for _, tc := range []struct {
		d       thread.Durability
		overlap bool
	}{
		{thread.DurabilityAsync, true},
		{thread.DurabilitySync, false},
	} {
		t.Run(string(tc.d), func(t *testing.T) {
			store := &gatedStore{Memory: checkpoint.NewMemory(), holdAt: 1, gate: make(chan struct{})}
			if !tc.overlap {
				close(store.gate) // else the run would wait out the hold
			}
			started := false
			second := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
				if tc.overlap {
					started = true
					close(store.gate)
				}
				return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "b")}}, nil
			})
			app := threeSteps(t, store, tc.d, say("a"), second, say("c"))
			res, err := app.Invoke(ctx, user("x"), thread.RunConfig{ThreadID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.overlap && !started {
				t.Fatal("step 2 did not run")
			}
			if got := texts(res.Messages); !slices.Equal(got, []string{"x", "a", "b", "c"}) {
				t.Fatalf("messages %v", got)
			}
			h, err := store.History(ctx, "t", 0)
			if err != nil || len(h) != 3 || store.puts.Load() != 3 {
				t.Fatalf("%d checkpoints in the store after %d writes (%v), want 3 and 3", len(h), store.puts.Load(), err)
			}
			for i, cp := range h {
				if want := int64(3 - i); cp.Seq != want {
					t.Fatalf("history[%d] is seq %d, want %d", i, cp.Seq, want)
				}
			}
			if h[0].Status != checkpoint.StatusCompleted {
				t.Fatalf("latest checkpoint %s", h[0].Status)
			}
		})
	}
}

// A background write that fails fails the run where the run next writes,
// with the store's error; the thread keeps what was written before it, and
// calling it again runs the lost steps again.
func TestDurabilityAsyncWriteFails(t *testing.T) {
	store := &gatedStore{Memory: checkpoint.NewMemory(), failAt: 2}
	var runs atomic.Int32
	counted := func(name string) graph.Node {
		return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			runs.Add(1)
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, name)}}, nil
		})
	}
	app := threeSteps(t, store, thread.DurabilityAsync, counted("a"), counted("b"), counted("c"))
	_, err := app.Invoke(ctx, user("x"), thread.RunConfig{ThreadID: "f"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("err %v, want the store's", err)
	}
	h, err := store.History(ctx, "f", 0)
	if err != nil || len(h) != 1 || h[0].Seq != 1 {
		t.Fatalf("history %d checkpoints (%v), want the first step's alone", len(h), err)
	}
	store.failAt = 0
	res, err := app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "f"})
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("retry: %s, %v", res.Status, err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"x", "a", "b", "c"}) {
		t.Fatalf("messages %v", got)
	}
	if n := runs.Load(); n != 5 {
		t.Fatalf("%d node runs, want 5 (a, b, c, then b and c again)", n)
	}
}
