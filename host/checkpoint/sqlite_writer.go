package checkpoint

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"
)

// The SQLite store's writes are made by one writer at a time, the holder
// of the write connection's turn (see send), which commits whatever writes
// have queued up as one transaction (group commit).
//
// The connection is held as the driver has it (sql.Conn.Raw), and its
// statements, prepared once, run through the driver's interfaces: a busy
// server's writer runs about 15 statements per round trip, and database/sql
// added its bookkeeping to each, and to each transaction a goroutine to
// roll it back on cancellation (plus the driver's, to interrupt it) that a
// writer whose transactions are never cancelled does not need.

// maxBatch bounds one group commit, so a burst cannot hold the write lock
// for long.
const maxBatch = 64

// busyBatches is how many batches in a row must each carry a single
// write before the writer stops gathering (see gather): a busy store's
// batches now and then carry one, and stopping at the first made its
// commits carry a quarter fewer writes.
const busyBatches = 64

// maxYields bounds how many turns gather gives up before a batch.
const maxYields = 8

// checkpointEvery is how many writes the writer commits between two
// nudges to the checkpointer: a write adds about three pages to the WAL,
// so a checkpoint copies about a thousand, SQLite's own default.
const checkpointEvery = 300

// walBackstop is the WAL's length, in pages, past which the checkpointer
// has the writer finish its copy. SQLite starts the WAL over only when a
// write begins with all of it copied into the file, which a store written
// without pause never sees: the checkpointer's copies run beside the
// writes. The writer's own copy, of the few pages written since the
// checkpointer's, made while it holds the write turn and no checkpoint of
// this process runs beside it, lets the next write start the WAL over, so
// it stays under about 16 MB. At four times this
// length the writer copies it after a commit of its own accord (SQLite's
// wal_autocheckpoint), in case the checkpointer cannot.
const walBackstop = 4000

// writeReq is a write (a Put, a lease change) waiting for the writer.
type writeReq struct {
	ctx context.Context
	// fn makes the write inside the batch's transaction; if it fails, what
	// it wrote is rolled back and the rest of the batch commits.
	fn func(ctx context.Context, tx *wtx) error
	// alone, instead of fn, runs on the write connection outside any
	// transaction, in a batch of its own (VACUUM).
	alone func(ctx context.Context, c *wtx) error
	done  chan error
}

// wstmt names one of the writer's statements.
type wstmt int

const (
	wPut wstmt = iota
	wTouch
	wTouchAt
	wPrune
	wDelete
	wDeleteLog
	wDeleteLease
	wClaim
	wClaimed
	wClaimable
	wExtend
	wRelease
	wIdle
	wBlob
	wLink
	wDeleteBlobs
	wDeleteLinks
	// wAppend+k-1 appends k log entries, for k up to maxAppendRows (see
	// sqlAppendRows).
	wAppend
	nWstmt = wAppend + maxAppendRows
)

var wstmtSQL = func() [nWstmt]string {
	q := [nWstmt]string{
		wPut:         sqlPut,
		wTouch:       sqlTouch,
		wTouchAt:     sqlTouchAt,
		wPrune:       sqlPrune,
		wDelete:      sqlDelete,
		wDeleteLog:   sqlDeleteLog,
		wDeleteLease: sqlDeleteLease,
		wClaim:       sqlClaim,
		wClaimed:     sqlClaimed,
		wClaimable:   sqlClaimable,
		wExtend:      sqlExtend,
		wRelease:     sqlRelease,
		wIdle:        sqlIdle,
		wBlob:        sqlBlob,
		wLink:        sqlLink,
		wDeleteBlobs: sqlDeleteBlobs,
		wDeleteLinks: sqlDeleteLinks,
	}
	for k := 1; k <= maxAppendRows; k++ {
		q[wAppend+wstmt(k-1)] = sqlAppendRows(k)
	}
	return q
}()

