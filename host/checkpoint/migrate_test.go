package checkpoint_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// The schemas of version 1, before threads had incarnations and leases,
// exactly as that release created them, with one thread of two checkpoints.
const (
	sqliteV1 = `CREATE TABLE checkpoints (
		thread_id  TEXT    NOT NULL,
		seq        INTEGER NOT NULL CHECK (seq >= 1),
		run_id     TEXT    NOT NULL,
		step       INTEGER NOT NULL,
		status     TEXT    NOT NULL,
		next       TEXT    NOT NULL,
		state      BLOB    NOT NULL,
		metadata   TEXT    NOT NULL,
		created_at INTEGER NOT NULL,
		PRIMARY KEY (thread_id, seq)
	);
	INSERT INTO checkpoints VALUES ('old', 1, 'r1', 0, 'running', '["a"]', x'7b7d', '{"owner":"alice"}', 1);
	INSERT INTO checkpoints VALUES ('old', 2, 'r1', 1, 'interrupted', '["a"]', x'7b7d', '{"owner":"alice"}', 2);
	PRAGMA user_version = 1;`
	postgresV1 = `CREATE TABLE tenxgraph_checkpoints (
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
	);
	CREATE TABLE tenxgraph_checkpoint_schema (
		singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
		version   integer NOT NULL
	);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 1);
	INSERT INTO tenxgraph_checkpoints VALUES ('old', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{"owner":"alice"}', now());
	INSERT INTO tenxgraph_checkpoints VALUES ('old', 2, 'r1', 1, 'interrupted', '{a}', '\x7b7d', '{"owner":"alice"}', now());`
)

func TestSQLiteMigratesVersion1(t *testing.T) {
	s := openSQLite(t, oldSQLite(t, sqliteV1))
	defer s.Close()
	testMigratedThread(t, s, s)
}

// oldSQLite writes a database as an earlier release left it (schema, rows
// and user_version in script) and returns its path.
func oldSQLite(t *testing.T, script string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(script); err != nil {
		t.Fatal(err)
	}
	return path
}

// oldPostgres runs script (an earlier release's schema and rows) in a
// database of its own and opens the store on it, which migrates it.
func oldPostgres(t *testing.T, script string, opts ...checkpoint.Option) *checkpoint.Postgres {
	t.Helper()
	dsn := postgresDSN(t)
	pgExec(t, dsn, script)
	return openPostgres(t, dsn, opts...)
}

func TestPostgresMigratesVersion1(t *testing.T) {
	p := oldPostgres(t, postgresV1)
	defer p.Close()
	testMigratedThread(t, p, p)
}

// testMigratedThread checks that the thread written before leases reads
// back as it was, in incarnation "", and keeps working both unleased (an
// engine of that release) and under a lease. Its metadata names an owner,
// so it is alice's since tenants (see testMigratedTenants).
func testMigratedThread(t *testing.T, s checkpoint.Checkpointer, l checkpoint.Leaser) {
	ctx := context.Background()
	old := checkpoint.ThreadKey("alice", "old")
	cp, err := s.Latest(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Seq != 2 || cp.Status != checkpoint.StatusInterrupted || cp.Metadata["owner"] != "alice" || cp.Incarnation != "" {
		t.Fatalf("migrated latest = %+v", cp)
	}
	if h, err := l.Head(ctx, old); err != nil || h != (checkpoint.Head{Seq: 2}) {
		t.Fatalf("Head = %+v, %v; want incarnation \"\" at seq 2", h, err)
	}
	cp.Seq, cp.CreatedAt = 3, time.Time{}
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("unleased Put on a migrated thread: %v", err)
	}
	le, err := l.Claim(ctx, old, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if le.Incarnation != "" || le.Seq != 3 {
		t.Fatalf("Claim of a migrated thread = %+v; want incarnation \"\" at seq 3", le)
	}
	cp.Seq, cp.Token = 4, le.Token
	if err := s.Put(ctx, cp); err != nil {
		t.Fatalf("leased Put on a migrated thread: %v", err)
	}
	cp.Seq, cp.Token = 5, 0
	if err := s.Put(ctx, cp); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("unleased Put on a claimed thread = %v, want ErrConflict", err)
	}
}

