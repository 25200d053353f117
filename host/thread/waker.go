package thread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
)

// DefaultWakeInterval is how often a Waker asks the store for due threads
// when its Interval is zero: an expired call is answered at most about this
// long after its deadline, for one cheap indexed query per second per
// process.
const DefaultWakeInterval = time.Second

// wakeBatch bounds the threads a Waker takes from one query, and wakeRuns
// the expiry runs it has in flight at once.
const (
	wakeBatch = 100
	wakeRuns  = 4
)

// Waker expires the due threads of an App's store for as long as it runs.
// Run it in every process that serves the store.
type Waker struct {
	// App is the app whose threads are woken.
	App *App
	// Interval is the time between queries (0: DefaultWakeInterval).
	Interval time.Duration
	// OnError, when set, is told of each thread whose expiry failed for a
	// reason other than the thread being busy (the failure is also
	// recorded on the thread, as for any run), by its key
	// (checkpoint.ThreadKey: the tenant and the id).
	OnError func(key string, err error)

	mu      sync.Mutex
	stop    chan struct{} // closed by Shutdown
	stopped bool
	done    chan struct{} // closed when Run returns
}

// Run polls until ctx is done or Shutdown is called. Expiry runs get ctx:
// cancelling it cancels them, and they are recorded as cancelled. Run may
// be called once.
func (w *Waker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.done != nil {
		w.mu.Unlock()
		return errors.New("thread: Waker.Run called twice")
	}
	if w.stop == nil {
		w.stop = make(chan struct{})
	}
	w.done = make(chan struct{})
	stop, done := w.stop, w.done
	w.mu.Unlock()
	defer close(done)
	sched := w.App.Checkpointer()
	every := w.Interval
	if every <= 0 {
		every = DefaultWakeInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		default:
		}
		if w.pass(ctx, sched) {
			continue // a full batch made progress: more may be due now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-stop:
			return nil
		case <-t.C:
		}
	}
}

// pass expires the threads due now, up to a batch, and reports whether a
// full batch made progress (so more may be due at once).
func (w *Waker) pass(ctx context.Context, sched checkpoint.Scheduler) bool {
	now := time.Now()
	keys, err := sched.Due(ctx, now, wakeBatch)
	if err != nil {
		if ctx.Err() == nil && w.OnError != nil {
			w.OnError("", fmt.Errorf("list threads due to wake: %w", err))
		}
		return false
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	progress := false
	sem := make(chan struct{}, wakeRuns)
	for _, key := range keys {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			tenant, id := checkpoint.SplitThreadKey(key)
			_, ok, err := w.App.Expire(ctx, tenant, id, now)
			switch {
			case ok:
				mu.Lock()
				progress = true
				mu.Unlock()
			case err != nil && !errors.Is(err, graph.ErrThreadBusy) && ctx.Err() == nil && w.OnError != nil:
				w.OnError(key, err)
			}
		}()
	}
	wg.Wait()
	return progress && len(keys) == wakeBatch
}

// Shutdown stops the polling and waits until the expiry runs in progress
// have finished or ctx is done. To cut those runs short, cancel the context
// given to Run.
func (w *Waker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	if w.stop == nil {
		w.stop = make(chan struct{})
	}
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
	done := w.done
	w.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
