// Package checkpointtest is the conformance suite for checkpoint.Checkpointer.
// Every implementation runs it from its own tests, so the graph engine can
// rely on one behaviour whichever store it is given.
package checkpointtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// Run runs the conformance suite against the stores open returns. Each
// subtest calls open once and closes the store when it ends, so open only
// has to return a ready store (and may register its own t.Cleanup). Thread
// IDs are unique per subtest, so stores returned by open may share one
// database.
func Run(t *testing.T, open func(t *testing.T) checkpoint.Checkpointer) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, checkpoint.Checkpointer)
	}{
		{"LatestUnknownThread", testLatestUnknown},
		{"HeadSeq", testHeadSeq},
		{"PutThenLatest", testPutThenLatest},
		{"CreatedAtSetWhenZero", testCreatedAtSetWhenZero},
		{"WrongSeqConflicts", testWrongSeq},
		{"History", testHistory},
		{"ThreadsIsolated", testThreadsIsolated},
		{"UnusualThreadIDs", testUnusualThreadIDs},
		{"TenantsKeepApart", testTenants},
		{"DeleteThread", testDeleteThread},
		{"DeleteUnknownThread", testDeleteUnknown},
		{"ReturnsCopies", testReturnsCopies},
		{"StoresCopies", testStoresCopies},
		{"RacingPutsOneWins", testRacingPuts},
		{"ConcurrentThreads", testConcurrentThreads},
		{"LargeState", testLargeState},
		{"EmptyFields", testEmptyFields},
		{"CancelledContext", testCancelledContext},
		{"LeaseClaimIsExclusive", testLeaseExclusive},
		{"LeaseFencesWrites", testLeaseFences},
		{"LeaseExpires", testLeaseExpires},
		{"LeaseDeleteStartsIncarnation", testLeaseDeleteIncarnation},
		{"LeaseRacingClaimsOneWins", testLeaseRacingClaims},
		{"LeaseReleasedByPut", testLeaseReleasedByPut},
		{"ClaimPut", testClaimPut},
		{"ClaimPutRefusedTakesNothing", testClaimPutRefused},
		{"ClaimPutReleases", testClaimPutRelease},
		{"ClaimPutAfterExpiry", testClaimPutExpired},
		{"ClaimPutIncarnation", testClaimPutIncarnation},
		{"ClaimPutRacingOneWins", testClaimPutRacing},
		{"SchedulerDue", testSchedulerDue},
		{"LogAppendsOnce", testLog},
		{"LogConflictAppendsNothing", testLogConflict},
		{"LogContinuesAcrossWrites", testLogAcrossWrites},
		{"LogDeleteStartsEmpty", testLogDelete},
		{"LogLarge", testLogLarge},
		{"LogTail", testLogTail},
		{"PrunerDeletesIdle", testDeleteIdle},
		{"PrunerKeepsRewritten", testDeleteIdleRewritten},
		{"BlobsHeldByThread", testBlobsHeldByThread},
		{"BlobsOncePerContent", testBlobsOncePerContent},
		{"BlobsRefusedPutStoresNone", testBlobsRefusedPutStoresNone},
		{"BlobsDeletedWithLastHolder", testBlobsDeletedWithLastHolder},
		{"BlobsRacingDeletes", testBlobsRacingDeletes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil Checkpointer")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, s)
		})
	}
}

// threadID returns a thread ID no other subtest or run uses.
func threadID(t *testing.T, name string) string {
	return fmt.Sprintf("%s/%s/%s", t.Name(), name, rand.Text())
}

// sample returns a checkpoint with every field set.
func sample(thread string, seq int64) checkpoint.Checkpoint {
	return checkpoint.Checkpoint{
		ThreadID: thread,
		Seq:      seq,
		RunID:    fmt.Sprintf("run-%d", seq),
		Step:     int(seq) * 10,
		Status:   checkpoint.StatusInterrupted,
		Next:     []string{"tools", fmt.Sprintf("node-%d", seq), "héllo, \"world\""},
		State:    []byte(fmt.Sprintf("\x00state %d\xff\x01", seq)),
		Metadata: map[string]string{"owner": "alice", "seq": fmt.Sprint(seq), "": "empty key", "ünï": "cödé\n"},
		// Nanoseconds the store may round away, a zone it may drop.
		CreatedAt: time.Date(2024, 2, 29, 13, 14, 15, 123456789, time.FixedZone("X", 5*3600+30*60)).Add(time.Duration(seq) * time.Second),
		// Milliseconds are kept; the rest may be rounded away.
		WakeAt: time.Date(2024, 3, 1, 0, 0, 0, 987654321, time.UTC).Add(time.Duration(seq) * time.Minute),
	}
}

func put(t *testing.T, s checkpoint.Checkpointer, cp checkpoint.Checkpoint) {
	t.Helper()
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatalf("Put(thread %q, seq %d): %v", cp.ThreadID, cp.Seq, err)
	}
}

func latest(t *testing.T, s checkpoint.Checkpointer, thread string) checkpoint.Checkpoint {
	t.Helper()
	cp, err := s.Latest(context.Background(), thread)
	if err != nil {
		t.Fatalf("Latest(%q): %v", thread, err)
	}
	return cp
}

func history(t *testing.T, s checkpoint.Checkpointer, thread string, limit int) []checkpoint.Checkpoint {
	t.Helper()
	cps, err := s.History(context.Background(), thread, limit)
	if err != nil {
		t.Fatalf("History(%q, %d): %v", thread, limit, err)
	}
	return cps
}

func wantNotFound(t *testing.T, s checkpoint.Checkpointer, thread string) {
	t.Helper()
	cp, err := s.Latest(context.Background(), thread)
	if !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest(%q) = seq %d, %v; want an error wrapping ErrNotFound", thread, cp.Seq, err)
	}
}

func wantSeqs(t *testing.T, cps []checkpoint.Checkpoint, want ...int64) {
	t.Helper()
	got := make([]int64, len(cps))
	for i, cp := range cps {
		got[i] = cp.Seq
	}
	if !slices.Equal(got, want) {
		t.Fatalf("seqs = %v, want %v", got, want)
	}
}

