package service_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// loadRelease writes testdata/release-v4.sql, a database written by the
// release before the message log (the quickstart's serve, auth on, token
// TG_TOKEN_ALICE), into a new SQLite file and returns its path.
func loadRelease(t *testing.T) string {
	t.Helper()
	dump, err := os.ReadFile("testdata/release-v4.sql")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(string(dump)); err != nil {
		t.Fatal(err)
	}
	return path
}

// A database in the format of the release before the message log opens,
// migrates in place and keeps its threads: the completed thread reads as
// it was, with its history, and takes a new turn; the paused one resumes
// with its pending call. What is written after the upgrade goes to the log.
// Both were created with alice's token, so they are alice's (her tenant's)
// after the upgrade, and nobody else's.
func TestStoreFromTheReleaseBeforeTheLog(t *testing.T) {
	ctx := context.Background()
	path := loadRelease(t)
	cfg := quickstartConfig(t)
	cfg.Checkpointer = config.Checkpointer{Type: "sqlite", Path: path}
	s, err := service.New(ctx, cfg, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	const alice = "TG_TOKEN_ALICE"

	done, err := s.App.ThreadFor(ctx, alice, "done")
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != graph.StatusCompleted || len(done.Messages) != 12 || !strings.HasPrefix(done.Messages[11].Text(), "Hello!") {
		t.Fatalf("thread done after the upgrade: %s with %d messages, want completed with 12 ending in the greeting", done.Status, len(done.Messages))
	}
	for _, other := range []string{"TG_TOKEN_BOB", ""} {
		if _, err := s.App.ThreadFor(ctx, other, "done"); !errors.Is(err, graph.ErrThreadNotFound) {
			t.Fatalf("tenant %q reads alice's migrated thread: %v", other, err)
		}
	}
	hist, err := s.App.History(ctx, alice, "done", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 9 || len(hist[0].Messages) != 12 || len(hist[8].Messages) != 2 {
		t.Fatalf("history of done: %d snapshots (newest %d messages, oldest %d), want 9 (12 and 2)", len(hist), len(hist[0].Messages), len(hist[8].Messages))
	}

	// The paused thread resumes with its pending call.
	paused, err := s.App.ThreadFor(ctx, alice, "paused")
	if err != nil {
		t.Fatal(err)
	}
	if paused.Status != graph.StatusInterrupted || len(paused.RemoteToolCalls) != 1 {
		t.Fatalf("thread paused after the upgrade: %s with %d pending calls", paused.Status, len(paused.RemoteToolCalls))
	}
	answer := message.Message{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{
		ToolCallID: paused.RemoteToolCalls[0].ID, Content: json.RawMessage(`{"text": "kept across the upgrade"}`)}}}
	res, err := s.App.Invoke(ctx, []message.Message{answer}, thread.RunConfig{ThreadID: "paused", Tenant: alice})
	if err != nil {
		t.Fatal(err)
	}
	if last := res.Messages[len(res.Messages)-1]; res.Status != graph.StatusCompleted || !strings.Contains(last.Text(), "kept across the upgrade") {
		t.Fatalf("resumed: %s, %q", res.Status, last.Text())
	}

	// A new turn on the completed thread: the history before it is intact,
	// and the new checkpoints keep the messages in the log, not the state.
	res, err = s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, "hello")}, thread.RunConfig{ThreadID: "done", Tenant: alice})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusCompleted || len(res.Messages) != 14 || res.Messages[0].ID != done.Messages[0].ID {
		t.Fatalf("a new turn on done: %s with %d messages, want completed with 14", res.Status, len(res.Messages))
	}
	if hist, err = s.App.History(ctx, alice, "done", 0); err != nil || len(hist) != 10 || len(hist[1].Messages) != 12 {
		t.Fatalf("history after the new turn: %d snapshots, %v", len(hist), err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var logged int
	var state string
	// The thread's key is its tenant's (see checkpoint.ThreadKey). The
	// log's entries are in the rows of the checkpoints that added them
	// (SQLite schema 8), so its length is the latest checkpoint's.
	if err := db.QueryRow(`SELECT log_len, state FROM checkpoints WHERE thread_id = 'TG_TOKEN_ALICE' || char(31) || 'done' ORDER BY seq DESC LIMIT 1`).Scan(&logged, &state); err != nil {
		t.Fatal(err)
	}
	if logged != 14 || strings.Contains(state, `"messages"`) {
		t.Fatalf("after the new turn the log holds %d messages (want 14) and the latest state is %s", logged, state)
	}
}

// checkpointer.keep_history bounds the snapshots a thread keeps, never its
// messages; checkpointer.idle_ttl deletes a thread nobody writes.
func TestRetentionFromConfig(t *testing.T) {
	ctx := context.Background()
	cfg := quickstartConfig(t)
	keep := 1
	cfg.Checkpointer = config.Checkpointer{Type: "sqlite", Path: filepath.Join(t.TempDir(), "state.db"), KeepHistory: &keep, IdleTTL: time.Second}
	s, err := service.New(ctx, cfg, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	var res graph.Result
	for range 3 {
		if res, err = s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, "hello")}, thread.RunConfig{ThreadID: "kept"}); err != nil {
			t.Fatal(err)
		}
	}
	hist, err := s.App.History(ctx, "", "kept", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || len(hist[0].Messages) != 6 || len(hist[1].Messages) != 4 {
		t.Fatalf("keep_history 1: %d snapshots, want 2 (6 and 4 messages)", len(hist))
	}
	if len(res.Messages) != 6 {
		t.Fatalf("the thread has %d messages, want 6", len(res.Messages))
	}
	// Idle for more than a second, the thread is deleted by the sweeper
	// (which looks every second).
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := s.App.Thread(ctx, "kept")
		if errors.Is(err, graph.ErrThreadNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle thread was still there 15s after its TTL of 1s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
