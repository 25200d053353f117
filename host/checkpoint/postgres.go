package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresSchemaVersion is the schema this build writes, kept in the one row
// of tenxgraph_checkpoint_schema. It is len(postgresMigrations).
const postgresSchemaVersion = 10

// postgresMigrations[i] moves a database from schema version i to i+1.
// Append to it (never edit an entry that has shipped) and the version
// follows. The table names are unqualified, so they land in the first schema
// of the connection's search_path (settable in the DSN).
var postgresMigrations = [...]string{
	// 0 -> 1: the checkpoint log. The primary key's index serves every
	// lookup (thread_id = $1 ORDER BY seq DESC) and is what turns two
	// racing writers of one seq into a unique violation. Strings are text
	// (UTF-8, no NUL), so the rows are readable with psql; next is a native
	// array and metadata jsonb, so they can be queried. created_at keeps
	// microseconds.
	`CREATE TABLE tenxgraph_checkpoints (
		thread_id  text        NOT NULL,
		seq        bigint      NOT NULL CHECK (seq >= 1),
		run_id     text        NOT NULL,
		step       bigint      NOT NULL,
		status     text        NOT NULL,
		next       text[]      NOT NULL,
		state      bytea       NOT NULL,
		metadata   jsonb       NOT NULL,
		created_at timestamptz NOT NULL,
		PRIMARY KEY (thread_id, seq)
	)`,
	// 1 -> 2: every checkpoint names its thread's incarnation (see Lease);
	// those written before leases belong to incarnation ''.
	`ALTER TABLE tenxgraph_checkpoints ADD COLUMN incarnation text NOT NULL DEFAULT ''`,
	// 2 -> 3: the incarnation and lease of every thread (lease_until in
	// unix milliseconds, 0 once released); the threads written before
	// leases are incarnation '', never claimed.
	`CREATE TABLE tenxgraph_threads (
		thread_id   text   NOT NULL PRIMARY KEY,
		incarnation text   NOT NULL,
		token       bigint NOT NULL,
		lease_until bigint NOT NULL
	);
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until)
	SELECT DISTINCT thread_id, '', 0, 0 FROM tenxgraph_checkpoints`,
	// 3 -> 4: each thread's log (see Checkpoint.Log) beside its
	// checkpoints; a checkpoint records the log's length at it (0 in those
	// written before, whose state holds everything). A thread's activity
	// row records its latest checkpoint's wake_at (for Due) and when it was
	// last written (touched_at, for DeleteIdle), both unix milliseconds;
	// the threads written before are touched at their latest checkpoint.
	// It is a table of its own, not columns of tenxgraph_threads: a Put
	// holds a share lock on the thread's lease row while racing writers of
	// the same seq wait for it, so updating that row would deadlock them.
	// Every Put updates the row, so touched_at has no index (an update of
	// an indexed column cannot be HOT, and each would leave a dead index
	// entry behind); the idle sweep scans the table instead, one small row
	// per thread, and the free half of each page keeps updates HOT.
	`ALTER TABLE tenxgraph_checkpoints
		ADD COLUMN log_len bigint NOT NULL DEFAULT 0,
		ADD COLUMN wake_at bigint NOT NULL DEFAULT 0;
	CREATE TABLE tenxgraph_log (
		thread_id text   NOT NULL,
		idx       bigint NOT NULL CHECK (idx >= 0),
		entry     bytea  NOT NULL,
		PRIMARY KEY (thread_id, idx)
	);
	CREATE TABLE tenxgraph_activity (
		thread_id  text   NOT NULL PRIMARY KEY,
		wake_at    bigint NOT NULL,
		touched_at bigint NOT NULL
	) WITH (fillfactor = 50);
	INSERT INTO tenxgraph_activity (thread_id, wake_at, touched_at)
	SELECT thread_id, 0, (EXTRACT(EPOCH FROM MAX(created_at)) * 1000)::bigint
	FROM tenxgraph_checkpoints GROUP BY thread_id;
	CREATE INDEX tenxgraph_activity_wake ON tenxgraph_activity (wake_at) WHERE wake_at > 0`,
	// 4 -> 5: threads are kept per tenant (see ThreadKey). A thread
	// written before had its tenant, the API token that created it, in its
	// metadata ("owner"); it moves to that tenant's key, with its log and
	// its rows. The rest keep their keys (the tenant "").
	postgresTenancy,
	// 5 -> 6: the blobs messages refer to (see Blob), once per content,
	// and which threads hold each. Media is compressed already, so the
	// bytes are stored out of line without trying to compress them
	// (STORAGE EXTERNAL). A link is small; the index by blob serves the
	// delete of a thread's last holder.
	`CREATE TABLE tenxgraph_blobs (
		ref       text    NOT NULL PRIMARY KEY,
		mime_type text    NOT NULL,
		size      bigint  NOT NULL CHECK (size >= 0),
		width     integer NOT NULL,
		height    integer NOT NULL,
		data      bytea   NOT NULL
	);
	ALTER TABLE tenxgraph_blobs ALTER COLUMN data SET STORAGE EXTERNAL;
	CREATE TABLE tenxgraph_blob_links (
		thread_id text NOT NULL,
		ref       text NOT NULL,
		PRIMARY KEY (thread_id, ref)
	);
	CREATE INDEX tenxgraph_blob_links_ref ON tenxgraph_blob_links (ref)`,
	// 6 -> 7: a thread's row records its latest seq, set by every
	// checkpoint write in the statement that writes the checkpoint, so a
	// claim returns it from the row version it locked (see pgClaim). NULL:
	// not recorded since the row was made (by a claim, or before this
	// version), when a claim reads the checkpoints instead; so the
	// migration rewrites no row. The row is now written by every
	// checkpoint write as well as by claims and releases: seq has no index,
	// and the free half of each new page keeps those updates HOT.
	`ALTER TABLE tenxgraph_threads ADD COLUMN seq bigint, SET (fillfactor = 50)`,
	// 7 -> 8: a thread's wake_at and touched_at (see 3 -> 4) move into its
	// row, which every checkpoint write updates already, so a write updates
	// one row rather than two. Every thread with checkpoints now has a row:
	// those written only without a token get one here, token 0, in their
	// latest checkpoint's incarnation (as a SQLite store's have), and an
	// unleased write makes one for a new thread. A row no write touched (a
	// claim's, whose run wrote nothing) counts as touched now. (3 -> 4 kept
	// the columns apart because a Put then held a share lock on this row;
	// since 7 it takes the row for update.) wake_at keeps its partial
	// index; an update that leaves it as it was (most writes of a running
	// thread: 0 to 0) stays HOT.
	`ALTER TABLE tenxgraph_threads
		ADD COLUMN wake_at bigint NOT NULL DEFAULT 0,
		ADD COLUMN touched_at bigint NOT NULL DEFAULT 0;
	UPDATE tenxgraph_threads t SET wake_at = a.wake_at, touched_at = a.touched_at
	FROM tenxgraph_activity a WHERE a.thread_id = t.thread_id;
	UPDATE tenxgraph_threads t SET touched_at = (EXTRACT(EPOCH FROM now()) * 1000)::bigint
	WHERE NOT EXISTS (SELECT 1 FROM tenxgraph_activity a WHERE a.thread_id = t.thread_id);
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until, wake_at, touched_at)
	SELECT a.thread_id, COALESCE((SELECT c.incarnation FROM tenxgraph_checkpoints c
		WHERE c.thread_id = a.thread_id ORDER BY c.seq DESC LIMIT 1), ''), 0, 0, a.wake_at, a.touched_at
	FROM tenxgraph_activity a
	WHERE NOT EXISTS (SELECT 1 FROM tenxgraph_threads t WHERE t.thread_id = a.thread_id);
	DROP TABLE tenxgraph_activity;
	CREATE INDEX tenxgraph_threads_wake ON tenxgraph_threads (wake_at) WHERE wake_at > 0`,
	// 8 -> 9: a thread's row records its log's length (log_len, as its
	// latest checkpoint does) beside its seq, and always has both, so a
	// write under a lease checks and numbers everything from the row it
	// updates and reads no checkpoint (see pgPutLeased). A row without a
	// seq (a claim's whose run wrote nothing, or one from before 7) takes
	// its latest checkpoint's seq and log_len, 0 for none. The checks on
	// a checkpoint's seq (at least 1) and a log entry's index (at least 0)
	// go: every statement that writes either computes it from the row, and
	// PostgreSQL parsed each check's expression anew in every statement
	// that inserted a row (about 5 % of its CPU in a round trip).
	`ALTER TABLE tenxgraph_checkpoints DROP CONSTRAINT IF EXISTS tenxgraph_checkpoints_seq_check;
	ALTER TABLE tenxgraph_log DROP CONSTRAINT IF EXISTS tenxgraph_log_idx_check;
	ALTER TABLE tenxgraph_threads ADD COLUMN log_len bigint NOT NULL DEFAULT 0;
	UPDATE tenxgraph_threads t SET seq = COALESCE(c.seq, 0), log_len = COALESCE(c.log_len, 0)
	FROM tenxgraph_threads r LEFT JOIN LATERAL (SELECT seq, log_len FROM tenxgraph_checkpoints
		WHERE thread_id = r.thread_id ORDER BY seq DESC LIMIT 1) c ON true
	WHERE r.thread_id = t.thread_id;
	ALTER TABLE tenxgraph_threads ALTER COLUMN seq SET NOT NULL`,
	// 9 -> 10: a checkpoint keeps the log entries it appends in its own
	// row (entries, NULL for none) for as long as it is kept; when
	// KeepHistory drops it, the same statement moves them into
	// tenxgraph_log, which also keeps every entry written before this
	// version (the migration moves nothing). A write so inserts one row,
	// not one row and one index entry per log entry: the log's rows were
	// the largest part of PostgreSQL's work in a round trip that a change
	// could cut. A read takes a thread's log from both, by index.
	`ALTER TABLE tenxgraph_checkpoints ADD COLUMN entries bytea[]`,
}

