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
	"github.com/tenxgraph/tenxgraph/host/thread"
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
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	var results []seen
	var want []string
	for i := range 20 {
		in := fmt.Sprintf("u%d", i)
		res, err := app.Invoke(ctx, user(in), thread.RunConfig{ThreadID: "t"})
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
// thread's length. So do two apps (replicas) taking turns on one store:
// each extends its own array with what the other added.
func TestRunsAppendWhereTheLastOneStopped(t *testing.T) {
	reply := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "ok")}}, nil
	})
	g := graph.New().AddNode("reply", reply).AddEdge(graph.START, "reply").AddEdge("reply", graph.END)
	store := checkpoint.NewMemory()
	apps := make([]*thread.App, 2)
	for i := range apps {
		var err error
		if apps[i], err = thread.Compile(g, store); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		msgs  []message.Message
		texts []string
	}
	invoke := func(app *thread.App, in string) result {
		t.Helper()
		res, err := app.Invoke(ctx, user(in), thread.RunConfig{ThreadID: "t"})
		if err != nil {
			t.Fatal(err)
		}
		return result{res.Messages, texts(res.Messages)}
	}
	// inPlace counts the results in the array of the one before, which
	// a slice's growth reallocates now and then.
	inPlace := func(rs []result) int {
		n := 0
		for i := 1; i < len(rs); i++ {
			if &rs[i].msgs[0] == &rs[i-1].msgs[0] {
				n++
			}
		}
		return n
	}
	var alone []result
	for i := range 40 {
		alone = append(alone, invoke(apps[0], fmt.Sprint("u", i)))
	}
	if &alone[1].msgs[0] != &alone[0].msgs[0] {
		t.Errorf("the second run copied the thread instead of appending to the first run's array")
	}
	if n := inPlace(alone); n < len(alone)/2 {
		t.Errorf("%d of %d runs appended in the previous run's array; want most", n, len(alone)-1)
	}

	byApp := make([][]result, 2)
	for i := range 80 {
		byApp[i%2] = append(byApp[i%2], invoke(apps[i%2], fmt.Sprint("r", i)))
	}
	for k, rs := range byApp {
		if n := inPlace(rs); n < len(rs)/2 {
			t.Errorf("app %d: %d of %d runs appended in its previous run's array; want most", k, n, len(rs)-1)
		}
		for _, r := range rs {
			for _, o := range byApp[1-k] {
				if &r.msgs[0] == &o.msgs[0] {
					t.Fatalf("app %d appended in the array of the other app", k)
				}
			}
		}
	}
	all := append(alone, append(byApp[0], byApp[1]...)...)
	for i, r := range all {
		if got := texts(r.msgs); !slices.Equal(got, r.texts) {
			t.Fatalf("result %d changed: %q, was %q", i, got, r.texts)
		}
	}
	last := byApp[1][len(byApp[1])-1].texts
	if got, want := last[len(last)-4:], []string{"r78", "ok", "r79", "ok"}; !slices.Equal(got, want) {
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

// Runs that fail anywhere (a node, a write, at any durability), on two
// apps sharing the store in no set order, never change a state handed out
// before, theirs or an earlier run's, however the thread's arrays pass
// from run to run; and each app's thread read back is what was saved.
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
	apps := make([]*thread.App, 2)
	for i := range apps {
		var err error
		if apps[i], err = thread.Compile(g, store); err != nil {
			t.Fatal(err)
		}
	}
	modes := []thread.Durability{thread.DurabilitySync, thread.DurabilityAsync, thread.DurabilityExit}
	failed := 0
	for i := range 300 {
		app := apps[rng.IntN(3)/2] // two runs in three on the first
		res, err := app.Invoke(ctx, user(fmt.Sprint("u", i)), thread.RunConfig{ThreadID: "t", Durability: modes[i%len(modes)]})
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
	// What each app holds is what the store holds.
	fresh, err := thread.Compile(g, store.Memory)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := fresh.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for k, app := range apps {
		mine, err := app.Thread(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(texts(mine.Messages), texts(stored.Messages)) {
			t.Fatalf("app %d's thread differs from the store's:\n%q\n%q", k, texts(mine.Messages), texts(stored.Messages))
		}
	}
}
