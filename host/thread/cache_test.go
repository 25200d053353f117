package thread_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// countingStore counts reads of a thread's latest checkpoint: a run served
// from the cache makes none.
type countingStore struct {
	*checkpoint.Memory
	latest atomic.Int64
}

func (s *countingStore) Latest(ctx context.Context, threadID string) (checkpoint.Checkpoint, error) {
	s.latest.Add(1)
	return s.Memory.Latest(ctx, threadID)
}

// appendText is a node appending an assistant message of n bytes.
func appendText(n int) graph.Node {
	return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, strings.Repeat("x", n))}}, nil
	})
}

func cacheApp(t *testing.T, node graph.Node, budget int64) (*thread.App, *countingStore) {
	t.Helper()
	store := &countingStore{Memory: checkpoint.NewMemory()}
	app, err := thread.Compile(graph.New().AddNode("a", node).AddEdge(graph.START, "a").AddEdge("a", graph.END),
		store, thread.WithCacheBytes(budget))

	if err != nil {
		t.Fatal(err)
	}
	return app, store
}

// Many large threads under a small budget: the cache never holds more than
// the budget, drops the least recently used threads, and still serves the
// threads it kept without reading them.
func TestCacheStaysWithinItsBudget(t *testing.T) {
	const budget, threads, size = 1 << 20, 100, 64 << 10
	app, store := cacheApp(t, appendText(size), budget)
	for i := range threads {
		if _, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: fmt.Sprint("t", i)}); err != nil {
			t.Fatal(err)
		}
		if st := app.CacheStats(); st.Bytes > budget {
			t.Fatalf("after thread %d the cache holds %d bytes, over its budget of %d", i, st.Bytes, budget)
		}
	}
	st := app.CacheStats()
	if st.Threads < 2 || st.Threads >= threads || st.Bytes < size*int64(st.Threads) {
		t.Fatalf("stats %+v: want several threads of at least %d bytes each, not all %d", st, size, threads)
	}
	if want := uint64(threads - st.Threads); st.Evictions != want {
		t.Fatalf("%d evictions, want %d (threads written minus threads kept)", st.Evictions, want)
	}

	// The newest thread is served from the cache; touching it keeps it
	// when a new thread pushes the oldest one out.
	reads := store.latest.Load()
	last := fmt.Sprint("t", threads-1)
	if _, err := app.Invoke(ctx, user("again"), thread.RunConfig{ThreadID: last}); err != nil {
		t.Fatal(err)
	}
	if n := store.latest.Load() - reads; n != 0 {
		t.Fatalf("a cached thread was read %d times from the store", n)
	}
	// The first thread was evicted: it is read again, and still whole.
	res, err := app.Invoke(ctx, user("again"), thread.RunConfig{ThreadID: "t0"})
	if err != nil {
		t.Fatal(err)
	}
	if n := store.latest.Load() - reads; n != 1 {
		t.Fatalf("an evicted thread was read %d times from the store, want 1", n)
	}
	if len(res.Messages) != 4 || len(res.Messages[1].Text()) != size {
		t.Fatalf("the evicted thread came back with %d messages", len(res.Messages))
	}
	if st := app.CacheStats(); st.Bytes > budget {
		t.Fatalf("the cache holds %d bytes, over its budget of %d", st.Bytes, budget)
	}
}

// A thread larger than the whole budget is not kept, and does not push the
// others out.
func TestCacheSkipsAThreadOverItsBudget(t *testing.T) {
	const budget = 1 << 20
	size := 16 << 10
	app, store := cacheApp(t, graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return appendText(size).Run(ctx, in)
	}), budget)
	if _, err := app.Invoke(ctx, user("small"), thread.RunConfig{ThreadID: "small"}); err != nil {
		t.Fatal(err)
	}
	size = 2 * budget
	if _, err := app.Invoke(ctx, user("big"), thread.RunConfig{ThreadID: "big"}); err != nil {
		t.Fatal(err)
	}
	st := app.CacheStats()
	if st.Threads != 1 || st.Evictions != 0 || st.Bytes > budget {
		t.Fatalf("stats %+v: want only the small thread, no eviction", st)
	}
	reads := store.latest.Load()
	size = 1
	if _, err := app.Invoke(ctx, user("again"), thread.RunConfig{ThreadID: "big"}); err != nil {
		t.Fatal(err)
	}
	if store.latest.Load() != reads+1 {
		t.Fatal("the thread over the budget was not read from the store")
	}
}

