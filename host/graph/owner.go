package graph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// MaxThreadIDLen bounds a thread id, in characters (Unicode code points).
const MaxThreadIDLen = 256

// CheckThreadID says what is wrong with a thread id, naming it by at (its
// path in the request, such as "config.thread_id"), wrapping
// ErrInvalidInput; or returns nil. An id is 1 to MaxThreadIDLen characters
// of valid UTF-8 without U+FFFD: decoders put U+FFFD in place of bytes that
// are not text, so two different ids sent as such would land on one thread.
// Nor may it hold a control character (C0 with NUL, DEL, C1): stores
// disagree on them (SQLite keeps a NUL, PostgreSQL refuses one), and they
// would reach logs and terminals as they are. This is the one rule of every
// store, applied before any store sees the id.
func CheckThreadID(at, id string) error {
	switch n := utf8.RuneCountInString(id); {
	case id == "":
		return invalid("%s: required, 1 to %d characters", at, MaxThreadIDLen)
	case !utf8.ValidString(id):
		return invalid("%s: must be valid UTF-8", at)
	case strings.ContainsRune(id, utf8.RuneError):
		return invalid("%s: must not contain U+FFFD (the replacement character, which stands for bytes that were not text)", at)
	case n > MaxThreadIDLen:
		return invalid("%s: at most %d characters, got %d", at, MaxThreadIDLen, n)
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(id[i:])
		return invalid("%s: must not contain control characters, got U+%04X at character %d", at, r, utf8.RuneCountInString(id[:i])+1)
	}
	return nil
}

// owns reports whether a caller with metadata want may use a thread stored
// with have: every key the caller names must match. It is the one
// ownership rule of every thread operation: a thread created with an owner
// is invisible to callers of another owner, exactly as if it did not exist,
// whether it is stored, being created or held by a run.
func owns(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// notFound is the answer for a thread that does not exist, and for one the
// caller does not own.
func notFound(threadID string) error {
	return fmt.Errorf("thread %q: %w", threadID, ErrThreadNotFound)
}

// acquire takes the thread for one run (or delete) by a caller with
// metadata want. A thread another caller holds is ErrThreadBusy for its
// owner and ErrThreadNotFound for everyone else: whose it is is the stored
// owner's, or, for a thread its first run is creating, that run's.
func (a *App) acquire(ctx context.Context, thread string, want map[string]string) error {
	a.mu.Lock()
	holder, held := a.busy[thread]
	if !held {
		if want == nil {
			want = map[string]string{}
		}
		a.busy[thread] = want
	}
	a.mu.Unlock()
	if !held {
		return nil
	}
	cp, err := a.cp.Latest(ctx, thread)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		if !owns(holder, want) {
			return notFound(thread)
		}
	case err != nil:
		return fmt.Errorf("thread %q: load: %w", thread, err)
	case !owns(cp.Metadata, want):
		return notFound(thread)
	}
	return &StateError{Kind: ErrThreadBusy, ThreadID: thread, Detail: "wait for the current run to finish"}
}

func (a *App) release(thread string) {
	a.mu.Lock()
	delete(a.busy, thread)
	a.mu.Unlock()
}

// ThreadFor returns the thread as a caller with metadata owner sees it: its
// current state, or ErrThreadNotFound when it does not exist or another
// owner's it is. A nil owner sees every thread. It reads the state the app
// keeps decoded for threads it works on, so many readers of one large
// thread share one copy; treat the Result as read-only.
func (a *App) ThreadFor(ctx context.Context, threadID string, owner map[string]string) (Result, error) {
	if err := CheckThreadID("thread_id", threadID); err != nil {
		return Result{}, err
	}
	cp, w, err := a.load(ctx, threadID, nil)
	if err != nil {
		return Result{}, err
	}
	if cp == nil || !owns(cp.Metadata, owner) {
		return Result{}, notFound(threadID)
	}
	r := &Run{ThreadID: cp.ThreadID, RunID: cp.RunID}
	return a.result(r, w.State, Status(cp.Status), w.pause), nil
}

// DeleteThread forgets the thread, as a caller with metadata owner (nil:
// any thread). A thread with a run in progress is not deleted
// (ErrThreadBusy); one that does not exist or another owner's is
// ErrThreadNotFound.
func (a *App) DeleteThread(ctx context.Context, threadID string, owner map[string]string) error {
	if err := CheckThreadID("thread_id", threadID); err != nil {
		return err
	}
	ctx, h, err := a.take(ctx, threadID, owner, false)
	if err != nil {
		return err
	}
	defer a.release(threadID)
	defer a.unclaim(ctx, h)
	cp, err := a.cp.Latest(ctx, threadID)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return notFound(threadID)
	case err != nil:
		return fmt.Errorf("thread %q: load: %w", threadID, err)
	case !owns(cp.Metadata, owner):
		return notFound(threadID)
	}
	a.cache.drop(threadID)
	return a.cp.DeleteThread(ctx, threadID)
}

// Probe reads the store cheaply (the latest checkpoint of a thread id no
// thread can have) and returns what failed, or nil when the store answers.
// The health check uses it, so a store that cannot be read is not reported
// healthy.
func (a *App) Probe(ctx context.Context) error {
	if _, err := a.cp.Latest(ctx, ""); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	return nil
}
