package thread

import (
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// A thread kept again has its entry overwritten in place: the bytes it
// adds push out the least recently used others, never itself, and a
// thread grown past the whole budget is dropped.
func TestKeepAgainOverwritesAndStaysWithinTheBudget(t *testing.T) {
	const budget = 4 * entryOverhead
	c := newThreadCache(checkpoint.NewMemory(), budget)
	keep := func(thread string, seq int64, encoded int64) {
		c.keep(cached{thread: thread, cp: checkpoint.Checkpoint{ThreadID: thread, Seq: seq}}, encoded)
	}
	keep("a", 1, 0)
	keep("b", 1, 0)
	el := c.m["a"]
	keep("a", 2, entryOverhead) // a is now 2 entries' worth: 3 of 4 used
	if c.m["a"] != el || c.m["a"].Value.(*cached).cp.Seq != 2 {
		t.Fatal("keeping a again made a new entry, or kept the old one's checkpoint")
	}
	if st := c.stats(); st.Threads != 2 || st.Bytes != 3*entryOverhead || st.Evictions != 0 {
		t.Fatalf("stats %+v, want a and b, %d bytes, no eviction", st, 3*entryOverhead)
	}
	keep("a", 3, 2*entryOverhead+1) // over 3 entries' worth: b must go
	if _, ok := c.get("b"); ok {
		t.Fatal("b was kept though a's growth needs its room")
	}
	if hit, ok := c.get("a"); !ok || hit.cp.Seq != 3 {
		t.Fatalf("a is gone or stale (%v, seq %d)", ok, hit.cp.Seq)
	}
	if st := c.stats(); st.Threads != 1 || st.Bytes != 3*entryOverhead+1 || st.Evictions != 1 {
		t.Fatalf("stats %+v, want a alone, %d bytes, one eviction", st, 3*entryOverhead+1)
	}
	keep("a", 4, budget) // over the whole budget
	if st := c.stats(); st.Threads != 0 || st.Bytes != 0 {
		t.Fatalf("stats %+v: a thread grown past the budget is still kept", st)
	}
}
