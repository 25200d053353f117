package checkpoint

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteSchemaVersion is the schema this build writes, kept in the
// database's PRAGMA user_version. It is len(sqliteMigrations).
const sqliteSchemaVersion = 8

// sqliteMigrations[i] moves a database from schema version i to i+1. Append
// to it (never edit an entry that has shipped) and the version follows.
var sqliteMigrations = [...]string{
	// 0 -> 1: the checkpoint log. A rowid table rather than WITHOUT ROWID,
	// because State can be megabytes and WITHOUT ROWID suits small rows; the
	// primary key's index serves every lookup (thread_id = ? ORDER BY seq).
	`CREATE TABLE checkpoints (
		thread_id  TEXT    NOT NULL,
		seq        INTEGER NOT NULL CHECK (seq >= 1),
		run_id     TEXT    NOT NULL,
		step       INTEGER NOT NULL,
		status     TEXT    NOT NULL,
		next       TEXT    NOT NULL, -- JSON array of node names
		state      BLOB    NOT NULL,
		metadata   TEXT    NOT NULL, -- JSON object of strings
		created_at INTEGER NOT NULL, -- unix nanoseconds, UTC
		PRIMARY KEY (thread_id, seq)
	)`,
	// 1 -> 2: every checkpoint names its thread's incarnation (see Lease);
	// those written before leases belong to incarnation "".
	`ALTER TABLE checkpoints ADD COLUMN incarnation TEXT NOT NULL DEFAULT ''`,
	// 2 -> 3: the incarnation and lease of every thread ever claimed.
	// lease_until is unix milliseconds, 0 once released.
	`CREATE TABLE threads (
		thread_id   TEXT    NOT NULL PRIMARY KEY,
		incarnation TEXT    NOT NULL,
		token       INTEGER NOT NULL,
		lease_until INTEGER NOT NULL
	) WITHOUT ROWID`,
	// 3 -> 4: the threads written before leases are incarnation "", never
	// claimed.
	`INSERT INTO threads (thread_id, incarnation, token, lease_until)
	SELECT DISTINCT thread_id, '', 0, 0 FROM checkpoints`,
	// 4 -> 5: each thread's log (see Checkpoint.Log) beside its
	// checkpoints; a checkpoint records the log's length at it (0 in the
	// checkpoints written before, whose state holds everything). A
	// thread's row records its latest checkpoint's wake_at (for Due) and
	// when it was last written (touched_at, for DeleteIdle), both unix
	// milliseconds; the threads written before are touched at their
	// latest checkpoint. The log is clustered by its key (WITHOUT ROWID):
	// a thread's entries are read in key order, and most are small (a
	// message), so storing the key once beats a rowid table and its index;
	// a large entry spills to overflow pages either way.
	`ALTER TABLE checkpoints ADD COLUMN log_len INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE checkpoints ADD COLUMN wake_at INTEGER NOT NULL DEFAULT 0;
	CREATE TABLE log (
		thread_id TEXT    NOT NULL,
		idx       INTEGER NOT NULL CHECK (idx >= 0),
		entry     BLOB    NOT NULL,
		PRIMARY KEY (thread_id, idx)
	) WITHOUT ROWID;
	ALTER TABLE threads ADD COLUMN wake_at INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE threads ADD COLUMN touched_at INTEGER NOT NULL DEFAULT 0;
	UPDATE threads SET touched_at = COALESCE((SELECT MAX(created_at) FROM checkpoints c WHERE c.thread_id = threads.thread_id), 0) / 1000000;
	CREATE INDEX threads_wake ON threads (wake_at) WHERE wake_at > 0;
	CREATE INDEX threads_touched ON threads (touched_at)`,
	// 5 -> 6: threads are kept per tenant (see ThreadKey). A thread
	// written before had its tenant, the API token that created it, in its
	// metadata ("owner"); it moves to that tenant's key, with its log and
	// its row. The rest keep their keys (the tenant "").
	sqliteTenancy,
	// 6 -> 7: the blobs messages refer to (see Blob), once per content,
	// and which threads hold each. A blob is a rowid table's row, its
	// bytes in overflow pages; a link is small and clustered by thread
	// (WITHOUT ROWID), with an index by blob for the delete of a thread's
	// last holder. Sizes are bytes, pixels are 0 for what is not an image.
	`CREATE TABLE blobs (
		ref       TEXT    NOT NULL PRIMARY KEY, -- "sha256:" and the hex digest of data
		mime_type TEXT    NOT NULL,
		size      INTEGER NOT NULL CHECK (size >= 0),
		width     INTEGER NOT NULL,
		height    INTEGER NOT NULL,
		data      BLOB    NOT NULL
	);
	CREATE TABLE blob_links (
		thread_id TEXT NOT NULL,
		ref       TEXT NOT NULL,
		PRIMARY KEY (thread_id, ref)
	) WITHOUT ROWID;
	CREATE INDEX blob_links_ref ON blob_links (ref)`,
	// 7 -> 8: a checkpoint keeps the log entries it appends in its own
	// row (entries, see encodeEntries; NULL for none) for as long as it is
	// kept; when KeepHistory drops it, the same write moves them into the
	// log table, which also keeps every entry written before this version
	// (the migration moves nothing). A write so adds one row, at the
	// checkpoints' end, instead of one more per entry in its thread's
	// place in the log's tree, whose leaves filled and were rebalanced
	// every few writes. A read takes a thread's log from both, by index.
	`ALTER TABLE checkpoints ADD COLUMN entries BLOB`,
}

// sqliteTenancy is the migration that moves each thread whose latest
// checkpoint names an owner to the key ThreadKey(owner, id). The moves are
// listed first, so that every table moves by the same list.
const sqliteTenancy = `CREATE TEMP TABLE tenancy_moves (old TEXT NOT NULL PRIMARY KEY, new TEXT NOT NULL);
	INSERT INTO tenancy_moves (old, new)
	SELECT c.thread_id, json_extract(c.metadata, '$.owner') || char(31) || c.thread_id
	FROM checkpoints c
	WHERE c.seq = (SELECT MAX(seq) FROM checkpoints WHERE thread_id = c.thread_id)
	AND json_type(c.metadata, '$.owner') = 'text' AND json_extract(c.metadata, '$.owner') <> '';
	UPDATE checkpoints SET thread_id = (SELECT new FROM tenancy_moves WHERE old = thread_id) WHERE thread_id IN (SELECT old FROM tenancy_moves);
	UPDATE log SET thread_id = (SELECT new FROM tenancy_moves WHERE old = thread_id) WHERE thread_id IN (SELECT old FROM tenancy_moves);
	UPDATE threads SET thread_id = (SELECT new FROM tenancy_moves WHERE old = thread_id) WHERE thread_id IN (SELECT old FROM tenancy_moves);
	DROP TABLE tenancy_moves`