// postgresTenancy is the migration that moves each thread whose latest
// checkpoint names an owner to the key ThreadKey(owner, id). The moves are
// listed first (in a temporary table, dropped with the migration's
// commit), so that every table moves by the same list.
const postgresTenancy = `CREATE TEMP TABLE tenxgraph_tenancy_moves ON COMMIT DROP AS
	SELECT thread_id AS old, owner || chr(31) || thread_id AS new FROM (
		SELECT DISTINCT ON (thread_id) thread_id, metadata->>'owner' AS owner, jsonb_typeof(metadata->'owner') AS kind
		FROM tenxgraph_checkpoints ORDER BY thread_id, seq DESC) latest
	WHERE kind = 'string' AND owner <> '';
	UPDATE tenxgraph_log t SET thread_id = m.new FROM tenxgraph_tenancy_moves m WHERE t.thread_id = m.old;
	UPDATE tenxgraph_threads t SET thread_id = m.new FROM tenxgraph_tenancy_moves m WHERE t.thread_id = m.old;
	UPDATE tenxgraph_activity t SET thread_id = m.new FROM tenxgraph_tenancy_moves m WHERE t.thread_id = m.old;
	UPDATE tenxgraph_checkpoints t SET thread_id = m.new FROM tenxgraph_tenancy_moves m WHERE t.thread_id = m.old`

// pgMigrationLock is the transaction-level advisory lock key that serialises
// migrations, so two processes opening a new database at once do not both
// create the tables. It is an arbitrary constant ("tenxckpt" in ASCII).
const pgMigrationLock int64 = 0x74656e78636b7074