// diff describes how got differs from want, or returns "". Empty and nil
// slices and maps are equal; CreatedAt must agree to the microsecond.
func diff(got, want checkpoint.Checkpoint) string {
	var d []string
	if got.ThreadID != want.ThreadID {
		d = append(d, fmt.Sprintf("ThreadID %q, want %q", got.ThreadID, want.ThreadID))
	}
	if got.Seq != want.Seq {
		d = append(d, fmt.Sprintf("Seq %d, want %d", got.Seq, want.Seq))
	}
	if got.RunID != want.RunID {
		d = append(d, fmt.Sprintf("RunID %q, want %q", got.RunID, want.RunID))
	}
	if got.Step != want.Step {
		d = append(d, fmt.Sprintf("Step %d, want %d", got.Step, want.Step))
	}
	if got.Status != want.Status {
		d = append(d, fmt.Sprintf("Status %q, want %q", got.Status, want.Status))
	}
	if !slices.Equal(got.Next, want.Next) {
		d = append(d, fmt.Sprintf("Next %q, want %q", got.Next, want.Next))
	}
	if !bytes.Equal(got.State, want.State) {
		if len(got.State) > 64 || len(want.State) > 64 {
			d = append(d, fmt.Sprintf("State differs (%d bytes, want %d)", len(got.State), len(want.State)))
		} else {
			d = append(d, fmt.Sprintf("State %q, want %q", got.State, want.State))
		}
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		d = append(d, fmt.Sprintf("Metadata %q, want %q", got.Metadata, want.Metadata))
	}
	if got.Incarnation != want.Incarnation {
		d = append(d, fmt.Sprintf("Incarnation %q, want %q", got.Incarnation, want.Incarnation))
	}
	if !slices.EqualFunc(got.Log, want.Log, bytes.Equal) {
		d = append(d, fmt.Sprintf("Log has %d entries %q, want %d %q", len(got.Log), abbrev(got.Log), len(want.Log), abbrev(want.Log)))
	}
	if got.Append != nil {
		d = append(d, fmt.Sprintf("Append has %d entries, want none (never returned)", len(got.Append)))
	}
	if !got.WakeAt.Equal(want.WakeAt.Truncate(time.Millisecond)) {
		d = append(d, fmt.Sprintf("WakeAt %v, want %v", got.WakeAt, want.WakeAt))
	}
	if got.Token != 0 {
		d = append(d, fmt.Sprintf("Token %d, want 0 (never stored)", got.Token))
	}
	if dt := got.CreatedAt.Sub(want.CreatedAt).Abs(); dt >= time.Microsecond {
		d = append(d, fmt.Sprintf("CreatedAt %v, want %v (off by %v)", got.CreatedAt, want.CreatedAt, dt))
	}
	if len(d) == 0 {
		return ""
	}
	return fmt.Sprint(d)
}

func wantEqual(t *testing.T, what string, got, want checkpoint.Checkpoint) {
	t.Helper()
	if d := diff(got, want); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

func testLatestUnknown(t *testing.T, s checkpoint.Checkpointer) {
	wantNotFound(t, s, threadID(t, "unknown"))
	cps := history(t, s, threadID(t, "unknown"), 0)
	if len(cps) != 0 {
		t.Fatalf("History of an unknown thread has %d checkpoints, want 0", len(cps))
	}
}

// testHeadSeq checks that the seq of a thread's Head, which tells a cached
// copy it is still the latest, always agrees with Latest, through puts, a
// refused put and a delete.
func testHeadSeq(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	th := threadID(t, "seq")
	want := func(n int64) {
		t.Helper()
		got, err := s.Head(ctx, th)
		if err != nil || got.Seq != n {
			t.Fatalf("Head = seq %d, %v; want %d", got.Seq, err, n)
		}
	}
	want(0)
	put(t, s, sample(th, 1))
	want(1)
	put(t, s, sample(th, 2))
	if err := s.Put(ctx, sample(th, 2)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("duplicate Put: %v", err)
	}
	want(2)
	if err := s.DeleteThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	want(0)
}

func testPutThenLatest(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	want := sample(th, 1)
	put(t, s, want)
	wantEqual(t, "Latest after Put", latest(t, s, th), want)

	for i, st := range []checkpoint.Status{checkpoint.StatusRunning, checkpoint.StatusCompleted, checkpoint.StatusFailed} {
		cp := sample(th, int64(i)+2)
		cp.Status = st
		cp.Step = -1 // any int round-trips
		put(t, s, cp)
		wantEqual(t, "Latest after Put", latest(t, s, th), cp)
	}
}

func testCreatedAtSetWhenZero(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	cp := sample(th, 1)
	cp.CreatedAt = time.Time{}
	before := time.Now()
	put(t, s, cp)
	after := time.Now()
	got := latest(t, s, th).CreatedAt
	// A store may keep only microseconds.
	if got.Before(before.Add(-time.Microsecond)) || got.After(after.Add(time.Microsecond)) {
		t.Fatalf("CreatedAt = %v, want between %v and %v", got, before, after)
	}
}

func testWrongSeq(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	th := threadID(t, "a")
	wrong := func(seq int64) {
		t.Helper()
		cp := sample(th, seq)
		cp.RunID = "intruder"
		if err := s.Put(ctx, cp); !errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("Put seq %d: %v; want an error wrapping ErrConflict", seq, err)
		}
	}

	// A new thread starts at 1.
	for _, seq := range []int64{0, -1, 2} {
		wrong(seq)
	}
	wantNotFound(t, s, th)

	first := sample(th, 1)
	put(t, s, first)
	for _, seq := range []int64{0, -1, 1, 3, 100} {
		wrong(seq)
	}
	wantEqual(t, "Latest after failed Puts", latest(t, s, th), first)
	cps := history(t, s, th, 0)
	wantSeqs(t, cps, 1)
	wantEqual(t, "History after failed Puts", cps[0], first)

	// The right seq still works after the failures.
	put(t, s, sample(th, 2))
	wrong(2)
	wantSeqs(t, history(t, s, th, 0), 2, 1)
}

