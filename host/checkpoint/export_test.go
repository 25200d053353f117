package checkpoint

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// CommitPostgresBatch runs Puts of cps, and then a statement that fails
// when failing is set, as one batch of p's writer, exactly as the writer
// commits the writes that queued while it was busy. It returns each
// write's outcome (a Put that inserted nothing wraps ErrConflict), the
// failing statement's last.
func CommitPostgresBatch(p *Postgres, cps []Checkpoint, failing bool) []error {
	inserted := make([]bool, len(cps))
	reqs := postgresPuts(p, cps, inserted)
	if failing {
		reqs = append(reqs, &pgReq{ctx: context.Background(), done: make(chan error, 1), w: pgWrite{
			queue: func(b *pgx.Batch) { b.Queue(`SELECT 1 / 0`) },
			read:  func(br pgx.BatchResults) error { _, err := br.Exec(); return err },
		}})
	}
	out := make([]error, len(reqs))
	byReq := make(map[*pgReq]int, len(reqs))
	for i, r := range reqs {
		byReq[r] = i
	}
	p.writer.commit(reqs) // sorts reqs in place
	for r, i := range byReq {
		out[i] = <-r.done
		if out[i] == nil && i < len(cps) && !inserted[i] {
			out[i] = ErrConflict
		}
	}
	return out
}

// postgresPuts makes the batch writer's requests for Puts of cps; each
// sets inserted[i] to whether its checkpoint went in.
func postgresPuts(p *Postgres, cps []Checkpoint, inserted []bool) []*pgReq {
	reqs := make([]*pgReq, 0, len(cps)+1)
	for i, cp := range cps {
		args, err := pgPutArgs(cp, p.opts.keep)
		if err != nil {
			panic(err)
		}
		q, args := p.putStatement(cp, args)
		reqs = append(reqs, &pgReq{ctx: context.Background(), done: make(chan error, 1), w: pgWrite{
			thread: cp.ThreadID,
			queue:  func(b *pgx.Batch) { b.Queue(q, args...) },
			read: func(br pgx.BatchResults) error {
				var latest int64
				return br.QueryRow().Scan(&inserted[i], &latest)
			},
		}})
	}
	return reqs
}

// CommitSQLiteBatch runs Puts of cps, and then a write that inserts a log
// row of thread "half-done" and then fails, when failing is set, as one
// batch of s's writer. It returns each write's outcome (a Put whose
// condition did not hold wraps ErrConflict), the failing write's last.
func CommitSQLiteBatch(s *SQLite, cps []Checkpoint, failing bool) []error {
	var reqs []writeReq
	for _, cp := range cps {
		args, err := putArgs(&cp)
		if err != nil {
			panic(err)
		}
		reqs = append(reqs, writeReq{ctx: context.Background(), done: make(chan error, 1),
			fn: func(ctx context.Context, tx *wtx) error { return s.putTx(ctx, tx, cp, args) }})
	}
	if failing {
		reqs = append(reqs, writeReq{ctx: context.Background(), done: make(chan error, 1),
			fn: func(ctx context.Context, tx *wtx) error {
				if err := tx.sql(ctx, `INSERT INTO log (thread_id, idx, entry) VALUES ('half-done', 0, x'00')`); err != nil {
					return err
				}
				return tx.sql(ctx, `INSERT INTO log (thread_id, idx, entry) VALUES ('half-done', -1, x'00')`)
			}})
	}
	// The batch commits on the writer's connection, as one of its own.
	if err := s.send(context.Background(), writeReq{ctx: context.Background(), done: make(chan error, 1),
		alone: func(_ context.Context, w *wtx) error { s.commit(w, reqs); return nil }}); err != nil {
		panic(err)
	}
	out := make([]error, len(reqs))
	for i, r := range reqs {
		out[i] = <-r.done
		if errors.Is(out[i], errNoRow) {
			out[i] = ErrConflict
		}
	}
	return out
}

// SQLiteSchema and PostgresSchema are the statements that create a
// store's schema at version v, exactly as the release of that version did
// (shipped migrations are never edited), for tests of later migrations.
func SQLiteSchema(v int) []string   { return sqliteMigrations[:v] }
func PostgresSchema(v int) []string { return postgresMigrations[:v] }

// PostgresPut returns the statement and arguments of a Put of cp, for a
// test to run in a transaction of its own and hold it open.
func PostgresPut(cp Checkpoint) (string, []any) {
	args, err := pgPutArgs(cp, -1)
	if err != nil {
		panic(err)
	}
	return pgPut, args
}

// PostgresDropBlobs runs, in tx, what DeleteThread does to the thread's
// blobs.
func PostgresDropBlobs(ctx context.Context, tx pgx.Tx, threadID string) error {
	return pgDropBlobs(ctx, tx, threadID)
}

// EncodeNext is how the SQLite store encodes a checkpoint's Next.
func EncodeNext(next []string) (string, error) { return encodeNext(next) }

// WriteSQLite makes a write on s that calls fn inside its batch's
// transaction and writes nothing.
func WriteSQLite(ctx context.Context, s *SQLite, fn func()) error {
	return s.write(ctx, func(context.Context, *wtx) error { fn(); return nil })
}

// SQLiteQueued is how many writes wait in s's queue.
func SQLiteQueued(s *SQLite) int { return len(s.puts) }

// ClaimInPostgresBatch claims thread and then runs Puts of cps, as one
// batch of p's writer, and returns the claim's outcome and the Puts'.
func ClaimInPostgresBatch(p *Postgres, thread string, ttl time.Duration, cps []Checkpoint) (Lease, []error, error) {
	now := time.Now()
	l := Lease{ThreadID: thread, Expires: now.Add(ttl)}
	args := []any{thread, newIncarnation(), leaseMillis(now), leaseMillis(l.Expires)}
	var claimErr error
	claim := &pgReq{ctx: context.Background(), done: make(chan error, 1), w: pgWrite{
		thread: thread,
		queue:  func(b *pgx.Batch) { b.Queue(pgClaim, args...) },
		read: func(br pgx.BatchResults) error {
			err := br.QueryRow().Scan(&l.Incarnation, &l.Token, &l.Seq)
			if errors.Is(err, pgx.ErrNoRows) {
				claimErr, err = ErrLeased, nil
			}
			return err
		},
	}}
	inserted := make([]bool, len(cps))
	reqs := append([]*pgReq{claim}, postgresPuts(p, cps, inserted)...)
	all := slices.Clone(reqs)
	p.writer.commit(reqs)
	if err := <-claim.done; err != nil {
		claimErr = err
	}
	out := make([]error, len(cps))
	for i, r := range all[1:] {
		out[i] = <-r.done
		if out[i] == nil && !inserted[i] {
			out[i] = ErrConflict
		}
	}
	return l, out, claimErr
}

// The SQLite store's checkpoint sizes, for tests of its WAL.
const (
	SQLiteCheckpointEvery = checkpointEvery
	SQLiteWALBackstop     = walBackstop
)