// wtx is the writer's connection, with its statements prepared; a write's
// fn uses it inside the batch's transaction. Only the holder of the turn
// (see send) touches it.
type wtx struct {
	conn  driver.Conn
	stmts [nWstmt]driver.Stmt
	args  []driver.NamedValue // reused between statements
	vals  []any               // a statement's arguments, built by the caller and reused
	// results are commitTx's, reused between commits: its caller reads
	// them before the next.
	results []error
	batch   []writeReq // writeBatch's, reused between batches
	// busy counts down the batches since one last shared its commit:
	// while it is above 0 the store is taken to be busy (see gather).
	busy int
	// written counts the writes committed since the checkpointer's last
	// nudge (see checkpointEvery).
	written int
}

// The driver interfaces the writer needs of a connection and its statements
// (modernc.org/sqlite has them all).
type (
	wdriverConn interface {
		driver.Conn
		driver.ConnBeginTx
		driver.ConnPrepareContext
		driver.ExecerContext
		driver.QueryerContext
	}
	wdriverStmt interface {
		driver.Stmt
		driver.StmtExecContext
		driver.StmtQueryContext
	}
)

// newWtx prepares the writer's statements on dc, a driver connection.
func newWtx(ctx context.Context, dc any) (*wtx, error) {
	c, ok := dc.(wdriverConn)
	if !ok {
		return nil, fmt.Errorf("the SQLite driver's connection (%T) lacks the context methods the writer uses", dc)
	}
	w := &wtx{conn: c}
	for i, q := range wstmtSQL {
		st, err := c.PrepareContext(ctx, q)
		if err != nil {
			w.close()
			return nil, fmt.Errorf("prepare: %w", err)
		}
		if _, ok := st.(wdriverStmt); !ok {
			st.Close()
			w.close()
			return nil, fmt.Errorf("the SQLite driver's statement (%T) lacks the context methods the writer uses", st)
		}
		w.stmts[i] = st
	}
	return w, nil
}

func (w *wtx) close() {
	for _, st := range w.stmts {
		if st != nil {
			st.Close()
		}
	}
}