// sqliteBusyTimeout is how long a connection waits for another writer (in
// this process or another) before failing with "database is locked".
const sqliteBusyTimeout = 5 * time.Second

// The statements, each prepared once per store.
const (
	// Put is a single INSERT that writes only when seq is the thread's
	// latest plus one. As one statement in autocommit mode it takes the
	// write lock before it reads, so the check and the insert are one
	// atomic transaction with BEGIN IMMEDIATE semantics, and it waits under
	// busy_timeout rather than failing when another connection is writing.
	//
	// It also checks the lease (see Leaser): an unleased write (token 0)
	// only on a thread never claimed (token 0 in its row, or no row), a
	// leased one only with the thread's current token; the incarnation
	// must be the thread's.
	//
	// When a check fails, the row's seq is NULL, and OR IGNORE skips a row
	// that breaks a constraint: it is the only one this row can break,
	// since putArgs binds every other column non-NULL and a seq that is the
	// latest plus one is at least 1 and not yet taken. (An INSERT ... SELECT
	// ... WHERE, as it was, reads the table it inserts into, so SQLite
	// first copied its row into a temporary table: a third of the
	// statement's cost.)
	//
	// It records the log's length after the checkpoint: the previous
	// checkpoint's plus ?12, the entries appended, which the row keeps
	// (?14, encoded).
	sqlPut = `INSERT OR IGNORE INTO checkpoints
		(thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at, entries)
	VALUES (?1,
		CASE WHEN (SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE thread_id = ?1) = ?2 - 1
		AND CASE WHEN ?11 = 0 THEN NOT EXISTS (SELECT 1 FROM threads WHERE thread_id = ?1 AND (token <> 0 OR incarnation <> ?10))
			ELSE EXISTS (SELECT 1 FROM threads WHERE thread_id = ?1 AND token = ?11 AND incarnation = ?10) END
		THEN ?2 END,
		?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,
		COALESCE((SELECT log_len FROM checkpoints WHERE thread_id = ?1 AND seq = ?2 - 1), 0) + ?12, ?13, ?14)`
	// sqlTouch records the new latest checkpoint on the thread's row
	// (creating it, never claimed, for an unleased write), and releases
	// the lease of token ?5 when it is the thread's (a run's last write:
	// Checkpoint.Release). It records when the thread was written
	// (touched_at) only on a new row: sqlTouchAt does on the others.
	sqlTouch = `INSERT INTO threads (thread_id, incarnation, token, lease_until, wake_at, touched_at)
	VALUES (?1, ?2, 0, 0, ?3, ?4)
	ON CONFLICT (thread_id) DO UPDATE SET wake_at = ?3,
		lease_until = CASE WHEN ?5 <> 0 AND token = ?5 THEN 0 ELSE lease_until END`
	// sqlTouchAt moves the thread's touched_at to ?2 once it is a minute
	// behind: touched_at is indexed (for DeleteIdle), and an index entry
	// that moves is a page or two more in the commit, so a busy thread's
	// writes move it once a minute, not every time. It so lags the last
	// write by less than a minute, never leads it, and DeleteIdle checks
	// the latest checkpoint's own time.
	sqlTouchAt = `UPDATE threads SET touched_at = ?2 WHERE thread_id = ?1 AND touched_at <= ?2 - 60000`
	// sqlPrune drops the checkpoints KeepHistory does not keep, and
	// returns the log entries their rows kept, for prune to move them to
	// the log table (with the log's length at each, where they end).
	sqlPrune = `DELETE FROM checkpoints WHERE thread_id = ? AND seq <= ? RETURNING log_len, entries`
	// sqlClaim takes a free or expired lease (?3: now, ?4: expiry), or
	// changes no row. A thread without a row is new (or deleted): its
	// first claim starts a new incarnation (?2), touched now, so that its
	// first checkpoints need not move its touched_at (see sqlTouchAt).
	// sqlClaimed then reads what the claim made, in the same transaction.
	// (A RETURNING clause made SQLite open a temporary table for the row
	// at every claim: a third of the statement's cost.)
	sqlClaim = `INSERT INTO threads (thread_id, incarnation, token, lease_until, touched_at)
	VALUES (?1, ?2, 1, ?4, ?3)
	ON CONFLICT (thread_id) DO UPDATE SET token = token + 1, lease_until = ?4 WHERE lease_until <= ?3`
	sqlClaimed = `SELECT incarnation, token, (SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE thread_id = ?1)
	FROM threads WHERE thread_id = ?1`
	// sqlClaimable reads what ClaimPut checks before it claims: the
	// thread's incarnation (its row's, '' for none), its lease's expiry (0
	// for none) and its latest seq.
	sqlClaimable = `SELECT COALESCE((SELECT incarnation FROM threads WHERE thread_id = ?1),
		(SELECT incarnation FROM checkpoints WHERE thread_id = ?1 ORDER BY seq DESC LIMIT 1), ''),
		COALESCE((SELECT lease_until FROM threads WHERE thread_id = ?1), 0),
		(SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE thread_id = ?1)`
	sqlExtend  = `UPDATE threads SET lease_until = ?3 WHERE thread_id = ?1 AND token = ?2 AND lease_until <> 0`
	sqlRelease = `UPDATE threads SET lease_until = 0 WHERE thread_id = ?1 AND token = ?2`
	// sqlHead: the incarnation is the thread's (its row, when claimed),
	// else that of its latest checkpoint.
	sqlHead = `SELECT COALESCE((SELECT incarnation FROM threads WHERE thread_id = ?1),
		(SELECT incarnation FROM checkpoints WHERE thread_id = ?1 ORDER BY seq DESC LIMIT 1), ''),
		(SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE thread_id = ?1)`
	sqlDeleteLease = `DELETE FROM threads WHERE thread_id = ?`
	sqlLatestSeq   = `SELECT COALESCE(MAX(seq), 0) FROM checkpoints WHERE thread_id = ?`
	sqlHistory     = `SELECT seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at
	FROM checkpoints WHERE thread_id = ? ORDER BY seq DESC LIMIT ?`
	// sqlLog reads the entries of a thread's log from index ?2 to ?3 that
	// the log table keeps; sqlRowEntries those that checkpoints up to seq
	// ?4 keep in their rows. A tail (?2 > 0) reads the rows only from the
	// newest that ends at or before ?2, which a backward scan of the
	// thread's checkpoints finds after the rows it reads anyway, so a
	// reader that holds most of a long thread reads what it lacks and no
	// more.
	sqlLog        = `SELECT idx, entry FROM log WHERE thread_id = ?1 AND idx >= ?2 AND idx < ?3 ORDER BY idx`
	sqlRowEntries = `SELECT log_len, entries FROM checkpoints WHERE thread_id = ?1 AND entries IS NOT NULL
	AND log_len > ?2 AND seq <= ?4 AND seq > CASE WHEN ?2 = 0 THEN 0 ELSE COALESCE((SELECT seq FROM checkpoints
		WHERE thread_id = ?1 AND log_len <= ?2 AND seq <= ?4 ORDER BY seq DESC LIMIT 1), 0) END
	ORDER BY seq`
	sqlDelete    = `DELETE FROM checkpoints WHERE thread_id = ?`
	sqlDeleteLog = `DELETE FROM log WHERE thread_id = ?`
	sqlDue       = `SELECT thread_id FROM threads WHERE wake_at > 0 AND wake_at <= ? ORDER BY wake_at LIMIT ?`
	// sqlBlob stores a blob unless the store keeps it already (for any
	// thread); sqlLink has a thread hold it.
	sqlBlob = `INSERT INTO blobs (ref, mime_type, size, width, height, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
	ON CONFLICT (ref) DO NOTHING`
	sqlLink = `INSERT INTO blob_links (thread_id, ref) VALUES (?1, ?2) ON CONFLICT DO NOTHING`
	// sqlDeleteBlobs deletes the blobs a thread about to be deleted is
	// the last to hold; sqlDeleteLinks then its links.
	sqlDeleteBlobs = `DELETE FROM blobs WHERE ref IN (SELECT ref FROM blob_links WHERE thread_id = ?1)
	AND NOT EXISTS (SELECT 1 FROM blob_links l WHERE l.ref = blobs.ref AND l.thread_id <> ?1)`
	sqlDeleteLinks = `DELETE FROM blob_links WHERE thread_id = ?`
	// sqlStatBlob and sqlReadBlob read a blob through the thread's link,
	// so a thread reads only the blobs it holds.
	sqlStatBlob = `SELECT b.mime_type, b.size, b.width, b.height FROM blob_links l JOIN blobs b ON b.ref = l.ref
	WHERE l.thread_id = ?1 AND l.ref = ?2`
	sqlReadBlob = `SELECT b.mime_type, b.size, b.width, b.height, b.data FROM blob_links l JOIN blobs b ON b.ref = l.ref
	WHERE l.thread_id = ?1 AND l.ref = ?2`
	sqlBlobUsage = `SELECT (SELECT COUNT(*) FROM blobs), (SELECT COALESCE(SUM(size), 0) FROM blobs), (SELECT COUNT(*) FROM blob_links)`
	// sqlIdle lists threads last written before ?1 (unix ms; ?2 in ns)
	// that no unexpired lease holds (?3: now): those whose touched_at is
	// before it (which may lag a write by a minute: see sqlTouchAt), and
	// whose latest checkpoint, if any, is too.
	sqlIdle = `SELECT thread_id FROM threads WHERE touched_at < ?1 AND lease_until <= ?3
	AND COALESCE((SELECT created_at FROM checkpoints c WHERE c.thread_id = threads.thread_id ORDER BY seq DESC LIMIT 1), 0) < ?2
	LIMIT ?4`
)

