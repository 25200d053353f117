package graph_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// countingStore counts reads of a thread's latest checkpoint: a run served
// from the cache makes none.
type countingStore struct {
	*checkpoint.Memory
	latest atomic.Int64
}

func (s *countingStore) Latest(ctx context.Context, thread string) (checkpoint.Checkpoint, error) {
	s.latest.Add(1)
	return s.Memory.Latest(ctx, thread)
}

// appendText is a node appending an assistant message of n bytes.
func appendText(n int) graph.Node {
	return graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, strings.Repeat("x", n))}}, nil
	})
}

func cacheApp(t *testing.T, node graph.Node, budget int64) (*graph.App, *countingStore) {
	t.Helper()
	store := &countingStore{Memory: checkpoint.NewMemory()}
	app, err := graph.New().AddNode("a", node).AddEdge(graph.START, "a").AddEdge("a", graph.END).
		Compile(store, graph.WithCacheBytes(budget))
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
		if _, err := app.Invoke(ctx, user("go"), graph.RunConfig{ThreadID: fmt.Sprint("t", i)}); err != nil {
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
	if _, err := app.Invoke(ctx, user("again"), graph.RunConfig{ThreadID: last}); err != nil {
		t.Fatal(err)
	}
	if n := store.latest.Load() - reads; n != 0 {
		t.Fatalf("a cached thread was read %d times from the store", n)
	}
	// The first thread was evicted: it is read again, and still whole.
	res, err := app.Invoke(ctx, user("again"), graph.RunConfig{ThreadID: "t0"})
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
	if _, err := app.Invoke(ctx, user("small"), graph.RunConfig{ThreadID: "small"}); err != nil {
		t.Fatal(err)
	}
	size = 2 * budget
	if _, err := app.Invoke(ctx, user("big"), graph.RunConfig{ThreadID: "big"}); err != nil {
		t.Fatal(err)
	}
	st := app.CacheStats()
	if st.Threads != 1 || st.Evictions != 0 || st.Bytes > budget {
		t.Fatalf("stats %+v: want only the small thread, no eviction", st)
	}
	reads := store.latest.Load()
	size = 1
	if _, err := app.Invoke(ctx, user("again"), graph.RunConfig{ThreadID: "big"}); err != nil {
		t.Fatal(err)
	}
	if store.latest.Load() != reads+1 {
		t.Fatal("the thread over the budget was not read from the store")
	}
}

// A budget of 0 turns the cache off: every run reads its thread.
func TestCacheOff(t *testing.T) {
	app, store := cacheApp(t, appendText(10), 0)
	for range 3 {
		if _, err := app.Invoke(ctx, user("go"), graph.RunConfig{ThreadID: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.latest.Load(); n != 3 {
		t.Fatalf("%d reads for 3 runs without a cache", n)
	}
	if st := app.CacheStats(); st != (graph.CacheStats{}) {
		t.Fatalf("stats %+v without a cache", st)
	}
}

// A thread read (not run) is cached too, and the copy is used only while
// it is the latest: a write by another app on the same store (another
// replica) is seen at the next read.
func TestReadsAreCachedAndChecked(t *testing.T) {
	app, store := cacheApp(t, appendText(10), 1<<20)
	other, err := graph.New().AddNode("a", appendText(20)).AddEdge(graph.START, "a").AddEdge("a", graph.END).Compile(store.Memory)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Invoke(ctx, user("go"), graph.RunConfig{ThreadID: "t"}); err != nil {
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
	if _, err := other.Invoke(ctx, user("again"), graph.RunConfig{ThreadID: "t"}); err != nil {
		t.Fatal(err)
	}
	res, err := app.Thread(ctx, "t")
	if err != nil || len(res.Messages) != 4 {
		t.Fatalf("after another app wrote: Thread = %d messages, %v; want 4", len(res.Messages), err)
	}
}