func testHistory(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	var all []checkpoint.Checkpoint
	for seq := int64(1); seq <= 5; seq++ {
		cp := sample(th, seq)
		put(t, s, cp)
		all = append(all, cp)
	}
	slices.Reverse(all)

	for _, limit := range []int{0, -1, 5, 6, 100} {
		cps := history(t, s, th, limit)
		wantSeqs(t, cps, 5, 4, 3, 2, 1)
		for i := range cps {
			wantEqual(t, fmt.Sprintf("History(limit %d)[%d]", limit, i), cps[i], all[i])
		}
	}
	wantSeqs(t, history(t, s, th, 1), 5)
	cps := history(t, s, th, 2)
	wantSeqs(t, cps, 5, 4)
	wantEqual(t, "History(limit 2)[1]", cps[1], all[1])
}

func testThreadsIsolated(t *testing.T, s checkpoint.Checkpointer) {
	a, b := threadID(t, "a"), threadID(t, "b")
	for seq := int64(1); seq <= 3; seq++ {
		put(t, s, sample(a, seq))
	}
	bcp := sample(b, 1)
	bcp.RunID = "b-run"
	put(t, s, bcp)

	if got := latest(t, s, a).Seq; got != 3 {
		t.Fatalf("Latest(a).Seq = %d, want 3", got)
	}
	wantEqual(t, "Latest(b)", latest(t, s, b), bcp)
	wantSeqs(t, history(t, s, b, 0), 1)

	// b's sequence is its own.
	if err := s.Put(context.Background(), sample(b, 4)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put(b, seq 4) = %v; want ErrConflict", err)
	}
	put(t, s, sample(b, 2))

	if err := s.DeleteThread(context.Background(), a); err != nil {
		t.Fatalf("DeleteThread(a): %v", err)
	}
	wantNotFound(t, s, a)
	wantSeqs(t, history(t, s, b, 0), 2, 1)
}

func testUnusualThreadIDs(t *testing.T, s checkpoint.Checkpointer) {
	// Characters that break naive SQL, LIKE patterns, paths or URLs, and
	// IDs that are prefixes of one another.
	base := threadID(t, "x")
	ids := []string{base + "%", base + "_", base + "'; DROP TABLE checkpoints; --", base + "\"", base + "/", base + "\\", base + " ", base + "ü🙂", base}
	for i, id := range ids {
		for seq := int64(1); seq <= int64(i)+1; seq++ {
			put(t, s, sample(id, seq))
		}
	}
	for i, id := range ids {
		got := latest(t, s, id)
		wantEqual(t, fmt.Sprintf("Latest(%q)", id), got, sample(id, int64(i)+1))
		if n := len(history(t, s, id, 0)); n != i+1 {
			t.Fatalf("History(%q) has %d checkpoints, want %d", id, n, i+1)
		}
	}
	if err := s.DeleteThread(context.Background(), base+"%"); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, base+"%")
	for _, id := range ids[1:] {
		latest(t, s, id)
	}
}

// testTenants checks that the keys of one thread id under two tenants and
// under none (checkpoint.ThreadKey) are three threads to every operation,
// and that what a store lists (Due) maps back to tenant and id.
func testTenants(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	id := threadID(t, "x")
	keys := []string{id, checkpoint.ThreadKey("TENANT_A", id), checkpoint.ThreadKey("TENANT_B", id)}
	for i, k := range keys {
		for seq := int64(1); seq <= int64(i)+1; seq++ {
			put(t, s, sample(k, seq))
		}
	}
	for i, k := range keys {
		wantEqual(t, fmt.Sprintf("Latest(%q)", k), latest(t, s, k), sample(k, int64(i)+1))
	}
	if err := s.DeleteThread(ctx, keys[1]); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, keys[1])
	wantSeqs(t, history(t, s, keys[0], 0), 1)
	wantSeqs(t, history(t, s, keys[2], 0), 3, 2, 1)

	if l, ok := s.(checkpoint.Leaser); ok {
		// A claim holds its own key only.
		for _, k := range keys[1:] {
			if _, err := l.Claim(ctx, k, time.Minute); err != nil {
				t.Fatalf("Claim(%q): %v", k, err)
			}
		}
		if _, err := l.Claim(ctx, keys[1], time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
			t.Fatalf("second claim of tenant A's thread = %v, want ErrLeased", err)
		}
	}
	if sc, ok := s.(checkpoint.Scheduler); ok {
		at := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC)
		cp := sample(keys[0], 2)
		cp.WakeAt = at
		put(t, s, cp)
		due, err := sc.Due(ctx, at, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range due {
			if tenant, got := checkpoint.SplitThreadKey(k); got == id && (tenant != "" || k != keys[0]) {
				t.Fatalf("Due lists %q (tenant %q), want only the key of the tenant \"\"", k, tenant)
			}
		}
		if !slices.Contains(due, keys[0]) {
			t.Fatalf("Due = %q, want it to list %q", due, keys[0])
		}
	}
	for _, k := range keys[1:] {
		if tenant, got := checkpoint.SplitThreadKey(k); got != id || checkpoint.ThreadKey(tenant, got) != k {
			t.Fatalf("SplitThreadKey(%q) = %q, %q", k, tenant, got)
		}
	}
}

func testDeleteThread(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	th := threadID(t, "a")
	for seq := int64(1); seq <= 3; seq++ {
		put(t, s, sample(th, seq))
	}
	if err := s.DeleteThread(ctx, th); err != nil {
		t.Fatalf("DeleteThread: %v", err)
	}
	wantNotFound(t, s, th)
	if cps := history(t, s, th, 0); len(cps) != 0 {
		t.Fatalf("History after DeleteThread has %d checkpoints, want 0", len(cps))
	}
	if err := s.Put(ctx, sample(th, 4)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put seq 4 after DeleteThread = %v; want ErrConflict", err)
	}
	again := sample(th, 1)
	again.RunID = "second life"
	put(t, s, again)
	wantEqual(t, "Latest after re-creating the thread", latest(t, s, th), again)
	wantSeqs(t, history(t, s, th, 0), 1)
	if err := s.DeleteThread(ctx, th); err != nil {
		t.Fatalf("DeleteThread again: %v", err)
	}
	if err := s.DeleteThread(ctx, th); err != nil {
		t.Fatalf("DeleteThread of a deleted thread: %v", err)
	}
}