// maxAppendRows is how many log entries one statement appends: a
// checkpoint's entries go in one statement, up to this many, since each
// statement run has a cost of its own (binding, the driver's locks, the
// VM's set-up), a third of an entry's when it appends three.
const maxAppendRows = 8

// sqlAppendRows appends n log entries, ?3 to ?(n+2), to thread ?1,
// numbered from ?2.
//
// OR FAIL spares SQLite the statement journal a statement of several rows
// keeps to undo its own rows when one fails (a tenth of its cost): a
// failed append fails its write, whose transaction is then rolled back
// whole (see commit).
func sqlAppendRows(n int) string {
	if n == 1 {
		return `INSERT INTO log (thread_id, idx, entry) VALUES (?1, ?2, ?3)`
	}
	var b strings.Builder
	b.WriteString(`INSERT OR FAIL INTO log (thread_id, idx, entry)
	SELECT ?1, ?2 + column1, column2 FROM (VALUES `)
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, ?%d)", i, i+3)
	}
	b.WriteString(")")
	return b.String()
}

// SQLite is a durable Checkpointer in a single SQLite file, for a single
// host: the API server and CLI keep threads in it without running a
// database server. It is safe for concurrent use, and several SQLite values
// (in one process or several) may share a file; SQLite's locking and Put's
// sequence check keep them consistent.
//
// The database runs in WAL mode with synchronous=NORMAL: a committed Put
// survives a crash of the process, but the last few commits before a power
// loss or OS crash may be rolled back (the database itself stays intact).
// Writes go through one connection, since SQLite has a single writer anyway
// and queuing in Go is cheaper than spinning on the busy lock; reads use a
// separate pool and, in WAL mode, never wait for the writer. The WAL is
// copied into the file by a connection of its own, in the background (see
// checkpointer), so that a write seldom waits for that copy's fsync.
type SQLite struct {
	path string
	opts options
	w    *sql.DB // one connection: SQLite allows one writer at a time
	r    *sql.DB // a read-only pool; WAL readers do not block the writer

	// The writes' statements are the writer's (see wstmt).
	head       *sql.Stmt // on r
	latestSeq  *sql.Stmt // on r
	history    *sql.Stmt // on r
	log        *sql.Stmt // on r
	rowEntries *sql.Stmt // on r
	due        *sql.Stmt // on r
	statBlob   *sql.Stmt // on r
	readBlob   *sql.Stmt // on r

	// Writes queue up, and whichever caller holds the write connection's
	// turn commits what has queued as one transaction (group commit):
	// under load, many runs' steps share one commit, which is most of a
	// write's cost.
	puts    chan writeReq
	turn    chan *wtx // the write connection, while no write holds it (see send)
	stop    chan struct{}
	stopped chan struct{}

	// The background checkpointer (see checkpointer): its connection,
	// the writer's nudge, and closed once it has returned.
	ck        *sql.DB
	ckWake    chan struct{}
	ckStopped chan struct{}

	closeOnce sync.Once
	closeErr  error
}

