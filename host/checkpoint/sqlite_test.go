package checkpoint_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/checkpoint/checkpointtest"
)

func openSQLite(t testing.TB, path string) *checkpoint.SQLite {
	t.Helper()
	s, err := checkpoint.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSQLite(t *testing.T) {
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Checkpointer {
		return openSQLite(t, filepath.Join(t.TempDir(), "checkpoints.db"))
	})
}

// Writes racing Close: each Put either succeeds, and its checkpoint is in
// the file when it is opened again, or fails, and is not; none hangs.
// Writes are made by whichever caller holds the writer's turn, so Close
// must take the turn back from a caller in the middle of a batch and fail
// only what was never written.
func TestSQLiteWritesRacingClose(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "close.db")
	s := openSQLite(t, path)
	const writers, each = 16, 200
	var wg sync.WaitGroup
	wrote := make([]int64, writers) // the last seq each writer's thread got
	started := make(chan struct{}, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("t%d", w)
			for seq := int64(1); seq <= each; seq++ {
				err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: id, Seq: seq, RunID: "r", Status: checkpoint.StatusRunning, State: []byte(`{}`)})
				if seq == 1 {
					started <- struct{}{}
				}
				if err != nil {
					return
				}
				wrote[w] = seq
			}
		}()
	}
	for range writers {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("writes still waiting 30s after Close returned")
	}
	s = openSQLite(t, path)
	defer s.Close()
	cut := 0
	for w := range writers {
		latest, err := s.Latest(ctx, fmt.Sprintf("t%d", w))
		switch {
		case wrote[w] == 0:
			if !errors.Is(err, checkpoint.ErrNotFound) {
				t.Errorf("thread t%d: no Put succeeded, yet Latest gives seq %d, %v", w, latest.Seq, err)
			}
		case err != nil || latest.Seq != wrote[w]:
			t.Errorf("thread t%d: its last successful Put was seq %d; the file has %d (%v)", w, wrote[w], latest.Seq, err)
		}
		if wrote[w] < each {
			cut++
		}
	}
	t.Logf("%d of %d writers were cut off by Close", cut, writers)
}

// A write that panics (a bug) in a batch with others: whichever caller was
// making the batch panics, as the writer did before writes were made by
// their callers, but every write of the batch gets an answer (an error,
// having written nothing, or its outcome) and the store goes on writing:
// with the panic recovered, as net/http recovers a handler's, no caller
// waits for ever.
func TestSQLiteWritePanicLeavesNoneWaiting(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t, filepath.Join(t.TempDir(), "panic.db"))
	defer s.Close()
	// A write holds the turn while the others queue up behind it, so that
	// they go in one batch.
	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- checkpoint.WriteSQLite(ctx, s, func() { close(held); <-hold })
	}()
	<-held
	type outcome struct {
		id       string
		err      error
		panicked any
	}
	out := make(chan outcome, 3)
	do := func(id string, f func() error) {
		go func() {
			var o outcome
			o.id = id
			defer func() { o.panicked = recover(); out <- o }()
			o.err = f()
		}()
	}
	for _, id := range []string{"a", "b"} {
		do(id, func() error {
			return s.Put(ctx, checkpoint.Checkpoint{ThreadID: id, Seq: 1, RunID: "r", Status: checkpoint.StatusRunning, State: []byte(`{}`)})
		})
	}
	do("boom", func() error { return checkpoint.WriteSQLite(ctx, s, func() { panic("boom") }) })
	// The three are queued once the queue holds them; the holder is
	// blocked, so nothing takes them meanwhile.
	for deadline := time.Now().Add(10 * time.Second); checkpoint.SQLiteQueued(s) < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want 3", checkpoint.SQLiteQueued(s))
		}
		runtime.Gosched()
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatalf("the first write: %v", err)
	}
	panics := 0
	for range 3 {
		select {
		case o := <-out:
			if o.panicked != nil {
				panics++
			}
			if o.id == "boom" || o.panicked != nil {
				continue
			}
			latest, lerr := s.Latest(ctx, o.id)
			if (o.err == nil) != (lerr == nil && latest.Seq == 1) {
				t.Errorf("put %s answered %v, yet the store has seq %d (%v)", o.id, o.err, latest.Seq, lerr)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a write of the panicking batch is still waiting for its answer")
		}
	}
	if panics != 1 {
		t.Errorf("%d callers panicked, want the one making the batch", panics)
	}
	if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "after", Seq: 1, RunID: "r", Status: checkpoint.StatusRunning, State: []byte(`{}`)}); err != nil {
		t.Fatalf("a write after the panic: %v", err)
	}
}