func testDeleteUnknown(t *testing.T, s checkpoint.Checkpointer) {
	if err := s.DeleteThread(context.Background(), threadID(t, "never")); err != nil {
		t.Fatalf("DeleteThread of an unknown thread: %v", err)
	}
}

// mutate scribbles over every reference field of cp.
func mutate(cp *checkpoint.Checkpoint) {
	for i := range cp.Next {
		cp.Next[i] = "mutated"
	}
	cp.Next = append(cp.Next, "appended")
	for i := range cp.State {
		cp.State[i] = 'X'
	}
	for k := range cp.Metadata {
		cp.Metadata[k] = "mutated"
	}
	if cp.Metadata != nil {
		cp.Metadata["added"] = "yes"
	}
}

func testReturnsCopies(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	want1, want2 := sample(th, 1), sample(th, 2)
	put(t, s, sample(th, 1))
	put(t, s, sample(th, 2))

	got := latest(t, s, th)
	mutate(&got)
	wantEqual(t, "Latest after mutating an earlier Latest", latest(t, s, th), want2)

	cps := history(t, s, th, 0)
	for i := range cps {
		mutate(&cps[i])
	}
	cps = history(t, s, th, 0)
	wantEqual(t, "History[0] after mutating an earlier History", cps[0], want2)
	wantEqual(t, "History[1] after mutating an earlier History", cps[1], want1)
}

func testStoresCopies(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	want := sample(th, 1)
	cp := sample(th, 1)
	put(t, s, cp)
	mutate(&cp)
	wantEqual(t, "Latest after mutating the Put argument", latest(t, s, th), want)
}

func testRacingPuts(t *testing.T, s checkpoint.Checkpointer) {
	const racers = 16
	th := threadID(t, "a")
	put(t, s, sample(th, 1))

	var (
		start = make(chan struct{})
		wg    sync.WaitGroup
		errs  = make([]error, racers)
	)
	for i := range racers {
		wg.Go(func() {
			cp := sample(th, 2)
			cp.RunID = fmt.Sprintf("racer-%d", i)
			<-start
			errs[i] = s.Put(context.Background(), cp)
		})
	}
	close(start)
	wg.Wait()

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("racers %d and %d both wrote seq 2", winner, i)
			}
			winner = i
		case !errors.Is(err, checkpoint.ErrConflict):
			t.Errorf("racer %d: %v; want nil or ErrConflict", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("no racer wrote seq 2: %v", errs)
	}
	got := latest(t, s, th)
	if want := fmt.Sprintf("racer-%d", winner); got.Seq != 2 || got.RunID != want {
		t.Fatalf("Latest = seq %d run %q, want seq 2 run %q", got.Seq, got.RunID, want)
	}
	wantSeqs(t, history(t, s, th, 0), 2, 1)
}