var (
	_ Checkpointer = (*SQLite)(nil)
	_ Compacter    = (*SQLite)(nil)
)

// OpenSQLite opens the store at path, creating the file, its parent
// directories (mode 0700) and the schema when missing, so the first run of a
// program needs no setup step. It refuses a database written by a newer
// build, whose schema it does not know; one written in an earlier schema is
// migrated in place and keeps its threads.
func OpenSQLite(ctx context.Context, path string, opts ...Option) (*SQLite, error) {
	s, err := openSQLite(ctx, path, newOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open sqlite %q: %w", path, err)
	}
	if err := s.startWriter(); err != nil {
		s.Close()
		return nil, fmt.Errorf("checkpoint: open sqlite %q: %w", path, err)
	}
	return s, nil
}

func openSQLite(ctx context.Context, path string, opts options) (_ *SQLite, err error) {
	if path == "" {
		return nil, errors.New("empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, err
	}
	if err := createPrivate(abs); err != nil {
		return nil, err
	}

	s := &SQLite{path: abs, opts: opts}
	defer func() {
		if err != nil {
			s.closeAll()
		}
	}()

	// Every pooled connection runs these pragmas as it opens, busy_timeout
	// first (the driver sorts it so). synchronous is per connection;
	// journal_mode(WAL) is stored in the file, so after the first connection
	// it is a no-op (see connectWriter for that first time).
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)"+
		"&_pragma=foreign_keys(1)"+
		"&_pragma=journal_mode(WAL)"+
		"&_pragma=synchronous(NORMAL)", sqliteBusyTimeout.Milliseconds())
	base := sqliteURI(abs) + "?" + pragmas

	// The writer: one connection, kept open, whose explicit transactions
	// start with BEGIN IMMEDIATE so they take the write lock up front and
	// wait under busy_timeout instead of failing on a lock upgrade.
	if s.w, err = sql.Open("sqlite", fmt.Sprintf("%s&_txlock=immediate&_pragma=wal_autocheckpoint(%d)", base, 4*walBackstop)); err != nil {
		return nil, err
	}
	keepOpen(s.w, 1)

	if err := s.connectWriter(ctx); err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if err := s.migrate(ctx); err != nil {
		return nil, err
	}

	// The readers: query_only guards against a write slipping onto a
	// connection that bypasses the single-writer queue.
	if s.r, err = sql.Open("sqlite", base+"&_query_only=1"); err != nil {
		return nil, err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	keepOpen(s.r, readers)
	if err := s.r.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect reader: %w", err)
	}

	for _, p := range []struct {
		db    *sql.DB
		query string
		stmt  **sql.Stmt
	}{
		{s.r, sqlHead, &s.head},
		{s.r, sqlLatestSeq, &s.latestSeq},
		{s.r, sqlHistory, &s.history},
		{s.r, sqlLog, &s.log},
		{s.r, sqlRowEntries, &s.rowEntries},
		{s.r, sqlDue, &s.due},
		{s.r, sqlStatBlob, &s.statBlob},
		{s.r, sqlReadBlob, &s.readBlob},
	} {
		if *p.stmt, err = p.db.PrepareContext(ctx, p.query); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
	}

	// The checkpointer's connection: one, kept open.
	if s.ck, err = sql.Open("sqlite", base); err != nil {
		return nil, err
	}
	keepOpen(s.ck, 1)
	if err := s.ck.PingContext(ctx); err != nil {
		return nil, fmt.Errorf("connect the checkpointer: %w", err)
	}
	return s, nil
}

// keepOpen has db hold n connections open for the store's life, none
// closed for being idle or old: each connection has its statements
// prepared, and SQLite's page cache.
func keepOpen(db *sql.DB, n int) {
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
}

// createMu serialises createPrivate, so no OpenSQLite in this process
// connects to a file while another is between creating and closing it.
var createMu sync.Mutex

// createPrivate creates the database file, readable only by its owner, if it
// does not exist; SQLite gives the -wal and -shm files the same permissions.
//
// O_EXCL matters: it never opens an existing file. Closing any descriptor of
// a file drops every POSIX lock the process holds on it, so opening and
// closing a database another connection of this process has open would
// silently strip that connection's locks.
func createPrivate(path string) error {
	createMu.Lock()
	defer createMu.Unlock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// sqliteURI turns a file path into the "file:" URI the driver passes to
// SQLite, escaping the characters a URI path gives meaning to.
func sqliteURI(abs string) string {
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive letter: file:/C:/dir/db
	}
	p = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(p)
	return "file:" + p
}

// connectWriter opens the writer's connection, retrying while another
// connection is switching a new file to WAL. The journal_mode(WAL) pragma
// upgrades a read lock to a write lock, which SQLite will not wait for (the
// wait could deadlock), so when two connections convert one new file at once
// the loser fails at once with SQLITE_BUSY. Once the file is in WAL mode,
// which is persistent, the pragma is a no-op and connecting cannot fail so.
func (s *SQLite) connectWriter(ctx context.Context) error {
	deadline := time.Now().Add(sqliteBusyTimeout)
	delay := time.Millisecond
	for {
		err := s.w.PingContext(ctx)
		if err == nil || !isBusy(err) || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, delay); err != nil {
			return err
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// sleep waits for d, or returns ctx's error if it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// isBusy reports whether err is SQLite's SQLITE_BUSY ("database is locked"),
// in any of its extended forms.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// check runs SQLite's quick_check, which reads every page, so a file with
// corrupted pages is refused at open instead of failing every call later.
func (s *SQLite) check(ctx context.Context) error {
	rows, err := s.w.QueryContext(ctx, "PRAGMA quick_check(10)")
	if err != nil {
		return fmt.Errorf("the file is not a readable SQLite database (%w); restore it from a backup or move it aside to start an empty store", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if p != "ok" {
			problems = append(problems, p)
		}
	}
	if err := rows.Err(); err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return fmt.Errorf("the database is corrupt (%s); restore it from a backup or move it aside to start an empty store", strings.Join(problems, "; "))
	}
	return nil
}

// migrate brings the schema to sqliteSchemaVersion in one IMMEDIATE
// transaction, so two processes opening a new file at once do not both
// create it.
func (s *SQLite) migrate(ctx context.Context) error {
	var mode string
	if err := s.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return fmt.Errorf("read journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not wal (is the file on a network file system?)", mode)
	}

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit

	var version int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case version > sqliteSchemaVersion:
		return fmt.Errorf("database schema version %d is newer than this build supports (%d); use a newer build", version, sqliteSchemaVersion)
	case version < 0:
		return fmt.Errorf("database schema version %d is invalid", version)
	case version == sqliteSchemaVersion:
		return nil
	}
	if version == 0 {
		// A new file: pages freed by deletes (retention, idle threads) can
		// then be given back with incremental_vacuum, without rewriting
		// the file. It must be set before the first table exists.
		if _, err := tx.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
			return fmt.Errorf("set auto_vacuum: %w", err)
		}
	}
	for v := version; v < sqliteSchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, sqliteMigrations[v]); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	// PRAGMA takes no parameters; the version is a constant.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", sqliteSchemaVersion)); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return nil
}