func TestSQLiteRetention(t *testing.T) {
	path := filepath.Join(t.TempDir(), "retention.db")
	checkpointtest.RunRetention(t, func(t *testing.T, opts ...checkpoint.Option) checkpoint.Checkpointer {
		s, err := checkpoint.OpenSQLite(context.Background(), path, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestSQLiteSharedFile runs the suite with every subtest's store on one file,
// as several processes sharing a database would be.
func TestSQLiteSharedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	checkpointtest.Run(t, func(t *testing.T) checkpoint.Checkpointer {
		return openSQLite(t, path)
	})
}

func TestSQLiteSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s := openSQLite(t, path)
	state := make([]byte, 1<<20)
	for i := range state {
		state[i] = byte(i * 7)
	}
	for seq := int64(1); seq <= 3; seq++ {
		cp := checkpoint.Checkpoint{ThreadID: "t", Seq: seq, RunID: "r", Status: checkpoint.StatusRunning,
			Next: []string{"n"}, State: state, Metadata: map[string]string{"k": "v"}}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	want, err := s.History(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Latest(ctx, "t"); err == nil {
		t.Fatal("Latest after Close succeeded")
	}

	s = openSQLite(t, path)
	defer s.Close()
	got, err := s.History(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("after reopen: %d checkpoints, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Seq != w.Seq || g.RunID != w.RunID || string(g.State) != string(w.State) ||
			!g.CreatedAt.Equal(w.CreatedAt) || g.Metadata["k"] != "v" || len(g.Next) != 1 {
			t.Fatalf("after reopen, checkpoint %d = %+v, want %+v", i, g, w)
		}
	}
	if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 4}); err != nil {
		t.Fatalf("Put seq 4 after reopen: %v", err)
	}
}

func TestSQLiteRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	openSQLite(t, path).Close()

	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	s, err := checkpoint.OpenSQLite(context.Background(), path)
	if err == nil {
		s.Close()
		t.Fatal("OpenSQLite opened a database with a newer schema")
	}
	if !strings.Contains(err.Error(), "99") || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("error %q should name the version and say it is newer", err)
	}
}

func TestSQLiteRefusesNonDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := checkpoint.OpenSQLite(context.Background(), path); err == nil {
		s.Close()
		t.Fatal("OpenSQLite opened a file that is not a database")
	}
}

func TestSQLiteCreatesParentDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b", "c")
	path := filepath.Join(dir, "checkpoints.db")
	openSQLite(t, path).Close()

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() {
		t.Fatalf("%s is not a directory", dir)
	}
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if perm := mustStat(t, dir).Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("directory mode %v, want no group or other access", perm)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("file mode %v, want no group or other access", perm)
		}
	}
}

func mustStat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestSQLiteURICharacters checks that a path is used as a path, not parsed as
// a URI.
func TestSQLiteURICharacters(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "we?ird#dir %41 &x=y")
	path := filepath.Join(dir, "db?mode=ro")
	s := openSQLite(t, path)
	if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
	s = openSQLite(t, path)
	defer s.Close()
	if _, err := s.Latest(ctx, "t"); err != nil {
		t.Fatal(err)
	}
}

func TestSQLiteWALMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openSQLite(t, path)
	defer s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
}

func TestSQLiteOpenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if s, err := checkpoint.OpenSQLite(ctx, filepath.Join(t.TempDir(), "db")); err == nil {
		s.Close()
		t.Fatal("OpenSQLite with a cancelled context succeeded")
	}
}

