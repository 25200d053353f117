package checkpoint_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/checkpoint/checkpointtest"
)

// postgresDSNEnv names the environment variable holding the DSN of a
// PostgreSQL server the tests may create schemas in. scripts/test.sh starts
// a throwaway server and sets it.
const postgresDSNEnv = "TENXGRAPH_TEST_POSTGRES_DSN"

// postgresDSN returns a DSN whose search_path is a new, empty schema, which
// is dropped when the test ends, so every test starts from an empty database
// and runs of the tests never see one another's tables. It skips the test
// when no server is configured.
func postgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(postgresDSNEnv)
	if dsn == "" {
		t.Skipf("no PostgreSQL server: set %s to a DSN (scripts/test.sh starts one) to run the postgres checkpointer tests", postgresDSNEnv)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresDSNEnv, err)
	}
	defer conn.Close(ctx)
	schema := "tenxgraph_test_" + strings.ToLower(rand.Text())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("connect to drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(t, dsn, schema)
}

// pgExec runs sql on the test database dsn names, on a connection of its
// own, as a test's hand-made change (an older schema, a skewed row).
func pgExec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
}

// withSearchPath adds search_path to a URL or keyword/value DSN; pgx sends
// settings it does not know to the server as run-time parameters.
func withSearchPath(t testing.TB, dsn, schema string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatalf("parse %s: %v", postgresDSNEnv, err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

func openPostgres(t testing.TB, dsn string, opts ...checkpoint.Option) *checkpoint.Postgres {
	t.Helper()
	p, err := checkpoint.OpenPostgres(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// twoReplicas opens two stores on one database, as two replicas would,
// closed when the test ends; dsn is the database's, for a test's own
// connections.
func twoReplicas(t *testing.T) (dsn string, a, b *checkpoint.Postgres) {
	t.Helper()
	dsn = postgresDSN(t)
	a, b = openPostgres(t, dsn), openPostgres(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	return dsn, a, b
}

func TestPostgres(t *testing.T) {
	dsn := postgresDSN(t)
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Checkpointer {
		return openPostgres(t, dsn)
	})
}

func TestPostgresRetention(t *testing.T) {
	dsn := postgresDSN(t)
	checkpointtest.RunRetention(t, func(t *testing.T, opts ...checkpoint.Option) checkpoint.Checkpointer {
		p, err := checkpoint.OpenPostgres(context.Background(), dsn, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}

// TestPostgresTwoHandles races two stores, as two server replicas would, on
// one thread: exactly one writer of each seq wins, the rest get ErrConflict.
func TestPostgresTwoHandles(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoReplicas(t)
	handles := []*checkpoint.Postgres{a, b}

	var wg sync.WaitGroup
	for round := range 10 {
		th := fmt.Sprintf("race-%d", round)
		if err := a.Put(ctx, checkpoint.Checkpoint{ThreadID: th, Seq: 1}); err != nil {
			t.Fatal(err)
		}
		const racers = 16
		errs := make([]error, racers)
		start := make(chan struct{})
		for i := range racers {
			wg.Go(func() {
				<-start
				errs[i] = handles[i%2].Put(ctx, checkpoint.Checkpoint{ThreadID: th, Seq: 2, RunID: fmt.Sprint(i)})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both wrote seq 2", round, winner, i)
				}
				winner = i
			case !errors.Is(err, checkpoint.ErrConflict):
				t.Errorf("round %d racer %d: %v; want nil or ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no racer won: %v", round, errs)
		}
		for _, h := range handles {
			cp, err := h.Latest(ctx, th)
			if err != nil || cp.Seq != 2 || cp.RunID != fmt.Sprint(winner) {
				t.Fatalf("round %d: Latest = seq %d run %q, %v; want seq 2 run %d", round, cp.Seq, cp.RunID, err, winner)
			}
			if hd, err := h.Head(ctx, th); err != nil || hd.Seq != 2 {
				t.Fatalf("round %d: Head = seq %d, %v; want 2", round, hd.Seq, err)
			}
		}
	}
}

// TestPostgresDeleteRacesPut checks that a Put racing with DeleteThread
// never survives it: either the Put came first and was deleted, or it came
// second and conflicted (its seq continued the deleted history).
func TestPostgresDeleteRacesPut(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoReplicas(t)
	for round := range 50 {
		th := fmt.Sprintf("delete-race-%d", round)
		for seq := int64(1); seq <= 3; seq++ {
			if err := a.Put(ctx, checkpoint.Checkpoint{ThreadID: th, Seq: seq}); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg             sync.WaitGroup
			putErr, delErr error
			start          = make(chan struct{})
		)
		wg.Go(func() { <-start; putErr = a.Put(ctx, checkpoint.Checkpoint{ThreadID: th, Seq: 4}) })
		wg.Go(func() { <-start; delErr = b.DeleteThread(ctx, th) })
		close(start)
		wg.Wait()
		if delErr != nil {
			t.Fatalf("round %d: DeleteThread: %v", round, delErr)
		}
		if putErr != nil && !errors.Is(putErr, checkpoint.ErrConflict) {
			t.Fatalf("round %d: Put: %v; want nil or ErrConflict", round, putErr)
		}
		if hd, err := a.Head(ctx, th); err != nil || hd.Seq != 0 {
			t.Fatalf("round %d: Head after the race = seq %d, %v; want 0 (put error: %v)", round, hd.Seq, err, putErr)
		}
	}
}

// TestPostgresRefusesNewerSchema checks that a database migrated by a newer
// build, whose tables this build does not know, is refused.
func TestPostgresRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	openPostgres(t, dsn).Close()
	pgExec(t, dsn, "UPDATE tenxgraph_checkpoint_schema SET version = 99")

	p, err := checkpoint.OpenPostgres(ctx, dsn)
	if err == nil {
		p.Close()
		t.Fatal("OpenPostgres opened a database with a newer schema")
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("error %q should name the version and say it is newer", err)
	}
}

// TestPostgresConcurrentOpen opens one new database from many goroutines at
// once: the migration lock lets exactly one create the tables and every
// open succeed.
func TestPostgresConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	const n = 8
	var wg sync.WaitGroup
	stores := make([]*checkpoint.Postgres, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = checkpoint.OpenPostgres(ctx, dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
			continue
		}
		defer stores[i].Close()
	}
	if t.Failed() {
		return
	}
	if err := stores[0].Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if cp, err := stores[n-1].Latest(ctx, "t"); err != nil || cp.Seq != 1 {
		t.Fatalf("Latest = seq %d, %v; want 1", cp.Seq, err)
	}
}

// TestPostgresRefusesUnstorableStrings checks that strings PostgreSQL's text
// cannot hold exactly (invalid UTF-8, NUL) are refused rather than changed.
func TestPostgresRefusesUnstorableStrings(t *testing.T) {
	ctx := context.Background()
	p := openPostgres(t, postgresDSN(t))
	defer p.Close()
	for _, cp := range []checkpoint.Checkpoint{
		{ThreadID: "bad\xff", Seq: 1},
		{ThreadID: "nul\x00", Seq: 1},
		{ThreadID: "t", Seq: 1, RunID: "nul\x00"},
		{ThreadID: "t", Seq: 1, Next: []string{"ok", "bad\xff"}},
		{ThreadID: "t", Seq: 1, Next: []string{"nul\x00"}},
		{ThreadID: "t", Seq: 1, Metadata: map[string]string{"k": "bad\xff"}},
		{ThreadID: "t", Seq: 1, Metadata: map[string]string{"k": "nul\x00"}},
		{ThreadID: "t", Seq: 1, Metadata: map[string]string{"bad\xff": "v"}},
	} {
		if err := p.Put(ctx, cp); err == nil || errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Put(%q, %q, %q, %q) = %v; want an encoding error", cp.ThreadID, cp.RunID, cp.Next, cp.Metadata, err)
		}
	}
	if _, err := p.Latest(ctx, "t"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest = %v; want ErrNotFound", err)
	}
}

// TestPostgresOpenErrors needs no server: a bad DSN fails with a message
// that says what failed and never quotes the password.
func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{
		"",
		"host=/nonexistent/tenxgraph port=1 user=u password=sekrit-pw dbname=d connect_timeout=2",
		"postgres://u:sekrit-pw@/d?host=/nonexistent/tenxgraph&port=1&connect_timeout=2",
		"postgres://u:sekrit-pw@[bad",
	} {
		p, err := checkpoint.OpenPostgres(ctx, dsn)
		if err == nil {
			p.Close()
			t.Fatalf("OpenPostgres(%q) succeeded", dsn)
		}
		if strings.Contains(err.Error(), "sekrit-pw") {
			t.Errorf("OpenPostgres error %q quotes the password", err)
		}
		if !strings.Contains(err.Error(), "checkpoint: open postgres") {
			t.Errorf("OpenPostgres error %q should say what failed", err)
		}
	}
}

// TestPostgresBatchConflictCommitsOthers commits one batch, as the writer
// does with the writes that queued while it was busy, holding Puts that
// land, a Put with a wrong seq, two Puts of one seq, and a statement that
// fails: the conflicts and the failure are each their own, and every other
// Put of the batch is committed.
func TestPostgresBatchConflictCommitsOthers(t *testing.T) {
	ctx := context.Background()
	p := openPostgres(t, postgresDSN(t))
	defer p.Close()
	if err := p.Put(ctx, checkpoint.Checkpoint{ThreadID: "existing", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	for _, failing := range []bool{false, true} {
		round := fmt.Sprintf("failing-%v", failing)
		var cps []checkpoint.Checkpoint
		for i := range 8 {
			cps = append(cps, checkpoint.Checkpoint{ThreadID: fmt.Sprintf("%s-%d", round, i), Seq: 1, RunID: "ok"})
		}
		cps = append(cps,
			checkpoint.Checkpoint{ThreadID: "existing", Seq: 1, RunID: "wrong-seq"},       // 8: conflicts
			checkpoint.Checkpoint{ThreadID: round + "-3", Seq: 1, RunID: "same-seq-as-3"}, // 9: conflicts with 3
		)
		errs := checkpoint.CommitPostgresBatch(p, cps, failing)
		for i := range 8 {
			if errs[i] != nil {
				t.Errorf("%s: Put %d: %v; want it committed", round, i, errs[i])
			}
			if cp, err := p.Latest(ctx, cps[i].ThreadID); err != nil || cp.Seq != 1 || cp.RunID != "ok" {
				t.Errorf("%s: Latest of thread %d = seq %d run %q, %v; want seq 1 run ok", round, i, cp.Seq, cp.RunID, err)
			}
		}
		for _, i := range []int{8, 9} {
			if !errors.Is(errs[i], checkpoint.ErrConflict) {
				t.Errorf("%s: Put %d (run %s) = %v; want ErrConflict", round, i, cps[i].RunID, errs[i])
			}
		}
		if failing {
			if errs[10] == nil || !strings.Contains(errs[10].Error(), "division by zero") {
				t.Errorf("failing statement = %v; want the server's division by zero", errs[10])
			}
		}
	}
	if cp, err := p.Latest(ctx, "existing"); err != nil || cp.Seq != 1 || cp.RunID != "" {
		t.Fatalf("Latest of the existing thread = seq %d run %q, %v; want seq 1 unchanged", cp.Seq, cp.RunID, err)
	}
}

// TestPostgresLeasedPutAtATakenSeq: a write under a lease inserts its
// checkpoint without ON CONFLICT, since the thread's row, locked and at
// the seq before, rules out a checkpoint of its seq. On a store where one
// exists all the same (made here by moving the row's seq back by hand; no
// write of the store leaves a row so), the write fails alone: the writes
// that shared its batch commit, Put reports ErrConflict, and the thread
// keeps the checkpoint it had.
func TestPostgresLeasedPutAtATakenSeq(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	p := openPostgres(t, dsn)
	defer p.Close()
	le, err := p.Claim(ctx, "skewed", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	first := checkpoint.Checkpoint{ThreadID: "skewed", Seq: 1, RunID: "first", Incarnation: le.Incarnation, Token: le.Token,
		Append: [][]byte{[]byte("a")}}
	if err := p.Put(ctx, first); err != nil {
		t.Fatal(err)
	}
	pgExec(t, dsn, "UPDATE tenxgraph_threads SET seq = 0, log_len = 0 WHERE thread_id = 'skewed'")
	second := first
	second.RunID = "second"
	var cps []checkpoint.Checkpoint
	for i := range 8 {
		cps = append(cps, checkpoint.Checkpoint{ThreadID: fmt.Sprintf("other-%d", i), Seq: 1, RunID: "ok"})
	}
	errs := checkpoint.CommitPostgresBatch(p, append(cps, second), false)
	for i := range 8 {
		if cp, err := p.Latest(ctx, cps[i].ThreadID); errs[i] != nil || err != nil || cp.RunID != "ok" {
			t.Errorf("Put %d: %v; its Latest = run %q, %v; want it committed", i, errs[i], cp.RunID, err)
		}
	}
	var pe *pgconn.PgError
	if !errors.As(errs[8], &pe) || pe.Code != "23505" || pe.TableName != "tenxgraph_checkpoints" {
		t.Errorf("the leased Put at the taken seq, in the batch = %v; want a unique violation on tenxgraph_checkpoints", errs[8])
	}
	if err := p.Put(ctx, second); !errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("the leased Put at the taken seq = %v; want ErrConflict", err)
	}
	if cp, err := p.Latest(ctx, "skewed"); err != nil || cp.Seq != 1 || cp.RunID != "first" || len(cp.Log) != 1 {
		t.Fatalf("Latest(skewed) = seq %d run %q log %d, %v; want seq 1, run first, one entry", cp.Seq, cp.RunID, len(cp.Log), err)
	}
}

// TestPostgresConcurrentLeasedRuns runs many threads at once from two
// stores, as two replicas would: each claims its thread, writes five
// checkpoints under the lease and releases it, so claims, Puts and
// releases of many threads share batches and the two stores' batches lock
// rows concurrently. Every write must land, in order, with nothing lost.
func TestPostgresConcurrentLeasedRuns(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoReplicas(t)
	const (
		threads = 200
		steps   = 5
	)
	var wg sync.WaitGroup
	errs := make([]error, threads)
	for i := range threads {
		s := []*checkpoint.Postgres{a, b}[i%2]
		wg.Go(func() {
			errs[i] = func() error {
				th := fmt.Sprintf("thread-%d", i)
				l, err := s.Claim(ctx, th, time.Minute)
				if err != nil {
					return err
				}
				for seq := int64(1); seq <= steps; seq++ {
					cp := checkpoint.Checkpoint{ThreadID: th, Seq: seq, RunID: fmt.Sprint(i), Incarnation: l.Incarnation, Token: l.Token}
					if err := s.Put(ctx, cp); err != nil {
						return err
					}
				}
				if _, err := s.Extend(ctx, l, time.Minute); err != nil {
					return err
				}
				return s.Release(ctx, l)
			}()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("thread %d: %v", i, err)
		}
	}
	for i := range threads {
		th := fmt.Sprintf("thread-%d", i)
		cps, err := []*checkpoint.Postgres{b, a}[i%2].History(ctx, th, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(cps) != steps || cps[0].Seq != steps || cps[0].RunID != fmt.Sprint(i) {
			t.Fatalf("thread %d: %d checkpoints, newest first %+v; want %d by run %d", i, len(cps), cps, steps, i)
		}
		// Released: the thread can be claimed again at once.
		if _, err := a.Claim(ctx, th, time.Minute); err != nil {
			t.Fatalf("thread %d: claim after release: %v", i, err)
		}
	}
}

// TestPostgresWriteAfterClose checks that writes after Close fail at once
// rather than wait for a writer that has stopped.
func TestPostgresWriteAfterClose(t *testing.T) {
	ctx := context.Background()
	p := openPostgres(t, postgresDSN(t))
	if err := p.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if err := p.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 2}); err == nil || errors.Is(err, checkpoint.ErrConflict) {
		t.Errorf("Put after Close = %v; want an error that is not a conflict", err)
	}
	if _, err := p.Claim(ctx, "t", time.Minute); err == nil {
		t.Error("Claim after Close succeeded")
	}
}

// A batch stuck behind a row lock (another transaction holds the thread's
// lease row) holds up no other thread's writes: the dispatcher sends
// them beside it once it has run past pgHelpAfter. The stuck write
// completes when the lock goes.
func TestPostgresStuckBatchHoldsUpNoOther(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	p := openPostgres(t, dsn)
	defer p.Close()
	if _, err := p.Claim(ctx, "stuck", time.Minute); err != nil {
		t.Fatal(err)
	}
	tx := lockLease(t, dsn, "stuck")
	defer tx.Conn().Close(ctx) // and so the transaction, if still open
	stuck := make(chan error, 1)
	go func() {
		_, err := p.Claim(ctx, "stuck", time.Minute) // waits for the row lock
		stuck <- err
	}()
	// Wait until the stuck claim is in the server, waiting for the lock.
	untilWaiting(t, tx, blockedByMe, "the claim")
	// Other threads' writes go through while the lock is held.
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			thread := fmt.Sprint("free-", i)
			l, err := p.Claim(ctx, thread, time.Minute)
			if err == nil {
				err = p.Put(ctx, checkpoint.Checkpoint{ThreadID: thread, Seq: 1, Incarnation: l.Incarnation, Token: l.Token, Release: true})
			}
			errs <- err
		})
	}
	others := make(chan struct{})
	go func() { wg.Wait(); close(others) }()
	select {
	case <-others:
	case err := <-stuck:
		t.Fatalf("the stuck claim returned (%v) before the lock went", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the other threads' writes waited for the stuck batch")
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-stuck:
		t.Fatalf("the stuck claim returned (%v) while the lock was held", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// The lease is held (the first claim's): the stuck claim is refused,
	// now that it can read the row.
	if err := <-stuck; !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("the stuck claim = %v, want ErrLeased", err)
	}
}

// TestPostgresClaimSeesTheReleasingPut checks that a claim that waited for
// the lease holder's last write, a Put that released the lease in a batch
// still in flight when the claim began, reports that Put's seq: a run
// trusting the claim's seq would otherwise take the thread for a new one
// (or its cached copy for current) and run its first message again.
func TestPostgresClaimSeesTheReleasingPut(t *testing.T) {
	ctx := context.Background()
	dsn, a, b := twoReplicas(t)
	held, err := a.Claim(ctx, "a-released", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := a.Claim(ctx, "b-slow", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tx := lockLease(t, dsn, "b-slow")
	defer tx.Conn().Close(ctx) // and so the transaction, if still open
	// One batch of a's: the run on "a-released" ends (its last checkpoint
	// releases the lease), then a write on "b-slow" waits for the locker,
	// so the batch's transaction holds "a-released" uncommitted meanwhile
	// (a batch takes its writes in thread order).
	batch := blockedOn(t, tx, "the batch", func() []error {
		return checkpoint.CommitPostgresBatch(a, []checkpoint.Checkpoint{
			{ThreadID: "a-released", Seq: 1, Status: checkpoint.StatusInterrupted, Incarnation: held.Incarnation, Token: held.Token, Release: true},
			{ThreadID: "b-slow", Seq: 1, Incarnation: slow.Incarnation, Token: slow.Token},
		}, false)
	})
	// The claim waits for the batch, which holds the lease's row.
	claimed := claimBehind(t, tx, b, "a-released")
	batchOK(t, <-batch)
	got := <-claimed
	if got.err != nil {
		t.Fatalf("the claim once the lease was released: %v", got.err)
	}
	if got.l.Seq != 1 || got.l.Incarnation != held.Incarnation || got.l.Token != held.Token+1 {
		t.Fatalf("the claim = seq %d incarnation %s token %d; want seq 1 (the releasing Put's), incarnation %s, token %d",
			got.l.Seq, got.l.Incarnation, got.l.Token, held.Incarnation, held.Token+1)
	}
}

// TestPostgresClaimSeesTheDelete checks that a claim that waited for a
// DeleteThread, one still deleting the thread's checkpoints when the claim
// began, reports no checkpoint: the thread is new again, and a run trusting
// an older seq would take a copy it caches for current.
func TestPostgresClaimSeesTheDelete(t *testing.T) {
	ctx := context.Background()
	dsn, a, b := twoReplicas(t)
	held, err := a.Claim(ctx, "gone", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 2; seq++ {
		cp := checkpoint.Checkpoint{ThreadID: "gone", Seq: seq, Status: checkpoint.StatusCompleted,
			Incarnation: held.Incarnation, Token: held.Token, Release: seq == 2}
		if err := a.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	tx, deleted := deleteHalfway(t, dsn, a, "gone", 2)
	// The claim waits for the delete, which holds the thread's row.
	claimed := claimBehind(t, tx, b, "gone")
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	got := <-claimed
	if got.err != nil {
		t.Fatalf("the claim once the thread was deleted: %v", got.err)
	}
	if got.l.Seq != 0 || got.l.Incarnation == held.Incarnation || got.l.Token != 1 {
		t.Fatalf("the claim = seq %d incarnation %s token %d; want seq 0 in a new incarnation, token 1",
			got.l.Seq, got.l.Incarnation, got.l.Token)
	}
}

// TestPostgresWritesWaitForTheDelete checks that a Put (unleased, or the
// lease holder's) or a ClaimPut, arriving while a DeleteThread holds the
// thread's row, waits for the delete, then is refused, and that neither
// fails otherwise; the ClaimPut on a thread written without a lease
// (which has a row since schema 8) and on one claimed before. Were the
// write to lock the thread's latest checkpoint before it waits for the
// row, the delete, which deletes that checkpoint next, would wait for the
// write: a deadlock, which PostgreSQL ends by failing one of them.
func TestPostgresWritesWaitForTheDelete(t *testing.T) {
	for _, c := range []struct {
		name        string
		leased, put bool // claimed before; the write is a Put (the holder's when claimed), not a ClaimPut
		want        error
	}{
		{"an unleased Put", false, true, checkpoint.ErrConflict},
		{"ClaimPut of a thread written without a lease", false, false, checkpoint.ErrConflict},
		{"ClaimPut of a released thread", true, false, checkpoint.ErrConflict},
		{"the lease holder's Put", true, true, checkpoint.ErrLeaseLost},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dsn, a, b := twoReplicas(t)
			var l checkpoint.Lease
			if c.leased {
				var err error
				if l, err = a.Claim(ctx, "racing", time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			for seq := int64(1); seq <= 2; seq++ {
				cp := checkpoint.Checkpoint{ThreadID: "racing", Seq: seq, Incarnation: l.Incarnation, Token: l.Token,
					Release: c.leased && !c.put && seq == 2}
				if err := a.Put(ctx, cp); err != nil {
					t.Fatal(err)
				}
			}
			tx, deleted := deleteHalfway(t, dsn, a, "racing", 2)
			cp := checkpoint.Checkpoint{ThreadID: "racing", Seq: 3, Incarnation: l.Incarnation}
			var written <-chan error
			if c.put {
				cp.Token = l.Token
				written = behind(t, tx, "the other replica's Put", func() error { return b.Put(ctx, cp) })
			} else {
				written = claimPutBehind(t, tx, b, cp)
			}
			if err := <-deleted; err != nil {
				t.Fatalf("the delete: %v", err)
			}
			if err := <-written; !errors.Is(err, c.want) {
				t.Fatalf("the write behind the delete = %v, want %v", err, c.want)
			}
			if hd, err := a.Head(ctx, "racing"); err != nil || hd.Seq != 0 {
				t.Fatalf("Head after the delete = seq %d, %v; want 0", hd.Seq, err)
			}
		})
	}
}

// TestPostgresClaimPutWaitsForThePrune checks that a ClaimPut arriving
// while the lease holder's Put holds the thread's row waits for that Put,
// then is refused, when the Put deletes the checkpoint the ClaimPut would
// continue (KeepHistory(0)). Were the ClaimPut to lock that checkpoint
// before it waits for the row, the Put would wait for it at the delete: a
// deadlock, which PostgreSQL ends by failing one of them, here the lease
// holder's write. A transaction of the test's holds the Put up, between
// its lock on the row and its delete, by inserting the Put's seq first,
// and rolls it back once the ClaimPut waits behind the Put.
func TestPostgresClaimPutWaitsForThePrune(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	a, err := checkpoint.OpenPostgres(ctx, dsn, checkpoint.KeepHistory(0))
	if err != nil {
		t.Fatal(err)
	}
	b := openPostgres(t, dsn)
	t.Cleanup(func() { a.Close(); b.Close() })
	l, err := a.Claim(ctx, "held", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	leased := func(seq int64) checkpoint.Checkpoint {
		return checkpoint.Checkpoint{ThreadID: "held", Seq: seq, RunID: "holder", Incarnation: l.Incarnation, Token: l.Token}
	}
	for seq := int64(1); seq <= 2; seq++ {
		if err := a.Put(ctx, leased(seq)); err != nil {
			t.Fatal(err)
		}
	}
	tx := lockRows(t, dsn, `INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at)
		VALUES ($1, 3, 'blocker', 0, 'running', '{}', '', '{}', now())`, "held")
	defer tx.Conn().Close(ctx) // and so the transaction, if still open
	put := blockedOn(t, tx, "the lease holder's Put", func() error { return a.Put(ctx, leased(3)) })
	claimed := claimPutBehind(t, tx, b, checkpoint.Checkpoint{ThreadID: "held", Seq: 3, Incarnation: l.Incarnation})
	if err := <-put; err != nil {
		t.Fatalf("the lease holder's Put: %v", err)
	}
	if err := <-claimed; !errors.Is(err, checkpoint.ErrLeased) {
		t.Fatalf("the ClaimPut behind the Put = %v, want ErrLeased", err)
	}
	if cp, err := b.Latest(ctx, "held"); err != nil || cp.Seq != 3 || cp.RunID != "holder" {
		t.Fatalf("Latest = seq %d run %q, %v; want the holder's seq 3", cp.Seq, cp.RunID, err)
	}
}

// TestPostgresUnleasedPutMeetsAClaim races an unleased Put of a new thread
// with a claim of it, each in a batch held open (by a write of another
// thread waiting for the test's lock) while the other arrives. The claim
// first: it started a new incarnation and reported no checkpoint, so the
// Put must not land in the thread it took (it waits for the claim's row,
// then conflicts). The Put first: the claim waits for it, then continues
// its incarnation at its seq.
func TestPostgresUnleasedPutMeetsAClaim(t *testing.T) {
	ctx := context.Background()
	unleased := checkpoint.Checkpoint{ThreadID: "a-new", Seq: 1, RunID: "unleased", Incarnation: "inc-unleased"}
	t.Run("claim first", func(t *testing.T) {
		dsn, a, b := twoReplicas(t)
		tx, other := slowWrite(t, dsn, a)
		type claimed struct {
			l    checkpoint.Lease
			err  error
			puts []error
		}
		batch := blockedOn(t, tx, "the batch", func() claimed {
			l, puts, err := checkpoint.ClaimInPostgresBatch(a, "a-new", time.Minute, []checkpoint.Checkpoint{other})
			return claimed{l, err, puts}
		})
		put := behind(t, tx, "the other replica's Put", func() error { return b.Put(ctx, unleased) })
		got := <-batch
		if got.err != nil || got.puts[0] != nil {
			t.Fatalf("the batch: claim %v, write %v", got.err, got.puts[0])
		}
		if got.l.Seq != 0 || got.l.Token != 1 {
			t.Fatalf("the claim = %+v; want token 1 at seq 0", got.l)
		}
		if err := <-put; !errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("the unleased Put behind the claim = %v, want ErrConflict", err)
		}
		if _, err := a.Latest(ctx, "a-new"); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("Latest of the claimed thread = %v, want ErrNotFound", err)
		}
		first := checkpoint.Checkpoint{ThreadID: "a-new", Seq: 1, RunID: "leased", Incarnation: got.l.Incarnation, Token: got.l.Token}
		if err := a.Put(ctx, first); err != nil {
			t.Fatalf("the lease holder's first write: %v", err)
		}
	})
	t.Run("put first", func(t *testing.T) {
		dsn, a, b := twoReplicas(t)
		tx, other := slowWrite(t, dsn, a)
		batch := blockedOn(t, tx, "the batch", func() []error {
			return checkpoint.CommitPostgresBatch(a, []checkpoint.Checkpoint{unleased, other}, false)
		})
		claimed := claimBehind(t, tx, b, "a-new")
		batchOK(t, <-batch)
		got := <-claimed
		if got.err != nil || got.l.Seq != 1 || got.l.Token != 1 || got.l.Incarnation != unleased.Incarnation {
			t.Fatalf("the claim behind the Put = %+v, %v; want token 1 at seq 1 in incarnation %s", got.l, got.err, unleased.Incarnation)
		}
	})
}

// TestPostgresUnleasedPutMeetsAClaimPut races an unleased Put of a new
// thread with a ClaimPut of it: the Put has inserted its checkpoint and
// waits (for the test's uncommitted link of the thread to the Put's blob)
// when the ClaimPut arrives and waits for it. Once the Put goes on, it commits
// and the ClaimPut conflicts. Were the Put to make the thread's row after
// its checkpoint, while the ClaimPut makes it before its own, each would
// wait for the other: a deadlock, which PostgreSQL ends by failing one.
func TestPostgresUnleasedPutMeetsAClaimPut(t *testing.T) {
	ctx := context.Background()
	dsn, a, b := twoReplicas(t)
	x := blobOf(10)
	tx := lockRows(t, dsn, `INSERT INTO tenxgraph_blob_links (thread_id, ref) VALUES ($1, '`+x.Ref+`')`, "new")
	defer tx.Conn().Close(ctx) // and so the transaction, if still open
	unleased := checkpoint.Checkpoint{ThreadID: "new", Seq: 1, RunID: "unleased", Incarnation: "inc-unleased",
		Append: [][]byte{[]byte("a")}, Blobs: []checkpoint.Blob{x}}
	put := blockedOn(t, tx, "the Put", func() error { return a.Put(ctx, unleased) })
	claimed := claimPutBehind(t, tx, b, checkpoint.Checkpoint{ThreadID: "new", Seq: 1, RunID: "claimed"})
	if err := <-put; err != nil {
		t.Fatalf("the unleased Put: %v", err)
	}
	if err := <-claimed; !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("the ClaimPut behind the Put = %v, want ErrConflict", err)
	}
	if cp, err := b.Latest(ctx, "new"); err != nil || cp.Seq != 1 || cp.RunID != "unleased" || len(cp.Log) != 1 {
		t.Fatalf("Latest = seq %d run %q log %q, %v; want the unleased Put's", cp.Seq, cp.RunID, cp.Log, err)
	}
}

// TestPostgresSweepWaitsForTheWrite checks that the idle sweep, finding a
// thread idle while a write of it is in flight (a Put, which makes it
// written now, or a claim, which leases it), waits for that write and
// then leaves the thread alone: it checks again under the thread's row
// lock, not by what it listed. The write is held in a batch kept open by
// a write of another thread waiting for the test's lock.
func TestPostgresSweepWaitsForTheWrite(t *testing.T) {
	ctx := context.Background()
	long := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, claim := range []bool{false, true} {
		t.Run(map[bool]string{false: "put", true: "claim"}[claim], func(t *testing.T) {
			dsn, a, b := twoReplicas(t)
			if err := a.Put(ctx, checkpoint.Checkpoint{ThreadID: "a-idle", Seq: 1, CreatedAt: long}); err != nil {
				t.Fatal(err)
			}
			tx, other := slowWrite(t, dsn, a)
			batch := blockedOn(t, tx, "the batch", func() []error {
				if claim {
					_, puts, err := checkpoint.ClaimInPostgresBatch(a, "a-idle", time.Minute, []checkpoint.Checkpoint{other})
					return append(puts, err)
				}
				return checkpoint.CommitPostgresBatch(a, []checkpoint.Checkpoint{{ThreadID: "a-idle", Seq: 2}, other}, false)
			})
			type swept struct {
				n   int
				err error
			}
			sweep := behind(t, tx, "the other replica's sweep", func() swept {
				n, err := b.DeleteIdle(ctx, long.Add(time.Hour), 100)
				return swept{n, err}
			})
			batchOK(t, <-batch)
			if got := <-sweep; got.err != nil || got.n != 0 {
				t.Fatalf("DeleteIdle behind the write = %d, %v; want 0", got.n, got.err)
			}
			if _, err := a.Latest(ctx, "a-idle"); err != nil {
				t.Fatalf("the thread after the sweep: %v", err)
			}
		})
	}
}

// deleteHalfway starts DeleteThread(thread) on s and returns once the
// delete holds the thread's row (it takes that first) and waits to delete
// checkpoint seq, which the returned transaction holds a lock on; the
// delete's outcome comes on the channel, once the transaction ends. The
// transaction's connection is closed when the test ends (and so the
// transaction, if still open).
func deleteHalfway(t *testing.T, dsn string, s *checkpoint.Postgres, thread string, seq int64) (pgx.Tx, <-chan error) {
	t.Helper()
	tx := lockRows(t, dsn, fmt.Sprintf("SELECT 1 FROM tenxgraph_checkpoints WHERE thread_id = $1 AND seq = %d FOR KEY SHARE", seq), thread)
	t.Cleanup(func() { tx.Conn().Close(context.Background()) })
	return tx, blockedOn(t, tx, "the delete", func() error { return s.DeleteThread(context.Background(), thread) })
}

// Queries for untilWaiting, run in the locking transaction: how many
// backends wait for its locks (blockedByMe), or wait for one that does
// (blockedBehindMe).
const (
	blockedByMe     = "SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY(pg_blocking_pids(pid))"
	blockedBehindMe = `SELECT count(*) FROM pg_stat_activity w, pg_stat_activity b
	WHERE b.pid = ANY(pg_blocking_pids(w.pid)) AND pg_backend_pid() = ANY(pg_blocking_pids(b.pid))`
)

// untilWaiting polls count, a query run in tx, until it counts a backend:
// until what (a write the test started) is in the server, waiting for a
// lock.
func untilWaiting(t *testing.T, tx pgx.Tx, count, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := tx.QueryRow(context.Background(), count).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never reached the server", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// claimResult is a claim's outcome, for a test that claims in the
// background.
type claimResult struct {
	l   checkpoint.Lease
	err error
}

// blockedOn runs op in the background and returns once it is in the
// server, waiting for a lock tx holds (what names it, for the failure);
// op's outcome comes on the channel it returns.
func blockedOn[T any](t *testing.T, tx pgx.Tx, what string, op func() T) <-chan T {
	t.Helper()
	return started(t, tx, blockedByMe, what, op)
}

// behind runs op in the background, waits until it is in the server,
// waiting behind a backend tx holds up (what names it), then rolls tx
// back; op's outcome comes on the channel it returns.
func behind[T any](t *testing.T, tx pgx.Tx, what string, op func() T) <-chan T {
	t.Helper()
	out := started(t, tx, blockedBehindMe, what, op)
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out
}

// started runs op in the background and returns once count, run in tx,
// counts a waiting backend (see untilWaiting).
func started[T any](t *testing.T, tx pgx.Tx, count, what string, op func() T) <-chan T {
	t.Helper()
	out := make(chan T, 1)
	go func() { out <- op() }()
	untilWaiting(t, tx, count, what)
	return out
}

// batchOK fails the test unless every write of a batch succeeded.
func batchOK(t *testing.T, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("the batch's write %d: %v", i, err)
		}
	}
}

// claimBehind is behind for a claim of thread on s.
func claimBehind(t *testing.T, tx pgx.Tx, s *checkpoint.Postgres, thread string) <-chan claimResult {
	t.Helper()
	return behind(t, tx, "the other replica's claim", func() claimResult {
		l, err := s.Claim(context.Background(), thread, time.Minute)
		return claimResult{l, err}
	})
}

// slowWrite claims thread "b-slow" on s and locks its row in a
// transaction of its own, and returns the transaction and a write of the
// thread under that claim: put in a batch of s's, the write waits for the
// transaction, and holds the batch open with the batch's writes of
// threads before it (a batch takes its writes in thread order) done and
// uncommitted. The transaction's connection is closed when the test ends.
func slowWrite(t *testing.T, dsn string, s *checkpoint.Postgres) (pgx.Tx, checkpoint.Checkpoint) {
	t.Helper()
	l, err := s.Claim(context.Background(), "b-slow", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	tx := lockLease(t, dsn, "b-slow")
	t.Cleanup(func() { tx.Conn().Close(context.Background()) })
	return tx, checkpoint.Checkpoint{ThreadID: "b-slow", Seq: 1, Incarnation: l.Incarnation, Token: l.Token}
}

// claimPutBehind is behind for a ClaimPut of cp on s.
func claimPutBehind(t *testing.T, tx pgx.Tx, s *checkpoint.Postgres, cp checkpoint.Checkpoint) <-chan error {
	t.Helper()
	return behind(t, tx, "the other replica's ClaimPut", func() error {
		_, err := s.ClaimPut(context.Background(), cp, time.Minute)
		return err
	})
}

// lockLease begins a transaction on a connection of its own and locks
// thread's lease row in it (FOR UPDATE), so that a write of the thread
// waits until the transaction ends. The caller closes its connection.
func lockLease(t *testing.T, dsn, thread string) pgx.Tx {
	t.Helper()
	return lockRows(t, dsn, "SELECT 1 FROM tenxgraph_threads WHERE thread_id = $1 FOR UPDATE", thread)
}

// lockRows begins a transaction on a connection of its own and runs query
// (a SELECT ... FOR ..., of thread's rows) in it. The caller closes its
// connection.
func lockRows(t *testing.T, dsn, query, thread string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		_, err = tx.Exec(ctx, query, thread)
	}
	if err != nil {
		conn.Close(ctx)
		t.Fatal(err)
	}
	return tx
}