// Put appends cp to its thread; a Seq other than the latest plus one writes
// nothing and returns an error wrapping ErrConflict. It returns once the
// checkpoint is committed (or refused): a Put that was handed to the writer
// is waited for even if ctx ends meanwhile, so a caller never believes a
// write failed that in fact happened.
func (s *SQLite) Put(ctx context.Context, cp Checkpoint) error {
	args, err := putArgs(&cp)
	if err == nil {
		err = s.write(ctx, func(ctx context.Context, tx *wtx) error { return s.putTx(ctx, tx, cp, args) })
	}
	if errors.Is(err, errNoRow) {
		// Nothing written: Seq was not latest+1, or the lease was lost.
		// The latest seq is read after the fact, so it is advice for the
		// message, not the decision.
		err = ErrConflict
		var latest int64
		if s.latestSeq.QueryRowContext(ctx, cp.ThreadID).Scan(&latest) == nil {
			if cp.Token != 0 && latest == cp.Seq-1 {
				err = fmt.Errorf("%w: %w", ErrLeaseLost, ErrConflict)
			} else {
				err = fmt.Errorf("latest is %d: %w", latest, err)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	return nil
}

// putTx writes a checkpoint (its log entries in its row) and its thread's
// row, and drops what KeepHistory does not keep, all or nothing.
func (s *SQLite) putTx(ctx context.Context, tx *wtx, cp Checkpoint, args []any) error {
	if err := tx.exec(ctx, wPut, args[:14]...); err != nil {
		return err
	}
	for _, b := range cp.Blobs { // checked by putArgs
		if _, err := tx.run(ctx, wBlob, b.Ref, b.MimeType, b.Size, b.Width, b.Height, b.Data); err != nil {
			return fmt.Errorf("store blob %s: %w", b.Ref, err)
		}
		if _, err := tx.run(ctx, wLink, cp.ThreadID, b.Ref); err != nil {
			return fmt.Errorf("link blob %s: %w", b.Ref, err)
		}
	}
	var release any = int64(0)
	if cp.Release {
		release = args[10] // the token
	}
	if _, err := tx.run(ctx, wTouch, args[0], args[9], args[12], args[14], release); err != nil {
		return fmt.Errorf("touch the thread: %w", err)
	}
	if _, err := tx.run(ctx, wTouchAt, args[0], args[14]); err != nil {
		return fmt.Errorf("touch the thread: %w", err)
	}
	if k := s.opts.keep; k >= 0 && cp.Seq > int64(k)+1 {
		if err := prune(ctx, tx, cp.ThreadID, cp.Seq-int64(k)-1); err != nil {
			return fmt.Errorf("drop old checkpoints: %w", err)
		}
	}
	return nil
}

// prune drops the thread's checkpoints up to seq upTo, and moves the log
// entries their rows kept into the log table: the thread's log is kept
// whole.
func prune(ctx context.Context, tx *wtx, threadID string, upTo int64) error {
	type kept struct {
		end     int64 // the log's length at the checkpoint
		entries [][]byte
	}
	var moving []kept
	err := tx.query(ctx, wPrune, []any{threadID, upTo}, func(row []driver.Value) error {
		end, ok := row[0].(int64)
		b, _ := row[1].([]byte)
		if !ok {
			return fmt.Errorf("a checkpoint's log length is %T", row[0])
		}
		if len(b) == 0 {
			return nil
		}
		entries, err := decodeEntries(b) // copies: b is valid only during the call
		if err != nil {
			return fmt.Errorf("the one ending the log at %d: %w", end, err)
		}
		moving = append(moving, kept{end, entries})
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range moving {
		if err := appendLog(ctx, tx, threadID, k.end-int64(len(k.entries)), k.entries); err != nil {
			return err
		}
	}
	return nil
}

// appendLog writes entries into the log table at index from on, a
// statement for up to maxAppendRows of them.
func appendLog(ctx context.Context, tx *wtx, threadID string, from int64, entries [][]byte) error {
	for i := 0; i < len(entries); i += maxAppendRows {
		rows := entries[i:min(i+maxAppendRows, len(entries))]
		vals := append(tx.vals[:0], threadID, from+int64(i))
		for _, e := range rows {
			vals = append(vals, e)
		}
		tx.vals = vals
		n, err := tx.run(ctx, wAppend+wstmt(len(rows)-1), vals...)
		clear(vals) // keeps no entry alive
		if err == nil && n != int64(len(rows)) {
			err = fmt.Errorf("%d of %d entries written", n, len(rows))
		}
		if err != nil {
			return fmt.Errorf("move entries %d on to the log: %w", from+int64(i), err)
		}
	}
	return nil
}

// encodeEntries is what a checkpoint's row keeps of the log entries it
// appends: each entry's length (a uvarint) and bytes, one after another;
// nil for none (NULL).
func encodeEntries(entries [][]byte) []byte {
	if len(entries) == 0 {
		return nil
	}
	n := 0
	for _, e := range entries {
		n += binary.MaxVarintLen64 + len(e)
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	return b
}

// decodeEntries reads what encodeEntries wrote into new memory, an entry
// an empty slice at least (never nil).
func decodeEntries(b []byte) ([][]byte, error) {
	b = bytes.Clone(b)
	var out [][]byte
	for len(b) > 0 {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, errors.New("a checkpoint's log entries are cut short; the database was changed outside tenxgraph")
		}
		out = append(out, b[k:k+int(n):k+int(n)])
		b = b[k+int(n):]
	}
	return out, nil
}

// minNanos and maxNanos bound the times a unix-nanosecond column can hold
// (the years 1678 to 2262).
var (
	minNanos = time.Unix(0, math.MinInt64)
	maxNanos = time.Unix(0, math.MaxInt64)
)

// putArgs checks and encodes a checkpoint into the INSERT's arguments,
// and checks its blobs (sorted, without duplicates, in place).
func putArgs(cp *Checkpoint) ([]any, error) {
	blobs, err := checkBlobs(cp.Blobs)
	if err != nil {
		return nil, err
	}
	cp.Blobs = blobs
	created := cp.CreatedAt
	if created.IsZero() {
		created = time.Now()
	} else if created.Before(minNanos) || created.After(maxNanos) {
		return nil, fmt.Errorf("created_at %v is outside the years 1678 to 2262", created)
	}
	next, err := encodeNext(cp.Next)
	if err != nil {
		return nil, fmt.Errorf("encode next: %w", err)
	}
	meta, err := encodeMetadata(cp.Metadata)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	state := cp.State
	if state == nil {
		state = []byte{} // NOT NULL column; an empty blob reads back as empty
	}
	var wake int64
	if !cp.WakeAt.IsZero() {
		wake = max(1, cp.WakeAt.UnixMilli())
	}
	var entries any // NULL for none
	if b := encodeEntries(cp.Append); b != nil {
		entries = b
	}
	// The 15th is not the INSERT's: it is when the thread was touched, in
	// milliseconds, for the statement that records it (putTx).
	return []any{cp.ThreadID, cp.Seq, cp.RunID, cp.Step, string(cp.Status), next, state, meta, created.UnixNano(), cp.Incarnation, cp.Token, len(cp.Append), wake,
		entries, created.UnixMilli()}, nil
}

// Claim implements Leaser; the claim is one write through the writer: the
// claim's statement, then the read of what it made (see sqlClaimed).
func (s *SQLite) Claim(ctx context.Context, threadID string, ttl time.Duration) (Lease, error) {
	now := time.Now()
	l := Lease{ThreadID: threadID, Expires: leaseExpiry(now, ttl)}
	args := []any{threadID, newIncarnation(), leaseMillis(now), leaseMillis(l.Expires)}
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.claim(ctx, args, &l)
	})
	if errors.Is(err, errNoRow) {
		err = ErrLeased
	}
	if err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q: %w", threadID, err)
	}
	return l, nil
}

// ClaimPut implements Checkpointer: one write through the writer, which
// checks the thread before it claims, then claims and puts, so a refused
// ClaimPut has written nothing.
func (s *SQLite) ClaimPut(ctx context.Context, cp Checkpoint, ttl time.Duration) (Lease, error) {
	now := time.Now()
	l := Lease{ThreadID: cp.ThreadID, Seq: cp.Seq, Expires: leaseExpiry(now, ttl)}
	cp.Token = 1 // a leased write's arguments; the claim's token replaces it
	args, err := putArgs(&cp)
	var refused error // why the write was refused, when it was
	if err == nil {
		claimArgs := []any{cp.ThreadID, newIncarnation(), leaseMillis(now), leaseMillis(l.Expires)}
		err = s.write(ctx, func(ctx context.Context, tx *wtx) error {
			refused = nil // the write may run twice (see commit)
			var (
				inc        string
				until, seq int64
			)
			if err := tx.row(ctx, wClaimable, claimArgs[:1], &inc, &until, &seq); err != nil {
				return err
			}
			switch {
			case until > leaseMillis(now):
				refused = ErrLeased
			case seq != cp.Seq-1:
				refused = fmt.Errorf("latest is %d: %w", seq, ErrConflict)
			case seq > 0 && inc != cp.Incarnation:
				refused = errIncarnation(cp.Incarnation)
			}
			if refused != nil {
				return errNoRow // nothing written
			}
			if err := tx.claim(ctx, claimArgs, &l); err != nil {
				return fmt.Errorf("claim: %w", noRowFails(err))
			}
			l.Seq = cp.Seq // the lease's thread is at the checkpoint this write puts
			cp.Incarnation, cp.Token = l.Incarnation, l.Token
			args[9], args[10] = cp.Incarnation, cp.Token
			// Checked above, under the write lock, so it goes in; if it did
			// not, the claim must not commit without it.
			return noRowFails(s.putTx(ctx, tx, cp, args))
		})
	}
	if errors.Is(err, errNoRow) && refused != nil {
		err = refused
	}
	if err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	return l, nil
}

// noRowFails turns errNoRow, a write's refusal, into a failure, which
// rolls back what the write did before it (see commit).
func noRowFails(err error) error {
	if errors.Is(err, errNoRow) {
		return errors.New("a statement checked to succeed changed no row; nothing was written")
	}
	return err
}

// Extend implements Leaser.
func (s *SQLite) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	exp := leaseExpiry(time.Now(), ttl)
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.exec(ctx, wExtend, l.ThreadID, l.Token, leaseMillis(exp))
	})
	if errors.Is(err, errNoRow) {
		err = ErrLeaseLost
	}
	if err != nil {
		return l, fmt.Errorf("checkpoint: extend lease of thread %q: %w", l.ThreadID, err)
	}
	l.Expires = exp
	return l, nil
}

