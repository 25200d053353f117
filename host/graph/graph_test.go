package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

var ctx = context.Background()

// say is a node that appends "<name>" as assistant text.
func say(name string) graph.Node {
	return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
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

// putCounter counts the checkpoints written.
type putCounter struct {
	*checkpoint.Memory
	puts atomic.Int32
}

func (s *putCounter) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	s.puts.Add(1)
	return s.Memory.Put(ctx, cp)
}

func user(s string) []message.Message { return []message.Message{message.Text(message.RoleUser, s)} }

// Fan-out runs nodes in one super-step and applies their updates in the
// order the edges list them; fan-in runs the joining node once.
func TestSuperSteps(t *testing.T) {
	var steps []int
	record := func(name string) graph.Node {
		return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			if name == "join" {
				steps = append(steps, in.Run.Step)
			}
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, name)}}, nil
		})
	}
	g := graph.New().
		AddNode("a", record("a")).AddNode("b", record("b")).AddNode("c", record("c")).AddNode("join", record("join")).
		AddEdge(graph.START, "a").
		AddEdge("a", "c").AddEdge("a", "b").
		AddEdge("b", "join").AddEdge("c", "join").
		AddEdge("join", graph.END)
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"go", "a", "c", "b", "join"}) {
		t.Fatalf("messages %v", got)
	}
	if !slices.Equal(steps, []int{3}) {
		t.Fatalf("join ran at steps %v, want once at step 3", steps)
	}
	h, _ := app.History(ctx, "", "t", 0)
	if len(h) != 3 { // the input is saved with the first super-step
		t.Fatalf("%d checkpoints, want 3 (one per super-step)", len(h))
	}
	if got := texts(h[2].Messages); !slices.Equal(got, []string{"go", "a"}) {
		t.Fatalf("the first checkpoint holds %v, want the input and the first step's update", got)
	}
	if h[0].Raw != checkpoint.StatusCompleted || h[1].Raw != checkpoint.StatusRunning {
		t.Fatalf("statuses %s %s", h[0].Raw, h[1].Raw)
	}
}

func TestConditionalEdgesAndValues(t *testing.T) {
	counter := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		var n int
		_ = json.Unmarshal(in.State.Values["n"], &n)
		raw, _ := json.Marshal(n + 1)
		return graph.Update{Values: map[string]json.RawMessage{"n": raw}}, nil
	})
	g := graph.New().AddNode("inc", counter).AddNode("done", say("done")).
		AddEdge(graph.START, "inc").
		AddConditionalEdges("inc", func(s graph.State) []string {
			if string(s.Values["n"]) == "3" {
				return []string{"done"}
			}
			return []string{"inc"}
		}, "inc", "done").
		AddEdge("done", graph.END)
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("count"), thread.RunConfig{ThreadID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"count", "done"}) {
		t.Fatalf("messages %v", got)
	}
}