func testConcurrentThreads(t *testing.T, s checkpoint.Checkpointer) {
	const threads, perThread = 16, 20
	ctx := context.Background()
	ids := make([]string, threads)
	for i := range ids {
		ids[i] = threadID(t, fmt.Sprint(i))
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for _, id := range ids {
		// A writer and a reader per thread, so reads overlap writes.
		wg.Go(func() {
			for seq := int64(1); seq <= perThread; seq++ {
				if err := s.Put(ctx, sample(id, seq)); err != nil {
					fail(err)
					return
				}
			}
		})
		wg.Go(func() {
			for range perThread {
				cp, err := s.Latest(ctx, id)
				if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					fail(err)
					return
				}
				if err == nil && cp.ThreadID != id {
					fail(fmt.Errorf("Latest(%q) returned thread %q", id, cp.ThreadID))
					return
				}
				if _, err := s.History(ctx, id, 3); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		wantEqual(t, "Latest", latest(t, s, id), sample(id, perThread))
		cps := history(t, s, id, 0)
		if len(cps) != perThread {
			t.Fatalf("History(%q) has %d checkpoints, want %d", id, len(cps), perThread)
		}
		for i, cp := range cps {
			wantEqual(t, fmt.Sprintf("History(%q)[%d]", id, i), cp, sample(id, int64(perThread-i)))
		}
	}
}

func testLargeState(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	cp := sample(th, 1)
	cp.State = make([]byte, 5<<20)
	if _, err := rand.Read(cp.State); err != nil {
		t.Fatal(err)
	}
	put(t, s, cp)
	wantEqual(t, "Latest", latest(t, s, th), cp)
	cps := history(t, s, th, 0)
	wantSeqs(t, cps, 1)
	wantEqual(t, "History[0]", cps[0], cp)
}

func testEmptyFields(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "a")
	cases := []checkpoint.Checkpoint{
		{ThreadID: th, Seq: 1},
		{ThreadID: th, Seq: 2, Next: []string{}, State: []byte{}, Metadata: map[string]string{}},
		{ThreadID: th, Seq: 3, Status: checkpoint.StatusCompleted, Next: []string{""}, Metadata: map[string]string{"": ""}},
	}
	for _, cp := range cases {
		put(t, s, cp)
		got := latest(t, s, th)
		if got.CreatedAt.IsZero() {
			t.Fatalf("seq %d: CreatedAt is zero, want it set by Put", cp.Seq)
		}
		got.CreatedAt = time.Time{}
		wantEqual(t, fmt.Sprintf("Latest seq %d", cp.Seq), got, cp)
	}
}

func testCancelledContext(t *testing.T, s checkpoint.Checkpointer) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	th := threadID(t, "new")
	if err := s.Put(ctx, sample(th, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	wantNotFound(t, s, th)

	th = threadID(t, "existing")
	first := sample(th, 1)
	put(t, s, first)
	if err := s.Put(ctx, sample(th, 2)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Put with a cancelled context = %v; want an error wrapping context.Canceled", err)
	}
	wantEqual(t, "Latest after a cancelled Put", latest(t, s, th), first)
	wantSeqs(t, history(t, s, th, 0), 1)
	put(t, s, sample(th, 2))
}

// leaser returns s as a Leaser, or skips the test for a store without
// leases.
func leaser(t *testing.T, s checkpoint.Checkpointer) checkpoint.Leaser {
	t.Helper()
	l, ok := s.(checkpoint.Leaser)
	if !ok {
		t.Skip("the store does not implement checkpoint.Leaser")
	}
	return l
}

func claim(t *testing.T, l checkpoint.Leaser, thread string, ttl time.Duration) checkpoint.Lease {
	t.Helper()
	le, err := l.Claim(context.Background(), thread, ttl)
	if err != nil {
		t.Fatalf("Claim(%q): %v", thread, err)
	}
	if le.Token < 1 || le.Incarnation == "" || le.ThreadID != thread {
		t.Fatalf("Claim(%q) = %+v: want a token >= 1, an incarnation and the thread id", thread, le)
	}
	return le
}

func leased(le checkpoint.Lease, seq int64) checkpoint.Checkpoint {
	cp := sample(le.ThreadID, seq)
	cp.Incarnation, cp.Token = le.Incarnation, le.Token
	return cp
}

func testLeaseExclusive(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	ctx := context.Background()
	thread := threadID(t, "t")
	le := claim(t, l, thread, time.Minute)
	if le.Seq != 0 {
		t.Fatalf("Claim of a new thread: Seq %d, want 0", le.Seq)
	}
	if _, err := l.Claim(ctx, thread, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("second Claim = %v, want ErrLeased", err)
	}
	put(t, s, leased(le, 1))
	put(t, s, leased(le, 2))
	if h, err := l.Head(ctx, thread); err != nil || h != (checkpoint.Head{Incarnation: le.Incarnation, Seq: 2}) {
		t.Fatalf("Head = %+v, %v; want incarnation %q seq 2", h, err, le.Incarnation)
	}
	wantEqual(t, "Latest", latest(t, s, thread), leased(le, 2))
	ext, err := l.Extend(ctx, le, time.Minute)
	if err != nil || ext.Token != le.Token {
		t.Fatalf("Extend = %+v, %v", ext, err)
	}
	if err := l.Release(ctx, le); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := l.Extend(ctx, le, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Extend after Release = %v, want ErrLeaseLost", err)
	}
	le2 := claim(t, l, thread, time.Minute)
	if le2.Token <= le.Token || le2.Incarnation != le.Incarnation || le2.Seq != 2 {
		t.Fatalf("Claim after Release = %+v; want a larger token than %d, incarnation %q, seq 2", le2, le.Token, le.Incarnation)
	}
	// A released lease's holder cannot release the next one.
	if err := l.Release(ctx, le); err != nil {
		t.Fatalf("stale Release: %v", err)
	}
	if _, err := l.Claim(ctx, thread, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("Claim after a stale Release = %v, want ErrLeased", err)
	}
}

func testLeaseFences(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	ctx := context.Background()
	thread := threadID(t, "t")
	old := claim(t, l, thread, time.Minute)
	put(t, s, leased(old, 1))
	if err := l.Release(ctx, old); err != nil {
		t.Fatal(err)
	}
	cur := claim(t, l, thread, time.Minute)
	// The superseded token, an unleased write and a wrong incarnation are
	// all refused, and change nothing.
	bad := []checkpoint.Checkpoint{leased(old, 2), sample(thread, 2), leased(cur, 2)}
	bad[2].Incarnation = "another"
	for i, cp := range bad {
		if err := s.Put(ctx, cp); !errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("Put %d (token %d, incarnation %q) = %v, want ErrConflict", i, cp.Token, cp.Incarnation, err)
		}
	}
	wantSeqs(t, history(t, s, thread, 0), 1)
	put(t, s, leased(cur, 2))
	wantEqual(t, "Latest", latest(t, s, thread), leased(cur, 2))
	// A thread never claimed takes no leased write.
	other := threadID(t, "other")
	cp := sample(other, 1)
	cp.Token = 1
	if err := s.Put(ctx, cp); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("leased Put on an unclaimed thread = %v, want ErrConflict", err)
	}
	wantNotFound(t, s, other)
}

func testLeaseExpires(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	ctx := context.Background()
	thread := threadID(t, "t")
	first := claim(t, l, thread, 50*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	var next checkpoint.Lease
	for {
		var err error
		next, err = l.Claim(ctx, thread, time.Minute)
		if err == nil {
			break
		}
		if !errors.Is(err, checkpoint.ErrLeased) || time.Now().After(deadline) {
			t.Fatalf("Claim after the first lease's expiry: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if time.Now().Before(first.Expires) {
		t.Fatalf("the thread was claimed again before the first lease expired at %v", first.Expires)
	}
	if next.Token <= first.Token {
		t.Fatalf("token %d after expiry, want more than %d", next.Token, first.Token)
	}
	if _, err := l.Extend(ctx, first, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Extend of the expired, superseded lease = %v, want ErrLeaseLost", err)
	}
	if err := s.Put(ctx, leased(first, 1)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put under the superseded lease = %v, want ErrConflict", err)
	}
}

func testLeaseDeleteIncarnation(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	ctx := context.Background()
	thread := threadID(t, "t")
	old := claim(t, l, thread, time.Minute)
	for seq := int64(1); seq <= 3; seq++ {
		put(t, s, leased(old, seq))
	}
	if err := s.DeleteThread(ctx, thread); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Head(ctx, thread); err != nil || h != (checkpoint.Head{}) {
		t.Fatalf("Head after delete = %+v, %v; want zero", h, err)
	}
	if _, err := l.Extend(ctx, old, time.Minute); !errors.Is(err, checkpoint.ErrLeaseLost) {
		t.Fatalf("Extend after delete = %v, want ErrLeaseLost", err)
	}
	cur := claim(t, l, thread, time.Minute) // the delete ended the lease
	if cur.Incarnation == old.Incarnation {
		t.Fatalf("re-created thread has the deleted one's incarnation %q", old.Incarnation)
	}
	for seq := int64(1); seq <= 3; seq++ {
		put(t, s, leased(cur, seq))
	}
	// The old incarnation's writer, with the very seq the new one expects
	// next, is refused.
	if err := s.Put(ctx, leased(old, 4)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put of the deleted incarnation = %v, want ErrConflict", err)
	}
	if h, err := l.Head(ctx, thread); err != nil || h != (checkpoint.Head{Incarnation: cur.Incarnation, Seq: 3}) {
		t.Fatalf("Head = %+v, %v; want the new incarnation at seq 3", h, err)
	}
	wantEqual(t, "Latest", latest(t, s, thread), leased(cur, 3))
}

func testLeaseRacingClaims(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	thread := threadID(t, "t")
	const n = 16
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Claim(context.Background(), thread, time.Minute)
		}()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, checkpoint.ErrLeased):
			t.Errorf("Claim: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d racing claims won, want 1", won, n)
	}
}

// testSchedulerDue: a thread is due from its latest checkpoint's WakeAt on,
// earliest first, until a later checkpoint or a delete replaces it. The
// times are in a random minute of 2001, so other subtests sharing the
// database do not disturb it.
func testSchedulerDue(t *testing.T, s checkpoint.Checkpointer) {
	sc, ok := s.(checkpoint.Scheduler)
	if !ok {
		t.Skip("the store does not implement checkpoint.Scheduler")
	}
	ctx := context.Background()
	var b [2]byte
	_, _ = rand.Read(b[:])
	base := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(int(b[0])<<8|int(b[1])) * time.Minute).Add(123 * time.Millisecond)
	a, later, never := threadID(t, "a"), threadID(t, "later"), threadID(t, "never")
	for _, p := range []struct {
		thread string
		at     time.Time
	}{{a, base}, {later, base.Add(time.Hour)}, {never, time.Time{}}} {
		cp := sample(p.thread, 1)
		cp.WakeAt = p.at
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if cp, err := s.Latest(ctx, a); err != nil || !cp.WakeAt.Equal(base) {
		t.Fatalf("Latest WakeAt = %v, %v; want %v", cp.WakeAt, err, base)
	}
	due := func(now time.Time) []string {
		t.Helper()
		ids, err := sc.Due(ctx, now, 10000)
		if err != nil {
			t.Fatal(err)
		}
		var mine []string
		for _, id := range ids {
			if id == a || id == later || id == never {
				mine = append(mine, id)
			}
		}
		return mine
	}
	if got := due(base.Add(-time.Millisecond)); len(got) != 0 {
		t.Fatalf("Due before any deadline = %q, want none", got)
	}
	if got := due(base); !slices.Equal(got, []string{a}) {
		t.Fatalf("Due at the first deadline = %q, want [a]", got)
	}
	if got := due(base.Add(time.Hour)); !slices.Equal(got, []string{a, later}) {
		t.Fatalf("Due at the second deadline = %q, want [a later], earliest first", got)
	}
	next := sample(a, 2)
	if err := s.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, later); err != nil {
		t.Fatal(err)
	}
	if got := due(base.Add(time.Hour)); len(got) != 0 {
		t.Fatalf("Due after a checkpoint without WakeAt and a delete = %q, want none", got)
	}
}

