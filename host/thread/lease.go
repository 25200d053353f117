package thread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
)

// DefaultLease is how long a run's claim on its thread lasts when
// WithLease does not say: checkpoint.DefaultLease.
const DefaultLease = checkpoint.DefaultLease

// claims are the threads the runs (and deletes) of this process hold,
// and how they hold them in the store: by a lease of ttl, renewed by a
// heartbeat while they run.
type claims struct {
	store checkpoint.Leaser
	ttl   time.Duration

	mu   sync.Mutex
	busy map[string]struct{} // the keys of the threads held
}

// hold is a run's (or a delete's) hold on a thread (thread is its key):
// the in-process entry in claims.busy and the store's lease, renewed by a
// heartbeat until released.
type hold struct {
	thread string
	lease  checkpoint.Lease
	// released is set once the run's last checkpoint released the lease
	// with it (checkpoint.Checkpoint.Release): release has nothing left to
	// release in the store, and the heartbeat finding the lease gone is no
	// loss.
	released atomic.Bool

	// The heartbeat is a timer, not a goroutine: most runs end before
	// their first renewal is due, and then cost neither a goroutine nor
	// the wait for one to notice it should stop.
	beat    *time.Timer
	renewed checkpoint.Lease // the lease as last renewed; only beat touches it
	// parent is the context the run's own derives from, whose values the
	// renewals keep; their own context (beatCtx, done once stopped) is
	// made from it at the first renewal, so a run that ends before one
	// makes none.
	parent    context.Context
	beatCtx   context.Context
	stopBeat  context.CancelFunc      // ends beatCtx; nil until the first renewal
	cancelRun context.CancelCauseFunc // ends the run's context, with errLeaseLost when the lease is lost
	mu        sync.Mutex              // guards stopped, beating, beatCtx and the timer's resets
	stopped   bool
	beating   chan struct{} // closed when the renewal in progress ends; nil when none is
}

// errLeaseLost is the cause a run is cancelled with when its lease is
// superseded (its heartbeat was too late, say) or its thread deleted.
var errLeaseLost = errors.New("the run lost its claim on the thread (another run took it, or it was deleted)")

// take holds the thread of key for one run (or delete): in this process,
// then in the store (tryTake). With wait, a thread busy with another run
// is tried again, with backoff, until it is free, ctx ends or a lease's
// duration has passed; then the busy error is returned. The caller lets
// the thread go with release when done.
func (c *claims) take(ctx context.Context, key string, wait bool) (context.Context, *hold, error) {
	deadline := time.Now().Add(c.ttl)
	delay := 5 * time.Millisecond
	for {
		rctx, h, err := c.tryTake(ctx, key)
		if err == nil {
			return rctx, h, nil
		}
		if !wait || !errors.Is(err, graph.ErrThreadBusy) || time.Now().Add(delay).After(deadline) {
			return ctx, nil, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx, nil, err
		case <-t.C:
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// tryTake holds the thread of key once: in this process (claims.busy), then
// in the store, by its lease; a thread held in either is ErrThreadBusy. The
// returned context is ctx, cancelled with errLeaseLost if the heartbeat
// finds the lease lost.
func (c *claims) tryTake(ctx context.Context, key string) (context.Context, *hold, error) {
	c.mu.Lock()
	_, held := c.busy[key]
	if !held {
		c.busy[key] = struct{}{}
	}
	c.mu.Unlock()
	if held {
		return ctx, nil, busy(key, "wait for the current run to finish")
	}
	le, err := c.store.Claim(ctx, key, c.ttl)
	if err != nil {
		c.mu.Lock()
		delete(c.busy, key)
		c.mu.Unlock()
		if errors.Is(err, checkpoint.ErrLeased) {
			return ctx, nil, busy(key, "another run holds the thread; wait for it to finish")
		}
		return ctx, nil, fmt.Errorf("thread %q: claim: %w", idOf(key), err)
	}
	h := &hold{thread: key}
	h.lease, h.renewed = le, le
	runCtx, cancel := context.WithCancelCause(ctx)
	h.parent, h.cancelRun = ctx, cancel
	h.mu.Lock() // the timer's first beat reads h.beat
	h.beat = time.AfterFunc(c.ttl/3, func() { c.heartbeat(h) })
	h.mu.Unlock()
	return runCtx, h, nil
}

// heartbeat renews h's lease, then sets its timer for the next renewal, a
// third of the lease's duration later; when the lease is lost, or cannot
// be renewed before it expires, it cancels the run instead.
func (c *claims) heartbeat(h *hold) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	done := make(chan struct{})
	h.beating = done
	if h.beatCtx == nil {
		h.beatCtx, h.stopBeat = context.WithCancel(context.WithoutCancel(h.parent))
	}
	h.mu.Unlock()
	again := c.renew(h)
	h.mu.Lock()
	h.beating = nil
	if again && !h.stopped {
		h.beat.Reset(c.ttl / 3)
	}
	h.mu.Unlock()
	close(done)
}

// renew extends h's lease once and reports whether to go on.
func (c *claims) renew(h *hold) bool {
	next, err := c.store.Extend(h.beatCtx, h.renewed, c.ttl)
	switch {
	case err == nil:
		h.renewed = next
		return true
	case h.beatCtx.Err() != nil, h.released.Load():
		return false
	case errors.Is(err, checkpoint.ErrLeaseLost) || time.Now().After(h.renewed.Expires):
		h.cancelRun(fmt.Errorf("%w: %w", errLeaseLost, err))
		return false
	}
	return true // a failed renewal is tried again while the lease lasts
}

// stop ends the heartbeat: no renewal starts after it returns, and one in
// progress has ended. It ends the run's context too.
func (h *hold) stop() {
	h.mu.Lock()
	h.stopped = true
	h.beat.Stop()
	beating, stopBeat := h.beating, h.stopBeat
	h.mu.Unlock()
	if stopBeat != nil {
		stopBeat()
	}
	if beating != nil {
		<-beating
	}
	h.cancelRun(nil)
}

// release lets the thread h holds go: it stops the heartbeat and releases
// the store's lease (unless the run's last checkpoint did), bounded even
// when ctx is done, so the thread is free at once rather than when the
// lease expires; then this process's hold.
func (c *claims) release(ctx context.Context, h *hold) {
	h.stop()
	if !h.released.Load() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), graph.RecordTimeout)
		defer cancel()
		_ = c.store.Release(rctx, h.lease) // a failed release only keeps the thread busy until the lease expires
	}
	c.mu.Lock()
	delete(c.busy, h.thread)
	c.mu.Unlock()
}
