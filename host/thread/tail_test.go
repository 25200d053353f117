package thread

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// The thread cache hands a run's array to the next run only when the
// thread's entry holds exactly what the run appended, and to one run only:
// otherwise two runs would write the same place of one array.
func TestTailHandOver(t *testing.T) {
	c := newThreadCache(checkpoint.NewMemory(), 1<<20)
	arr := make([]message.Message, 3, 8)
	for i := range arr {
		arr[i] = message.Text(message.RoleUser, "m")
	}
	saved := arr[:2:2] // what the run's last checkpoint holds
	c.keep(cached{thread: "t", cp: checkpoint.Checkpoint{ThreadID: "t", Seq: 1}, saved: graph.Saved{State: graph.State{Messages: saved}}}, 10)

	// The run appended a message it did not save: it keeps its array.
	c.giveTail("t", arr)
	if kept := c.m["t"].Value.(*cached).tail; kept != nil {
		t.Fatalf("the entry kept a tail the run had written past: len %d", len(kept))
	}
	if got := c.takeTail("t", arr); got != nil {
		t.Fatalf("took a tail for messages the entry does not hold: len %d", len(got))
	}
	// It saved all it appended: the entry keeps the array.
	c.giveTail("t", arr[:2])
	if got := c.takeTail("t", arr[:1:1]); got != nil {
		t.Fatalf("took the tail for other messages than the entry's: len %d", len(got))
	}
	got := c.takeTail("t", saved)
	if len(got) != 2 || cap(got) != 8 || &got[0] != &arr[0] {
		t.Fatalf("took len %d cap %d, want the run's array, len 2 cap 8", len(got), cap(got))
	}
	if again := c.takeTail("t", saved); again != nil {
		t.Fatalf("the tail was taken twice")
	}
	// A new save of the thread replaces the entry, and its tail with it.
	c.giveTail("t", arr[:2])
	c.keep(cached{thread: "t", cp: checkpoint.Checkpoint{ThreadID: "t", Seq: 2}, saved: graph.Saved{State: graph.State{Messages: saved}}}, 10)
	if got := c.takeTail("t", saved); got != nil {
		t.Fatalf("a tail outlived the entry it was given with")
	}
	// An entry dropped as stale gives its tail to the one load that drops
	// it, when it is the entry that load read.
	c.keep(cached{thread: "t", cp: checkpoint.Checkpoint{ThreadID: "t", Seq: 3}, saved: graph.Saved{State: graph.State{Messages: arr[:2:2]}}}, 10)
	c.giveTail("t", arr[:2])
	if got := c.dropTakingTail("t", arr[:1:1]); got != nil {
		t.Fatalf("a load that read other messages took the tail")
	}
	if _, ok := c.get("t"); ok {
		t.Fatalf("the stale entry was not dropped")
	}
	c.keep(cached{thread: "t", cp: checkpoint.Checkpoint{ThreadID: "t", Seq: 4}, saved: graph.Saved{State: graph.State{Messages: arr[:2:2]}}}, 10)
	c.giveTail("t", arr[:2])
	if got := c.dropTakingTail("t", arr[:2:2]); len(got) != 2 || cap(got) != 8 {
		t.Fatalf("the load that read the entry took len %d cap %d, want its array", len(got), cap(got))
	}
	if got := c.dropTakingTail("t", arr[:2:2]); got != nil {
		t.Fatalf("the tail was taken twice")
	}

	// No cache: nothing to hand over.
	none := newThreadCache(checkpoint.NewMemory(), 0)
	none.giveTail("t", arr[:2])
	if got := none.takeTail("t", saved); got != nil {
		t.Fatalf("a cache without a budget returned a tail")
	}
}