// A budget of 0 turns the cache off: every run reads its thread, but for
// a new one.
func TestCacheOff(t *testing.T) {
	app, store := cacheApp(t, appendText(10), 0)
	for range 3 {
		if _, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	// Each run but the first reads the store: the first one's claim found
	// the thread new, so there was nothing to read.
	if n := store.latest.Load(); n != 2 {
		t.Fatalf("%d reads for 3 runs on one thread without a cache, want 2", n)
	}
	if st := app.CacheStats(); st != (thread.CacheStats{}) {
		t.Fatalf("stats %+v without a cache", st)
	}
}

// A thread read (not run) is cached too, and the copy is used only while
// it is the latest: a write by another app on the same store (another
// replica) is seen at the next read.
func TestReadsAreCachedAndChecked(t *testing.T) {
	app, store := cacheApp(t, appendText(10), 1<<20)
	other, err := thread.Compile(graph.New().AddNode("a", appendText(20)).AddEdge(graph.START, "a").AddEdge("a", graph.END), store.Memory)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err := app.Thread(ctx, "t"); err != nil || len(res.Messages) != 2 {
			t.Fatalf("Thread = %d messages, %v", len(res.Messages), err)
		}
	}
	if n := store.latest.Load(); n != 1 {
		t.Fatalf("three reads read the store's latest %d times, want 1 (then the cache)", n)
	}
	if _, err := other.Invoke(ctx, user("again"), thread.RunConfig{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	res, err := app.Thread(ctx, "t")
	if err != nil || len(res.Messages) != 4 {
		t.Fatalf("after another app wrote: Thread = %d messages, %v; want 4", len(res.Messages), err)
	}
}

// logCounter counts the log entries the store hands out, whole (Latest) or
// as tails (LatestTail).
type logCounter struct {
	*checkpoint.Memory
	whole, tail atomic.Int64
}

func (s *logCounter) Latest(ctx context.Context, threadID string) (checkpoint.Checkpoint, error) {
	cp, err := s.Memory.Latest(ctx, threadID)
	s.whole.Add(int64(len(cp.Log)))
	return cp, err
}

func (s *logCounter) LatestTail(ctx context.Context, threadID string, from int) (checkpoint.Checkpoint, int, error) {
	cp, n, err := s.Memory.LatestTail(ctx, threadID, from)
	s.tail.Add(int64(len(cp.Log)))
	return cp, n, err
}

// Two apps on one store (two replicas behind a load balancer) taking turns
// on a thread: each reads only what the other added since its copy, and
// both see the thread exactly as a fresh reader does. A thread deleted and
// started again is read whole.
func TestReplicasReadOnlyWhatTheOtherAdded(t *testing.T) {
	store := &logCounter{Memory: checkpoint.NewMemory()}
	var apps [2]*thread.App
	for i := range apps {
		app, err := thread.Compile(graph.New().AddNode("a", appendText(10)).AddEdge(graph.START, "a").AddEdge("a", graph.END), store)
		if err != nil {
			t.Fatal(err)
		}
		apps[i] = app
	}
	const turns = 40
	for turn := range turns {
		if _, err := apps[turn%2].Invoke(ctx, user(fmt.Sprint("turn ", turn)), thread.RunConfig{ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	// Each turn adds 2 messages; an app's copy is one turn behind when it
	// runs, so it reads 2 entries a turn, and only app 1's first run reads
	// the thread whole (2 entries).
	if whole, tail := store.whole.Load(), store.tail.Load(); whole > 2 || tail != 2*(turns-2) {
		t.Fatalf("%d turns read %d entries whole and %d as tails; want at most 2 whole and %d as tails", turns, whole, tail, 2*(turns-2))
	}
	fresh, err := thread.Compile(graph.New().AddNode("a", appendText(10)).AddEdge(graph.START, "a").AddEdge("a", graph.END), checkpoint.Checkpointer(store.Memory), thread.WithCacheBytes(0))
	if err != nil {
		t.Fatal(err)
	}
	want, err := fresh.Thread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for i, app := range apps {
		got, err := app.Thread(ctx, "t")
		if err != nil || len(got.Messages) != 2*turns || !reflect.DeepEqual(got.Messages, want.Messages) {
			t.Fatalf("app %d reads %d messages (%v), want the %d a fresh reader sees", i, len(got.Messages), err, len(want.Messages))
		}
	}
	// Deleted and started again by app 0 with as many turns: app 1's copy
	// is of the old life, so it reads the new one whole.
	if err := apps[0].DeleteThread(ctx, "", "t"); err != nil {
		t.Fatal(err)
	}
	for turn := range turns {
		if _, err := apps[0].Invoke(ctx, user(fmt.Sprint("again ", turn)), thread.RunConfig{ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := apps[1].Thread(ctx, "t")
	if err != nil || len(got.Messages) != 2*turns || got.Messages[0].Text() != "again 0" {
		t.Fatalf("after the thread started again, app 1 reads %d messages starting %q (%v)", len(got.Messages), got.Messages[0].Text(), err)
	}
}
