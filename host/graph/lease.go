package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// DefaultLease is how long a run's claim on its thread lasts when
// WithLease does not say: checkpoint.DefaultLease.
const DefaultLease = checkpoint.DefaultLease

// WithLease sets the lease a run takes on its thread in a store that
// implements checkpoint.Leaser (see DefaultLease); d <= 0 keeps the
// default. Shorter leases free a dead replica's threads sooner and cost
// more heartbeats.
func WithLease(d time.Duration) Option {
	return func(a *App) {
		if d > 0 {
			a.leaseTTL = d
		}
	}
}

// hold is a run's (or a delete's) hold on a thread (thread is its key):
// the in-process entry in App.busy and, with a Leaser store, the store's
// lease, renewed by a heartbeat until released.
type hold struct {
	thread string
	lease  checkpoint.Lease
	leased bool
	// released is set once the run's last checkpoint released the lease
	// with it (checkpoint.Checkpoint.Release): unclaim has nothing left to
	// release, and the heartbeat finding the lease gone is no loss.
	released atomic.Bool

	// The heartbeat is a timer, not a goroutine: most runs end before
	// their first renewal is due, and then cost neither a goroutine nor
	// the wait for one to notice it should stop.
	beat      *time.Timer
	renewed   checkpoint.Lease        // the lease as last renewed; only beat touches it
	beatCtx   context.Context         // the renewals' context, done once stopped
	stopBeat  context.CancelFunc      // ends beatCtx
	cancelRun context.CancelCauseFunc // ends the run's context, with errLeaseLost when the lease is lost
	mu        sync.Mutex              // guards stopped, beating and the timer's resets
	stopped   bool
	beating   chan struct{} // closed when the renewal in progress ends; nil when none is
}

// errLeaseLost is the cause a run is cancelled with when its lease is
// superseded (its heartbeat was too late, say) or its thread deleted.
var errLeaseLost = errors.New("the run lost its claim on the thread (another run took it, or it was deleted)")

// take holds the thread of key for one run (or delete): in this process
// (acquire), then in the store (claim). With wait, a thread busy with
// another run is tried again, with backoff, until it is free, ctx ends or a
// lease's duration has passed; then the busy error is returned. The caller
// releases (release, then unclaim) when done.
func (a *App) take(ctx context.Context, key string, wait bool) (context.Context, *hold, error) {
	deadline := time.Now().Add(a.leaseTTL)
	delay := 5 * time.Millisecond
	for {
		err := a.acquire(key)
		if err == nil {
			rctx, h, cerr := a.claim(ctx, key)
			if cerr == nil {
				return rctx, h, nil
			}
			a.release(key)
			err = cerr
		}
		if !wait || !errors.Is(err, ErrThreadBusy) || time.Now().Add(delay).After(deadline) {
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

// claim takes the store's lease on the thread of key (the in-process entry
// is already held); one leased elsewhere is ErrThreadBusy. The returned
// context is ctx, cancelled with errLeaseLost if the heartbeat finds the
// lease lost.
func (a *App) claim(ctx context.Context, key string) (context.Context, *hold, error) {
	h := &hold{thread: key}
	if a.leaser == nil {
		return ctx, h, nil
	}
	le, err := a.leaser.Claim(ctx, key, a.leaseTTL)
	if errors.Is(err, checkpoint.ErrLeased) {
		return ctx, nil, busy(key, "another run holds the thread; wait for it to finish")
	}
	if err != nil {
		return ctx, nil, fmt.Errorf("thread %q: claim: %w", idOf(key), err)
	}
	h.lease, h.leased, h.renewed = le, true, le
	runCtx, cancel := context.WithCancelCause(ctx)
	h.cancelRun = cancel
	h.beatCtx, h.stopBeat = context.WithCancel(context.WithoutCancel(ctx))
	h.mu.Lock() // the timer's first beat reads h.beat
	h.beat = time.AfterFunc(a.leaseTTL/3, func() { a.heartbeat(h) })
	h.mu.Unlock()
	return runCtx, h, nil
}

// heartbeat renews h's lease, then sets its timer for the next renewal, a
// third of the lease's duration later; when the lease is lost, or cannot
// be renewed before it expires, it cancels the run instead.
func (a *App) heartbeat(h *hold) {
	h.mu.Lock()
	if h.stopped {
		h.mu.Unlock()
		return
	}
	done := make(chan struct{})
	h.beating = done
	h.mu.Unlock()
	again := a.renew(h)
	h.mu.Lock()
	h.beating = nil
	if again && !h.stopped {
		h.beat.Reset(a.leaseTTL / 3)
	}
	h.mu.Unlock()
	close(done)
}

// renew extends h's lease once and reports whether to go on.
func (a *App) renew(h *hold) bool {
	next, err := a.leaser.Extend(h.beatCtx, h.renewed, a.leaseTTL)
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
	beating := h.beating
	h.mu.Unlock()
	h.stopBeat()
	if beating != nil {
		<-beating
	}
	h.cancelRun(nil)
}

// unclaim stops the heartbeat and releases the store's lease, bounded even
// when ctx is done, so the thread is free at once rather than when the lease
// expires.
func (a *App) unclaim(ctx context.Context, h *hold) {
	if h == nil || !h.leased {
		return
	}
	h.stop()
	if h.released.Load() {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	_ = a.leaser.Release(rctx, h.lease) // a failed release only keeps the thread busy until the lease expires
}