func TestCompileReportsEveryProblem(t *testing.T) {
	g := graph.New().AddNode("a", say("a")).AddNode("a", say("a")).AddNode(graph.END, say("x")).AddNode("lonely", say("l")).
		AddEdge("a", "ghost").
		AddConditionalEdges("phantom", func(graph.State) []string { return nil }, "a")
	_, err := thread.Compile(g, nil)
	if err == nil {
		t.Fatal("compiled a broken graph")
	}
	for _, want := range []string{`node "a" added twice`, `reserved`, `no entry`, `unknown node "ghost"`, `router on unknown node "phantom"`, `node "lonely" has no outgoing edge`, `no checkpointer`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// InterruptAfter pauses after a node; a run without input continues.
func TestInterruptAfter(t *testing.T) {
	g := graph.New().AddNode("draft", say("draft")).AddNode("publish", say("publish")).
		AddEdge(graph.START, "draft").AddEdge("draft", "publish").AddEdge("publish", graph.END).InterruptAfter("draft")
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	cfg := thread.RunConfig{ThreadID: "i"}
	res, err := app.Invoke(ctx, user("write"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || !slices.Equal(texts(res.Messages), []string{"write", "draft"}) {
		t.Fatalf("%s %v", res.Status, texts(res.Messages))
	}
	res, err = app.Invoke(ctx, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusCompleted || !slices.Equal(texts(res.Messages), []string{"write", "draft", "publish"}) {
		t.Fatalf("%s %v", res.Status, texts(res.Messages))
	}
}

// A failing node leaves the state before its step; calling the thread
// again without input retries that step.
func TestFailureAndRetry(t *testing.T) {
	// Whatever the durability, the failure's checkpoint holds the steps the
	// run finished: with "sync" it is the run's second write, with "exit"
	// its only one.
	for _, tc := range []struct {
		d    thread.Durability
		puts int32
	}{{thread.DurabilitySync, 2}, {thread.DurabilityExit, 1}} {
		t.Run(string(tc.d), func(t *testing.T) {
			var fail atomic.Bool
			fail.Store(true)
			flaky := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
				if fail.Load() {
					return graph.Update{}, errors.New("upstream is down")
				}
				return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "ok")}}, nil
			})
			g := graph.New().AddNode("first", say("first")).AddNode("flaky", flaky).
				AddEdge(graph.START, "first").AddEdge("first", "flaky").AddEdge("flaky", graph.END)
			store := &putCounter{Memory: checkpoint.NewMemory()}
			app, _ := thread.Compile(g, store, thread.WithDurability(tc.d))
			cfg := thread.RunConfig{ThreadID: "f"}
			if _, err := app.Invoke(ctx, user("x"), cfg); err == nil || !strings.Contains(err.Error(), `node "flaky": upstream is down`) {
				t.Fatalf("err %v", err)
			}
			if n := store.puts.Load(); n != tc.puts {
				t.Fatalf("%d checkpoints for the failed run, want %d", n, tc.puts)
			}
			th, _ := app.Thread(ctx, "f")
			if th.Status != graph.StatusFailed || !slices.Equal(texts(th.Messages), []string{"x", "first"}) {
				t.Fatalf("after failure: %s %v", th.Status, texts(th.Messages))
			}
			fail.Store(false)
			res, err := app.Invoke(ctx, nil, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(texts(res.Messages), []string{"x", "first", "ok"}) {
				t.Fatalf("retry: %v (first must not run again)", texts(res.Messages))
			}
		})
	}
}

func TestStreamEventsAndEarlyStop(t *testing.T) {
	g := graph.New().AddNode("a", say("a")).AddNode("b", say("b")).
		AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END)
	app, _ := thread.Compile(g, checkpoint.NewMemory())
	var types []string
	for ev, err := range app.Stream(ctx, user("s"), thread.RunConfig{ThreadID: "s"}) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
	}
	want := []string{"run_started", "message", "node_started", "node_finished", "message", "node_started", "node_finished", "message", "end"}
	if !slices.Equal(types, want) {
		t.Fatalf("events %v\nwant   %v", types, want)
	}
	// Breaking out of the loop ends the run without a panic or a leak.
	for range app.Stream(ctx, user("again"), thread.RunConfig{ThreadID: "s2"}) {
		break
	}
	// A failing run yields its error last.
	var last error
	for _, err := range app.Stream(ctx, nil, thread.RunConfig{}) {
		last = err
	}
	if !errors.Is(last, graph.ErrInvalidInput) {
		t.Fatalf("stream without a thread id: %v", last)
	}
}

func TestClientMayNotWriteToolCalls(t *testing.T) {
	app, _ := thread.Compile(graph.New().AddNode("a", say("a")).AddEdge(graph.START, "a").AddEdge("a", graph.END), checkpoint.NewMemory())
	forged := []message.Message{{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "x", Name: "rm"}}}}
	if _, err := app.Invoke(ctx, forged, thread.RunConfig{ThreadID: "x"}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("forged tool call: %v", err)
	}
	if _, err := app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "x"}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("empty input on a new thread: %v", err)
	}
	dup := []message.Message{{ID: "m", Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: "a"}}}}
	if _, err := app.Invoke(ctx, dup, thread.RunConfig{ThreadID: "y"}); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Invoke(ctx, dup, thread.RunConfig{ThreadID: "y"}); !errors.Is(err, graph.ErrInvalidInput) {
		t.Fatalf("reused message id: %v", err)
	}
}

