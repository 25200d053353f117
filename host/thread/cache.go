package thread

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// DefaultCacheBytes is the thread cache's budget when none is set:
// checkpoint.DefaultCacheBytes.
const DefaultCacheBytes = checkpoint.DefaultCacheBytes

// CacheStats describes the cache of decoded threads, for metrics.
type CacheStats struct {
	// Threads and Bytes are what the cache holds now; Bytes is its
	// estimate of their memory, which the budget bounds.
	Threads int
	Bytes   int64
	// Evictions counts threads dropped to stay within the budget.
	Evictions uint64
}

// threadCache reads threads from the store (load) and keeps the latest
// checkpoint of those this app works on, decoded, so a run on a thread the
// app just wrote (a resume, the next turn) does not read and decode the
// state again. An entry is keyed by the thread's incarnation and seq, and
// used only while the store confirms both are still the latest: a run's
// claim (checkpoint.Lease) reports them, a reader asks (checkpoint.Leaser's
// Head, a cheap read). Another process writing the thread, or deleting and
// re-creating it, makes the entry stale, and it is then read afresh.
//
// The cache is bounded in bytes: each entry costs its state's encoded size
// plus an estimate of the decoded structure's overhead, and the least
// recently used threads are dropped to stay within max (a miss only costs a
// read). A thread larger than the whole budget is not kept; with max <= 0,
// none is.
type threadCache struct {
	store checkpoint.Checkpointer
	max   int64

	mu        sync.Mutex
	m         map[string]*list.Element // of *cached
	lru       list.List                // front: most recently used
	used      int64
	evictions uint64
}

// cached is a thread's latest checkpoint, decoded.
type cached struct {
	thread string
	cp     checkpoint.Checkpoint // State and Log left nil: saved holds them decoded; Incarnation is the thread's
	saved  graph.Saved
	// logged and logBytes are the thread's log as of cp: how many
	// messages it holds, and their encoded size.
	logged   int
	logBytes int64
	size     int64
	// tail is saved.Messages with the room to grow of the array they are
	// in, handed over by the run that wrote them (giveTail) for the next
	// run to append to in place (takeTail). Whoever holds it is the only
	// one to write past saved.Messages in that array.
	tail []message.Message
}

// Per-entry and per-message overheads of a decoded thread beyond its JSON
// size: the map entry, list element and Checkpoint; each Message and its
// block's interface and struct.
const (
	entryOverhead   = 512
	messageOverhead = 192
)

func newThreadCache(store checkpoint.Checkpointer, maxBytes int64) *threadCache {
	return &threadCache{store: store, max: maxBytes, m: map[string]*list.Element{}}
}

// stats reports the cache's content and its evictions so far.
func (c *threadCache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{Threads: len(c.m), Bytes: c.used, Evictions: c.evictions}
}

// load returns the thread's latest checkpoint, decoded, or nil for a
// thread that has none. h is the caller's hold on the thread (nil for a
// reader); what is read under a lease is cached, since the lease names its
// incarnation. The entry returned has no tail: that goes to one run,
// through takeTail.
func (c *threadCache) load(ctx context.Context, thread string, h *hold) (*cached, error) {
	if h != nil && h.lease.Seq == 0 {
		// The claim read the thread's head in the statement that leased
		// it, and the lease keeps it so: a thread without checkpoints (new,
		// or deleted) has nothing to read.
		c.drop(thread)
		return nil, nil
	}
	if hit, ok := c.get(thread); ok {
		if c.current(ctx, hit, h) {
			return &hit, nil
		}
		hit.tail = c.dropTakingTail(thread, hit.saved.Messages)
		if hit.logged > 0 {
			// Another process extended the thread since this copy: read
			// only what it added, if the copy is of the same life of the
			// thread.
			fresh, ok, err := c.loadTail(ctx, thread, hit, h)
			if err != nil || ok {
				return fresh, err
			}
		}
	}
	cp, err := c.store.Latest(ctx, thread)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("thread %q: load: %w", idOf(thread), err)
	}
	msgs, logBytes, err := graph.DecodeLog(cp.Log)
	if err != nil {
		return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", idOf(thread), cp.Seq, err)
	}
	saved, err := decode(cp, msgs)
	if err != nil {
		return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", idOf(thread), cp.Seq, err)
	}
	if h != nil {
		cp.Incarnation = h.lease.Incarnation
	}
	// A reader caches what it read too: the checkpoint names the
	// incarnation it was written in, which with its seq identifies it, so
	// the entry is used only while the store's head is that checkpoint.
	hit := cached{thread: thread, cp: cp, saved: saved, logged: len(msgs), logBytes: logBytes}
	c.keep(hit, int64(len(cp.State))+logBytes)
	return &hit, nil
}

// loadTail reads the thread's latest checkpoint with only the log entries
// stale's copy lacks, and joins them to it. ok is false when the copy
// cannot be extended (the thread was deleted and started again, or it is
// not the log's prefix): the caller then reads the thread whole. A thread
// gone is (nil, ok).
func (c *threadCache) loadTail(ctx context.Context, thread string, stale cached, h *hold) (*cached, bool, error) {
	have := stale.logged
	cp, n, err := c.store.LatestTail(ctx, thread, have)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, true, nil
	case err != nil:
		return nil, false, fmt.Errorf("thread %q: load: %w", idOf(thread), err)
	}
	sameLife := cp.Incarnation == stale.cp.Incarnation && (h == nil || h.lease.Incarnation == cp.Incarnation)
	if !sameLife || n < have || len(cp.Log) != n-have {
		return nil, false, nil
	}
	tail, tailBytes, err := graph.DecodeLog(cp.Log)
	if err != nil {
		return nil, false, fmt.Errorf("thread %q: read checkpoint %d: %w", idOf(thread), cp.Seq, err)
	}
	// The new messages go after the copy's, in its array when this process
	// holds it (stale.tail, see takeTail) and else in a new one; either
	// way the array is this load's to hand to the next run.
	msgs := stale.tail
	if len(msgs) != have {
		msgs = make([]message.Message, have, n+16)
		copy(msgs, stale.saved.Messages[:have])
	}
	msgs = append(msgs, tail...)
	saved, err := decode(cp, msgs)
	if err != nil {
		return nil, false, fmt.Errorf("thread %q: read checkpoint %d: %w", idOf(thread), cp.Seq, err)
	}
	cp.Log = nil
	hit := cached{thread: thread, cp: cp, saved: saved, logged: n, logBytes: stale.logBytes + tailBytes}
	c.keep(hit, int64(len(cp.State))+hit.logBytes)
	c.giveTail(thread, msgs)
	return &hit, true, nil
}