// The Postgres schema of version 3, the last before the message log, as
// that release left it, with a thread whose messages are in its state.
const postgresV3 = postgresV1 + `;
	ALTER TABLE tenxgraph_checkpoints ADD COLUMN incarnation text NOT NULL DEFAULT '';
	CREATE TABLE tenxgraph_threads (
		thread_id   text   NOT NULL PRIMARY KEY,
		incarnation text   NOT NULL,
		token       bigint NOT NULL,
		lease_until bigint NOT NULL
	);
	INSERT INTO tenxgraph_threads VALUES ('old', '', 0, 0);
	INSERT INTO tenxgraph_checkpoints VALUES ('inline', 1, 'r1', 1, 'completed', '{}', '\x7b226d65737361676573223a5b5d7d', '{}', now(), '');
	INSERT INTO tenxgraph_threads VALUES ('inline', '', 0, 0);
	UPDATE tenxgraph_checkpoint_schema SET version = 3;`

// A thread written before the log reads back with its state as it was and
// no log; its next checkpoint starts the log; it is not idle, and not due.
func TestPostgresMigratesVersion3(t *testing.T) {
	ctx := context.Background()
	p := oldPostgres(t, postgresV3)
	defer p.Close()
	cp, err := p.Latest(ctx, "inline")
	if err != nil {
		t.Fatal(err)
	}
	if string(cp.State) != `{"messages":[]}` || cp.Log != nil || !cp.WakeAt.IsZero() {
		t.Fatalf("migrated latest: state %q, log %q, wake %v", cp.State, cp.Log, cp.WakeAt)
	}
	le, err := p.Claim(ctx, "inline", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	next := checkpoint.Checkpoint{ThreadID: "inline", Seq: 2, RunID: "r2", Status: checkpoint.StatusCompleted,
		Incarnation: le.Incarnation, Token: le.Token, Append: [][]byte{[]byte("a"), []byte("b")}}
	if err := p.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if cp, err = p.Latest(ctx, "inline"); err != nil || len(cp.Log) != 2 || string(cp.Log[1]) != "b" {
		t.Fatalf("after the first Put with a log: %q, %v", cp.Log, err)
	}
	if n, err := p.DeleteIdle(ctx, time.Now().Add(-time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("DeleteIdle of threads touched now = %d, %v; want 0", n, err)
	}
	if due, err := p.Due(ctx, time.Now(), 100); err != nil || len(due) != 0 {
		t.Fatalf("Due = %q, %v; want none", due, err)
	}
	testMigratedThread(t, p, p)
}

// The same for SQLite: schema 4, the last before the log.
func TestSQLiteMigratesVersion4(t *testing.T) {
	s := openSQLite(t, oldSQLite(t, strings.Replace(sqliteV1, "PRAGMA user_version = 1;", `
	ALTER TABLE checkpoints ADD COLUMN incarnation TEXT NOT NULL DEFAULT '';
	CREATE TABLE threads (thread_id TEXT NOT NULL PRIMARY KEY, incarnation TEXT NOT NULL, token INTEGER NOT NULL, lease_until INTEGER NOT NULL) WITHOUT ROWID;
	INSERT INTO threads VALUES ('old', '', 0, 0);
	PRAGMA user_version = 4;`, 1)))
	defer s.Close()
	testMigratedThread(t, s, s)
	cp, err := s.Latest(context.Background(), checkpoint.ThreadKey("alice", "old"))
	if err != nil || cp.Log != nil || string(cp.State) != "{}" {
		t.Fatalf("migrated thread: %+v, %v", cp, err)
	}
}

// The threads of a store from the release before tenants (SQLite schema 5,
// Postgres schema 4): alice's "t1" (two checkpoints, three log entries,
// claimed once, idle), bob's "t2" (paused, due to be woken at wakeMillis)
// and "free", written without a token. Statements that differ between the
// two stores are written for each.
const (
	wakeMillis = 978307200000 // 2001-01-01 UTC
	sqliteV5   = `
	INSERT INTO checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '["a"]', x'7b7d', '{"owner":"TG_TOKEN_ALICE"}', 1000000, 'inc-a', 1, 0),
		('t1', 2, 'r1', 1, 'completed', '[]', x'7b7d', '{"owner":"TG_TOKEN_ALICE"}', 2000000, 'inc-a', 3, 0),
		('t2', 1, 'r2', 1, 'interrupted', '["a"]', x'7b7d', '{"owner":"TG_TOKEN_BOB"}', 3000000, 'inc-b', 1, 978307200000),
		('free', 1, 'r3', 1, 'completed', '[]', x'7b7d', '{}', 4000000, 'inc-f', 1, 0);
	INSERT INTO log (thread_id, idx, entry) VALUES ('t1', 0, x'61'), ('t1', 1, x'62'), ('t1', 2, x'63'), ('t2', 0, x'64'), ('free', 0, x'65');
	INSERT INTO threads (thread_id, incarnation, token, lease_until, wake_at, touched_at) VALUES
		('t1', 'inc-a', 1, 0, 0, 2), ('t2', 'inc-b', 1, 0, 978307200000, 3), ('free', 'inc-f', 1, 0, 0, 4);
	PRAGMA user_version = 5;`
	postgresV4 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 4);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{"owner":"TG_TOKEN_ALICE"}', 'epoch', 'inc-a', 1, 0),
		('t1', 2, 'r1', 1, 'completed', '{}', '\x7b7d', '{"owner":"TG_TOKEN_ALICE"}', 'epoch', 'inc-a', 3, 0),
		('t2', 1, 'r2', 1, 'interrupted', '{a}', '\x7b7d', '{"owner":"TG_TOKEN_BOB"}', 'epoch', 'inc-b', 1, 978307200000),
		('free', 1, 'r3', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-f', 1, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62'), ('t1', 2, '\x63'), ('t2', 0, '\x64'), ('free', 0, '\x65');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until) VALUES ('t1', 'inc-a', 1, 0), ('t2', 'inc-b', 1, 0), ('free', 'inc-f', 1, 0);
	INSERT INTO tenxgraph_activity (thread_id, wake_at, touched_at) VALUES ('t1', 0, 2), ('t2', 978307200000, 3), ('free', 0, 4);`
)

func TestSQLiteMigratesToTenants(t *testing.T) {
	s := openSQLite(t, oldSQLite(t, strings.Join(checkpoint.SQLiteSchema(5), ";\n")+";\n"+sqliteV5))
	defer s.Close()
	testMigratedTenants(t, s)
}

func TestPostgresMigratesToTenants(t *testing.T) {
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(4), ";\n")+";\n"+postgresV4)
	defer p.Close()
	testMigratedTenants(t, p)
}

// testMigratedTenants checks that each thread written with an owner moved
// to its owner's key, whole (checkpoints, log, lease row, wake-up), and
// that the thread without one stayed where it was.
func testMigratedTenants(t *testing.T, s interface {
	checkpoint.Checkpointer
	checkpoint.Leaser
	checkpoint.Scheduler
}) {
	ctx := context.Background()
	alice := checkpoint.ThreadKey("TG_TOKEN_ALICE", "t1")
	bob := checkpoint.ThreadKey("TG_TOKEN_BOB", "t2")
	for _, old := range []string{"t1", "t2"} {
		if _, err := s.Latest(ctx, old); !errors.Is(err, checkpoint.ErrNotFound) {
			t.Fatalf("Latest(%q) after the migration = %v, want ErrNotFound: the thread moved to its owner's key", old, err)
		}
	}
	hist, err := s.History(ctx, alice, 0)
	if err != nil || len(hist) != 2 {
		t.Fatalf("History of alice's t1 = %d checkpoints, %v; want 2", len(hist), err)
	}
	if cp := hist[0]; cp.ThreadID != alice || cp.Seq != 2 || cp.Metadata["owner"] != "TG_TOKEN_ALICE" || cp.Incarnation != "inc-a" ||
		len(cp.Log) != 3 || string(cp.Log[2]) != "c" || len(hist[1].Log) != 1 {
		t.Fatalf("alice's t1 after the migration: %+v (older: %+v)", cp, hist[1])
	}
	if h, err := s.Head(ctx, alice); err != nil || h != (checkpoint.Head{Incarnation: "inc-a", Seq: 2}) {
		t.Fatalf("Head of alice's t1 = %+v, %v", h, err)
	}
	if free, err := s.Latest(ctx, "free"); err != nil || free.Seq != 1 || len(free.Log) != 1 {
		t.Fatalf("the thread without an owner: %+v, %v", free, err)
	}
	due, err := s.Due(ctx, time.UnixMilli(wakeMillis), 100)
	if err != nil || !slices.Equal(due, []string{bob}) {
		t.Fatalf("Due = %q, %v; want bob's t2", due, err)
	}
	if tenant, id := checkpoint.SplitThreadKey(due[0]); tenant != "TG_TOKEN_BOB" || id != "t2" {
		t.Fatalf("SplitThreadKey(%q) = %q, %q", due[0], tenant, id)
	}
	// The lease row moved with the thread: a claim continues its
	// incarnation and tokens, and a leased write extends its log.
	le, err := s.Claim(ctx, alice, time.Minute)
	if err != nil || le.Incarnation != "inc-a" || le.Token != 2 || le.Seq != 2 {
		t.Fatalf("Claim of alice's t1 = %+v, %v; want incarnation inc-a, token 2, seq 2", le, err)
	}
	next := checkpoint.Checkpoint{ThreadID: alice, Seq: 3, RunID: "r4", Status: checkpoint.StatusCompleted,
		Incarnation: le.Incarnation, Token: le.Token, Append: [][]byte{[]byte("d")}, Release: true}
	if err := s.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.Latest(ctx, alice); err != nil || len(cp.Log) != 4 || string(cp.Log[3]) != "d" {
		t.Fatalf("after a write: log %q, %v", cp.Log, err)
	}
	// Another tenant's thread of the same id is another thread.
	if _, err := s.Latest(ctx, checkpoint.ThreadKey("TG_TOKEN_BOB", "t1")); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("bob's t1: %v, want ErrNotFound", err)
	}
}

// A store from the release before blobs (SQLite schema 6, Postgres schema
// 5), with one thread: after the migration the thread reads back as it
// was, takes a checkpoint with a blob, and lets go of it when deleted.
const (
	sqliteV6 = `
	INSERT INTO checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'completed', '[]', x'7b7d', '{}', 1000000, 'inc-a', 2, 0);
	INSERT INTO log (thread_id, idx, entry) VALUES ('t1', 0, x'61'), ('t1', 1, x'62');
	INSERT INTO threads (thread_id, incarnation, token, lease_until, wake_at, touched_at) VALUES ('t1', 'inc-a', 1, 0, 0, 1);
	PRAGMA user_version = 6;`
	postgresV5 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 5);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-a', 2, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until) VALUES ('t1', 'inc-a', 1, 0);
	INSERT INTO tenxgraph_activity (thread_id, wake_at, touched_at) VALUES ('t1', 0, 1);`
)