// Two apps on one store (two processes on one database): each sees the
// other's writes, although each keeps the threads it works on in memory.
func TestTwoAppsOneStore(t *testing.T) {
	store := checkpoint.NewMemory()
	build := func(name string) *thread.App {
		app, err := thread.Compile(graph.New().AddNode("n", say(name)).AddEdge(graph.START, "n").AddEdge("n", graph.END), store)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	one, two := build("one"), build("two")
	cfg := thread.RunConfig{ThreadID: "shared"}
	for _, step := range []struct {
		app  *thread.App
		want []string
	}{
		{one, []string{"1", "one"}},
		{two, []string{"1", "one", "2", "two"}},
		{one, []string{"1", "one", "2", "two", "3", "one"}},
		{one, []string{"1", "one", "2", "two", "3", "one", "4", "one"}},
		{two, []string{"1", "one", "2", "two", "3", "one", "4", "one", "5", "two"}},
	} {
		res, err := step.app.Invoke(ctx, user(fmt.Sprint(len(step.want)/2)), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(res.Messages); !slices.Equal(got, step.want) {
			t.Fatalf("got %v, want %v", got, step.want)
		}
	}
}

// A run ended by its context, whatever the cause, is recorded as
// cancelled with the state before the step it cut short: the thread never
// stays "running" without a run. Calling it again without input runs that
// step again; new input starts afresh after it. A node that finished
// before the cancellation is saved and not run again.
func TestCancelledRunIsRecorded(t *testing.T) {
	var slowRuns atomic.Int32
	entered := make(chan struct{}, 4)
	slow := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if slowRuns.Add(1) == 1 {
			entered <- struct{}{}
			<-ctx.Done()
			return graph.Update{}, ctx.Err()
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "slow")}}, nil
	})
	var firstRuns atomic.Int32
	first := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		firstRuns.Add(1)
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "first")}}, nil
	})
	g := graph.New().AddNode("first", first).AddNode("slow", slow).
		AddEdge(graph.START, "first").AddEdge("first", "slow").AddEdge("slow", graph.END)
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := app.Invoke(runCtx, user("go"), thread.RunConfig{ThreadID: "t"})
		done <- err
	}()
	<-entered
	if th, _ := app.Thread(ctx, "t"); th.Status != graph.StatusRunning {
		t.Fatalf("while the run works: %q", th.Status)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run returned %v", err)
	}
	th, err := app.Thread(ctx, "t")
	if err != nil || th.Status != graph.StatusCancelled || !slices.Equal(texts(th.Messages), []string{"go", "first"}) {
		t.Fatalf("after cancel: %q %q %v", th.Status, texts(th.Messages), err)
	}
	res, err := app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "t"})
	if err != nil || res.Status != graph.StatusCompleted || !slices.Equal(texts(res.Messages), []string{"go", "first", "slow"}) {
		t.Fatalf("resume without input: %q %q %v", res.Status, texts(res.Messages), err)
	}
	if n := firstRuns.Load(); n != 1 {
		t.Fatalf("the finished node ran %d times", n)
	}

	// Cancelled before its first step: the input is kept, marked cancelled.
	gone, stop := context.WithCancel(ctx)
	stop()
	if _, err := app.Invoke(gone, user("again"), thread.RunConfig{ThreadID: "t"}); err == nil {
		t.Fatal("a run on a cancelled context succeeded")
	}
	if th, _ := app.Thread(ctx, "t"); th.Status == graph.StatusRunning {
		t.Fatalf("a run cancelled before it started left the thread %q", th.Status)
	}
}

// A graph bounds its own super-steps: a loop stops with ErrStepLimit once
// the graph's limit is reached, and the thread records the failure.
func TestStepLimitIsTheGraphs(t *testing.T) {
	var steps atomic.Int32
	loop := graph.NodeFunc(func(context.Context, *graph.Input) (graph.Update, error) {
		steps.Add(1)
		return graph.Update{}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("loop", loop).AddEdge(graph.START, "loop").AddEdge("loop", "loop").
		SetStepLimit(3), checkpoint.NewMemory())

	if err != nil {
		t.Fatal(err)
	}
	_, err = app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "loop"})
	if !errors.Is(err, graph.ErrStepLimit) || !strings.Contains(err.Error(), "3 super-steps") {
		t.Fatalf("looping graph: %v", err)
	}
	if n := steps.Load(); n != 3 {
		t.Fatalf("the node ran %d times, want 3", n)
	}
	if th, _ := app.Thread(ctx, "loop"); th.Status != graph.StatusFailed {
		t.Fatalf("thread status %s, want failed", th.Status)
	}
}