// The statements. pgx prepares each once per connection and caches it, so
// after the first use every call is a single round trip.
const (
	// pgPut appends a checkpoint in one statement.
	//
	// The latest CTE reads the thread's newest row and takes FOR KEY SHARE
	// on it, and the insert happens only when the new seq is that one plus
	// one (1 when there is none). It reads only once the lease CTE has
	// locked the thread's row (its condition on the lease CTE is always
	// true, and is there for that order): a DeleteThread deletes that row
	// first and then the checkpoints, so a Put that locked a checkpoint
	// before it waited for the row would deadlock with it. Two writers of
	// the same seq both pass the check, but the primary key makes the
	// second wait for the first and
	// then insert nothing (ON CONFLICT DO NOTHING, not a unique violation,
	// which would abort the batch the write shares a transaction with);
	// Put reports it as ErrConflict.
	// The row lock orders a Put after a concurrent DeleteThread: the
	// deleted row is skipped once the delete commits, the check fails, and
	// a deleted thread never keeps a checkpoint that was appended to its
	// old history. The outer SELECT returns whether the row went in and the
	// seq it was checked against, so a conflict's message needs no second
	// query.
	//
	// The lease CTE checks the lease (see Leaser) and locks the thread's
	// row (FOR NO KEY UPDATE), so a claim (which updates the row) waits for
	// a Put in flight, and a Put after a claim sees the new token and is
	// refused. An unleased write (token 0) is accepted only on a thread
	// never claimed; the incarnation must be the thread's.
	//
	// A new thread (no row, no checkpoint) gets its row, token 0 (never
	// claimed), from the made CTE, before the checkpoint goes in (the
	// insert's condition on it is always true, and is there for that
	// order), as a ClaimPut makes the row before its checkpoint: made
	// after, a ClaimPut of the same new thread that made its row meanwhile
	// would wait for this checkpoint at the primary key while this waited
	// for its row. It is a plain INSERT, not an upsert: a claim that made
	// the row while this statement ran (the lease CTE's snapshot lacks it)
	// makes it wait for the claim, then fail with a unique violation, so
	// nothing of the write lands in the thread the claim took (Put reports
	// ErrConflict).
	//
	// The checkpoint's row keeps the log entries it appends ($12, which
	// follow the previous checkpoint's log_len). Only once it went in, the
	// same statement deletes the checkpoints KeepHistory drops (seq <= $16,
	// their entries moved to tenxgraph_log) and, when the
	// thread had a row, records the new seq (for pgClaim), the log's length
	// (for pgPutLeased), the wake-up ($13) and the time ($14) in it (the
	// recorded CTE; the made CTE gives a new row the same), releasing its
	// lease for a run's last write ($15). It also stores the checkpoint's
	// blobs ($17 to $22, one array per column, sorted by ref) the store does
	// not keep yet, and links the thread to each. A blob the store keeps
	// already is locked, not written (DO UPDATE ... WHERE false locks the
	// row and changes nothing): a delete of its last other holder, which
	// locks it too before it looks for holders, then either sees this link
	// or is seen by this insert, which inserts the row again.
	//
	// The row is locked for the update from the start, not share-locked:
	// two writers of one seq holding share locks would each wait for the
	// other, the second for the first's checkpoint at the primary key and
	// the first for the second's lock at the update. Writers of one thread
	// take turns at the row instead; a thread has one writer under its
	// lease, so only unleased writers (the threads written before leases)
	// ever wait there.
	pgPut = pgPutLease + `, latest AS (
		SELECT seq, log_len FROM tenxgraph_checkpoints
		WHERE thread_id = $1::text AND (SELECT count(*) FROM lease) >= 0
		ORDER BY seq DESC LIMIT 1
		FOR KEY SHARE
	), made AS (
		INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until, seq, log_len, wake_at, touched_at)
		SELECT $1::text, $10::text, 0, 0, $2::bigint, COALESCE((SELECT log_len FROM latest), 0) + cardinality($12::bytea[]),
			$13::bigint, $14::bigint
		WHERE NOT EXISTS (SELECT 1 FROM lease) AND COALESCE((SELECT seq FROM latest), 0) = $2::bigint - 1
		RETURNING thread_id
	)` + pgPutInsert + `
		AND (SELECT count(*) FROM made) >= 0` + pgPutInsEnd + `, recorded AS (
		UPDATE tenxgraph_threads SET seq = $2::bigint, log_len = (SELECT log_len FROM ins), wake_at = $13::bigint,
			touched_at = $14::bigint, lease_until = CASE WHEN $15::boolean THEN 0 ELSE lease_until END
		WHERE thread_id = $1::text AND EXISTS (SELECT 1 FROM ins)
	)` + pgPrune + pgBlobs + pgPutResult
	// pgPutLeased is pgPut for a write under a lease (Token > 0). Its
	// lease CTE takes the lease row by updating it, on the checks pgPut
	// makes (the token and incarnation are the lease's, the new seq is
	// the row's plus one), recording the new seq, the log's new length,
	// the wake-up and the time, and releasing the lease for a run's last
	// write. The checkpoint, its log entries in its row, goes in only when
	// it did, at the log's length it returns, so the write reads
	// nothing but the row it updates (the row's seq and log_len are its
	// latest checkpoint's: every write of a checkpoint records them in the
	// same statement). The row's lock orders the write against a
	// DeleteThread (which deletes that row first), a claim and any other
	// writer of the thread, each of which updates the row when it writes a
	// checkpoint; so no checkpoint of the new seq can exist once the row's
	// seq is one less, and the insert has no ON CONFLICT clause (whose
	// speculative insertion would probe the primary key once more). Were
	// one there all the same, the insert would fail with a unique
	// violation, the batch would run again write by write, and Put would
	// report ErrConflict. A write refused reports the seq the row had.
	pgPutLeased = pgLeasedLease + pgLeasedIns + pgPrune + pgBlobs + pgLeasedResult
	// pgPutLeasedNoBlobs is pgPutLeased for a checkpoint without blobs,
	// the most common write: it leaves out the two inserts that would
	// store none, and their arguments ($17 to $22).
	pgPutLeasedNoBlobs = pgLeasedLease + pgLeasedIns + pgPrune + pgLeasedResult
	// pgPutLeasedKeepAll is pgPutLeasedNoBlobs for a write that drops no
	// checkpoint (no KeepHistory, or fewer checkpoints than it keeps): it
	// leaves out the delete, and its argument ($16). Each data-modifying
	// CTE is a ModifyTable node that PostgreSQL sets up (opening the table
	// and its indexes) and runs on every execution, even when it has
	// nothing to do.
	pgPutLeasedKeepAll = pgLeasedLease + pgLeasedIns + pgLeasedResult
	pgLeasedLease      = `WITH lease AS (
		UPDATE tenxgraph_threads SET seq = $2::bigint, log_len = log_len + cardinality($12::bytea[]),
			wake_at = $13::bigint, touched_at = $14::bigint,
			lease_until = CASE WHEN $15::boolean THEN 0 ELSE lease_until END
		WHERE thread_id = $1::text AND token = $11::bigint AND incarnation = $10::text AND seq = $2::bigint - 1
		RETURNING log_len
	)`
	pgLeasedIns = `, ins AS (
		INSERT INTO tenxgraph_checkpoints
			(thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at, entries)
		SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::text, $6::text[], $7::bytea, $8::jsonb, $9::timestamptz, $10::text,
			lease.log_len, $13::bigint, ` + pgEntries + `
		FROM lease
		RETURNING seq, log_len
	)`
	pgLeasedResult = `
	SELECT EXISTS (SELECT 1 FROM ins), CASE WHEN EXISTS (SELECT 1 FROM ins) THEN $2::bigint - 1
		ELSE COALESCE((SELECT seq FROM tenxgraph_threads WHERE thread_id = $1::text), 0) END`
	pgPutLease = `WITH lease AS (
		SELECT token, incarnation FROM tenxgraph_threads
		WHERE thread_id = $1::text
		FOR NO KEY UPDATE
	)`
	pgPutInsert = `, ins AS (
		INSERT INTO tenxgraph_checkpoints
			(thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at, entries)
		SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::text, $6::text[], $7::bytea, $8::jsonb, $9::timestamptz, $10::text,
			COALESCE((SELECT log_len FROM latest), 0) + cardinality($12::bytea[]), $13::bigint, ` + pgEntries + `
		WHERE COALESCE((SELECT seq FROM latest), 0) = $2::bigint - 1
		AND CASE WHEN $11::bigint = 0
			THEN NOT EXISTS (SELECT 1 FROM lease WHERE token <> 0 OR incarnation <> $10::text)
			ELSE EXISTS (SELECT 1 FROM lease WHERE token = $11::bigint AND incarnation = $10::text) END`
	pgPutInsEnd = `
		ON CONFLICT (thread_id, seq) DO NOTHING
		RETURNING seq, log_len
	)`
	pgPutResult = `
	SELECT EXISTS (SELECT 1 FROM ins), COALESCE((SELECT seq FROM latest), 0)`
	// pgEntries is what a checkpoint's row keeps of the log entries it
	// appends ($12): the entries, or NULL for none.
	pgEntries = `CASE WHEN cardinality($12::bytea[]) > 0 THEN $12::bytea[] END`
	// pgPrune and pgBlobs are what a checkpoint write does once its
	// checkpoint went in (the ins CTE): delete the checkpoints KeepHistory
	// drops, moving the log entries their rows kept into tenxgraph_log
	// (the thread's log is kept whole), and store its blobs and their
	// links (see pgPut).
	pgPrune = `, pruned AS (
		DELETE FROM tenxgraph_checkpoints
		WHERE thread_id = $1::text AND seq <= $16::bigint AND EXISTS (SELECT 1 FROM ins)
		RETURNING log_len, entries
	), kept AS (
		INSERT INTO tenxgraph_log (thread_id, idx, entry)
		SELECT $1::text, pruned.log_len - cardinality(pruned.entries) + u.o - 1, u.e
		FROM pruned, unnest(pruned.entries) WITH ORDINALITY AS u(e, o)
	)`
	pgBlobs = `, blobbed AS (
		INSERT INTO tenxgraph_blobs AS b (ref, mime_type, size, width, height, data)
		SELECT u.ref, u.mime_type, u.size, u.width, u.height, u.data
		FROM ins, unnest($17::text[], $18::text[], $19::bigint[], $20::integer[], $21::integer[], $22::bytea[])
			AS u(ref, mime_type, size, width, height, data)
		ORDER BY u.ref
		ON CONFLICT (ref) DO UPDATE SET ref = b.ref WHERE false
	), linked AS (
		INSERT INTO tenxgraph_blob_links (thread_id, ref)
		SELECT $1::text, u.ref FROM ins, unnest($17::text[]) AS u(ref)
		ON CONFLICT DO NOTHING
	)`
	// pgClaimPut is ClaimPut's statement: pgPut's, but the lease CTE locks
	// the thread's row (FOR UPDATE, so racing claims take turns and each
	// sees the one before it), and the claimed CTE takes the lease, on the
	// same conditions as pgClaim ($24: now; $11: the new expiry, 0 when
	// the write releases it too, $15; $23: a new thread's incarnation),
	// only when the seq and the incarnation ($10, for a thread with
	// checkpoints: its row's, else its latest checkpoint's) are right,
	// recording the new seq in the row (see pgPut). As in pgPut, the
	// latest CTE reads only once the lease CTE has locked the row: a
	// DeleteThread, or a Put that prunes the checkpoint it reads, holds
	// the row and then deletes that checkpoint, so a ClaimPut that locked
	// the checkpoint first and then waited for the row would deadlock with
	// it. The checkpoint goes in only with the claim, and takes its
	// incarnation. A checkpoint another writer committed since the
	// statement began (the old lease holder's, whose lease expired) makes
	// the insert fail with a unique violation: the batch is rolled back,
	// the claim with it, and ClaimPut reports ErrConflict. The outer
	// SELECT returns the token claimed (0: none) and what the caller needs
	// to say why not.
	pgClaimPut = `WITH lease AS (
		SELECT incarnation, lease_until FROM tenxgraph_threads
		WHERE thread_id = $1::text
		FOR UPDATE
	), latest AS (
		SELECT seq, log_len, incarnation FROM tenxgraph_checkpoints
		WHERE thread_id = $1::text AND (SELECT count(*) FROM lease) >= 0
		ORDER BY seq DESC LIMIT 1
		FOR KEY SHARE
	), claimed AS (
		INSERT INTO tenxgraph_threads AS t (thread_id, incarnation, token, lease_until, seq, log_len, wake_at, touched_at)
		SELECT $1::text, COALESCE((SELECT incarnation FROM latest), $23::text), 1, CASE WHEN $15::boolean THEN 0 ELSE $11::bigint END, $2::bigint,
			COALESCE((SELECT log_len FROM latest), 0) + cardinality($12::bytea[]), $13::bigint, $14::bigint
		WHERE COALESCE((SELECT seq FROM latest), 0) = $2::bigint - 1
		AND NOT EXISTS (SELECT 1 FROM lease WHERE lease_until > $24::bigint)
		AND ($2::bigint = 1 OR COALESCE((SELECT incarnation FROM lease), (SELECT incarnation FROM latest)) = $10::text)
		ON CONFLICT (thread_id) DO UPDATE SET token = t.token + 1, lease_until = EXCLUDED.lease_until, seq = $2::bigint,
			log_len = EXCLUDED.log_len, wake_at = $13::bigint, touched_at = $14::bigint
		WHERE t.lease_until <= $24::bigint AND ($2::bigint = 1 OR t.incarnation = $10::text)
		RETURNING incarnation, token
	), ins AS (
		INSERT INTO tenxgraph_checkpoints
			(thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at, entries)
		SELECT $1::text, $2::bigint, $3::text, $4::bigint, $5::text, $6::text[], $7::bytea, $8::jsonb, $9::timestamptz, claimed.incarnation,
			COALESCE((SELECT log_len FROM latest), 0) + cardinality($12::bytea[]), $13::bigint, ` + pgEntries + `
		FROM claimed
		RETURNING seq, log_len
	)` + pgPrune + pgBlobs + `
	SELECT COALESCE((SELECT token FROM claimed), 0), COALESCE((SELECT incarnation FROM claimed), ''),
		COALESCE((SELECT seq FROM latest), 0), COALESCE((SELECT lease_until FROM lease), 0),
		COALESCE((SELECT incarnation FROM lease), (SELECT incarnation FROM latest), '')`
	// pgHistory takes LIMIT NULL as no limit. The newest row carries the
	// log up to its length from index $3 (the others' logs are prefixes of
	// it), read by the same statement, so from the same snapshot. The
	// entries are in two places (see 9 -> 10), each read by index: the
	// rows of the checkpoints kept, and tenxgraph_log for those dropped
	// and those written before. A tail ($3 > 0) reads the kept rows only
	// from the newest that ends at or before $3, which a backward scan of
	// the thread's checkpoints finds after the rows it reads anyway, so a
	// reader that holds most of a long thread reads what it lacks and no
	// more. The newest is found by its own index lookup (an InitPlan),
	// not a window over the thread's rows, so Latest and LatestTail read
	// one checkpoint, not every one the thread keeps. The kept rows' scan
	// is bounded on both sides (k.seq <= c.seq, which changes nothing
	// else): the planner cannot estimate a bound it computes, and with
	// one side only, on a table most of whose rows are one thread's, it
	// chose to read the whole table.
	pgHistory = `SELECT seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at,
		CASE WHEN seq = (SELECT max(seq) FROM tenxgraph_checkpoints WHERE thread_id = $1::text) AND log_len > $3::bigint THEN (
			SELECT array_agg(x.e ORDER BY x.i) FROM (
				SELECT l.idx AS i, l.entry AS e FROM tenxgraph_log l
				WHERE l.thread_id = $1::text AND l.idx >= $3::bigint AND l.idx < c.log_len
				UNION ALL
				SELECT k.log_len - cardinality(k.entries) + u.o - 1, u.e
				FROM tenxgraph_checkpoints k, unnest(k.entries) WITH ORDINALITY AS u(e, o)
				WHERE k.thread_id = $1::text AND k.log_len > $3::bigint AND k.seq <= c.seq AND k.seq > CASE WHEN $3::bigint = 0 THEN 0 ELSE COALESCE(
					(SELECT b.seq FROM tenxgraph_checkpoints b WHERE b.thread_id = $1::text AND b.log_len <= $3::bigint
					ORDER BY b.seq DESC LIMIT 1), 0) END
			) x WHERE x.i >= $3::bigint) END
	FROM tenxgraph_checkpoints c WHERE thread_id = $1::text ORDER BY seq DESC LIMIT $2::bigint`
	// pgUnlink drops a deleted thread's links and returns the blobs they
	// named; pgLockBlobs locks those blobs (in ref order, as Puts do), so
	// that pgDeleteBlobs, a statement later, sees every link a Put holding
	// one of them committed, and deletes only the blobs nobody holds.
	pgUnlink      = `DELETE FROM tenxgraph_blob_links WHERE thread_id = $1::text RETURNING ref`
	pgLockBlobs   = `SELECT ref FROM tenxgraph_blobs WHERE ref = ANY($1::text[]) ORDER BY ref FOR UPDATE`
	pgDeleteBlobs = `DELETE FROM tenxgraph_blobs b WHERE b.ref = ANY($1::text[])
	AND NOT EXISTS (SELECT 1 FROM tenxgraph_blob_links l WHERE l.ref = b.ref)`
	pgStatBlob = `SELECT b.mime_type, b.size, b.width, b.height FROM tenxgraph_blob_links l JOIN tenxgraph_blobs b ON b.ref = l.ref
	WHERE l.thread_id = $1::text AND l.ref = $2::text`
	pgReadBlob = `SELECT b.mime_type, b.size, b.width, b.height, b.data FROM tenxgraph_blob_links l JOIN tenxgraph_blobs b ON b.ref = l.ref
	WHERE l.thread_id = $1::text AND l.ref = $2::text`
	pgBlobUsage = `SELECT (SELECT COUNT(*) FROM tenxgraph_blobs), (SELECT COALESCE(SUM(size), 0)::bigint FROM tenxgraph_blobs),
		(SELECT COUNT(*) FROM tenxgraph_blob_links)`
	pgDelete    = `DELETE FROM tenxgraph_checkpoints WHERE thread_id = $1::text`
	pgDeleteLog = `DELETE FROM tenxgraph_log WHERE thread_id = $1::text`
	pgDue       = `SELECT thread_id FROM tenxgraph_threads WHERE wake_at > 0 AND wake_at <= $1::bigint ORDER BY wake_at LIMIT $2::bigint`
	// pgIdle lists idle threads no unexpired lease holds ($1: cutoff, $2:
	// now); pgLockIdle checks one again with its row locked, so a write or
	// a claim committing meanwhile (each updates that row) makes it not
	// idle. touched_at has no index: the sweep scans the threads' rows.
	pgIdle        = `SELECT thread_id FROM tenxgraph_threads WHERE touched_at < $1::bigint AND lease_until <= $2::bigint LIMIT $3::bigint`
	pgLockIdle    = `SELECT 1 FROM tenxgraph_threads WHERE thread_id = $1::text AND touched_at < $2::bigint AND lease_until <= $3::bigint FOR UPDATE`
	pgDeleteLease = `DELETE FROM tenxgraph_threads WHERE thread_id = $1::text`
	// pgClaim takes a free or expired lease ($3: now, $4: expiry), or
	// returns no row. A thread without a row is new (or deleted, its
	// checkpoints with its row): its first claim starts a new incarnation
	// ($2), seq 0.
	//
	// It also returns the thread's latest seq (Lease.Seq) from the row it
	// updated, where every checkpoint write records it (see pgPut). That
	// is the row as the last write before the claim left it, even one that
	// committed while the claim waited for its lock (the lease holder's
	// last write, which releases the lease): under READ COMMITTED the
	// update applies to the newest version of the row, found after the
	// wait, whereas a subquery reads with the snapshot taken when the
	// statement began, which lacks that write's checkpoint.
	pgClaim = `INSERT INTO tenxgraph_threads AS t (thread_id, incarnation, token, lease_until, touched_at, seq, log_len)
	VALUES ($1::text, $2::text, 1, $4::bigint, $3::bigint, 0, 0)
	ON CONFLICT (thread_id) DO UPDATE SET token = t.token + 1, lease_until = $4::bigint
	WHERE t.lease_until <= $3::bigint
	RETURNING incarnation, token, seq`
	pgExtend  = `UPDATE tenxgraph_threads SET lease_until = $3::bigint WHERE thread_id = $1::text AND token = $2::bigint AND lease_until <> 0`
	pgRelease = `UPDATE tenxgraph_threads SET lease_until = 0 WHERE thread_id = $1::text AND token = $2::bigint`
	// pgHead: the incarnation is the thread's (its row), else that of its
	// latest checkpoint.
	pgHead = `SELECT COALESCE((SELECT incarnation FROM tenxgraph_threads WHERE thread_id = $1::text),
		(SELECT incarnation FROM tenxgraph_checkpoints WHERE thread_id = $1::text ORDER BY seq DESC LIMIT 1), ''),
		(SELECT COALESCE(MAX(seq), 0) FROM tenxgraph_checkpoints WHERE thread_id = $1::text)`
)

