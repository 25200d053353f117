package thread_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// Two apps on one store, as two replicas: a thread deleted and re-created
// on one is a new incarnation, and the other's resume of the deleted one,
// with its old interrupt id, cannot write into it, although the new thread
// paused at the very seq the old one had.
func TestDeleteAndRecreateAcrossApps(t *testing.T) {
	ctx := context.Background()
	ask := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if in.Resume != nil {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "answered")}}, nil
		}
		first := in.State.Messages[0].Text()
		return graph.Update{Interrupts: []graph.Interrupt{{ID: "q-" + first, Value: json.RawMessage(`1`)}}}, nil
	})
	g := graph.New().AddNode("ask", ask).AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	cp := checkpoint.NewMemory()
	a, _ := thread.Compile(g, cp)
	b, _ := thread.Compile(g, cp)
	cfg := thread.RunConfig{ThreadID: "T"}
	if res, err := a.Invoke(ctx, user("old"), cfg); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("old conversation: %v %s", err, res.Status)
	}
	if _, err := a.Thread(ctx, "T"); err != nil { // a's copy is as fresh as can be
		t.Fatal(err)
	}
	if err := b.DeleteThread(ctx, "", "T"); err != nil {
		t.Fatal(err)
	}
	if res, err := b.Invoke(ctx, user("new"), cfg); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("new conversation: %v %s", err, res.Status)
	}
	stale := thread.RunConfig{ThreadID: "T", Resume: map[string]json.RawMessage{"q-old": json.RawMessage(`1`)}}
	if _, err := a.Invoke(ctx, nil, stale); !errors.Is(err, graph.ErrUnknownCall) {
		t.Fatalf("stale resume: %v, want ErrUnknownCall", err)
	}
	for _, app := range []*thread.App{a, b} {
		th, err := app.Thread(ctx, "T")
		if err != nil || th.Status != graph.StatusInterrupted || texts(th.Messages)[0] != "new" || th.Interrupts[0].ID != "q-new" {
			t.Fatalf("the new conversation after the stale resume: %v %s %q", err, th.Status, texts(th.Messages))
		}
	}
}

// A run whose lease is lost (here: its thread deleted under it, behind the
// engine's back) is cancelled by its heartbeat and writes nothing.
func TestLostLeaseStopsTheRun(t *testing.T) {
	started := make(chan struct{})
	block := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		close(started)
		<-ctx.Done()
		return graph.Update{}, context.Cause(ctx)
	})
	g := graph.New().AddNode("block", block).AddEdge(graph.START, "block").AddEdge("block", graph.END)
	cp := checkpoint.NewMemory()
	app, err := thread.Compile(g, cp, thread.WithLease(90*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := app.Invoke(context.Background(), user("go"), thread.RunConfig{ThreadID: "L"})
		done <- err
	}()
	<-started
	if err := cp.DeleteThread(context.Background(), "L"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, graph.ErrThreadBusy) {
			t.Fatalf("the run ended with %v, want ErrThreadBusy (its lease was lost)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run went on after its lease was lost")
	}
	if _, err := cp.Latest(context.Background(), "L"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("the run without a lease wrote a checkpoint: %v", err)
	}
}

// A run that outlives its lease's duration keeps the thread: its
// heartbeat renews the lease, again and again, so another replica is
// refused for as long as the run goes on, and the run ends well.
func TestLongRunKeepsItsLease(t *testing.T) {
	ctx := context.Background()
	// Long enough that a renewal a third of it late (a goroutine starved
	// on two loaded cores under -race) still lands in time: the test is of
	// renewal, not of the scheduler.
	const lease = 250 * time.Millisecond
	started, finish := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	slow := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if runs.Add(1) > 1 {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "quick")}}, nil
		}
		close(started)
		select {
		case <-finish:
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "done")}}, nil
		case <-ctx.Done():
			return graph.Update{}, context.Cause(ctx)
		}
	})
	g := graph.New().AddNode("slow", slow).AddEdge(graph.START, "slow").AddEdge("slow", graph.END)
	cp := checkpoint.NewMemory()
	a, err := thread.Compile(g, cp, thread.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	b, err := thread.Compile(g, cp, thread.WithLease(lease))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "K"})
		done <- err
	}()
	<-started
	// Five leases' worth of time: without renewals the lease would have
	// expired four times over, and b's claim would take the thread. The
	// other replica tries ten times a lease, not in a busy loop, which
	// on loaded cores would starve the heartbeat it is testing.
	tick := time.NewTicker(lease / 10)
	defer tick.Stop()
	for start := time.Now(); time.Since(start) < 5*lease; <-tick.C {
		_, err := b.Invoke(ctx, user("me too"), thread.RunConfig{ThreadID: "K"})
		if !errors.Is(err, graph.ErrThreadBusy) {
			t.Fatalf("the other replica's run, %v after the first run started: %v, want ErrThreadBusy", time.Since(start), err)
		}
	}
	close(finish)
	if err := <-done; err != nil {
		t.Fatalf("the long run: %v", err)
	}
	res, err := b.Invoke(ctx, user("now"), thread.RunConfig{ThreadID: "K"})
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("after the long run ended, the other replica's run: %v, %v", res.Status, err)
	}
}