// named converts args as database/sql would (an int becomes an int64),
// into a slice reused by the next statement.
func (w *wtx) named(args []any) ([]driver.NamedValue, error) {
	w.args = w.args[:0]
	for i, a := range args {
		v, err := driver.DefaultParameterConverter.ConvertValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		w.args = append(w.args, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	return w.args, nil
}

// run runs a statement and returns how many rows it changed.
func (w *wtx) run(ctx context.Context, st wstmt, args ...any) (int64, error) {
	nv, err := w.named(args)
	if err != nil {
		return 0, err
	}
	res, err := w.stmts[st].(wdriverStmt).ExecContext(ctx, nv)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// exec runs a statement that must change a row (errNoRow when it did not).
func (w *wtx) exec(ctx context.Context, st wstmt, args ...any) error {
	n, err := w.run(ctx, st, args...)
	if err == nil && n == 0 {
		err = errNoRow
	}
	return err
}

// query runs a statement and calls each with every row it returns; the
// row's values are valid only during the call.
func (w *wtx) query(ctx context.Context, st wstmt, args []any, each func(row []driver.Value) error) error {
	nv, err := w.named(args)
	if err != nil {
		return err
	}
	rows, err := w.stmts[st].(wdriverStmt).QueryContext(ctx, nv)
	if err != nil {
		return err
	}
	return eachRow(rows, each)
}

// row runs a statement returning one row into dest (errNoRow for none).
func (w *wtx) row(ctx context.Context, st wstmt, args []any, dest ...any) error {
	found := false
	err := w.query(ctx, st, args, func(row []driver.Value) error {
		if found {
			return nil
		}
		found = true
		if len(row) != len(dest) {
			return fmt.Errorf("the statement returned %d columns, not %d", len(row), len(dest))
		}
		for i, v := range row {
			if err := assign(dest[i], v); err != nil {
				return fmt.Errorf("column %d: %w", i+1, err)
			}
		}
		return nil
	})
	if err == nil && !found {
		err = errNoRow
	}
	return err
}

// claim takes the lease of args' thread (sqlClaim's arguments) into l, or
// returns errNoRow when another holds it.
func (w *wtx) claim(ctx context.Context, args []any, l *Lease) error {
	if err := w.exec(ctx, wClaim, args...); err != nil {
		return err
	}
	if err := w.row(ctx, wClaimed, args[:1], &l.Incarnation, &l.Token, &l.Seq); err != nil {
		return fmt.Errorf("read the claim: %w", noRowFails(err))
	}
	return nil
}

// sql runs a statement given as text (a PRAGMA, VACUUM), prepared for this
// once.
func (w *wtx) sql(ctx context.Context, q string) error {
	_, err := w.conn.(wdriverConn).ExecContext(ctx, q, nil)
	return err
}

// sqlInt runs a statement given as text that returns one row, and returns
// the integer in its first column (PRAGMA auto_vacuum's mode, a
// checkpoint's busy flag).
func (w *wtx) sqlInt(ctx context.Context, q string) (int64, error) {
	rows, err := w.conn.(wdriverConn).QueryContext(ctx, q, nil)
	if err != nil {
		return 0, err
	}
	var n int64
	found := false
	err = eachRow(rows, func(row []driver.Value) error {
		if found || len(row) == 0 {
			return fmt.Errorf("%s: want one row", q)
		}
		found = true
		return assign(&n, row[0])
	})
	if err == nil && !found {
		err = fmt.Errorf("%s: no row", q)
	}
	return n, err
}

func eachRow(rows driver.Rows, each func(row []driver.Value) error) (err error) {
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	row := make([]driver.Value, len(rows.Columns()))
	for {
		if err := rows.Next(row); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := each(row); err != nil {
			return err
		}
	}
}

// assign stores a column's value in dest, a *string or an *int64: the
// types of the writer's results.
func assign(dest any, v driver.Value) error {
	switch d := dest.(type) {
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		}
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}

// errNoRow: a write's condition did not hold (a Put's seq or lease, a
// claim of a leased thread); the caller says which.
var errNoRow = errors.New("no row written")

var errSQLiteClosed = errors.New("the store is closed")

// startWriter opens the writer's connection, hands out its turn and
// returns once its statements are prepared.
func (s *SQLite) startWriter() error {
	s.puts, s.turn = make(chan writeReq, maxBatch), make(chan *wtx, 1)
	s.stop, s.stopped = make(chan struct{}), make(chan struct{})
	s.ckWake, s.ckStopped = make(chan struct{}, 1), make(chan struct{})
	go s.checkpointer()
	ready := make(chan error, 1)
	go s.holdConn(ready)
	return <-ready
}

// checkpointer copies the WAL's pages into the database file (a PASSIVE
// checkpoint, which waits for no reader or writer) each time the writer
// nudges it, until the store closes. It runs beside the writes, on its
// own connection, so that a write does not wait for the copy and its two
// fsyncs: with the writer making every checkpoint after its commit, the
// fsyncs were a fifth of an embedded round trip's time. When the WAL has
// grown past walBackstop, it then has the writer copy the rest (a RESTART
// checkpoint, which also waits for readers to leave the WAL), taking the
// write turn for it as a write does, so the next write starts the WAL
// over. A checkpoint that fails, or finds another under way (another
// process's), is left to the next nudge.
func (s *SQLite) checkpointer() {
	defer close(s.ckStopped)
	for {
		select {
		case <-s.ckWake:
		case <-s.stop:
			return
		}
		var busy, pages, copied int64
		if s.ck.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &pages, &copied) != nil || pages < walBackstop {
			continue
		}
		_ = s.send(context.Background(), writeReq{ctx: context.Background(), done: make(chan error, 1), //nolint:errcheck // see above
			alone: func(ctx context.Context, c *wtx) error { return c.sql(ctx, "PRAGMA wal_checkpoint(RESTART)") }})
	}
}

// truncateWAL copies the whole WAL into the database file and empties it
// (a TRUNCATE checkpoint), on c, the writer's connection. SQLite refuses at
// once, with no wait, a checkpoint while another is under way (the
// checkpointer's, which takes milliseconds), so it tries again for up to a
// second. A reader holding an old snapshot keeps the WAL from being
// emptied, as it always has (SQLite waits for it under busy_timeout first):
// the WAL is then left as it is, to be reused, and Compact frees what it
// can.
func truncateWAL(ctx context.Context, c *wtx) error {
	const q = "PRAGMA wal_checkpoint(TRUNCATE)"
	deadline := time.Now().Add(time.Second)
	for {
		busy, err := c.sqlInt(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
		if busy == 0 || time.Now().After(deadline) {
			return nil
		}
		if err := sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
}

// holdConn holds the write connection as the driver has it (sql.Conn.Raw)
// for the store's life: it prepares the writer's statements and hands out
// the turn (see send); at Close it takes the turn back, once the write in
// progress has passed it on, fails what is still queued and closes the
// connection.
func (s *SQLite) holdConn(ready chan<- error) {
	defer close(s.stopped)
	ctx := context.Background()
	conn, err := s.w.Conn(ctx)
	if err != nil {
		ready <- fmt.Errorf("connect the writer: %w", err)
		return
	}
	defer conn.Close()
	started := false
	err = conn.Raw(func(dc any) error {
		w, err := newWtx(ctx, dc)
		if err != nil {
			return err
		}
		defer w.close()
		started = true
		s.turn <- w
		ready <- nil
		<-s.stop
		<-s.turn
		for {
			select {
			case r := <-s.puts:
				r.done <- errSQLiteClosed
			default:
				return nil
			}
		}
	})
	if !started {
		ready <- err
	}
}

// writeBatch commits first and whatever queued behind it, up to maxBatch,
// as one transaction; a write to run alone runs on its own after it.
func (s *SQLite) writeBatch(w *wtx, first writeReq) {
	if first.alone != nil {
		s.runAlone(w, first)
		return
	}
	if w.busy > 0 || len(s.puts) > 0 {
		s.gather()
	}
	batch := append(w.batch[:0], first)
	var alone *writeReq
fill:
	for len(batch) < maxBatch {
		select {
		case r := <-s.puts:
			if r.alone != nil {
				alone = &r
				break fill
			}
			batch = append(batch, r)
		default:
			break fill
		}
	}
	s.commit(w, batch)
	if len(batch) > 1 {
		w.busy = busyBatches
	} else if w.busy > 0 {
		w.busy--
	}
	if w.written += len(batch); w.written >= checkpointEvery {
		w.written = 0
		select {
		case s.ckWake <- struct{}{}:
		default: // the checkpointer has a nudge waiting already
		}
	}
	clear(batch) // keeps no write's closure alive
	w.batch = batch[:0]
	if alone != nil {
		s.runAlone(w, *alone)
	}
}

// gather lets writes that are about to be sent join the batch: it yields
// the writer's turn (runtime.Gosched) for as long as the queue keeps
// growing, since runnable goroutines are likely runs on their way to a
// write. A busy server's commit then carries about 21 writes instead of 4,
// and a commit is most of a write's cost. (gRPC's writer yields the same
// way before it flushes.) writeBatch gathers only when the store is busy:
// others queued, or a batch shared its commit in the last busyBatches. A
// yield is not free when a processor is idle: the runtime wakes a thread
// to take the yielded turn (a futex call), which cost a lone writer a
// fifth of its CPU (docs/benchmarks.md).
func (s *SQLite) gather() {
	for n, i := len(s.puts), 0; n+1 < maxBatch && i < maxYields; i++ {
		runtime.Gosched()
		m := len(s.puts)
		if m == n {
			return
		}
		n = m
	}
}

func (s *SQLite) runAlone(w *wtx, r writeReq) {
	answered := false
	defer failOnPanic(func() []writeReq {
		if answered {
			return nil
		}
		return []writeReq{r}
	})
	err := r.ctx.Err()
	if err == nil {
		err = r.alone(r.ctx, w)
	}
	r.done <- err
	answered = true
}

// failOnPanic, deferred where writes are made, lets a write that panics (a
// bug) still panic, but first answers the writes unanswered returns with
// an error, so that, if the panic is recovered (net/http recovers a
// handler's), no caller waits for an answer that will never come.
func failOnPanic(unanswered func() []writeReq) {
	if p := recover(); p != nil {
		for _, r := range unanswered() {
			r.done <- fmt.Errorf("checkpoint: a write panicked: %v", p)
		}
		panic(p)
	}
}

// write hands one write to the writer and waits for it.
func (s *SQLite) write(ctx context.Context, fn func(context.Context, *wtx) error) error {
	done := doneChans.Get().(chan error)
	err := s.send(ctx, writeReq{ctx: ctx, fn: fn, done: done})
	doneChans.Put(done) // empty: send received its answer, or it was never answered and never will be
	return err
}

// doneChans are writes' answer channels, reused: a round trip makes six
// writes.
var doneChans = sync.Pool{New: func() any { return make(chan error, 1) }}

// send queues req, then waits for its answer or for the writer's turn,
// whichever comes first. The turn is the write connection, passed from
// write to write through s.turn: with it, send commits what has queued, a
// batch at a time, until its own write is answered, and passes the turn
// on. An idle store's write is so made on its caller's goroutine, with no
// hand-off to another and back, and a busy store's writes still share
// their commits, made by whichever caller holds the turn. Every queued
// write's caller waits for the turn, so a write queued just as the holder
// passed it on is not left behind. The turn is held across the commit's
// I/O: SQLite has one writer, and the turn is that writer.
func (s *SQLite) send(ctx context.Context, req writeReq) error {
	select {
	case s.puts <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stop:
		return errSQLiteClosed
	}
	for {
		select {
		case err := <-req.done:
			return err
		case w := <-s.turn:
			if answered, err := s.writeUntil(w, req.done); answered {
				return err
			}
		case <-s.stopped:
			select {
			case err := <-req.done:
				return err
			default:
				return errSQLiteClosed
			}
		}
	}
}

// writeUntil commits queued writes, a batch at a time, until the one
// answered on done is, and returns its answer; then it passes the turn
// on. Holding the turn, that write is either answered or still queued:
// whoever took it into a batch answered it before passing the turn on.
func (s *SQLite) writeUntil(w *wtx, done chan error) (bool, error) {
	defer func() { s.turn <- w }() // passed on even when a write panics: see commit
	for {
		select {
		case err := <-done:
			return true, err
		default:
		}
		select {
		case r := <-s.puts:
			s.writeBatch(w, r)
		default:
			return false, nil
		}
	}
}

// commit writes a batch in one transaction. Each write decides its own
// outcome, later ones in the batch seeing earlier ones: one whose condition
// does not hold (errNoRow) has written nothing, since every write's first
// statement is its conditional one, and the others commit. A write failing
// otherwise may have written part of itself, so the transaction is rolled
// back and each write of the batch runs again in one of its own: no write
// fails for another's sake, and none is half done.
func (s *SQLite) commit(w *wtx, batch []writeReq) {
	live := batch[:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		live = append(live, r)
	}
	answered := 0 // live[:answered] have their answers
	defer failOnPanic(func() []writeReq { return live[answered:] })
	if len(live) == 0 {
		return
	}
	results, err := commitTx(w, live)
	if err != nil && len(live) > 1 {
		for _, r := range live {
			res, err := commitTx(w, []writeReq{r})
			if err == nil {
				err = res[0]
			}
			r.done <- err
			answered++
		}
		return
	}
	for i, r := range live {
		if err != nil {
			r.done <- err
		} else {
			r.done <- results[i]
		}
		answered++
	}
}

// commitTx runs writes in one transaction and returns each one's outcome;
// the error is the transaction's (a write that failed other than by
// errNoRow fails it, and nothing is committed). The writes run with no
// deadline: a write handed to the writer is finished, so that its caller
// never believes a write failed that in fact happened.
func commitTx(w *wtx, writes []writeReq) ([]error, error) {
	ctx := context.Background()
	tx, err := w.conn.(wdriverConn).BeginTx(ctx, driver.TxOptions{}) // BEGIN IMMEDIATE: _txlock on the writer
	if err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			tx.Rollback() //nolint:errcheck // the transaction's error is what matters
		}
	}()
	results := w.results[:0]
	for range writes {
		results = append(results, nil)
	}
	w.results = results // the writer's own, reused by the next commit
	wrote := false
	for i, r := range writes {
		results[i] = r.fn(ctx, w)
		switch {
		case results[i] == nil:
			wrote = true
		case !errors.Is(results[i], errNoRow):
			return nil, results[i]
		}
	}
	if !wrote {
		return results, nil // nothing to commit: the rollback ends it
	}
	committed = true // a failed COMMIT is rolled back by the driver
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return results, nil
}