// pgUniqueViolation is SQLSTATE unique_violation.
const pgUniqueViolation = "23505"

// DefaultPostgresConns is the smallest pool a Postgres store opens when the
// DSN sets no pool_max_conns: measured with 100 runs in flight, 4
// connections (pgx's default on 2 CPUs) gave 585–614 round trips/s and 16
// gave 808–828 (docs/benchmarks.md). Each replica opens its own pool, so
// several replicas need max_connections to match.
const DefaultPostgresConns = 16

// Postgres is a durable Checkpointer in a PostgreSQL database, for when
// several hosts (API server replicas, say) share threads, or the threads
// belong with the rest of an application's data. It is safe for concurrent
// use, and any number of Postgres values, in any number of processes, may
// share one database: the conditional insert and the primary key keep each
// thread's sequence free of gaps and duplicates.
//
// Writes (Put, Claim, Extend, Release) are group-committed: whatever queues
// while earlier writes are in flight goes in one transaction, so under load
// many runs' writes share one round trip and one WAL flush (see
// postgres_batch.go). Reads are one statement each, and DeleteThread is
// its own transaction. All use a pgxpool pool (size it with pool_max_conns
// in the DSN; the default is the larger of DefaultPostgresConns and 4 per
// CPU). The database must be UTF8.
type Postgres struct {
	pool *pgxpool.Pool
	opts options

	writer pgBatcher // Put, Claim, ClaimPut, Extend and Release go through it

	closeOnce sync.Once
}