// abbrev shortens log entries for a failure message.
func abbrev(log [][]byte) []string {
	out := make([]string, 0, min(len(log), 8))
	for _, e := range log[:min(len(log), 8)] {
		if len(e) > 32 {
			e = append(e[:32:32], "..."...)
		}
		out = append(out, string(e))
	}
	return out
}

// entries returns n log entries named by prefix.
func entries(prefix string, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = []byte(fmt.Sprintf("%s-%d \x00\xff", prefix, i))
	}
	return out
}

// withLog is cp as a read returns it with the given log.
func withLog(cp checkpoint.Checkpoint, log [][]byte) checkpoint.Checkpoint {
	cp.Append, cp.Log = nil, log
	return cp
}

// testLog: each Put appends its entries after the previous ones; a read
// returns the log as of the checkpoint read, every older checkpoint its
// own prefix.
func testLog(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "log")
	a, b := entries("a", 2), entries("b", 3)
	cp1, cp2, cp3 := sample(th, 1), sample(th, 2), sample(th, 3)
	cp1.Append, cp2.Append = a, b
	cp3.Append = [][]byte{{}} // an empty entry is an entry
	for _, cp := range []checkpoint.Checkpoint{cp1, cp2, cp3} {
		put(t, s, cp)
	}
	all := append(append(slices.Clone(a), b...), []byte{})
	wantEqual(t, "Latest", latest(t, s, th), withLog(cp3, all))
	cps := history(t, s, th, 0)
	wantSeqs(t, cps, 3, 2, 1)
	wantEqual(t, "History[0]", cps[0], withLog(cp3, all))
	wantEqual(t, "History[1]", cps[1], withLog(cp2, all[:5]))
	wantEqual(t, "History[2]", cps[2], withLog(cp1, all[:2]))
	cps = history(t, s, th, 1)
	wantEqual(t, "History(limit 1)[0]", cps[0], withLog(cp3, all))
	// A checkpoint without entries keeps the log as it was.
	put(t, s, sample(th, 4))
	wantEqual(t, "Latest after a Put without entries", latest(t, s, th), withLog(sample(th, 4), all))
}

// testLogAcrossWrites: the log continues across every kind of write that
// appends to it, one after another on one thread: one or two unleased Puts
// (the first makes the thread, a second writes to it as it is), leased
// Puts after a claim, one without entries and the last releasing the
// lease, a ClaimPut, and a leased Put under that claim. Each checkpoint
// reads back with the whole log as of it, in order.
func testLogAcrossWrites(t *testing.T, s checkpoint.Checkpointer) {
	l := leaser(t, s)
	for _, unleased := range []int64{1, 2} {
		th := threadID(t, fmt.Sprintf("log-%d", unleased))
		var (
			log     [][]byte
			want    []checkpoint.Checkpoint // newest first, as History returns them
			claimed checkpoint.Lease        // the ClaimPut's
		)
		write := func(cp checkpoint.Checkpoint, add [][]byte) {
			t.Helper()
			cp.Append = add
			if cp.Token == 0 && len(want) > 0 && want[0].Release {
				claimed = claimPut(t, s, cp, time.Minute)
				cp.Incarnation = claimed.Incarnation
			} else {
				put(t, s, cp)
			}
			log = append(log, add...)
			want = append([]checkpoint.Checkpoint{withLog(cp, slices.Clone(log))}, want...)
		}
		for seq := range unleased {
			cp := sample(th, seq+1)
			cp.Incarnation = "inc-log"
			write(cp, entries(fmt.Sprint("unleased-", seq), int(seq)+2))
		}
		le := claim(t, l, th, time.Minute)
		if le.Seq != unleased || le.Incarnation != "inc-log" {
			t.Fatalf("Claim after %d unleased Puts = %+v; want seq %d in incarnation inc-log", unleased, le, unleased)
		}
		write(leased(le, unleased+1), entries("c", 3))
		write(leased(le, unleased+2), nil)
		last := leased(le, unleased+3)
		last.Release = true
		write(last, entries("d", 1))
		reclaim := leased(le, unleased+4)
		reclaim.Token = 0 // a ClaimPut: write claims the thread with it
		write(reclaim, entries("e", 2))
		write(leased(claimed, unleased+5), entries("f", 1))
		if _, err := l.Claim(context.Background(), th, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
			t.Fatalf("Claim after the ClaimPut = %v, want ErrLeased", err)
		}
		wantEqual(t, "Latest", latest(t, s, th), want[0])
		cps := history(t, s, th, 0)
		if len(cps) != len(want) {
			t.Fatalf("History has %d checkpoints, want %d", len(cps), len(want))
		}
		for i, cp := range cps {
			wantEqual(t, fmt.Sprintf("History[%d]", i), cp, want[i])
		}
	}
}