// decode reads a checkpoint whose log holds msgs.
func decode(cp checkpoint.Checkpoint, msgs []message.Message) (graph.Saved, error) {
	s := graph.Saved{Status: graph.Status(cp.Status), Next: cp.Next, Step: cp.Step, RunID: cp.RunID}
	err := s.Decode(cp.State, msgs)
	return s, err
}

// current reports whether hit is still the thread's latest checkpoint: as
// h's claim saw it, or as the store says now.
func (c *threadCache) current(ctx context.Context, hit cached, h *hold) bool {
	if h != nil {
		return h.lease.Incarnation == hit.cp.Incarnation && h.lease.Seq == hit.cp.Seq
	}
	head, err := c.store.Head(ctx, hit.thread)
	return err == nil && head == checkpoint.Head{Incarnation: hit.cp.Incarnation, Seq: hit.cp.Seq}
}

// keep keeps e as its thread's latest; encoded is the size of its
// encoding. A thread already kept has its entry overwritten in place, as
// every checkpoint of a run after its first does: the entry is a large
// struct, and a run's steps would otherwise each allocate one, with its
// list element and map entry.
func (c *threadCache) keep(e cached, encoded int64) {
	if c.max <= 0 {
		return
	}
	e.cp.State, e.cp.Log, e.tail = nil, nil, nil
	e.size = encoded + entryOverhead + messageOverhead*int64(len(e.saved.Messages))
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[e.thread]
	if e.size > c.max {
		if ok {
			c.remove(e.thread)
		}
		return
	}
	if ok {
		// Not counted while the others make room; the loop below then
		// never reaches it, since it alone fits.
		c.used -= el.Value.(*cached).size
		c.lru.MoveToFront(el)
	}
	for c.used+e.size > c.max {
		c.remove(c.lru.Back().Value.(*cached).thread)
		c.evictions++
	}
	if ok {
		*el.Value.(*cached) = e
	} else {
		p := new(cached)
		*p = e
		c.m[e.thread] = c.lru.PushFront(p)
	}
	c.used += e.size
}

// get returns a copy of thread's entry, marking it used. The copy has no
// tail: that goes to one run, through takeTail.
func (c *threadCache) get(thread string) (cached, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[thread]
	if !ok {
		return cached{}, false
	}
	c.lru.MoveToFront(e)
	hit := *e.Value.(*cached)
	hit.tail = nil
	return hit, true
}

func (c *threadCache) drop(thread string) {
	c.mu.Lock()
	c.remove(thread)
	c.mu.Unlock()
}

// remove drops thread's entry, if any; c.mu is held.
func (c *threadCache) remove(thread string) {
	if e, ok := c.m[thread]; ok {
		c.used -= e.Value.(*cached).size
		c.lru.Remove(e)
		delete(c.m, thread)
	}
}

// The hand-over of a thread's tail, from the run that appended to it to
// the next: giveTail, takeTail, dropTakingTail.

// giveTail hands over the array a run appended its messages to, tail being
// all it appended: the thread's entry keeps it when its messages are
// exactly tail's, that is when the run ended having saved every message it
// appended, and the entry is that save's. A run that appended messages it
// did not save (it failed or was cancelled mid-step) keeps its array, and
// the next run copies the thread into a new one.
func (c *threadCache) giveTail(thread string, tail []message.Message) {
	if len(tail) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[thread]; ok {
		if hit := e.Value.(*cached); graph.SameArray(hit.saved.Messages, tail) {
			hit.tail = tail
		}
	}
}

// takeTail returns the thread's tail when msgs are its messages (the run's
// state came from the entry), for a run to append to: the entry gives it up,
// so one run at a time writes past msgs. It returns nil otherwise.
func (c *threadCache) takeTail(thread string, msgs []message.Message) []message.Message {
	if len(msgs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[thread]
	if !ok {
		return nil
	}
	hit := e.Value.(*cached)
	t := hit.tailOf(msgs)
	if t != nil {
		hit.tail = nil
	}
	return t
}

// dropTakingTail drops thread's entry and returns its tail when the entry
// holds msgs (it is the one the caller read) and has one: the caller then
// holds the array, to extend with what another process added.
func (c *threadCache) dropTakingTail(thread string, msgs []message.Message) []message.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[thread]
	if !ok {
		return nil
	}
	t := e.Value.(*cached).tailOf(msgs)
	c.remove(thread)
	return t
}

// tailOf returns the entry's tail if it holds msgs, the entry's messages as
// a caller read them, and nil otherwise. (A tail is only ever set to the
// entry's messages, see giveTail.)
func (e *cached) tailOf(msgs []message.Message) []message.Message {
	if graph.SameArray(e.tail, msgs) {
		return e.tail
	}
	return nil
}