var _ Checkpointer = (*Postgres)(nil)

// OpenPostgres connects to the database dsn names (a libpq keyword/value
// string or a postgres:// URL) and creates the schema when missing, so a new
// database needs no setup step beyond the right to create tables. It
// refuses a database written by a newer build, whose schema it does not
// know. Errors never quote dsn, which usually carries a password.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (*Postgres, error) {
	p, err := openPostgres(ctx, dsn, newOptions(opts))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open postgres: %w", err)
	}
	return p, nil
}

func openPostgres(ctx context.Context, dsn string, opts options) (*Postgres, error) {
	if strings.TrimSpace(dsn) == "" {
		return nil, errors.New("empty DSN")
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgconn redacts the password from the string it quotes.
		return nil, fmt.Errorf("parse DSN: %w", err)
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// Every run claims, writes and releases its thread: with pgx's
		// default (the larger of 4 and the CPUs) a hundred runs in flight
		// queue for connections, not for the database.
		cfg.MaxConns = int32(max(DefaultPostgresConns, 4*runtime.NumCPU()))
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	if err := pgCheckEncoding(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	if err := pgMigrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	p := &Postgres{pool: pool, opts: opts}
	p.writer.start(pool)
	return p, nil
}

// pgCheckEncoding connects and refuses a database whose encoding is not
// UTF8: in any other, some strings a checkpoint holds cannot be stored, or
// not read back unchanged.
func pgCheckEncoding(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Release()
	if enc := conn.Conn().PgConn().ParameterStatus("server_encoding"); enc != "UTF8" {
		return fmt.Errorf("the database's encoding is %q; the checkpointer needs UTF8 (CREATE DATABASE ... ENCODING 'UTF8')", enc)
	}
	return nil
}

// pgMigrate brings the schema to postgresSchemaVersion. When it already is
// there, as on every open but the first, it only reads the version, so a
// role without the right to create tables can use a prepared database.
// Otherwise it migrates in one transaction under an advisory lock, so two
// processes opening a new database at once do not both create it.
func pgMigrate(ctx context.Context, pool *pgxpool.Pool) error {
	version, err := pgSchemaVersion(ctx, pool)
	if err != nil {
		return err
	}
	if version == postgresSchemaVersion {
		return nil
	}
	if err := checkPgVersion(version); err != nil {
		return err
	}

	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin migration: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgMigrationLock); err != nil {
		return fmt.Errorf("lock for migration: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS tenxgraph_checkpoint_schema (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		version   integer NOT NULL
	)`); err != nil {
		return fmt.Errorf("create schema version table: %w", err)
	}
	// Read again under the lock: another process may have migrated while
	// this one waited.
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM tenxgraph_checkpoint_schema`).Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := checkPgVersion(version); err != nil {
		return err
	}
	if version == postgresSchemaVersion {
		return nil
	}
	for v := version; v < postgresSchemaVersion; v++ {
		if _, err := tx.Exec(ctx, postgresMigrations[v]); err != nil {
			return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tenxgraph_checkpoint_schema (singleton, version) VALUES (true, $1)
		ON CONFLICT (singleton) DO UPDATE SET version = EXCLUDED.version`, postgresSchemaVersion); err != nil {
		return fmt.Errorf("set schema version: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return nil
}

// pgSchemaVersion reads the schema version without writing anything: 0 when
// the version table does not exist yet.
func pgSchemaVersion(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('tenxgraph_checkpoint_schema') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("look for the schema version table: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var version int
	if err := pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM tenxgraph_checkpoint_schema`).Scan(&version); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return version, nil
}

func checkPgVersion(version int) error {
	switch {
	case version > postgresSchemaVersion:
		return fmt.Errorf("database schema version %d is newer than this build supports (%d); use a newer build", version, postgresSchemaVersion)
	case version < 0:
		return fmt.Errorf("database schema version %d is invalid", version)
	}
	return nil
}

// Put appends cp to its thread in one statement, committed with whatever
// other writes queued meanwhile; a Seq other than the latest plus one
// writes nothing and returns an error wrapping ErrConflict. ctx bounds the
// wait for the writer; once the write is taken, Put waits for the server's
// answer even if ctx ends meanwhile, so a caller never believes a write
// failed that the server committed. (Only a broken connection leaves the
// outcome unknown; Latest tells.)
func (p *Postgres) Put(ctx context.Context, cp Checkpoint) error {
	if err := p.put(ctx, cp); err != nil {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	return nil
}

func (p *Postgres) put(ctx context.Context, cp Checkpoint) error {
	args, err := pgPutArgs(cp, p.opts.keep)
	if err != nil {
		return err
	}
	q, args := p.putStatement(cp, args)
	var (
		inserted bool
		latest   int64
	)
	err = p.writer.write(ctx, pgWrite{
		thread: cp.ThreadID,
		queue:  func(b *pgx.Batch) { b.Queue(q, args...) },
		read:   func(br pgx.BatchResults) error { return br.QueryRow().Scan(&inserted, &latest) },
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == pgUniqueViolation {
			if pe.TableName == "tenxgraph_threads" {
				// A claim made the new thread's row (pgPut's made CTE).
				return fmt.Errorf("the thread was claimed meanwhile: %w", ErrConflict)
			}
			// Another writer committed this seq between our read and our
			// insert.
			return fmt.Errorf("another writer wrote seq %d first: %w", cp.Seq, ErrConflict)
		}
		return err
	}
	if !inserted {
		if cp.Token != 0 && latest == cp.Seq-1 {
			return fmt.Errorf("%w: %w", ErrLeaseLost, ErrConflict)
		}
		return fmt.Errorf("latest is %d: %w", latest, ErrConflict)
	}
	return nil
}

// putStatement picks the statement that writes cp, given its arguments
// (pgPutArgs), and the arguments it takes.
func (p *Postgres) putStatement(cp Checkpoint, args []any) (string, []any) {
	switch {
	case cp.Token == 0:
		return pgPut, args
	case len(cp.Blobs) > 0:
		return pgPutLeased, args
	case p.opts.keep < 0 || cp.Seq <= int64(p.opts.keep)+1:
		return pgPutLeasedKeepAll, args[:15]
	}
	return pgPutLeasedNoBlobs, args[:16]
}

// pgMinTime and pgMaxTime bound CreatedAt to the years 0001 to 9999, well
// inside what timestamptz holds.
var (
	pgMinTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	pgMaxTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// pgPutArgs checks and encodes a checkpoint into pgPut's arguments. Strings
// PostgreSQL's text cannot hold exactly (invalid UTF-8, NUL) are refused
// here, with a message naming the field, rather than by the server.
func pgPutArgs(cp Checkpoint, keep int) ([]any, error) {
	if err := pgText("thread id", cp.ThreadID); err != nil {
		return nil, err
	}
	if err := pgText("run id", cp.RunID); err != nil {
		return nil, err
	}
	if err := pgText("status", string(cp.Status)); err != nil {
		return nil, err
	}
	if err := pgText("incarnation", cp.Incarnation); err != nil {
		return nil, err
	}
	created := cp.CreatedAt
	if created.IsZero() {
		created = time.Now()
	} else if created.Before(pgMinTime) || !created.Before(pgMaxTime) {
		return nil, fmt.Errorf("created_at %v is outside the years 0001 to 9999", created)
	}
	next := cp.Next
	if next == nil {
		next = []string{} // NOT NULL column; an empty array reads back as nil
	}
	for _, n := range next {
		if err := pgText("node name", n); err != nil {
			return nil, err
		}
	}
	for k, v := range cp.Metadata {
		if err := pgText("metadata key", k); err != nil {
			return nil, err
		}
		if err := pgText(fmt.Sprintf("metadata %q", k), v); err != nil {
			return nil, err
		}
	}
	meta, err := encodeMetadata(cp.Metadata)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	state := cp.State
	if state == nil {
		state = []byte{} // NOT NULL column; an empty bytea reads back as nil
	}
	entries := make([][]byte, len(cp.Append))
	for i, e := range cp.Append {
		if e == nil {
			e = []byte{} // NOT NULL
		}
		entries[i] = e
	}
	var wake, prune int64
	if !cp.WakeAt.IsZero() {
		wake = max(1, cp.WakeAt.UnixMilli())
	}
	if keep >= 0 {
		prune = cp.Seq - int64(keep) - 1
	}
	blobs, err := checkBlobs(cp.Blobs)
	if err != nil {
		return nil, err
	}
	refs, types, sizes := make([]string, len(blobs)), make([]string, len(blobs)), make([]int64, len(blobs))
	widths, heights, data := make([]int32, len(blobs)), make([]int32, len(blobs)), make([][]byte, len(blobs))
	for i, b := range blobs {
		if err := pgText("blob media type", b.MimeType); err != nil {
			return nil, err
		}
		if b.Width > math.MaxInt32 || b.Height > math.MaxInt32 {
			return nil, fmt.Errorf("blob %s: %dx%d pixels is more than the store holds", b.Ref, b.Width, b.Height)
		}
		refs[i], types[i], sizes[i] = b.Ref, b.MimeType, b.Size
		widths[i], heights[i], data[i] = int32(b.Width), int32(b.Height), b.Data
	}
	return []any{cp.ThreadID, cp.Seq, cp.RunID, int64(cp.Step), string(cp.Status), next, state, json.RawMessage(meta), created,
		cp.Incarnation, cp.Token, entries, wake, created.UnixMilli(), cp.Release && cp.Token != 0, prune,
		refs, types, sizes, widths, heights, data}, nil
}

// pgText refuses a string a text column (or a jsonb string, where \u0000 is
// not allowed either) cannot store unchanged.
func pgText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s %q is not valid UTF-8", what, s)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s %q contains a NUL byte", what, s)
	}
	return nil
}

// Latest returns the thread's newest checkpoint, or an error wrapping
// ErrNotFound.
func (p *Postgres) Latest(ctx context.Context, threadID string) (Checkpoint, error) {
	cps, _, err := p.query(ctx, threadID, 1, 0)
	return latestFrom(threadID, cps, err)
}

// LatestTail implements TailReader in one statement.
func (p *Postgres) LatestTail(ctx context.Context, threadID string, from int) (Checkpoint, int, error) {
	cps, n, err := p.query(ctx, threadID, 1, max(from, 0))
	cp, err := latestFrom(threadID, cps, err)
	return cp, int(n), err
}

// History returns up to limit checkpoints, newest first (limit <= 0 means
// all), read in one statement so they come from one consistent snapshot.
func (p *Postgres) History(ctx context.Context, threadID string, limit int) ([]Checkpoint, error) {
	cps, _, err := p.query(ctx, threadID, limit, 0)
	return historyFrom(threadID, cps, err)
}

// query reads up to limit checkpoints, newest first, with their logs;
// from > 0 (with limit 1) reads only the entries from there on. It also
// returns the newest checkpoint's log length.
func (p *Postgres) query(ctx context.Context, threadID string, limit, from int) ([]Checkpoint, int64, error) {
	var lim any // NULL: no limit
	if limit > 0 {
		lim = int64(limit)
	}
	rows, err := p.pool.Query(ctx, pgHistory, threadID, lim, int64(from))
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Checkpoint
	if limit > 0 {
		out = make([]Checkpoint, 0, min(limit, 64))
	}
	var full [][]byte // the newest checkpoint's log (from index from)
	var newest int64  // its length
	for rows.Next() {
		cp := Checkpoint{ThreadID: threadID}
		var (
			step         int64
			status       string
			meta         []byte
			created      time.Time
			logLen, wake int64
			log          [][]byte
		)
		if err := rows.Scan(&cp.Seq, &cp.RunID, &step, &status, &cp.Next, &cp.State, &meta, &created, &cp.Incarnation, &logLen, &wake, &log); err != nil {
			return nil, 0, err
		}
		switch {
		case len(out) == 0:
			newest = logLen
			if want := max(logLen-int64(from), 0); int64(len(log)) != want {
				return nil, 0, fmt.Errorf("seq %d: the log holds %d entries from %d where the checkpoint needs %d; the database was changed outside tenxgraph", cp.Seq, len(log), from, want)
			}
			for i, e := range log {
				if e == nil {
					log[i] = []byte{}
				}
			}
			full = log
		case logLen > newest:
			return nil, 0, fmt.Errorf("seq %d: its log is longer than the newest checkpoint's", cp.Seq)
		}
		switch {
		case from > 0:
			if len(full) > 0 {
				cp.Log = full
			}
		case logLen > 0:
			cp.Log = full[:logLen:logLen]
		}
		if wake > 0 {
			cp.WakeAt = time.UnixMilli(wake).UTC()
		}
		cp.Step = int(step)
		cp.Status = Status(status)
		if len(cp.Next) == 0 {
			cp.Next = nil
		}
		if len(cp.State) == 0 {
			cp.State = nil
		}
		if cp.Metadata, err = decodeMetadata(meta); err != nil {
			return nil, 0, fmt.Errorf("seq %d: decode metadata: %w", cp.Seq, err)
		}
		cp.CreatedAt = created.UTC()
		out = append(out, cp)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	return out, newest, nil
}

// DeleteThread removes the thread's checkpoints; its next Put must use Seq
// 1 again. A Put racing with it either lands before it (and is deleted too)
// or fails with ErrConflict: the DELETE repeats until it finds nothing,
// because a Put that held its lock on the thread's latest row when the
// DELETE began commits a row the DELETE's snapshot cannot see. Without a
// race that is two statements.
//
// The thread's lease row goes first, in the same transaction: a Put under
// a lease in flight holds it, so the delete waits for that Put, and a claim
// racing with the delete waits for it to commit and then starts a new
// incarnation.
func (p *Postgres) DeleteThread(ctx context.Context, threadID string) error {
	if err := p.deleteThread(ctx, threadID); err != nil {
		return fmt.Errorf("checkpoint: delete thread %q: %w", threadID, err)
	}
	return nil
}

func (p *Postgres) deleteThread(ctx context.Context, threadID string) error {
	_, err := p.deleteIf(ctx, threadID, nil)
	return err
}

// deleteIf deletes the thread in one transaction if check, run first in
// it, says so (nil: always), and reports whether it did.
func (p *Postgres) deleteIf(ctx context.Context, threadID string, check func(pgx.Tx) (bool, error)) (bool, error) {
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	if check != nil {
		if ok, err := check(tx); err != nil || !ok {
			return false, err
		}
	}
	if _, err := tx.Exec(ctx, pgDeleteLease, threadID); err != nil {
		return false, err
	}
	for range pgDeleteRounds {
		tag, err := tx.Exec(ctx, pgDelete, threadID)
		if err != nil {
			return false, err
		}
		logTag, err := tx.Exec(ctx, pgDeleteLog, threadID)
		if err != nil {
			return false, err
		}
		if tag.RowsAffected() == 0 && logTag.RowsAffected() == 0 {
			// The thread's row again, once no Put can land any more:
			// an unleased Put that landed in an earlier round made it
			// anew.
			if _, err := tx.Exec(ctx, pgDeleteLease, threadID); err != nil {
				return false, err
			}
			if err := pgDropBlobs(ctx, tx, threadID); err != nil {
				return false, err
			}
			return true, tx.Commit(ctx)
		}
	}
	return false, fmt.Errorf("it was still being written after %d deletes", pgDeleteRounds)
}

// pgDropBlobs drops a deleted thread's links, and the blobs no other
// thread holds.
func pgDropBlobs(ctx context.Context, tx pgx.Tx, threadID string) error {
	rows, err := tx.Query(ctx, pgUnlink, threadID)
	if err != nil {
		return err
	}
	refs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(refs) == 0 {
		return err
	}
	slices.Sort(refs)
	if _, err := tx.Exec(ctx, pgLockBlobs, refs); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, pgDeleteBlobs, refs)
	return err
}

// StatBlob implements BlobStore.
func (p *Postgres) StatBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b := Blob{Ref: ref}
	var w, h int32
	err := p.pool.QueryRow(ctx, pgStatBlob, threadID, ref).Scan(&b.MimeType, &b.Size, &w, &h)
	b.Width, b.Height = int(w), int(h)
	return pgBlobRead(threadID, b, err)
}

// ReadBlob implements BlobStore.
func (p *Postgres) ReadBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b := Blob{Ref: ref}
	var w, h int32
	err := p.pool.QueryRow(ctx, pgReadBlob, threadID, ref).Scan(&b.MimeType, &b.Size, &w, &h, &b.Data)
	b.Width, b.Height = int(w), int(h)
	if err == nil && b.Data == nil {
		b.Data = []byte{}
	}
	return pgBlobRead(threadID, b, err)
}