// Release implements Leaser.
func (s *SQLite) Release(ctx context.Context, l Lease) error {
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		return tx.exec(ctx, wRelease, l.ThreadID, l.Token)
	})
	if err != nil && !errors.Is(err, errNoRow) {
		return fmt.Errorf("checkpoint: release lease of thread %q: %w", l.ThreadID, err)
	}
	return nil
}

// Head implements Leaser.
func (s *SQLite) Head(ctx context.Context, threadID string) (Head, error) {
	var h Head
	if err := s.head.QueryRowContext(ctx, threadID).Scan(&h.Incarnation, &h.Seq); err != nil {
		return Head{}, fmt.Errorf("checkpoint: head of thread %q: %w", threadID, err)
	}
	if h.Seq == 0 {
		return Head{}, nil
	}
	return h, nil
}

// Latest returns the thread's newest checkpoint, read from the read pool so
// it never waits behind a Put.
func (s *SQLite) Latest(ctx context.Context, threadID string) (Checkpoint, error) {
	cps, _, err := s.query(ctx, threadID, 1, 0)
	return latestFrom(threadID, cps, err)
}

// LatestTail implements TailReader.
func (s *SQLite) LatestTail(ctx context.Context, threadID string, from int) (Checkpoint, int, error) {
	cps, n, err := s.query(ctx, threadID, 1, max(from, 0))
	cp, err := latestFrom(threadID, cps, err)
	return cp, int(n), err
}