// testLogConflict: a refused Put appends nothing, so the log never holds
// the entries of a write that lost.
func testLogConflict(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "log")
	cp1 := sample(th, 1)
	cp1.Append = entries("first", 1)
	put(t, s, cp1)
	lost := sample(th, 1)
	lost.Append = entries("lost", 4)
	if err := s.Put(context.Background(), lost); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put of a taken seq = %v, want ErrConflict", err)
	}
	cp2 := sample(th, 2)
	cp2.Append = entries("second", 1)
	put(t, s, cp2)
	want := append(entries("first", 1), entries("second", 1)...)
	wantEqual(t, "Latest", latest(t, s, th), withLog(cp2, want))
}

// testLogDelete: a deleted thread's log goes with it; the thread started
// again has only its new entries.
func testLogDelete(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "log")
	cp := sample(th, 1)
	cp.Append = entries("old", 3)
	put(t, s, cp)
	if err := s.DeleteThread(context.Background(), th); err != nil {
		t.Fatal(err)
	}
	cp.Append = entries("new", 1)
	put(t, s, cp)
	wantEqual(t, "Latest of the thread started again", latest(t, s, th), withLog(cp, entries("new", 1)))
}

// testLogLarge: thousands of entries, and entries of a megabyte.
func testLogLarge(t *testing.T, s checkpoint.Checkpointer) {
	th := threadID(t, "log")
	var want [][]byte
	for seq := int64(1); seq <= 20; seq++ {
		cp := sample(th, seq)
		cp.Append = entries(fmt.Sprint("s", seq), 100)
		if seq == 10 {
			big := make([]byte, 1<<20)
			for i := range big {
				big[i] = byte(i * 13)
			}
			cp.Append = append(cp.Append, big)
		}
		want = append(want, cp.Append...)
		put(t, s, cp)
	}
	got := latest(t, s, th)
	if !slices.EqualFunc(got.Log, want, bytes.Equal) {
		t.Fatalf("Latest.Log has %d entries, want %d equal to those appended", len(got.Log), len(want))
	}
}

// testDeleteIdle: DeleteIdle deletes the threads last written before the
// cutoff, never one an unexpired lease holds, up to its limit. The times
// are in a random minute of 2001, before any other subtest's.
func testDeleteIdle(t *testing.T, s checkpoint.Checkpointer) {
	pr, ok := s.(checkpoint.Pruner)
	if !ok {
		t.Skip("the store does not implement checkpoint.Pruner")
	}
	ctx := context.Background()
	var b [2]byte
	_, _ = rand.Read(b[:])
	cutoff := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(int(b[0])<<8|int(b[1])) * time.Minute)
	idle := []string{threadID(t, "idle1"), threadID(t, "idle2"), threadID(t, "idle3")}
	fresh, held := threadID(t, "fresh"), threadID(t, "held")
	for _, th := range append(slices.Clone(idle), fresh) {
		cp := sample(th, 1)
		cp.Append = entries("x", 2)
		cp.CreatedAt = cutoff.Add(-time.Second)
		if th == fresh {
			cp.CreatedAt = cutoff
		}
		put(t, s, cp)
	}
	var lease checkpoint.Lease
	if l, ok := s.(checkpoint.Leaser); ok {
		var err error
		if lease, err = l.Claim(ctx, held, time.Minute); err != nil {
			t.Fatal(err)
		}
		cp := sample(held, 1)
		cp.CreatedAt, cp.Incarnation, cp.Token = cutoff.Add(-time.Second), lease.Incarnation, lease.Token
		put(t, s, cp)
	}
	n, err := pr.DeleteIdle(ctx, cutoff, 2)
	if err != nil || n != 2 {
		t.Fatalf("DeleteIdle(limit 2) = %d, %v; want 2 (three idle threads)", n, err)
	}
	if n, err = pr.DeleteIdle(ctx, cutoff, 1000); err != nil || n < 1 {
		t.Fatalf("DeleteIdle again = %d, %v; want at least the third idle thread", n, err)
	}
	for _, th := range idle {
		wantNotFound(t, s, th)
	}
	latest(t, s, fresh)
	if lease.Token != 0 {
		latest(t, s, held)
	}
	// A deleted thread starts again empty.
	put(t, s, sample(idle[0], 1))
	wantEqual(t, "an idle thread started again", latest(t, s, idle[0]), sample(idle[0], 1))
}