func pgBlobRead(threadID string, b Blob, err error) (Blob, error) {
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Blob{}, blobNotFound(threadID, b.Ref)
	case err != nil:
		return Blob{}, fmt.Errorf("checkpoint: blob %s of thread %q: %w", b.Ref, threadID, err)
	}
	return b, nil
}

// BlobUsage implements BlobStore.
func (p *Postgres) BlobUsage(ctx context.Context) (BlobUsage, error) {
	var u BlobUsage
	if err := p.pool.QueryRow(ctx, pgBlobUsage).Scan(&u.Blobs, &u.Bytes, &u.Links); err != nil {
		return BlobUsage{}, fmt.Errorf("checkpoint: blob usage: %w", err)
	}
	return u, nil
}

// Claim implements Leaser in one statement.
func (p *Postgres) Claim(ctx context.Context, threadID string, ttl time.Duration) (Lease, error) {
	now := time.Now()
	l := Lease{ThreadID: threadID, Expires: leaseExpiry(now, ttl)}
	args := []any{threadID, newIncarnation(), leaseMillis(now), leaseMillis(l.Expires)}
	leased := false
	err := p.writer.write(ctx, pgWrite{
		thread: threadID,
		queue:  func(b *pgx.Batch) { b.Queue(pgClaim, args...) },
		read: func(br pgx.BatchResults) error {
			err := br.QueryRow().Scan(&l.Incarnation, &l.Token, &l.Seq)
			leased = errors.Is(err, pgx.ErrNoRows) // an outcome, not a failure
			if leased {
				err = nil
			}
			return err
		},
	})
	if err == nil && leased {
		err = ErrLeased
	}
	if err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q: %w", threadID, err)
	}
	return l, nil
}