// History returns up to limit checkpoints, newest first (limit <= 0 means
// all), read in one statement so they come from one consistent snapshot.
func (s *SQLite) History(ctx context.Context, threadID string, limit int) ([]Checkpoint, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	cps, _, err := s.query(ctx, threadID, limit, 0)
	return historyFrom(threadID, cps, err)
}

// query reads up to limit checkpoints, newest first, and the log they
// need, in one read transaction, so both come from one snapshot. The log is
// read once, up to the newest checkpoint's length, and each checkpoint
// gets its prefix of it; from > 0 (with limit 1) reads only the entries
// from there on. It also returns the newest checkpoint's log length.
func (s *SQLite) query(ctx context.Context, threadID string, limit, from int) (_ []Checkpoint, _ int64, err error) {
	tx, err := s.r.BeginTx(ctx, nil)
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only: nothing to commit
	rows, err := tx.StmtContext(ctx, s.history).QueryContext(ctx, threadID, limit)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Checkpoint
	if limit > 0 {
		out = make([]Checkpoint, 0, min(limit, 64))
	}
	var lens []int64
	for rows.Next() {
		cp := Checkpoint{ThreadID: threadID}
		var (
			status             string
			next, meta         []byte
			createdNano        int64
			logLen, wakeMillis int64
		)
		if err := rows.Scan(&cp.Seq, &cp.RunID, &cp.Step, &status, &next, &cp.State, &meta, &createdNano, &cp.Incarnation, &logLen, &wakeMillis); err != nil {
			return nil, 0, err
		}
		cp.Status = Status(status)
		if cp.Next, err = decodeNext(next); err != nil {
			return nil, 0, fmt.Errorf("seq %d: decode next: %w", cp.Seq, err)
		}
		if cp.Metadata, err = decodeMetadata(meta); err != nil {
			return nil, 0, fmt.Errorf("seq %d: decode metadata: %w", cp.Seq, err)
		}
		if len(cp.State) == 0 {
			cp.State = nil
		}
		cp.CreatedAt = time.Unix(0, createdNano).UTC()
		if wakeMillis > 0 {
			cp.WakeAt = time.UnixMilli(wakeMillis).UTC()
		}
		out = append(out, cp)
		lens = append(lens, logLen)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	rows.Close()
	if len(out) == 0 || lens[0] <= int64(from) {
		if len(out) == 0 {
			return out, 0, nil
		}
		return out, lens[0], nil
	}
	log, err := readLog(ctx, tx.StmtContext(ctx, s.log), tx.StmtContext(ctx, s.rowEntries), threadID, int64(from), lens[0], out[0].Seq)
	if err != nil {
		return nil, 0, err
	}
	if from > 0 {
		out[0].Log = log
		return out, lens[0], nil
	}
	for i := range out {
		if n := lens[i]; n > 0 {
			out[i].Log = log[:n:n]
		}
	}
	return out, lens[0], nil
}

// readLog reads a thread's log entries from index from to n, as of its
// checkpoint seq, from the log table and the checkpoints' rows (see
// sqlLog), and fails unless they are all there.
func readLog(ctx context.Context, logSt, rowSt *sql.Stmt, threadID string, from, n, seq int64) ([][]byte, error) {
	log := make([][]byte, n-from)
	put := func(idx int64, e []byte) error {
		if idx < from || idx >= n {
			return nil // the part of a checkpoint's entries before from
		}
		if log[idx-from] != nil {
			return fmt.Errorf("entry %d is there twice; the database was changed outside tenxgraph", idx)
		}
		if e == nil {
			e = []byte{}
		}
		log[idx-from] = e
		return nil
	}
	rows, err := logSt.QueryContext(ctx, threadID, from, n)
	if err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			idx int64
			e   []byte
		)
		if err := rows.Scan(&idx, &e); err != nil {
			return nil, fmt.Errorf("read the log: %w", err)
		}
		if err := put(idx, e); err != nil {
			return nil, fmt.Errorf("read the log: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	rows.Close()
	if rows, err = rowSt.QueryContext(ctx, threadID, from, n, seq); err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			end int64
			b   sql.RawBytes // valid until Next: decodeEntries copies it
		)
		if err := rows.Scan(&end, &b); err != nil {
			return nil, fmt.Errorf("read the log: %w", err)
		}
		entries, err := decodeEntries(b)
		if err != nil {
			return nil, fmt.Errorf("read the log: %w", err)
		}
		for i, e := range entries {
			if err := put(end-int64(len(entries)-i), e); err != nil {
				return nil, fmt.Errorf("read the log: %w", err)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the log: %w", err)
	}
	if missing := slices.IndexFunc(log, func(e []byte) bool { return e == nil }); missing >= 0 {
		return nil, fmt.Errorf("the log lacks entry %d of the %d from %d the checkpoint needs; the database was changed outside tenxgraph", from+int64(missing), n-from, from)
	}
	return log, nil
}

// Due implements Scheduler with the index on the threads' wake_at.
func (s *SQLite) Due(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.due.QueryContext(ctx, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: due threads: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("checkpoint: due threads: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: due threads: %w", err)
	}
	return out, nil
}

// DeleteIdle implements Pruner: one write through the writer, which then
// gives the freed pages back (incremental_vacuum; a no-op in a file
// created before auto_vacuum was set, until Compact converts it).
func (s *SQLite) DeleteIdle(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int
	err := s.write(ctx, func(ctx context.Context, tx *wtx) error {
		var ids []string
		err := tx.query(ctx, wIdle, []any{cutoff.UnixMilli(), cutoff.UnixNano(), leaseMillis(time.Now()), limit}, func(row []driver.Value) error {
			var id string
			if err := assign(&id, row[0]); err != nil {
				return err
			}
			ids = append(ids, id)
			return nil
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := s.deleteTx(ctx, tx, id); err != nil {
				return err
			}
		}
		n = len(ids)
		if n > 0 {
			if err := tx.sql(ctx, "PRAGMA incremental_vacuum"); err != nil {
				return fmt.Errorf("incremental_vacuum: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: delete idle threads: %w", err)
	}
	return n, nil
}

// StatBlob implements BlobStore.
func (s *SQLite) StatBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b := Blob{Ref: ref}
	err := s.statBlob.QueryRowContext(ctx, threadID, ref).Scan(&b.MimeType, &b.Size, &b.Width, &b.Height)
	return blobRead(threadID, b, err)
}

// ReadBlob implements BlobStore.
func (s *SQLite) ReadBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b := Blob{Ref: ref}
	err := s.readBlob.QueryRowContext(ctx, threadID, ref).Scan(&b.MimeType, &b.Size, &b.Width, &b.Height, &b.Data)
	if err == nil && b.Data == nil {
		b.Data = []byte{}
	}
	return blobRead(threadID, b, err)
}

// blobRead is a blob read's outcome: no row is a blob the thread does not
// hold.
func blobRead(threadID string, b Blob, err error) (Blob, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Blob{}, blobNotFound(threadID, b.Ref)
	case err != nil:
		return Blob{}, fmt.Errorf("checkpoint: blob %s of thread %q: %w", b.Ref, threadID, err)
	}
	return b, nil
}

// BlobUsage implements BlobStore.
func (s *SQLite) BlobUsage(ctx context.Context) (BlobUsage, error) {
	var u BlobUsage
	if err := s.r.QueryRowContext(ctx, sqlBlobUsage).Scan(&u.Blobs, &u.Bytes, &u.Links); err != nil {
		return BlobUsage{}, fmt.Errorf("checkpoint: blob usage: %w", err)
	}
	return u, nil
}

// Compact implements Compacter. A file whose auto_vacuum is not
// incremental (created by a build before it was set) is converted with one
// VACUUM, which rewrites the file (it needs as much free disk as the file
// and holds the write lock meanwhile); from then on, and for a file
// created so, incremental_vacuum gives the free pages back in place. The
// WAL is then truncated.
func (s *SQLite) Compact(ctx context.Context) (int64, error) {
	before := s.fileBytes()
	err := s.send(ctx, writeReq{ctx: ctx, done: make(chan error, 1), alone: func(ctx context.Context, c *wtx) error {
		mode, err := c.sqlInt(ctx, "PRAGMA auto_vacuum")
		if err != nil {
			return fmt.Errorf("read auto_vacuum: %w", err)
		}
		stmts := []string{"PRAGMA incremental_vacuum"}
		if mode != 2 { // 2: incremental
			stmts = []string{"PRAGMA auto_vacuum = INCREMENTAL", "VACUUM"}
		}
		for _, q := range stmts {
			if err := c.sql(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return truncateWAL(ctx, c)
	}})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: compact sqlite %q: %w", s.path, err)
	}
	return before - s.fileBytes(), nil
}

// fileBytes is the size of the database and its WAL.
func (s *SQLite) fileBytes() int64 {
	var n int64
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// DeleteThread removes the thread's checkpoints and its lease in one
// transaction; its next Put must use Seq 1 again, in a new incarnation.
func (s *SQLite) DeleteThread(ctx context.Context, threadID string) error {
	if err := s.deleteThread(ctx, threadID); err != nil {
		return fmt.Errorf("checkpoint: delete thread %q: %w", threadID, err)
	}
	return nil
}

func (s *SQLite) deleteThread(ctx context.Context, threadID string) error {
	return s.write(ctx, func(ctx context.Context, tx *wtx) error { return s.deleteTx(ctx, tx, threadID) })
}

func (s *SQLite) deleteTx(ctx context.Context, tx *wtx, threadID string) error {
	for _, st := range []wstmt{wDelete, wDeleteLog, wDeleteLease, wDeleteBlobs, wDeleteLinks} {
		if _, err := tx.run(ctx, st, threadID); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the statements and both connection pools. When the last
// connection to the file closes, SQLite checkpoints the WAL into the main
// file and removes it. Calling Close again returns the first call's result.
func (s *SQLite) Close() error {
	s.closeOnce.Do(func() {
		if s.stop != nil {
			close(s.stop)
			<-s.stopped
			<-s.ckStopped
		}
		if err := s.closeAll(); err != nil {
			s.closeErr = fmt.Errorf("checkpoint: close sqlite %q: %w", s.path, err)
		}
	})
	return s.closeErr
}

func (s *SQLite) closeAll() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.head, s.latestSeq, s.history, s.log, s.rowEntries, s.due, s.statBlob, s.readBlob} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	// The checkpointer and readers first, so the writer's connection is
	// the last one and checkpoints the WAL as it closes.
	for _, db := range []*sql.DB{s.ck, s.r, s.w} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// encodeNext and encodeMetadata refuse invalid UTF-8, which JSON would
// silently replace with U+FFFD, so a checkpoint never reads back different
// from what was written.
func encodeNext(next []string) (string, error) {
	if len(next) == 0 {
		return "[]", nil
	}
	plain := true // no byte JSON escapes (as encoding/json does: <, >, & too)
	size := 1
	for _, n := range next {
		if !utf8.ValidString(n) {
			return "", fmt.Errorf("node name %q is not valid UTF-8", n)
		}
		for i := 0; i < len(n) && plain; i++ {
			c := n[i]
			plain = c >= 0x20 && c < 0x80 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
		}
		size += len(n) + 3
	}
	if !plain {
		b, err := json.Marshal(next)
		return string(b), err
	}
	// The common case, node names of plain ASCII, in one allocation.
	var b strings.Builder
	b.Grow(size)
	for i, n := range next {
		if i == 0 {
			b.WriteString(`["`)
		} else {
			b.WriteString(`,"`)
		}
		b.WriteString(n)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String(), nil
}

func decodeNext(b []byte) ([]string, error) {
	if len(b) == 0 || string(b) == "[]" || string(b) == "null" {
		return nil, nil
	}
	var next []string
	if err := json.Unmarshal(b, &next); err != nil {
		return nil, err
	}
	if len(next) == 0 {
		return nil, nil
	}
	return next, nil
}

func encodeMetadata(meta map[string]string) (string, error) {
	if len(meta) == 0 {
		return "{}", nil
	}
	for k, v := range meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return "", fmt.Errorf("entry %q: %q is not valid UTF-8", k, v)
		}
	}
	b, err := json.Marshal(meta)
	return string(b), err
}

func decodeMetadata(b []byte) (map[string]string, error) {
	if len(b) == 0 || string(b) == "{}" || string(b) == "null" {
		return nil, nil
	}
	var meta map[string]string
	if err := json.Unmarshal(b, &meta); err != nil {
		return nil, err
	}
	if len(meta) == 0 {
		return nil, nil
	}
	return meta, nil
}
