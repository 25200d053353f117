package checkpointtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// The ClaimPut cases: a claim and a checkpoint in one write keep every rule
// Claim and Put keep apart. A thread another lease holds is refused with
// ErrLeased, a stale seq or another incarnation with ErrConflict, and a
// refused ClaimPut has claimed nothing (the thread can be claimed at once,
// and the holder's writes still go in) and written nothing (no
// checkpoint, log entry or blob).

func claimPut(t *testing.T, l checkpoint.Checkpointer, cp checkpoint.Checkpoint, ttl time.Duration) checkpoint.Lease {
	t.Helper()
	le, err := l.ClaimPut(context.Background(), cp, ttl)
	if err != nil {
		t.Fatalf("ClaimPut(%q, seq %d): %v", cp.ThreadID, cp.Seq, err)
	}
	if le.Token < 1 || le.Incarnation == "" || le.ThreadID != cp.ThreadID || le.Seq != cp.Seq {
		t.Fatalf("ClaimPut(%q, seq %d) = %+v: want a token >= 1, an incarnation, the thread id and seq %d", cp.ThreadID, cp.Seq, le, cp.Seq)
	}
	return le
}

// testClaimPut: a ClaimPut claims the thread and writes under the lease it
// took; the next claim, of either kind, is refused while it holds, and
// once it is released the next ClaimPut supersedes it with a larger token
// in the same incarnation.
func testClaimPut(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	thread := threadID(t, "t")
	first := sample(thread, 1)
	first.Append = entries("a", 2)
	first.Incarnation, first.Token = "ignored for a new thread", 99 // the claim's replace both
	le := claimPut(t, s, first, time.Minute)
	want := withLog(first, entries("a", 2))
	want.Incarnation, want.Token = le.Incarnation, 0
	wantEqual(t, "Latest after ClaimPut", latest(t, s, thread), want)
	if h, err := s.Head(ctx, thread); err != nil || h != (checkpoint.Head{Incarnation: le.Incarnation, Seq: 1}) {
		t.Fatalf("Head = %+v, %v; want incarnation %q seq 1", h, err, le.Incarnation)
	}

	if _, err := s.Claim(ctx, thread, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("Claim of a thread ClaimPut holds = %v, want ErrLeased", err)
	}
	second := leased(le, 2)
	if _, err := s.ClaimPut(ctx, second, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("second ClaimPut = %v, want ErrLeased", err)
	}
	wantSeqs(t, history(t, s, thread, 0), 1)
	put(t, s, second) // the holder's write goes in: the refused claim took nothing
	if _, err := s.Extend(ctx, le, time.Minute); err != nil {
		t.Fatalf("Extend of ClaimPut's lease: %v", err)
	}
	if err := s.Release(ctx, le); err != nil {
		t.Fatal(err)
	}

	third := leased(le, 3)
	third.Token = 0
	next := claimPut(t, s, third, time.Minute)
	if next.Token <= le.Token || next.Incarnation != le.Incarnation {
		t.Fatalf("ClaimPut after Release = %+v; want a larger token than %d in incarnation %q", next, le.Token, le.Incarnation)
	}
	if err := s.Put(ctx, leased(le, 4)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put under the superseded lease = %v, want ErrConflict", err)
	}
	put(t, s, leased(next, 4))
	wantEqual(t, "Latest", latest(t, s, thread), withLog(leased(next, 4), entries("a", 2)))
}

// testClaimPutRefused: a ClaimPut with a stale seq, a seq ahead of the
// thread or another incarnation fails with ErrConflict, and one on a leased
// thread with ErrLeased, having claimed nothing and written nothing, its
// log entries and blobs included.
func testClaimPutRefused(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	bs := blobStore(t, s)
	thread := threadID(t, "t")
	le := claimPut(t, s, sample(thread, 1), time.Minute)
	put(t, s, leased(le, 2))
	if err := s.Release(ctx, le); err != nil {
		t.Fatal(err)
	}
	blob := newBlob(64)
	refused := func(seq int64, inc string) checkpoint.Checkpoint {
		cp := withBlobs(thread, seq, blob)
		cp.Append, cp.Incarnation = entries("x", 3), inc
		return cp
	}
	for _, cp := range []checkpoint.Checkpoint{refused(2, le.Incarnation), refused(4, le.Incarnation), refused(3, "another")} {
		if _, err := s.ClaimPut(ctx, cp, time.Minute); !errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("ClaimPut(seq %d, incarnation %q) on a thread at seq 2 = %v, want ErrConflict", cp.Seq, cp.Incarnation, err)
		}
	}
	wantSeqs(t, history(t, s, thread, 0), 2, 1)
	if got := latest(t, s, thread); len(got.Log) != 0 {
		t.Fatalf("log after refused ClaimPuts: %q, want none", abbrev(got.Log))
	}
	wantNoBlob(t, bs, thread, blob.Ref)

	// Nothing was claimed: a claim takes the thread at once, and a
	// ClaimPut while it holds is refused as leased, even with the right seq.
	cur := claim(t, s, thread, time.Minute)
	if cur.Token <= le.Token || cur.Incarnation != le.Incarnation || cur.Seq != 2 {
		t.Fatalf("Claim after refused ClaimPuts = %+v; want a larger token than %d, incarnation %q, seq 2", cur, le.Token, le.Incarnation)
	}
	if _, err := s.ClaimPut(ctx, refused(3, le.Incarnation), time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("ClaimPut of a leased thread = %v, want ErrLeased", err)
	}
	wantNoBlob(t, bs, thread, blob.Ref)
	put(t, s, leased(cur, 3))
	wantSeqs(t, history(t, s, thread, 0), 3, 2, 1)
}