// ClaimPut implements Checkpointer in one statement (pgClaimPut),
// committed with whatever other writes queued meanwhile.
func (p *Postgres) ClaimPut(ctx context.Context, cp Checkpoint, ttl time.Duration) (Lease, error) {
	l, err := p.claimPut(ctx, cp, ttl)
	if err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	return l, nil
}

func (p *Postgres) claimPut(ctx context.Context, cp Checkpoint, ttl time.Duration) (Lease, error) {
	args, err := pgPutArgs(cp, p.opts.keep)
	if err != nil {
		return Lease{}, err
	}
	now := time.Now()
	l := Lease{ThreadID: cp.ThreadID, Seq: cp.Seq, Expires: leaseExpiry(now, ttl)}
	args[10], args[14] = leaseMillis(l.Expires), cp.Release
	args = append(args, newIncarnation(), leaseMillis(now))
	var (
		latest, until int64
		inc           string
	)
	err = p.writer.write(ctx, pgWrite{
		thread: cp.ThreadID,
		queue:  func(b *pgx.Batch) { b.Queue(pgClaimPut, args...) },
		read: func(br pgx.BatchResults) error {
			return br.QueryRow().Scan(&l.Token, &l.Incarnation, &latest, &until, &inc)
		},
	})
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == pgUniqueViolation:
		// Another writer committed this seq since the statement began.
		return Lease{}, fmt.Errorf("another writer wrote seq %d first: %w", cp.Seq, ErrConflict)
	case err != nil:
		return Lease{}, err
	case l.Token > 0:
		return l, nil
	case until > leaseMillis(now):
		return Lease{}, ErrLeased
	case latest != cp.Seq-1:
		return Lease{}, fmt.Errorf("latest is %d: %w", latest, ErrConflict)
	case cp.Seq > 1 && inc != cp.Incarnation:
		return Lease{}, errIncarnation(cp.Incarnation)
	}
	// Leased by a claim of a new thread the statement could not see: its
	// insert then found the row, leased.
	return Lease{}, ErrLeased
}