func TestSQLiteMigratesToBlobs(t *testing.T) {
	s := openSQLite(t, oldSQLite(t, strings.Join(checkpoint.SQLiteSchema(6), ";\n")+";\n"+sqliteV6))
	defer s.Close()
	testMigratedBlobs(t, s)
}

func TestPostgresMigratesToBlobs(t *testing.T) {
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(5), ";\n")+";\n"+postgresV5)
	defer p.Close()
	testMigratedBlobs(t, p)
}

func testMigratedBlobs(t *testing.T, s interface {
	checkpoint.Checkpointer
	checkpoint.Leaser
	checkpoint.BlobStore
}) {
	ctx := context.Background()
	cp, err := s.Latest(ctx, "t1")
	if err != nil || cp.Seq != 1 || len(cp.Log) != 2 || string(cp.Log[1]) != "b" {
		t.Fatalf("the thread after the migration: %+v, %v", cp, err)
	}
	if u, err := s.BlobUsage(ctx); err != nil || u != (checkpoint.BlobUsage{}) {
		t.Fatalf("usage after the migration = %+v, %v; want none", u, err)
	}
	le, err := s.Claim(ctx, "t1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	x := blobOf(1000)
	next := checkpoint.Checkpoint{ThreadID: "t1", Seq: 2, RunID: "r2", Status: checkpoint.StatusCompleted,
		Incarnation: le.Incarnation, Token: le.Token, Append: [][]byte{[]byte("c")}, Blobs: []checkpoint.Blob{x}, Release: true}
	if err := s.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if b, err := s.ReadBlob(ctx, "t1", x.Ref); err != nil || string(b.Data) != string(x.Data) {
		t.Fatalf("the migrated thread's blob: %d bytes, %v", len(b.Data), err)
	}
	if err := s.DeleteThread(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if u, err := s.BlobUsage(ctx); err != nil || u != (checkpoint.BlobUsage{}) {
		t.Fatalf("usage after deleting the thread = %+v, %v; want none", u, err)
	}
}

// A Postgres store from the release before thread rows kept their latest
// seq (schema 6): "t1", claimed and written under leases (two
// checkpoints), and "free", written without a token, so without a row.
const postgresV6 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 6);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{}', 'epoch', 'inc-a', 1, 0),
		('t1', 2, 'r1', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-a', 2, 0),
		('free', 1, 'r2', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-f', 0, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until) VALUES ('t1', 'inc-a', 1, 0);
	INSERT INTO tenxgraph_activity (thread_id, wake_at, touched_at) VALUES ('t1', 0, 1), ('free', 0, 2);`

// After the migration a claim of each thread reports its latest seq, read
// from its checkpoints until a write records it in the row, and from the
// row after; the threads read back as they were.
func TestPostgresMigratesToThreadSeq(t *testing.T) {
	ctx := context.Background()
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(6), ";\n")+";\n"+postgresV6)
	defer p.Close()
	cp, err := p.Latest(ctx, "t1")
	if err != nil || cp.Seq != 2 || cp.Incarnation != "inc-a" || len(cp.Log) != 2 || string(cp.Log[1]) != "b" {
		t.Fatalf("t1 after the migration: %+v, %v", cp, err)
	}
	le, err := p.Claim(ctx, "t1", time.Minute)
	if err != nil || le.Incarnation != "inc-a" || le.Token != 2 || le.Seq != 2 {
		t.Fatalf("Claim of t1 = %+v, %v; want incarnation inc-a, token 2, seq 2", le, err)
	}
	next := checkpoint.Checkpoint{ThreadID: "t1", Seq: 3, RunID: "r3", Status: checkpoint.StatusCompleted,
		Incarnation: le.Incarnation, Token: le.Token, Append: [][]byte{[]byte("c")}, Release: true}
	if err := p.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if le, err = p.Claim(ctx, "t1", time.Minute); err != nil || le.Token != 3 || le.Seq != 3 {
		t.Fatalf("Claim of t1 after a write = %+v, %v; want token 3, seq 3", le, err)
	}
	// The thread written without a token had no row; schema 8 gives it
	// one in its checkpoints' incarnation, which its first claim continues
	// (as a SQLite store's does), at its latest seq.
	free, err := p.Claim(ctx, "free", time.Minute)
	if err != nil || free.Token != 1 || free.Seq != 1 || free.Incarnation != "inc-f" {
		t.Fatalf("Claim of free = %+v, %v; want token 1, seq 1, incarnation inc-f", free, err)
	}
	next = checkpoint.Checkpoint{ThreadID: "free", Seq: 2, RunID: "r4", Status: checkpoint.StatusCompleted,
		Incarnation: free.Incarnation, Token: free.Token, Release: true}
	if err := p.Put(ctx, next); err != nil {
		t.Fatal(err)
	}
	if free, err = p.Claim(ctx, "free", time.Minute); err != nil || free.Token != 2 || free.Seq != 2 {
		t.Fatalf("Claim of free after a write = %+v, %v; want token 2, seq 2", free, err)
	}
}

// A Postgres store from the release before a thread's wake-up and write
// time moved into its row (schema 7): "t1", claimed, written under leases
// and paused until wakeMillis, touched long ago; "free", written without a
// token, so without a row; "claimed", claimed by a run that wrote nothing.
const postgresV7 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 7);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{}', 'epoch', 'inc-a', 1, 0),
		('t1', 2, 'r1', 1, 'interrupted', '{a}', '\x7b7d', '{}', 'epoch', 'inc-a', 2, 978307200000),
		('free', 1, 'r2', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-f', 0, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until, seq) VALUES ('t1', 'inc-a', 1, 0, 2), ('claimed', 'inc-c', 1, 0, NULL);
	INSERT INTO tenxgraph_activity (thread_id, wake_at, touched_at) VALUES ('t1', 978307200000, 1), ('free', 0, 2);`

// After the migration each thread's wake-up and write time are its row's:
// the paused thread is due, the thread written without a token takes
// unleased writes in its incarnation only and keeps it when claimed, the
// idle sweep finds the thread touched long ago and no other, and the
// claim of a thread nothing wrote continues its tokens.
func TestPostgresMigratesToThreadRows(t *testing.T) {
	ctx := context.Background()
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(7), ";\n")+";\n"+postgresV7)
	defer p.Close()
	if due, err := p.Due(ctx, time.UnixMilli(wakeMillis), 100); err != nil || !slices.Equal(due, []string{"t1"}) {
		t.Fatalf("Due = %q, %v; want t1", due, err)
	}
	if cp, err := p.Latest(ctx, "t1"); err != nil || cp.Seq != 2 || !cp.WakeAt.Equal(time.UnixMilli(wakeMillis)) || len(cp.Log) != 2 {
		t.Fatalf("t1 after the migration: %+v, %v", cp, err)
	}
	other := checkpoint.Checkpoint{ThreadID: "free", Seq: 2, RunID: "r3", Status: checkpoint.StatusCompleted, Incarnation: "inc-other"}
	if err := p.Put(ctx, other); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("an unleased Put of free in another incarnation = %v, want ErrConflict", err)
	}
	other.Incarnation = "inc-f"
	if err := p.Put(ctx, other); err != nil {
		t.Fatalf("an unleased Put of free in its incarnation: %v", err)
	}
	if free, err := p.Claim(ctx, "free", time.Minute); err != nil || free.Incarnation != "inc-f" || free.Token != 1 || free.Seq != 2 {
		t.Fatalf("Claim of free = %+v, %v; want incarnation inc-f, token 1, seq 2", free, err)
	}
	// t1 was touched at 1 ms after the epoch, free and claimed since.
	if n, err := p.DeleteIdle(ctx, time.UnixMilli(1000), 100); err != nil || n != 1 {
		t.Fatalf("DeleteIdle = %d, %v; want 1 (t1)", n, err)
	}
	if _, err := p.Latest(ctx, "t1"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest(t1) after the sweep = %v, want ErrNotFound", err)
	}
	if due, err := p.Due(ctx, time.UnixMilli(wakeMillis), 100); err != nil || len(due) != 0 {
		t.Fatalf("Due after the sweep = %q, %v; want none", due, err)
	}
	if le, err := p.Claim(ctx, "claimed", time.Minute); err != nil || le.Incarnation != "inc-c" || le.Token != 2 || le.Seq != 0 {
		t.Fatalf("Claim of claimed = %+v, %v; want incarnation inc-c, token 2, seq 0", le, err)
	}
}

