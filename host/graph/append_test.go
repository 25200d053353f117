package graph_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// A thread's messages stay in one array from run to run: each run appends
// where the previous one stopped, so a run costs what it adds, not the
// thread's length. A run whose state comes from the store instead (another
// app wrote the thread) copies it once and goes on from there.
func TestRunsAppendWhereTheLastOneStopped(t *testing.T) {
	reply := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "ok")}}, nil
	})
	g := graph.New().AddNode("reply", reply).AddEdge(graph.START, "reply").AddEdge("reply", graph.END)
	store := checkpoint.NewMemory()
	app, err := g.Compile(store)
	if err != nil {
		t.Fatal(err)
	}
	other, err := g.Compile(store)
	if err != nil {
		t.Fatal(err)
	}
	invoke := func(app *graph.App, in string) []message.Message {
		t.Helper()
		res, err := app.Invoke(ctx, user(in), graph.RunConfig{ThreadID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Messages
	}
	first := invoke(app, "u0")
	var results [][]message.Message
	for i := 1; i <= 40; i++ {
		msgs := invoke(app, fmt.Sprint("u", i))
		if len(msgs) != 2*(i+1) {
			t.Fatalf("run %d: %d messages, want %d", i, len(msgs), 2*(i+1))
		}
		results = append(results, msgs)
	}
	// The array grows as a slice does, by reallocating now and then: most
	// runs, but not all, are in the first run's array or its successor's.
	same := 0
	for i := 1; i < len(results); i++ {
		if &results[i][0] == &results[i-1][0] {
			same++
		}
	}
	if same < len(results)/2 {
		t.Errorf("%d of %d runs appended in the previous run's array; want most", same, len(results)-1)
	}
	if &results[0][0] != &first[0] {
		t.Errorf("the second run copied the thread instead of appending to the first run's array")
	}

	// The other app writes the thread; this app reads it back from the store
	// and appends to its own copy, never to the array the other one has.
	last := results[len(results)-1]
	lastTexts := texts(last)
	theirs := invoke(other, "from the other app")
	ours := invoke(app, "and back")
	if &ours[0] == &last[0] || &ours[0] == &theirs[0] {
		t.Errorf("a run on a thread another app changed appended to an array it was not handed")
	}
	if got := texts(last); !slices.Equal(got, lastTexts) {
		t.Errorf("an earlier result changed: %q, was %q", got, lastTexts)
	}
	if got, want := texts(ours)[len(ours)-4:], []string{"from the other app", "ok", "and back", "ok"}; !slices.Equal(got, want) {
		t.Errorf("thread ends %q, want %q", got, want)
	}
}

// flakyPuts fails some writes, as a store that loses its connection would.
type flakyPuts struct {
	*checkpoint.Memory
	mu  sync.Mutex
	rng *rand.Rand
}

func (f *flakyPuts) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	f.mu.Lock()
	fail := f.rng.IntN(5) == 0
	f.mu.Unlock()
	if fail {
		return errors.New("flaky store: write lost")
	}
	return f.Memory.Put(ctx, cp)
}

// Runs that fail anywhere (a node, a write, at any durability) never
// change a state handed out before, theirs or an earlier run's, however
// the thread's array passes from run to run; and the thread read back is
// what was saved.
func TestHandedOutStatesSurviveFailures(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	type seen struct {
		msgs  []message.Message
		texts []string
	}
	var mu sync.Mutex
	var states []seen
	record := func(msgs []message.Message) {
		mu.Lock()
		states = append(states, seen{msgs, texts(msgs)})
		mu.Unlock()
	}
	node := func(name string) graph.Node {
		return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			record(in.State.Messages)
			mu.Lock()
			n, fail := 1+rng.IntN(3), rng.IntN(6) == 0
			mu.Unlock()
			if fail {
				return graph.Update{}, errors.New("node failed")
			}
			var add []message.Message
			for i := range n {
				add = append(add, message.Text(message.RoleAssistant, fmt.Sprint(name, i)))
			}
			return graph.Update{Messages: add}, nil
		})
	}
	g := graph.New().AddNode("a", node("a")).AddNode("b", node("b")).AddNode("c", node("c")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("a", "c").AddEdge("b", graph.END).AddEdge("c", graph.END)
	store := &flakyPuts{Memory: checkpoint.NewMemory(), rng: rand.New(rand.NewPCG(3, 4))}
	app, err := g.Compile(store)
	if err != nil {
		t.Fatal(err)
	}
	modes := []graph.Durability{graph.DurabilitySync, graph.DurabilityAsync, graph.DurabilityExit}
	failed := 0
	for i := range 300 {
		res, err := app.Invoke(ctx, user(fmt.Sprint("u", i)), graph.RunConfig{ThreadID: "t", Durability: modes[i%len(modes)]})
		if err != nil {
			failed++
			continue
		}
		record(res.Messages)
	}
	if failed == 0 || failed == 300 {
		t.Fatalf("%d of 300 runs failed; want some of each", failed)
	}
	for i, s := range states {
		if got := texts(s.msgs); !slices.Equal(got, s.texts) {
			t.Fatalf("state %d changed after it was handed out: %q, was %q", i, got, s.texts)
		}
	}
	// What the app holds is what the store holds.
	mine, err := app.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := g.Compile(store.Memory)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := fresh.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(mine.Messages), texts(stored.Messages)) {
		t.Fatalf("the app's thread differs from the store's:\n%q\n%q", texts(mine.Messages), texts(stored.Messages))
	}
}
