package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The Postgres store's writes (Put, Claim, Extend, Release) go through a
// dispatcher that commits whatever has queued up as one transaction, sent
// as one pgx.Batch (group commit, as the SQLite store does): under load
// many runs' writes share one round trip and one WAL flush, which is most
// of a write's cost. An idle store commits each write at once, alone.
//
// A write in a batch must not fail on a conflict, since an error aborts
// the transaction and so every write in it: its statements decide their
// outcome from the rows they return (a conditional INSERT ... SELECT, ON
// CONFLICT DO NOTHING, RETURNING). When a batch fails anyway (a statement's
// error, a deadlock with another replica's batch), nothing of it was
// committed, and each of its writes runs again alone, so one write's
// failure never fails the others.

// pgWriters is how many batches may be in flight at once (each on its own
// connection). Batches go one at a time while they are quick: a batch
// carries whatever queued while the one before it was in flight, so
// batches grow with the load, and each costs PostgreSQL one commit. Another
// goes alongside only when its writes fill a batch, or when the ones in
// flight have taken pgHelpAfter (a slow flush, a distant server, a write
// waiting for a row lock), so that one slow batch never holds up the
// rest. Sending every batch as soon as a connection was free made batches
// a third the size: PostgreSQL then spent 20 to 40 % more CPU per round
// trip, for fewer round trips a second (docs/benchmarks.md).
const pgWriters = 4

// pgHelpAfter is how long the batches in flight may run before another is
// sent beside them; a batch takes about 1 to 3 ms on a local server.
const pgHelpAfter = 10 * time.Millisecond

// pgMaxBatch bounds one batch, so a burst cannot hold its rows' locks for
// long.
const pgMaxBatch = 64

// pgWrite is one write for the batch writer: a sequence of statements run
// inside the batch's transaction. queue adds them to the batch; read is
// called with the batch's results once it is sent and reads theirs, in the
// order queued, into variables the write's caller then interprets. read
// returns an error only for a statement that failed (the server's error,
// which rolls back the whole batch, or a broken connection), never for an
// outcome such as a conflict. Both may run twice (the batch, then alone).
//
// All statements are sent before any result is read, so a statement that
// must happen only if an earlier one of the same write did says so in SQL
// (WHERE EXISTS on the row the earlier one wrote, or one statement with
// data-modifying CTEs); the transaction makes the write's statements
// atomic.
type pgWrite struct {
	// thread is the thread whose rows the write touches: a batch takes
	// its writes in thread order, so two batches lock rows in one order
	// and do not deadlock over them.
	thread string
	queue  func(b *pgx.Batch)
	read   func(br pgx.BatchResults) error
}

// pgReq is a write waiting for a writer.
type pgReq struct {
	ctx  context.Context
	w    pgWrite
	err  error // read's result in the current attempt
	done chan error
}

var errPostgresClosed = errors.New("the store is closed")

// pgBatcher is the Postgres store's batch writer: its dispatcher and
// the batches in flight, on connections of the store's pool.
type pgBatcher struct {
	pool    *pgxpool.Pool
	writes  chan *pgReq
	stop    chan struct{}
	writers sync.WaitGroup
}

// start starts the batch dispatcher on pool's connections; stop stops it.
func (bw *pgBatcher) start(pool *pgxpool.Pool) {
	bw.pool, bw.writes, bw.stop = pool, make(chan *pgReq), make(chan struct{})
	bw.writers.Go(bw.dispatch)
}

// close stops the dispatcher and waits for the batches in flight; writes
// still waiting for a writer fail.
func (bw *pgBatcher) close() {
	close(bw.stop)
	bw.writers.Wait()
}

// write hands w to a writer and waits for its outcome. ctx bounds the wait
// for a writer; once one has taken w, write waits for the server's answer
// even if ctx ends meanwhile, so a caller never believes a write failed
// that the server committed.
func (bw *pgBatcher) write(ctx context.Context, w pgWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &pgReq{ctx: ctx, w: w, done: make(chan error, 1)}
	select {
	case bw.writes <- r:
		return <-r.done
	case <-ctx.Done():
		return ctx.Err()
	case <-bw.stop:
		return errPostgresClosed
	}
}