// A Postgres store from the release before a thread's row recorded its
// log's length (schema 8): "t1", claimed and written under leases, its
// log two entries long; "old", whose row has no seq (written before rows
// kept one), its log one entry long; "claimed", claimed by a run that
// wrote nothing.
const postgresV8 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 8);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{}', 'epoch', 'inc-a', 1, 0),
		('t1', 2, 'r1', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-a', 2, 0),
		('old', 1, 'r2', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-o', 1, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62'), ('old', 0, '\x78');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until, seq, wake_at, touched_at) VALUES
		('t1', 'inc-a', 1, 0, 2, 0, 1), ('old', 'inc-o', 1, 0, NULL, 0, 1), ('claimed', 'inc-c', 1, 0, NULL, 0, 1);`

// After the migration every thread's row has the seq and log length of its
// latest checkpoint (0 for none): a write under a lease, which reads only
// the row, continues each thread's log where it stopped, a write at the
// wrong seq is refused naming the thread's seq, and each claim reports the
// seq the thread has. The log reads whole, and from any index on.
func TestPostgresMigratesToLogLength(t *testing.T) {
	ctx := context.Background()
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(8), ";\n")+";\n"+postgresV8)
	defer p.Close()
	for _, c := range []struct {
		thread      string
		seq         int64
		log         []string
		incarnation string
	}{
		{"t1", 2, []string{"a", "b"}, "inc-a"},
		{"old", 1, []string{"x"}, "inc-o"},
		{"claimed", 0, nil, "inc-c"},
	} {
		le, err := p.Claim(ctx, c.thread, time.Minute)
		if err != nil || le.Seq != c.seq || le.Token != 2 || le.Incarnation != c.incarnation {
			t.Fatalf("Claim of %s = %+v, %v; want seq %d, token 2, incarnation %s", c.thread, le, err, c.seq, c.incarnation)
		}
		cp := checkpoint.Checkpoint{ThreadID: c.thread, Seq: c.seq, RunID: "r9", Status: checkpoint.StatusCompleted,
			Incarnation: le.Incarnation, Token: le.Token, Append: [][]byte{[]byte("late")}}
		if err := p.Put(ctx, cp); !errors.Is(err, checkpoint.ErrConflict) || !strings.Contains(err.Error(), fmt.Sprintf("latest is %d", c.seq)) {
			t.Fatalf("a leased Put of %s at seq %d, its latest = %v; want ErrConflict naming seq %d", c.thread, c.seq, err, c.seq)
		}
		cp.Seq, cp.Append = c.seq+1, [][]byte{[]byte("y"), []byte("z")}
		if err := p.Put(ctx, cp); err != nil {
			t.Fatalf("a leased Put of %s at seq %d: %v", c.thread, c.seq+1, err)
		}
		got, err := p.Latest(ctx, c.thread)
		want := append(c.log, "y", "z")
		if err != nil || got.Seq != c.seq+1 || !slices.Equal(logStrings(got.Log), want) {
			t.Fatalf("%s after the write: seq %d, log %q, %v; want seq %d, log %q", c.thread, got.Seq, logStrings(got.Log), err, c.seq+1, want)
		}
		// The log's entries from before the migration stay where they
		// were, the write's are in its checkpoint's row (schema 10): every
		// end of the log reads across both.
		for from := range want {
			got, n, err := p.LatestTail(ctx, c.thread, from)
			if err != nil || n != len(want) || !slices.Equal(logStrings(got.Log), want[from:]) {
				t.Fatalf("%s: LatestTail(from %d) = log %q of %d, %v; want %q of %d", c.thread, from, logStrings(got.Log), n, err, want[from:], len(want))
			}
		}
	}
}

// logStrings is a checkpoint's log as strings, for comparing.
func logStrings(log [][]byte) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = string(e)
	}
	return out
}

// A store from the release before a checkpoint kept its log entries in its
// row (SQLite schema 7, Postgres schema 9): "t1", its log three entries
// long in the log table, written by two checkpoints.
const (
	sqliteV7 = `
	INSERT INTO checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '["a"]', x'7b7d', '{}', 1000000, 'inc-a', 2, 0),
		('t1', 2, 'r1', 1, 'completed', '[]', x'7b7d', '{}', 1000000, 'inc-a', 3, 0);
	INSERT INTO log (thread_id, idx, entry) VALUES ('t1', 0, x'61'), ('t1', 1, x'62'), ('t1', 2, x'63');
	INSERT INTO threads (thread_id, incarnation, token, lease_until, wake_at, touched_at) VALUES ('t1', 'inc-a', 1, 0, 0, 1);
	PRAGMA user_version = 7;`
	postgresV9 = `
	CREATE TABLE tenxgraph_checkpoint_schema (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), version integer NOT NULL);
	INSERT INTO tenxgraph_checkpoint_schema VALUES (true, 9);
	INSERT INTO tenxgraph_checkpoints (thread_id, seq, run_id, step, status, next, state, metadata, created_at, incarnation, log_len, wake_at) VALUES
		('t1', 1, 'r1', 0, 'running', '{a}', '\x7b7d', '{}', 'epoch', 'inc-a', 2, 0),
		('t1', 2, 'r1', 1, 'completed', '{}', '\x7b7d', '{}', 'epoch', 'inc-a', 3, 0);
	INSERT INTO tenxgraph_log (thread_id, idx, entry) VALUES ('t1', 0, '\x61'), ('t1', 1, '\x62'), ('t1', 2, '\x63');
	INSERT INTO tenxgraph_threads (thread_id, incarnation, token, lease_until, seq, log_len, wake_at, touched_at) VALUES
		('t1', 'inc-a', 1, 0, 2, 3, 0, 1);`
)

func TestSQLiteMigratesToRowEntries(t *testing.T) {
	path := oldSQLite(t, strings.Join(checkpoint.SQLiteSchema(7), ";\n")+";\n"+sqliteV7)
	s, err := checkpoint.OpenSQLite(context.Background(), path, checkpoint.KeepHistory(1))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testMigratedRowEntries(t, s)
}

func TestPostgresMigratesToRowEntries(t *testing.T) {
	p := oldPostgres(t, strings.Join(checkpoint.PostgresSchema(9), ";\n")+";\n"+postgresV9, checkpoint.KeepHistory(1))
	defer p.Close()
	testMigratedRowEntries(t, p)
}

// testMigratedRowEntries writes three checkpoints under a lease to the
// migrated thread, on a store keeping one checkpoint before the latest:
// the first two writes drop the checkpoints from before the migration
// (whose entries are in the log table already), the third one written
// after it (whose entries move there). After each write the whole log,
// and every end of it, reads as written.
func testMigratedRowEntries(t *testing.T, s interface {
	checkpoint.Checkpointer
	checkpoint.Leaser
	checkpoint.TailReader
}) {
	ctx := context.Background()
	le, err := s.Claim(ctx, "t1", time.Minute)
	if err != nil || le.Seq != 2 {
		t.Fatalf("Claim = %+v, %v; want seq 2", le, err)
	}
	want := []string{"a", "b", "c"}
	for _, w := range []struct {
		seq int64
		add []string
	}{{3, []string{"d", "e"}}, {4, nil}, {5, []string{"f"}}} {
		cp := checkpoint.Checkpoint{ThreadID: "t1", Seq: w.seq, RunID: "r2", Status: checkpoint.StatusRunning,
			Incarnation: le.Incarnation, Token: le.Token}
		for _, e := range w.add {
			cp.Append = append(cp.Append, []byte(e))
		}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatalf("seq %d: %v", w.seq, err)
		}
		want = append(want, w.add...)
		got, err := s.Latest(ctx, "t1")
		if err != nil || got.Seq != w.seq || !slices.Equal(logStrings(got.Log), want) {
			t.Fatalf("after seq %d: seq %d, log %q, %v; want log %q", w.seq, got.Seq, logStrings(got.Log), err, want)
		}
		for from := range len(want) + 1 {
			got, n, err := s.LatestTail(ctx, "t1", from)
			if err != nil || n != len(want) || !slices.Equal(logStrings(got.Log), want[from:]) {
				t.Fatalf("after seq %d: LatestTail(from %d) = log %q of %d, %v; want %q of %d", w.seq, from, logStrings(got.Log), n, err, want[from:], len(want))
			}
		}
	}
}