// TestSQLiteConcurrentOpen opens one new file from many goroutines at once:
// SQLite does not wait on busy_timeout while a new file switches to WAL, so
// OpenSQLite has to.
func TestSQLiteConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	for round := range 50 {
		path := filepath.Join(t.TempDir(), "db")
		const openers = 8
		var wg sync.WaitGroup
		stores := make([]*checkpoint.SQLite, openers)
		errs := make([]error, openers)
		for i := range openers {
			wg.Go(func() { stores[i], errs[i] = checkpoint.OpenSQLite(ctx, path) })
		}
		wg.Wait()
		for i, s := range stores {
			if errs[i] != nil {
				t.Fatalf("round %d opener %d: %v", round, i, errs[i])
			}
			if err := s.Put(ctx, checkpoint.Checkpoint{ThreadID: "t", Seq: int64(i) + 1}); err != nil {
				t.Fatalf("round %d opener %d: %v", round, i, err)
			}
		}
		for _, s := range stores {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSQLiteTwoHandles has two stores on one file, as two processes would
// be: both open a new file at once, race for one seq, and write many threads
// at once. No "database is locked" may surface.
func TestSQLiteTwoHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")

	var handles [2]*checkpoint.SQLite
	var wg sync.WaitGroup
	var openErrs [2]error
	for i := range handles {
		wg.Go(func() { handles[i], openErrs[i] = checkpoint.OpenSQLite(ctx, path) })
	}
	wg.Wait()
	for i, err := range openErrs {
		if err != nil {
			t.Fatalf("open handle %d: %v", i, err)
		}
		t.Cleanup(func() { handles[i].Close() })
	}
	a, b := handles[0], handles[1]

	// Both handles race for seq 2 of one thread.
	for round := range 5 {
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
		wins := 0
		for i, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, checkpoint.ErrConflict):
				t.Errorf("round %d racer %d: %v", round, i, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d racers won, want 1", round, wins)
		}
		for _, h := range handles {
			if cp, err := h.Latest(ctx, th); err != nil || cp.Seq != 2 {
				t.Fatalf("round %d: Latest = seq %d, %v; want seq 2", round, cp.Seq, err)
			}
		}
	}

	// Both handles write and read many threads at once.
	const threads, perThread = 8, 25
	errc := make(chan error, threads*perThread*4)
	for i := range threads {
		w, r := handles[i%2], handles[(i+1)%2]
		th := fmt.Sprintf("busy-%d", i)
		wg.Go(func() {
			for seq := int64(1); seq <= perThread; seq++ {
				if err := w.Put(ctx, checkpoint.Checkpoint{ThreadID: th, Seq: seq, State: make([]byte, 4096)}); err != nil {
					errc <- err
				}
			}
		})
		wg.Go(func() {
			for range perThread {
				if _, err := r.Latest(ctx, th); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
					errc <- err
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	for i := range threads {
		th := fmt.Sprintf("busy-%d", i)
		for _, h := range []*checkpoint.SQLite{a, b} {
			if cp, err := h.Latest(ctx, th); err != nil || cp.Seq != perThread {
				t.Fatalf("Latest(%s) = seq %d, %v; want %d", th, cp.Seq, err, perThread)
			}
		}
	}
}

// TestSQLiteRefusesInvalidUTF8 checks that strings JSON cannot hold exactly
// are refused rather than changed.
func TestSQLiteRefusesInvalidUTF8(t *testing.T) {
	ctx := context.Background()
	s := openSQLite(t, filepath.Join(t.TempDir(), "db"))
	defer s.Close()
	for _, cp := range []checkpoint.Checkpoint{
		{ThreadID: "t", Seq: 1, Next: []string{"ok", "bad\xff"}},
		{ThreadID: "t", Seq: 1, Metadata: map[string]string{"k": "bad\xff"}},
		{ThreadID: "t", Seq: 1, Metadata: map[string]string{"bad\xff": "v"}},
	} {
		if err := s.Put(ctx, cp); err == nil || errors.Is(err, checkpoint.ErrConflict) {
			t.Errorf("Put(%q, %q) = %v; want an encoding error", cp.Next, cp.Metadata, err)
		}
	}
	if _, err := s.Latest(ctx, "t"); !errors.Is(err, checkpoint.ErrNotFound) {
		t.Fatalf("Latest = %v; want ErrNotFound", err)
	}
}

// fileSize is the database's size with its WAL.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// fillAndDelete writes 40 threads with 64 KiB of log each, long idle, and
// deletes them, with the store's other idle threads (want of them), with
// DeleteIdle.
func fillAndDelete(t *testing.T, s *checkpoint.SQLite, want int) {
	t.Helper()
	ctx := context.Background()
	entry := make([]byte, 8<<10)
	for i := range entry {
		entry[i] = byte(i * 31)
	}
	old := time.Now().Add(-48 * time.Hour)
	for i := range 40 {
		cp := checkpoint.Checkpoint{ThreadID: fmt.Sprint("big-", i), Seq: 1, RunID: "r", Status: checkpoint.StatusCompleted, CreatedAt: old}
		for range 8 {
			cp.Append = append(cp.Append, entry)
		}
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.DeleteIdle(ctx, time.Now().Add(-time.Hour), 1000)
	if err != nil || n != want {
		t.Fatalf("DeleteIdle = %d, %v; want %d", n, err, want)
	}
}

// A new file gives the space of deleted threads back: DeleteIdle frees
// their pages and Compact returns them to the file system in place.
func TestSQLiteCompactGivesSpaceBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openSQLite(t, path)
	defer s.Close()
	fillAndDelete(t, s, 40)
	before := fileSize(t, path)
	freed, err := s.Compact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	after := fileSize(t, path)
	if after > before/4 || freed != before-after {
		t.Fatalf("Compact: %d bytes before, %d after, reported %d freed; want the 2.5 MiB of deleted threads given back", before, after, freed)
	}
}

// A file created before auto_vacuum was set (schema 1, as that release
// created it) is converted by its first Compact and shrinks.
func TestSQLiteCompactConvertsAnOldFile(t *testing.T) {
	path := oldSQLite(t, sqliteV1)
	s := openSQLite(t, path)
	defer s.Close()
	fillAndDelete(t, s, 41) // and the old file's thread, idle since 1970
	before := fileSize(t, path)
	if _, err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := fileSize(t, path); after > before/4 {
		t.Fatalf("Compact of an old file: %d bytes before, %d after", before, after)
	}
	// The converted file keeps working.
	cp := checkpoint.Checkpoint{ThreadID: "new", Seq: 1, RunID: "r", Status: checkpoint.StatusCompleted, Append: [][]byte{[]byte("m")}}
	if err := s.Put(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Latest(context.Background(), "new"); err != nil || len(got.Log) != 1 {
		t.Fatalf("a thread written after Compact: %+v, %v", got, err)
	}
}

// One batch of the writer: a Put whose seq is taken and a write that fails
// half-way fail alone; the others commit, and nothing of the failed write
// stays.
func TestSQLiteBatchFailuresStayAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := openSQLite(t, path)
	defer s.Close()
	ctx := context.Background()
	for _, failing := range []bool{false, true} {
		var cps []checkpoint.Checkpoint
		for i := range 8 {
			cps = append(cps, checkpoint.Checkpoint{ThreadID: fmt.Sprint(failing, "-", i), Seq: 1, RunID: "r",
				Status: checkpoint.StatusCompleted, Append: [][]byte{[]byte(fmt.Sprint("m", i))}})
		}
		taken := cps[0]
		taken.Append = [][]byte{[]byte("lost")}
		cps = append(cps, taken) // seq 1 of the first thread again, later in the batch
		errs := checkpoint.CommitSQLiteBatch(s, cps, failing)
		for i := range 8 {
			if errs[i] != nil {
				t.Fatalf("failing %v: Put %d: %v", failing, i, errs[i])
			}
			cp, err := s.Latest(ctx, cps[i].ThreadID)
			if err != nil || len(cp.Log) != 1 || string(cp.Log[0]) != fmt.Sprint("m", i) {
				t.Fatalf("failing %v: thread %d: %q, %v", failing, i, cp.Log, err)
			}
		}
		if !errors.Is(errs[8], checkpoint.ErrConflict) {
			t.Fatalf("failing %v: the Put of a taken seq: %v, want ErrConflict", failing, errs[8])
		}
		if failing && (len(errs) != 10 || errs[9] == nil) {
			t.Fatalf("the failing write: %v, want its error", errs)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM log WHERE thread_id = 'half-done'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows of the failed write: %d, %v; want 0", n, err)
	}
}

// TestSQLiteEncodeNext: the SQLite store's encoding of Next, which skips
// encoding/json for plain names, is encoding/json's for every name.
func TestSQLiteEncodeNext(t *testing.T) {
	for _, next := range [][]string{
		{"agent"}, {"agent", "tools", "a b-c_d.e"}, {""}, {"", ""},
		{`quo"te`}, {`back\slash`}, {"<html>&"}, {"tab\there", "nul\x00"}, {"héllo", "日本"}, {"\u2028"}, {"~\x7f"},
	} {
		got, err := checkpoint.EncodeNext(next)
		if err != nil {
			t.Fatalf("EncodeNext(%q): %v", next, err)
		}
		want, _ := json.Marshal(next)
		if got != string(want) {
			t.Errorf("EncodeNext(%q) = %s, want %s", next, got, want)
		}
	}
	if _, err := checkpoint.EncodeNext([]string{"bad \xff"}); err == nil {
		t.Error("EncodeNext of invalid UTF-8: no error")
	}
}

// The checkpointer copies the WAL into the database file while the writes
// go on, without waiting for walBackstop: a few times checkpointEvery
// writes, too few pages for the writer's own checkpoint, reach the file.
func TestSQLiteCheckpointsInTheBackground(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := openSQLite(t, path)
	defer s.Close()
	start := mustStat(t, path).Size()
	cp := checkpoint.Checkpoint{RunID: "r", Status: checkpoint.StatusRunning, Seq: 1, State: make([]byte, 2048)}
	n := 2 * checkpoint.SQLiteCheckpointEvery
	for i := range n {
		cp.ThreadID = fmt.Sprintf("t%d", i)
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	// Each checkpoint's state is a page of the WAL at least, so the WAL
	// holds fewer than walBackstop pages and only the checkpointer copies
	// them: the file grows by most of the states.
	if wal := mustStat(t, path+"-wal").Size(); wal >= checkpoint.SQLiteWALBackstop*4096 {
		t.Fatalf("the WAL is %d bytes, enough for the writer's own checkpoint: the test proves nothing", wal)
	}
	want := start + int64(n)*2048/2
	deadline := time.Now().Add(10 * time.Second)
	for mustStat(t, path).Size() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes after %d writes of 2 KiB states, want %d: the WAL was not copied into it", mustStat(t, path).Size(), n, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A store written without a pause still starts its WAL over: the
// checkpointer's copies alone never find it all copied when a write
// begins, which is when SQLite starts it over, and the writer's own copy
// past walBackstop makes it so. SQLite counts the starts over in the
// WAL's header (its checkpoint sequence number, bytes 12 to 15).
func TestSQLiteWALStartsOver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := openSQLite(t, path)
	defer s.Close()
	cp := checkpoint.Checkpoint{ThreadID: "t", RunID: "r", Status: checkpoint.StatusRunning, State: make([]byte, 2048)}
	put := func(seq int) {
		cp.Seq = int64(seq)
		if err := s.Put(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	put(1)
	before := walSequence(t, path)
	// Each write adds a page of state and more: about ten times
	// walBackstop pages in all.
	for i := range 5 * checkpoint.SQLiteWALBackstop / 2 {
		put(i + 2)
	}
	// About ten times walBackstop pages make eight or nine starts over; a
	// WAL left to grow makes one at most.
	if after := walSequence(t, path); after < before+3 {
		t.Fatalf("the WAL started over %d times in %d writes of 2 KiB states, want at least 3: it grows without end", after-before, 5*checkpoint.SQLiteWALBackstop/2)
	}
}

// walSequence reads the checkpoint sequence number in the header of the
// database's WAL, which SQLite increments each time it starts the WAL over.
func walSequence(t *testing.T, path string) uint32 {
	t.Helper()
	f, err := os.Open(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var h [16]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		t.Fatalf("read the WAL's header: %v", err)
	}
	return binary.BigEndian.Uint32(h[12:16])
}
