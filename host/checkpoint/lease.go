package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"
)

// DefaultLease is how long a run's claim on its thread lasts in the store
// without being renewed, when the engine is not told otherwise. A running
// run renews it every third of that (a heartbeat), so only a process that
// died or stalled that long loses it; that is also how long a thread stays
// busy after its process dies mid-run.
const DefaultLease = 30 * time.Second

// Lease is a run's hold on a thread, taken in the store before the run does
// any work (Leaser.Claim), so that of several processes sharing one store
// only one runs a thread at a time.
//
// Token is a fencing token: it grows with every claim of the thread, and a
// Put carrying it (Checkpoint.Token) is refused once a later claim has
// superseded it, so a process that lost its lease (it paused, its lease
// expired, another claimed the thread) can never write again.
type Lease struct {
	ThreadID string
	// Incarnation names this life of the thread: a thread deleted and
	// created again is a new incarnation, and nothing written for the old
	// one is accepted into the new one. Every checkpoint the holder writes
	// carries it.
	Incarnation string
	// Token is the fencing token (>= 1).
	Token int64
	// Seq is the thread's latest sequence number when the claim was taken
	// (0: no checkpoint). With Incarnation it identifies the latest
	// checkpoint, so a holder's cached copy of it is known current without
	// reading it.
	Seq int64
	// Expires is when the lease lapses unless extended.
	Expires time.Time
}

// Head identifies a thread's latest checkpoint: its incarnation and
// sequence number. Two reads with equal heads saw the same checkpoint.
type Head struct {
	Incarnation string
	Seq         int64
}

// Leaser is the part of a store that leases threads to one writer at a
// time across processes: the graph engine claims every thread before it
// runs it.
//
// A thread's incarnation and lease live in the store alongside its
// checkpoints. Put's rules, with Checkpoint.Token:
//   - Token 0 (an unleased write) is accepted only on a thread that has
//     never been claimed, as before leases existed;
//   - Token > 0 is accepted only while it is the thread's current token
//     and Checkpoint.Incarnation is its current incarnation.
//
// DeleteThread removes the lease and the incarnation with the checkpoints:
// the next claim starts a new incarnation.
type Leaser interface {
	// Claim takes the thread for ttl. It fails with an error wrapping
	// ErrLeased while another unexpired lease holds it. Claiming a thread
	// without checkpoints is allowed (a run that creates it).
	Claim(ctx context.Context, threadID string, ttl time.Duration) (Lease, error)
	// Extend moves the lease's expiry to ttl from now, or fails with an
	// error wrapping ErrLeaseLost when a later claim superseded it or the
	// thread was deleted.
	Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error)
	// Release ends the lease so the thread may be claimed at once; a lease
	// already superseded is left alone (no error).
	Release(ctx context.Context, l Lease) error
	// Head returns the thread's latest checkpoint's incarnation and seq
	// (zero Head when it has none), a cheap read for validating a cache.
	Head(ctx context.Context, threadID string) (Head, error)
}

// Lease errors, for errors.Is.
var (
	// ErrLeased: another unexpired lease holds the thread.
	ErrLeased = errors.New("thread is leased by another run")
	// ErrLeaseLost: the lease was superseded or its thread deleted.
	ErrLeaseLost = errors.New("lease lost: the thread was claimed by another run or deleted")
)

// newIncarnation returns a fresh random incarnation id.
func newIncarnation() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// leaseMillis is how leases store time: unix milliseconds, on the clock of
// the process that claims (replicas' clocks must agree to well within a
// lease; see docs/operations.md).
func leaseMillis(t time.Time) int64 { return t.UnixMilli() }

// leaseExpiry is when a lease of ttl taken at now expires, as the store
// records it: to the millisecond, rounded down, so that the holder's
// Lease.Expires is never later than the moment another claim may take
// the thread.
func leaseExpiry(now time.Time, ttl time.Duration) time.Time {
	return time.UnixMilli(leaseMillis(now.Add(ttl)))
}
