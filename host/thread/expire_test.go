package thread_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

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

// An interrupt's deadline is saved with the pause and becomes the
// checkpoint's WakeAt (the earliest of the unanswered); Expire answers only
// the interrupts that are due, as expired, keeps the others pending with the
// next deadline as WakeAt, and refuses late answers with ErrExpired for the
// thread's life, while an answer given in time can still be retried.
func TestExpiryPartialThenComplete(t *testing.T) {
	base := time.Now().Add(time.Hour).UTC().Round(time.Millisecond)
	d1, d2 := base.Add(time.Minute), base.Add(2*time.Minute)
	var runs atomic.Int32
	cp := checkpoint.NewMemory()
	app, err := thread.Compile(asker(t, &runs, map[string]time.Time{"q1": d1, "q2": d2, "q3": d2}), cp)
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "x"})
	if err != nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 3 || !res.Interrupts[0].Deadline.Equal(d1) {
		t.Fatalf("first run: %v %s %+v", err, res.Status, res.Interrupts)
	}
	latest, err := cp.Latest(ctx, "x")
	if err != nil || !latest.WakeAt.Equal(d1) {
		t.Fatalf("WakeAt %v (%v), want the earliest deadline %v", latest.WakeAt, err, d1)
	}
	if due, _ := cp.Due(ctx, base, 10); len(due) != 0 {
		t.Fatalf("due before the deadline: %v", due)
	}
	if due, _ := cp.Due(ctx, d1, 10); !slices.Equal(due, []string{"x"}) {
		t.Fatalf("due at the deadline: %v", due)
	}
	// q3 is answered in time.
	resume := func(id, v string) (graph.Result, error) {
		return app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "x", Resume: map[string]json.RawMessage{id: json.RawMessage(v)}})
	}
	if res, err := resume("q3", `"small"`); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("q3 in time: %v %s", err, res.Status)
	}
	// Not due yet: nothing changes.
	before, _ := cp.Latest(ctx, "x")
	if _, ok, err := app.Expire(ctx, "", "x", base); ok || err != nil {
		t.Fatalf("expire before the deadline: %v %v", ok, err)
	}
	if after, _ := cp.Latest(ctx, "x"); after.Seq != before.Seq {
		t.Fatalf("an expiry with nothing due wrote seq %d", after.Seq)
	}
	// q1 is due: it alone expires; q2 stays pending, WakeAt moves to d2.
	res, ok, err := app.Expire(ctx, "", "x", d1)
	if err != nil || !ok || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].ID != "q2" {
		t.Fatalf("partial expiry: %v %v %s %+v", ok, err, res.Status, res.Interrupts)
	}
	if latest, _ := cp.Latest(ctx, "x"); !latest.WakeAt.Equal(d2) {
		t.Fatalf("WakeAt after q1 expired: %v, want %v", latest.WakeAt, d2)
	}
	before, _ = cp.Latest(ctx, "x")
	_, err = resume("q1", `"late"`)
	var se *graph.StateError
	if !errors.Is(err, graph.ErrExpired) || !errors.As(err, &se) || !slices.Equal(se.CallIDs, []string{"q1"}) {
		t.Fatalf("late answer: %v", err)
	}
	if after, _ := cp.Latest(ctx, "x"); after.Seq != before.Seq {
		t.Fatal("a refused late answer changed the thread")
	}
	// The answer given in time is still accepted again, and changes nothing.
	if res, err := resume("q3", `"small"`); err != nil || res.Status != graph.StatusInterrupted {
		t.Fatalf("retry of q3: %v %s", err, res.Status)
	}
	res, err = resume("q2", `"large"`)
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("q2: %v %s", err, res.Status)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"go", `q1=expired q2="large" q3="small"`, "after"}) {
		t.Fatalf("messages %q", got)
	}
	if latest, _ := cp.Latest(ctx, "x"); !latest.WakeAt.IsZero() {
		t.Fatalf("a completed thread asks to be woken at %v", latest.WakeAt)
	}
	// Later still, q1's result is refused as expired, not as a conflict.
	if _, err := resume("q1", `"late"`); !errors.Is(err, graph.ErrExpired) {
		t.Fatalf("late answer after completion: %v", err)
	}
	if _, ok, err := app.Expire(ctx, "", "x", d2.Add(time.Hour)); ok || err != nil {
		t.Fatalf("expire a completed thread: %v %v", ok, err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the node ran %d times, want 2", n)
	}
}

// A result that comes after its deadline but before the thread was woken is
// refused as expired, deterministically; the wake-up then expires the call
// and the run goes on.
func TestLateAnswerBeforeTheWakeUp(t *testing.T) {
	past := time.Now().Add(-time.Second).UTC().Round(time.Millisecond)
	var runs atomic.Int32
	cp := checkpoint.NewMemory()
	app, err := thread.Compile(asker(t, &runs, map[string]time.Time{"q1": past}), cp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "y"}); err != nil {
		t.Fatal(err)
	}
	before, _ := cp.Latest(ctx, "y")
	_, err = app.Invoke(ctx, nil, thread.RunConfig{ThreadID: "y", Resume: map[string]json.RawMessage{"q1": json.RawMessage(`1`)}})
	if !errors.Is(err, graph.ErrExpired) {
		t.Fatalf("answer past the deadline: %v", err)
	}
	if after, _ := cp.Latest(ctx, "y"); after.Seq != before.Seq || after.Status != checkpoint.StatusInterrupted {
		t.Fatal("a refused late answer changed the thread")
	}
	res, ok, err := app.Expire(ctx, "", "y", time.Now())
	if err != nil || !ok || res.Status != graph.StatusCompleted {
		t.Fatalf("expire: %v %v %s", ok, err, res.Status)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"go", "q1=expired", "after"}) {
		t.Fatalf("messages %q", got)
	}
}

// Two apps on one store expiring the same thread at once (two replicas
// woken together): one does it, the other finds the thread busy or nothing
// due, and the node runs once for the expiry.
func TestExpiryRunsOnceAcrossApps(t *testing.T) {
	past := time.Now().Add(-time.Second).UTC().Round(time.Millisecond)
	var runs atomic.Int32
	cp := checkpoint.NewMemory()
	g := asker(t, &runs, map[string]time.Time{"q1": past})
	a1, _ := thread.Compile(g, cp)
	a2, _ := thread.Compile(g, cp)
	for i := range 20 {
		id := "t" + string(rune('a'+i))
		if _, err := a1.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: id}); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var done atomic.Int32
		for _, app := range []*thread.App{a1, a2, a1, a2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, ok, err := app.Expire(ctx, "", id, time.Now())
				if err != nil && !errors.Is(err, graph.ErrThreadBusy) {
					t.Errorf("expire: %v", err)
				}
				if ok {
					done.Add(1)
				}
			}()
		}
		wg.Wait()
		if done.Load() > 1 {
			t.Fatalf("thread %s expired by %d runs, want 1", id, done.Load())
		}
		if done.Load() == 0 { // every try found the id busy: the next wake-up does it
			if _, ok, err := a2.Expire(ctx, "", id, time.Now()); !ok || err != nil {
				t.Fatalf("id %s: expire after all were busy: %v %v", id, ok, err)
			}
		}
		if th, _ := a1.Thread(ctx, id); th.Status != graph.StatusCompleted {
			t.Fatalf("id %s: %s", id, th.Status)
		}
	}
	if n := runs.Load(); n != 40 {
		t.Fatalf("the node ran %d times for 20 threads, want 40 (ask, then once resumed)", n)
	}
}
