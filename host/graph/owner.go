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

// keyOf checks a thread id, naming it by at, and returns the key the
// thread id of tenant is stored under (checkpoint.ThreadKey). It is the one
// way from a caller's thread to the store's: threads of different tenants
// are different keys, so that to every operation (runs, reads, deletes,
// claims, wake-ups) another tenant's thread is exactly a thread that does
// not exist, without a check that could be forgotten. No id contains the
// separator of the key, so a key names one tenant and one id.
func keyOf(at, tenant, id string) (string, error) {
	if err := CheckThreadID(at, id); err != nil {
		return "", err
	}
	if strings.Contains(id, checkpoint.TenantSeparator) {
		return "", invalid("%s: must not contain U+001F (the unit separator)", at)
	}
	if !utf8.ValidString(tenant) || strings.Contains(tenant, checkpoint.TenantSeparator) {
		return "", fmt.Errorf("tenant %q: must be valid UTF-8 without U+001F", tenant)
	}
	return checkpoint.ThreadKey(tenant, id), nil
}

// idOf is the id the thread of key has for its tenant, for messages.
func idOf(key string) string {
	_, id := checkpoint.SplitThreadKey(key)
	return id
}

// notFound is the answer for a thread that does not exist, which is also
// the answer for another tenant's.
func notFound(threadID string) error {
	return fmt.Errorf("thread %q: %w", threadID, ErrThreadNotFound)
}

// busy is the answer for a thread another run of its tenant holds.
func busy(key, detail string) error {
	return &StateError{Kind: ErrThreadBusy, ThreadID: idOf(key), Detail: detail}
}

// ThreadFor returns tenant's thread threadID: its current state, or
// ErrThreadNotFound when tenant has no such thread (another tenant's
// thread of that id included). It reads the state the app keeps decoded
// for threads it works on, so many readers of one large thread share one
// copy; treat the Result as read-only.
func (a *App) ThreadFor(ctx context.Context, tenant, threadID string) (Result, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return Result{}, err
	}
	cp, w, err := a.load(ctx, key, nil)
	if err != nil {
		return Result{}, err
	}
	if cp == nil {
		return Result{}, notFound(threadID)
	}
	r := &Run{ThreadID: threadID, Tenant: tenant, RunID: cp.RunID, key: key}
	return a.result(r, w.State, Status(cp.Status), w.pause), nil
}

// DeleteThread forgets tenant's thread threadID. A thread with a run in
// progress is not deleted (ErrThreadBusy); one tenant has not is
// ErrThreadNotFound. Created again, the thread is a new incarnation:
// nothing sent for the old one (a result for one of its calls, say) is
// accepted by the new one.
func (a *App) DeleteThread(ctx context.Context, tenant, threadID string) error {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return err
	}
	ctx, h, err := a.take(ctx, key, false)
	if err != nil {
		return err
	}
	defer a.release(ctx, h)
	_, err = a.cp.Latest(ctx, key)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return notFound(threadID)
	case err != nil:
		return fmt.Errorf("thread %q: load: %w", threadID, err)
	}
	a.cache.drop(key)
	return a.cp.DeleteThread(ctx, key)
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