// dispatch gathers writes into batches and commits each on a goroutine of
// its own (see pgWriters for when). The channel is unbuffered, so a queued
// write is one whose sender is blocked in write; a full batch stops taking
// writes until it is sent. When the store closes, writes gathered but not
// sent are answered errPostgresClosed (nothing of them was written), and
// the batches in flight finish (Close waits for them).
func (bw *pgBatcher) dispatch() {
	var (
		batch    = make([]*pgReq, 0, pgMaxBatch)
		inflight int
		done     = make(chan struct{}, pgWriters)
		timer    = time.NewTimer(pgHelpAfter)
		overdue  bool // the batches in flight have run past pgHelpAfter
	)
	timer.Stop()
	for {
		if len(batch) > 0 && inflight < pgWriters && (inflight == 0 || overdue || len(batch) == pgMaxBatch) {
			b := batch
			batch = make([]*pgReq, 0, pgMaxBatch)
			inflight++
			overdue = false
			timer.Reset(pgHelpAfter)
			bw.writers.Go(func() {
				bw.commit(b)
				done <- struct{}{}
			})
			continue
		}
		var writes chan *pgReq
		if len(batch) < pgMaxBatch {
			writes = bw.writes
		}
		select {
		case <-bw.stop:
			timer.Stop()
			for _, r := range batch {
				r.done <- errPostgresClosed
			}
			return
		case r := <-writes:
			batch = append(batch, r)
		fill: // and whatever else is queued, so that it goes in this batch
			for len(batch) < pgMaxBatch {
				select {
				case r := <-bw.writes:
					batch = append(batch, r)
				default:
					break fill
				}
			}
		case <-done:
			inflight--
		case <-timer.C:
			overdue = inflight > 0
		}
	}
}

// commit runs a batch and answers every write in it.
func (bw *pgBatcher) commit(batch []*pgReq) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err // not started: nothing written
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	slices.SortStableFunc(live, func(a, b *pgReq) int { return strings.Compare(a.w.thread, b.w.thread) })
	err, rolledBack := bw.runBatch(live)
	if err != nil && rolledBack && len(live) > 1 {
		// Nothing was committed: run each write alone, so the one that
		// failed (or a deadlock between batches) fails no other.
		for _, r := range live {
			err, _ := bw.runBatch([]*pgReq{r})
			r.done <- firstErr(r.err, err)
		}
		return
	}
	for _, r := range live {
		if err != nil {
			// Alone and rolled back: the write's own error says most. Not
			// known to be rolled back: every write's outcome is unknown.
			r.done <- firstErr(r.err, err)
			continue
		}
		r.done <- nil
	}
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// runBatch sends the writes as one pgx.Batch, which PostgreSQL runs as one
// implicit transaction (the batch ends with a single Sync): one round trip,
// one commit. It sets each write's err and returns the batch's error, if
// any, and whether the transaction is known not to have committed (so the
// writes can run again).
func (bw *pgBatcher) runBatch(reqs []*pgReq) (err error, rolledBack bool) {
	// The writes are already taken: finish them whatever their callers'
	// contexts do.
	ctx := context.Background()
	conn, err := bw.pool.Acquire(ctx)
	if err != nil {
		for _, r := range reqs {
			r.err = nil
		}
		return fmt.Errorf("acquire connection: %w", err), true
	}
	defer conn.Release()

	var b pgx.Batch
	for _, r := range reqs {
		r.w.queue(&b)
	}
	br := conn.SendBatch(ctx, &b)
	for _, r := range reqs {
		r.err = r.w.read(br)
		err = firstErr(err, r.err)
	}
	if cerr := br.Close(); cerr != nil {
		err = firstErr(err, cerr)
	}
	if err == nil {
		return nil, false
	}
	// The server's error for any statement aborts the transaction; an
	// error before anything was sent leaves nothing to abort. Anything
	// else (the connection broke) leaves the outcome unknown: Latest
	// tells.
	var pe *pgconn.PgError
	rolledBack = errors.As(err, &pe) || pgconn.SafeToRetry(err)
	for _, r := range reqs {
		rolledBack = rolledBack || errors.As(r.err, &pe)
	}
	return err, rolledBack
}
