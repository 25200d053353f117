// Package supervise keeps one instance of something alive: a plugin's
// process, an MCP server's connection. It is the one supervisor of every
// process and connection tenxgraph keeps: instances are started on demand,
// one start at a time however many callers ask; an instance that ends on
// its own is replaced at once, and one that keeps failing is replaced after
// a growing backoff; Shutdown cancels the backoff, waits for a start under
// way and stops what it started.
package supervise

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrClosed is returned once Shutdown was called.
var ErrClosed = errors.New("shut down")

// Config says how to start, watch and stop instances of T (a pointer).
type Config[T comparable] struct {
	// Start starts one instance; one call at a time. It must not block
	// past the instance's own start timeout.
	Start func() (T, error)
	// Done is closed when the instance has ended, on its own or stopped.
	Done func(T) <-chan struct{}
	// Stop ends an instance on purpose (Shutdown) and returns once it is
	// gone, within about ctx's deadline.
	Stop func(ctx context.Context, inst T)
	// Started, when set, is called with each new instance before it is
	// handed to callers (to read what it offers).
	Started func(T)
	// Ended, when set, is told of an instance that ended on its own or
	// was dropped, and how long until the next start (for the log). It
	// returns the error callers get until a new instance runs (nil keeps a
	// generic one).
	Ended func(inst T, restartIn time.Duration) error

	// First is the backoff after the second failure in a row (the first
	// is retried at once); it doubles up to Max.
	First, Max time.Duration
	// Reset: an instance that ran this long before it ended clears the
	// failures before it.
	Reset time.Duration
	// Hold is the longest backoff a caller of Get waits out; a longer one
	// fails the call at once with the last error.
	Hold time.Duration
}

// Supervisor keeps one instance of T.
type Supervisor[T comparable] struct {
	cfg Config[T]

	mu        sync.Mutex
	cur       T
	live      bool
	since     time.Time     // cur's start
	starting  chan struct{} // closed when the start under way ends; nil when none
	lastErr   error         // why there is no instance
	fails     int           // failed starts and ended instances in a row
	retryAt   time.Time     // no start before this
	closed    bool
	stopping  chan struct{} // closed by Shutdown
	purposely map[T]bool    // instances stopped on purpose
}

// New returns a supervisor that starts nothing until asked.
func New[T comparable](cfg Config[T]) *Supervisor[T] {
	return &Supervisor[T]{cfg: cfg, stopping: make(chan struct{}), purposely: map[T]bool{}}
}

// Get returns the live instance, starting one if there is none. Callers
// arriving while one starts share that start. During a backoff longer than
// Hold it fails at once with the reason there is no instance.
func (s *Supervisor[T]) Get(ctx context.Context) (T, error) {
	var zero T
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return zero, ErrClosed
		}
		if s.live {
			select {
			case <-s.cfg.Done(s.cur): // ended, and the watcher has not run yet
				s.live = false
			default:
				return s.cur, nil
			}
		}
		if s.starting == nil {
			s.launch()
		}
		if wait := time.Until(s.retryAt); wait > s.cfg.Hold && s.lastErr != nil {
			return zero, s.lastErr
		}
		ch := s.starting
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			s.mu.Lock()
			return zero, context.Cause(ctx)
		}
		s.mu.Lock()
		if !s.live && s.lastErr != nil {
			return zero, s.lastErr // the start this call waited for failed
		}
	}
}

// Current is the live instance, if there is one; it starts nothing.
func (s *Supervisor[T]) Current() (T, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.live
}

// Drop stops handing out inst, which failed (a broken connection, a
// process that stopped answering): the next Get starts a new instance.
// The caller ends inst; its end counts as a failure.
func (s *Supervisor[T]) Drop(inst T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live && s.cur == inst {
		var zero T
		s.cur, s.live = zero, false
	}
}

// launch starts an instance in the background after the backoff, unless
// Shutdown comes first. Called with s.mu held and no start under way.
func (s *Supervisor[T]) launch() {
	done := make(chan struct{})
	s.starting = done
	wait := time.Until(s.retryAt)
	go func() {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-s.stopping:
				t.Stop()
				s.mu.Lock()
				s.starting = nil
				s.mu.Unlock()
				close(done)
				return
			}
		}
		inst, err := s.cfg.Start()
		s.mu.Lock()
		switch {
		case err != nil:
			s.lastErr = err
			s.fail()
		case s.closed:
			// Stopped before done is closed, so that Shutdown, which
			// waits for done, returns only once it is gone.
			s.mu.Unlock()
			s.cfg.Stop(context.Background(), inst)
			s.mu.Lock()
		default:
			if s.cfg.Started != nil {
				s.mu.Unlock()
				s.cfg.Started(inst)
				s.mu.Lock()
			}
			if s.closed { // Shutdown came during Started
				s.mu.Unlock()
				s.cfg.Stop(context.Background(), inst)
				s.mu.Lock()
				break
			}
			s.cur, s.live, s.since, s.lastErr = inst, true, time.Now(), nil
			go s.watch(inst, s.since)
		}
		s.starting = nil
		s.mu.Unlock()
		close(done)
	}()
}

// fail counts a failure and sets when the next start may begin. Called
// with s.mu held.
func (s *Supervisor[T]) fail() {
	s.fails++
	wait := time.Duration(0)
	if s.fails > 1 {
		wait = min(s.cfg.First<<min(s.fails-2, 16), s.cfg.Max)
	}
	s.retryAt = time.Now().Add(wait)
}

// watch waits for an instance to end. One that ends on its own is a
// failure: it is replaced at once the first time, after the backoff when
// it keeps happening.
func (s *Supervisor[T]) watch(inst T, since time.Time) {
	<-s.cfg.Done(inst)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.purposely[inst] {
		delete(s.purposely, inst)
		return
	}
	if s.live && s.cur == inst {
		var zero T
		s.cur, s.live = zero, false
	}
	if s.cfg.Reset > 0 && time.Since(since) >= s.cfg.Reset {
		s.fails = 0
	}
	s.fail()
	s.lastErr = errors.New("the instance ended")
	if s.cfg.Ended != nil {
		if err := s.cfg.Ended(inst, time.Until(s.retryAt)); err != nil {
			s.lastErr = err
		}
	}
	if !s.closed && s.starting == nil && !s.live {
		s.launch() // so that the next call finds it ready
	}
}

// Shutdown stops the supervisor: no instance is started any more, a
// backoff is cancelled, a start under way is waited for (until ctx is
// done), and the live instance is stopped.
func (s *Supervisor[T]) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stopping)
	}
	starting := s.starting
	inst, live := s.cur, s.live
	if live {
		var zero T
		s.cur, s.live = zero, false
		s.purposely[inst] = true
	}
	s.mu.Unlock()
	var err error
	if starting != nil {
		select {
		case <-starting:
		case <-ctx.Done():
			err = context.Cause(ctx)
		}
	}
	if live {
		s.cfg.Stop(ctx, inst)
	}
	return err
}

// StopCurrent stops inst, if it is the live instance, on purpose: it is
// not replaced until the next Get.
func (s *Supervisor[T]) StopCurrent(ctx context.Context, inst T) {
	s.mu.Lock()
	if !s.live || s.cur != inst {
		s.mu.Unlock()
		return
	}
	var zero T
	s.cur, s.live = zero, false
	s.purposely[inst] = true
	s.mu.Unlock()
	s.cfg.Stop(ctx, inst)
}

// Closed reports whether Shutdown was called.
func (s *Supervisor[T]) Closed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