// Extend implements Leaser.
func (p *Postgres) Extend(ctx context.Context, l Lease, ttl time.Duration) (Lease, error) {
	exp := leaseExpiry(time.Now(), ttl)
	var tag pgconn.CommandTag
	err := p.writer.write(ctx, pgWrite{
		thread: l.ThreadID,
		queue:  func(b *pgx.Batch) { b.Queue(pgExtend, l.ThreadID, l.Token, leaseMillis(exp)) },
		read:   func(br pgx.BatchResults) (err error) { tag, err = br.Exec(); return err },
	})
	if err == nil && tag.RowsAffected() == 0 {
		err = ErrLeaseLost
	}
	if err != nil {
		return l, fmt.Errorf("checkpoint: extend lease of thread %q: %w", l.ThreadID, err)
	}
	l.Expires = exp
	return l, nil
}

// Release implements Leaser.
func (p *Postgres) Release(ctx context.Context, l Lease) error {
	err := p.writer.write(ctx, pgWrite{
		thread: l.ThreadID,
		queue:  func(b *pgx.Batch) { b.Queue(pgRelease, l.ThreadID, l.Token) },
		read:   func(br pgx.BatchResults) error { _, err := br.Exec(); return err },
	})
	if err != nil {
		return fmt.Errorf("checkpoint: release lease of thread %q: %w", l.ThreadID, err)
	}
	return nil
}

// Head implements Leaser.
func (p *Postgres) Head(ctx context.Context, threadID string) (Head, error) {
	var h Head
	if err := p.pool.QueryRow(ctx, pgHead, threadID).Scan(&h.Incarnation, &h.Seq); err != nil {
		return Head{}, fmt.Errorf("checkpoint: head of thread %q: %w", threadID, err)
	}
	if h.Seq == 0 {
		return Head{}, nil
	}
	return h, nil
}

// Due implements Scheduler with the index on the threads' wake_at.
func (p *Postgres) Due(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := p.pool.Query(ctx, pgDue, now.UnixMilli(), int64(limit))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: due threads: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("checkpoint: due threads: %w", err)
	}
	return ids, nil
}

// DeleteIdle implements Pruner: it lists idle threads, then deletes each
// in a transaction of its own that checks again, under a lock, that the
// thread is still idle. The space is Postgres's to reuse: autovacuum marks
// the deleted rows free.
func (p *Postgres) DeleteIdle(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	now := leaseMillis(time.Now())
	rows, err := p.pool.Query(ctx, pgIdle, cutoff.UnixMilli(), now, int64(limit))
	if err != nil {
		return 0, fmt.Errorf("checkpoint: delete idle threads: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("checkpoint: delete idle threads: %w", err)
	}
	n := 0
	for _, id := range ids {
		deleted, err := p.deleteIf(ctx, id, func(tx pgx.Tx) (bool, error) {
			// The thread's row, locked first as a Put locks it, so the
			// two never wait for each other in a cycle.
			var one int
			err := tx.QueryRow(ctx, pgLockIdle, id, cutoff.UnixMilli(), now).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return n, fmt.Errorf("checkpoint: delete idle thread %q: %w", id, err)
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// pgDeleteRounds bounds DeleteThread's DELETEs; each round past the second
// needs a Put that raced with the previous one.
const pgDeleteRounds = 10

// Close stops the batch writers, after the batches in flight, and closes
// the pool, waiting for the connections in use to be released; writes
// still waiting for a writer fail. Calls after the first do nothing; other
// methods fail once the store is closed.
func (p *Postgres) Close() error {
	p.closeOnce.Do(func() {
		p.writer.close()
		p.pool.Close()
	})
	return nil
}