// RunRetention checks checkpoint.KeepHistory: open must return a store
// opened with opts (a fresh database or not; thread IDs are unique).
func RunRetention(t *testing.T, open func(t *testing.T, opts ...checkpoint.Option) checkpoint.Checkpointer) {
	for _, keep := range []int{0, 2} {
		t.Run(fmt.Sprint("KeepHistory", keep), func(t *testing.T) {
			s := open(t, checkpoint.KeepHistory(keep))
			t.Cleanup(func() { s.Close() })
			th := threadID(t, "keep")
			var log [][]byte
			var all []checkpoint.Checkpoint
			first := newBlob(1000)
			for seq := int64(1); seq <= 6; seq++ {
				cp := sample(th, seq)
				cp.Append = entries(fmt.Sprint("s", seq), int(seq))
				if seq == 1 {
					cp.Blobs = []checkpoint.Blob{first}
				}
				put(t, s, cp)
				log = append(log, cp.Append...)
				all = append(all, withLog(cp, slices.Clone(log)))
			}
			cps := history(t, s, th, 0)
			if len(cps) != keep+1 {
				t.Fatalf("History has %d checkpoints, want %d (the latest and %d before it)", len(cps), keep+1, keep)
			}
			for i, cp := range cps {
				wantEqual(t, fmt.Sprintf("History[%d]", i), cp, all[5-i])
			}
			if err := s.Put(context.Background(), sample(th, 3)); !errors.Is(err, checkpoint.ErrConflict) {
				t.Fatalf("Put of a pruned seq = %v, want ErrConflict", err)
			}
			put(t, s, sample(th, 7))
			wantEqual(t, "Latest after pruning", latest(t, s, th), withLog(sample(th, 7), log))
			// Every end of the log reads alike, whether it starts in
			// what the dropped checkpoints appended or in what the kept
			// ones did, or inside either.
			if tr, ok := s.(checkpoint.TailReader); ok {
				for from := 0; from <= len(log)+1; from++ {
					got, n, err := tr.LatestTail(context.Background(), th, from)
					if err != nil || n != len(log) {
						t.Fatalf("LatestTail(from %d) after pruning = log length %d, %v; want %d", from, n, err, len(log))
					}
					var want [][]byte
					if from < len(log) {
						want = log[from:]
					}
					wantEqual(t, fmt.Sprintf("LatestTail(from %d) after pruning", from), got, withLog(sample(th, 7), want))
				}
			}
			// The first checkpoint's blob is its thread's still: the log
			// that refers to it is kept whole.
			if bs, ok := s.(checkpoint.BlobStore); ok {
				wantBlob(t, bs, th, first)
			}
		})
	}
}

// testDeleteIdleRewritten: a thread written before the cutoff and again
// after it, moments later, is not idle, however the store keeps track of
// its writes. The times are in a random minute of 2002.
func testDeleteIdleRewritten(t *testing.T, s checkpoint.Checkpointer) {
	ctx := context.Background()
	var b [2]byte
	_, _ = rand.Read(b[:])
	cutoff := time.Date(2002, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(int(b[0])<<8|int(b[1])) * time.Minute)
	th, idle := threadID(t, "rewritten"), threadID(t, "idle")
	for seq, at := range []time.Time{cutoff.Add(-30 * time.Second), cutoff.Add(time.Second)} {
		cp := sample(th, int64(seq+1))
		cp.CreatedAt = at
		put(t, s, cp)
	}
	cp := sample(idle, 1)
	cp.CreatedAt = cutoff.Add(-time.Second)
	put(t, s, cp)
	if _, err := s.DeleteIdle(ctx, cutoff, 1000); err != nil {
		t.Fatal(err)
	}
	wantNotFound(t, s, idle)
	wantSeqs(t, history(t, s, th, 0), 2, 1)
}

// testLeaseReleasedByPut: a Put with Release ends its lease with the
// checkpoint, so the thread can be claimed at once and the old token
// writes no more; a Put refused (a wrong seq) releases nothing.
func testLeaseReleasedByPut(t *testing.T, s checkpoint.Checkpointer) {
	l, ok := s.(checkpoint.Leaser)
	if !ok {
		t.Skip("the store does not implement checkpoint.Leaser")
	}
	ctx := context.Background()
	th := threadID(t, "release")
	le, err := l.Claim(ctx, th, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	wrong := sample(th, 5)
	wrong.Incarnation, wrong.Token, wrong.Release = le.Incarnation, le.Token, true
	if err := s.Put(ctx, wrong); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put of a wrong seq = %v, want ErrConflict", err)
	}
	if _, err := l.Claim(ctx, th, time.Minute); !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("Claim after a refused releasing Put = %v, want ErrLeased (nothing released)", err)
	}
	cp := sample(th, 1)
	cp.Incarnation, cp.Token, cp.Release = le.Incarnation, le.Token, true
	put(t, s, cp)
	want := cp
	want.Incarnation, want.Token, want.Release = le.Incarnation, 0, false
	wantEqual(t, "Latest after a releasing Put", latest(t, s, th), want)
	le2, err := l.Claim(ctx, th, time.Minute)
	if err != nil || le2.Token <= le.Token {
		t.Fatalf("Claim after a releasing Put = %+v, %v; want a new token", le2, err)
	}
	next := sample(th, 2)
	next.Incarnation, next.Token = le.Incarnation, le.Token
	if err := s.Put(ctx, next); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put with the released token = %v, want ErrConflict", err)
	}
}

// testLogTail: LatestTail is Latest with only the log's end, and the whole
// log's length.
func testLogTail(t *testing.T, s checkpoint.Checkpointer) {
	tr, ok := s.(checkpoint.TailReader)
	if !ok {
		t.Skip("the store does not implement checkpoint.TailReader")
	}
	ctx := context.Background()
	th := threadID(t, "tail")
	cp1, cp2 := sample(th, 1), sample(th, 2)
	cp1.Append, cp2.Append = entries("a", 3), entries("b", 2)
	put(t, s, cp1)
	put(t, s, cp2)
	all := append(entries("a", 3), entries("b", 2)...)
	for _, from := range []int{0, 1, 3, 5, 9} {
		got, n, err := tr.LatestTail(ctx, th, from)
		if err != nil || n != 5 {
			t.Fatalf("LatestTail(from %d) = log length %d, %v; want 5", from, n, err)
		}
		var want [][]byte
		if from < 5 {
			want = all[from:]
		}
		wantEqual(t, fmt.Sprintf("LatestTail(from %d)", from), got, withLog(cp2, want))
	}
	if _, _, err := tr.LatestTail(ctx, threadID(t, "unknown"), 0); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("LatestTail of an unknown thread = %v, want ErrNotFound", err)
	}
}
