package supervise

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// inst is a stand-in instance: it ends when end is closed.
type inst struct {
	id   int
	end  chan struct{}
	once sync.Once
}

func (i *inst) kill() { i.once.Do(func() { close(i.end) }) }

type rig struct {
	starts   atomic.Int32
	fail     atomic.Bool
	stopped  atomic.Int32
	startDur time.Duration
	sup      *Supervisor[*inst]
}

func newRig(hold time.Duration) *rig {
	r := &rig{}
	r.sup = New(Config[*inst]{
		Start: func() (*inst, error) {
			n := r.starts.Add(1)
			time.Sleep(r.startDur)
			if r.fail.Load() {
				return nil, errors.New("cannot start")
			}
			return &inst{id: int(n), end: make(chan struct{})}, nil
		},
		Done:  func(i *inst) <-chan struct{} { return i.end },
		Stop:  func(_ context.Context, i *inst) { r.stopped.Add(1); i.kill() },
		Ended: func(*inst, time.Duration) error { return errors.New("it ended") },
		First: 50 * time.Millisecond, Max: time.Second, Hold: hold,
	})
	return r
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Concurrent callers share one start.
func TestSingleFlight(t *testing.T) {
	r := newRig(0)
	r.startDur = 20 * time.Millisecond
	var wg sync.WaitGroup
	got := make([]*inst, 50)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = r.sup.Get(context.Background())
		}()
	}
	wg.Wait()
	if n := r.starts.Load(); n != 1 {
		t.Fatalf("%d starts for 50 concurrent callers, want 1", n)
	}
	for _, g := range got {
		if g == nil || g != got[0] {
			t.Fatal("callers got different instances")
		}
	}
}

// An instance that ends on its own is replaced at once, without a caller.
func TestRestartsAnEndedInstance(t *testing.T) {
	r := newRig(0)
	first, err := r.sup.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first.kill()
	waitUntil(t, "no new instance", func() bool { i, ok := r.sup.Current(); return ok && i != first })
}

// Failures in a row back off; a caller past Hold fails at once with the
// reason, and Shutdown cancels the backoff.
func TestBackoffHoldAndShutdown(t *testing.T) {
	r := newRig(0)
	r.fail.Store(true)
	if _, err := r.sup.Get(context.Background()); err == nil || err.Error() != "cannot start" {
		t.Fatalf("first Get: %v", err)
	}
	began := time.Now()
	if _, err := r.sup.Get(context.Background()); err == nil {
		t.Fatal("a failing start succeeded")
	}
	// The second failure set a 50ms backoff: a third Get fails at once.
	if _, err := r.sup.Get(context.Background()); err == nil || time.Since(began) > 40*time.Millisecond+r.startDur {
		t.Fatalf("Get during the backoff: %v after %s", err, time.Since(began))
	}
	n := r.starts.Load()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.sup.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // past the backoff: nothing may start now
	if r.starts.Load() != n {
		t.Fatal("a start happened after Shutdown")
	}
	if _, err := r.sup.Get(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Shutdown: %v", err)
	}
}

// Shutdown stops the live instance once, and a stopped instance is not
// restarted.
func TestShutdownStopsTheInstance(t *testing.T) {
	r := newRig(0)
	if _, err := r.sup.Get(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.sup.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.stopped.Load() != 1 {
		t.Fatalf("stopped %d times", r.stopped.Load())
	}
	time.Sleep(20 * time.Millisecond)
	if r.starts.Load() != 1 {
		t.Fatal("the stopped instance was replaced")
	}
}

// A dropped instance is not handed out again; its end counts and a new one
// starts.
func TestDrop(t *testing.T) {
	r := newRig(time.Second)
	first, _ := r.sup.Get(context.Background())
	r.sup.Drop(first)
	if i, ok := r.sup.Current(); ok {
		t.Fatalf("Current after Drop: %v", i)
	}
	first.kill()
	second, err := r.sup.Get(context.Background())
	if err != nil || second == first {
		t.Fatalf("after Drop: %v, %v", second, err)
	}
}