// Two requests for one thread at once, on two apps: new input is refused
// at once and runs nothing; the same answers again wait for the first run
// and are then refused (a generic answer is not a tool result, which
// would be replayed: see host/cli's TestReplicasConcurrentResumes), and
// the node runs once for them.
func TestSecondRequestBusyOrReplayed(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	var runs atomic.Int32
	ask := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		runs.Add(1)
		if in.Resume == nil {
			return graph.Update{Interrupts: []graph.Interrupt{{ID: "q", Value: json.RawMessage(`1`)}}}, nil
		}
		<-release
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "answered")}}, nil
	})
	g := graph.New().AddNode("ask", ask).AddEdge(graph.START, "ask").AddEdge("ask", graph.END)
	cp := checkpoint.NewMemory()
	a, _ := thread.Compile(g, cp)
	b, _ := thread.Compile(g, cp)
	cfg := thread.RunConfig{ThreadID: "R"}
	if _, err := a.Invoke(ctx, user("go"), cfg); err != nil {
		t.Fatal(err)
	}
	resume := thread.RunConfig{ThreadID: "R", Resume: map[string]json.RawMessage{"q": json.RawMessage(`"yes"`)}}
	first := make(chan graph.Result, 1)
	go func() {
		res, err := a.Invoke(ctx, nil, resume)
		if err != nil {
			t.Error(err)
		}
		first <- res
	}()
	// While the first resume runs, new input on the other app is busy.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Invoke(ctx, user("more"), cfg)
		if errors.Is(err, graph.ErrThreadBusy) {
			break
		}
		if !errors.Is(err, graph.ErrPendingCalls) || time.Now().After(deadline) {
			t.Fatalf("new input during the resume: %v, want ErrThreadBusy", err)
		}
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() {
		_, err := b.Invoke(ctx, nil, resume)
		second <- err
	}()
	close(release)
	r1, err2 := <-first, <-second
	if r1.Status != graph.StatusCompleted || texts(r1.Messages)[len(r1.Messages)-1] != "answered" {
		t.Fatalf("first resume: %s %q", r1.Status, texts(r1.Messages))
	}
	if !errors.Is(err2, graph.ErrNotPaused) {
		t.Fatalf("the same answers again, during the run: %v, want ErrNotPaused once the run is done", err2)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the node ran %d times, want 2 (pause, one resume)", n)
	}
	// A different answer afterwards is refused.
	if _, err := b.Invoke(ctx, nil, thread.RunConfig{ThreadID: "R", Resume: map[string]json.RawMessage{"q": json.RawMessage(`"no"`)}}); !errors.Is(err, graph.ErrStateConflict) {
		t.Fatalf("a different answer: %v, want a 409 conflict", err)
	}
}

// releaseCounter counts the store's Release calls.
type releaseCounter struct {
	*checkpoint.Memory
	releases atomic.Int64
}

func (s *releaseCounter) Release(ctx context.Context, l checkpoint.Lease) error {
	s.releases.Add(1)
	return s.Memory.Release(ctx, l)
}

// A run's last checkpoint releases its lease with the same write: a run
// that completes or pauses makes no Release of its own, and the thread is
// free at once for a run elsewhere. A failed run's record releases it too.
func TestLastCheckpointReleasesTheLease(t *testing.T) {
	ctx := context.Background()
	store := &releaseCounter{Memory: checkpoint.NewMemory()}
	fail := false
	node := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if fail {
			return graph.Update{}, errors.New("boom")
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "ok")}}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("a", node).AddNode("b", node).AddEdge(graph.START, "a").AddEdge("a", "b").AddEdge("b", graph.END), store)
	if err != nil {
		t.Fatal(err)
	}
	for turn := range 3 {
		if _, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
		le, err := store.Claim(ctx, "t", time.Minute)
		if err != nil {
			t.Fatalf("turn %d: the thread is still leased after its run: %v", turn, err)
		}
		if err := store.Memory.Release(ctx, le); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.releases.Load(); n != 0 {
		t.Fatalf("three runs made %d Release calls, want 0 (their last checkpoints released)", n)
	}
	fail = true
	if _, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"}); err == nil {
		t.Fatal("the failing run succeeded")
	}
	if _, err := store.Claim(ctx, "t", time.Minute); err != nil {
		t.Fatalf("after a failed run (its failure recorded) the thread is still leased: %v", err)
	}
}
