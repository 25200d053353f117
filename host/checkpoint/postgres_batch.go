package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The Postgres store's writes (Put, Claim, Extend, Release) go through
// pgWriters writer goroutines that commit whatever has queued up as one
// transaction, sent as one pgx.Batch (group commit, as the SQLite store
// does): under load many runs' writes share one round trip and one WAL
// flush, which is most of a write's cost. An idle store commits each write
// at once, alone.
//
// A write in a batch must not fail on a conflict, since an error aborts
// the transaction and so every write in it: its statements decide their
// outcome from the rows they return (a conditional INSERT ... SELECT, ON
// CONFLICT DO NOTHING, RETURNING). When a batch fails anyway (a statement's
// error, a deadlock with another replica's batch), nothing of it was
// committed, and each of its writes runs again alone, so one write's
// failure never fails the others.

// pgWriters is how many batches may be in flight at once (each on its own
// connection). One would serialise every write behind one round trip and
// one flush; a few keep the server busy while a batch waits for its flush,
// and each still carries whatever queued meanwhile. More made smaller
// batches that cost the server more CPU for no more throughput
// (docs/benchmarks.md).
const pgWriters = 4

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

// startWriters starts the writer goroutines; Close stops them.
func (p *Postgres) startWriters() {
	p.writes, p.stop = make(chan *pgReq), make(chan struct{})
	for range pgWriters {
		p.writers.Go(p.writer)
	}
}

// write hands w to a writer and waits for its outcome. ctx bounds the wait
// for a writer; once one has taken w, write waits for the server's answer
// even if ctx ends meanwhile, so a caller never believes a write failed
// that the server committed.
func (p *Postgres) write(ctx context.Context, w pgWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &pgReq{ctx: ctx, w: w, done: make(chan error, 1)}
	select {
	case p.writes <- r:
		return <-r.done
	case <-ctx.Done():
		return ctx.Err()
	case <-p.stop:
		return errPostgresClosed
	}
}

// writer commits batches: each is whatever queued while the writers were
// busy. The channel is unbuffered, so a queued write is one whose sender
// is blocked in write, and none is left behind when the writers stop.
func (p *Postgres) writer() {
	batch := make([]*pgReq, 0, pgMaxBatch)
	for {
		select {
		case <-p.stop:
			return
		case r := <-p.writes:
			batch = append(batch[:0], r)
		fill:
			for len(batch) < pgMaxBatch {
				select {
				case r := <-p.writes:
					batch = append(batch, r)
				default:
					break fill
				}
			}
			p.commit(batch)
		}
	}
}

// commit runs a batch and answers every write in it.
func (p *Postgres) commit(batch []*pgReq) {
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
	err, rolledBack := p.runBatch(live)
	if err != nil && rolledBack && len(live) > 1 {
		// Nothing was committed: run each write alone, so the one that
		// failed (or a deadlock between batches) fails no other.
		for _, r := range live {
			err, _ := p.runBatch([]*pgReq{r})
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
func (p *Postgres) runBatch(reqs []*pgReq) (err error, rolledBack bool) {
	// The writes are already taken: finish them whatever their callers'
	// contexts do.
	ctx := context.Background()
	conn, err := p.pool.Acquire(ctx)
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
	// else (the connection broke) leaves the outcome unknown: Latest or
	// LatestSeq tells.
	var pe *pgconn.PgError
	rolledBack = errors.As(err, &pe) || pgconn.SafeToRetry(err)
	for _, r := range reqs {
		rolledBack = rolledBack || errors.As(r.err, &pe)
	}
	return err, rolledBack
}