// testClaimPutRelease: a ClaimPut with Release claims, writes and releases
// in one write: the thread is free at once, and the token it took writes
// no more.
func testClaimPutRelease(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	thread := threadID(t, "t")
	cp := sample(thread, 1)
	cp.Release = true
	le := claimPut(t, s, cp, time.Minute)
	if _, err := s.Extend(ctx, le, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Extend of a lease ClaimPut released = %v, want ErrLeaseLost", err)
	}
	next := claim(t, s, thread, time.Minute)
	if next.Token <= le.Token || next.Incarnation != le.Incarnation || next.Seq != 1 {
		t.Fatalf("Claim after a releasing ClaimPut = %+v; want a larger token than %d, incarnation %q, seq 1", next, le.Token, le.Incarnation)
	}
	if err := s.Put(ctx, leased(le, 2)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put with the released token = %v, want ErrConflict", err)
	}
	put(t, s, leased(next, 2))
}

// testClaimPutExpired: a lease that expired does not hold the thread
// against a ClaimPut, whose token then fences the old holder out.
func testClaimPutExpired(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	thread := threadID(t, "t")
	old := claimPut(t, s, sample(thread, 1), 50*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	var cur checkpoint.Lease
	for {
		var err error
		cur, err = s.ClaimPut(ctx, leased(old, 2), time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, checkpoint.ErrLeased) || time.Now().After(deadline) {
			t.Fatalf("ClaimPut after the first lease's expiry: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if time.Now().Before(old.Expires) {
		t.Fatalf("the thread was claimed again before the first lease expired at %v", old.Expires)
	}
	if cur.Token <= old.Token || cur.Incarnation != old.Incarnation {
		t.Fatalf("ClaimPut after expiry = %+v; want a larger token than %d in incarnation %q", cur, old.Token, old.Incarnation)
	}
	if err := s.Put(ctx, leased(old, 3)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put under the expired, superseded lease = %v, want ErrConflict", err)
	}
	wantSeqs(t, history(t, s, thread, 0), 2, 1)
}

// testClaimPutIncarnation: a thread written before it was ever claimed
// keeps its incarnation through a ClaimPut, which then fences unleased
// writes out; a thread deleted and created again refuses a ClaimPut of the
// old incarnation even at the seq the new one expects.
func testClaimPutIncarnation(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	thread := threadID(t, "t")
	unleased := sample(thread, 1)
	unleased.Incarnation = "inc-before-claims"
	put(t, s, unleased)
	next := sample(thread, 2)
	next.Incarnation = unleased.Incarnation
	le := claimPut(t, s, next, time.Minute)
	if le.Incarnation != unleased.Incarnation {
		t.Fatalf("ClaimPut of an unclaimed thread: incarnation %q, want its checkpoints' %q", le.Incarnation, unleased.Incarnation)
	}
	if err := s.Put(ctx, sample(thread, 3)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("unleased Put on a thread ClaimPut claimed = %v, want ErrConflict", err)
	}

	if err := s.DeleteThread(ctx, thread); err != nil {
		t.Fatal(err)
	}
	cur := claimPut(t, s, sample(thread, 1), time.Minute)
	if cur.Incarnation == le.Incarnation {
		t.Fatalf("a thread created again has the deleted one's incarnation %q", le.Incarnation)
	}
	if err := s.Release(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimPut(ctx, leased(le, 2), time.Minute); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("ClaimPut of the deleted incarnation = %v, want ErrConflict", err)
	}
	again := claimPut(t, s, leased(cur, 2), time.Minute)
	if again.Incarnation != cur.Incarnation || again.Token <= cur.Token {
		t.Fatalf("ClaimPut = %+v; want incarnation %q and a larger token than %d", again, cur.Incarnation, cur.Token)
	}
}

// testClaimPutRacing: of many ClaimPuts of one new thread at once, one
// claims and writes; the others are refused as leased, having written
// nothing.
func testClaimPutRacing(t *testing.T, s checkpoint.Checkpointer) {
	thread := threadID(t, "t")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			cp := sample(thread, 1)
			cp.RunID = "racer"
			cp.Append = entries("r", i+1)
			_, errs[i] = s.ClaimPut(context.Background(), cp, time.Minute)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("ClaimPuts %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, checkpoint.ErrLeased):
			t.Errorf("ClaimPut %d: %v, want ErrLeased", i, err)
		}
	}
	if won < 0 {
		t.Fatalf("none of %d racing ClaimPuts won", n)
	}
	wantSeqs(t, history(t, s, thread, 0), 1)
	if got := latest(t, s, thread); len(got.Log) != won+1 {
		t.Fatalf("log after racing ClaimPuts: %d entries, want the winner's %d", len(got.Log), won+1)
	}
}
