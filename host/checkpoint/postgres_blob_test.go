package checkpoint_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// blobOf returns a blob of random bytes.
func blobOf(n int) checkpoint.Blob {
	data := make([]byte, n)
	_, _ = rand.Read(data)
	return checkpoint.Blob{Ref: checkpoint.BlobRef(data), MimeType: "image/png", Size: int64(n), Data: data}
}

// waitForLockWait polls until a backend of the database waits for a lock,
// or done has a value (what should have waited did not: it is put back),
// or fails the test.
func waitForLockWait(t *testing.T, conn *pgx.Conn, done chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			done <- err
			return
		default:
		}
		var n int
		if err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("nothing waited for a lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A Put that links a blob the store keeps, still uncommitted when the
// blob's last other holder is deleted, keeps it: the delete waits for the
// Put, then sees its link.
func TestPostgresBlobKeptForAPutInFlight(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	p := openPostgres(t, dsn)
	defer p.Close()
	x := blobOf(4096)
	if err := p.Put(ctx, checkpoint.Checkpoint{ThreadID: "old", Seq: 1, Blobs: []checkpoint.Blob{x}}); err != nil {
		t.Fatal(err)
	}
	writer, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close(ctx)
	watcher, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	q, args := checkpoint.PostgresPut(checkpoint.Checkpoint{ThreadID: "new", Seq: 1, Blobs: []checkpoint.Blob{x}})
	var inserted bool
	var latest int64
	if err := tx.QueryRow(ctx, q, args...).Scan(&inserted, &latest); err != nil || !inserted {
		t.Fatalf("the Put in flight: %v, %v", inserted, err)
	}
	deleted := make(chan error, 1)
	go func() { deleted <- p.DeleteThread(ctx, "old") }()
	waitForLockWait(t, watcher, deleted)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	got, err := p.ReadBlob(ctx, "new", x.Ref)
	if err != nil || string(got.Data) != string(x.Data) {
		t.Fatalf("the new holder reads %d bytes, %v: the delete took the blob a Put in flight linked", len(got.Data), err)
	}
	if u, err := p.BlobUsage(ctx); err != nil || u != (checkpoint.BlobUsage{Blobs: 1, Bytes: x.Size, Links: 1}) {
		t.Fatalf("usage %+v, %v", u, err)
	}
}

// A Put of a blob whose last holder is being deleted, uncommitted, waits
// for the delete and then stores the blob again.
func TestPostgresBlobStoredAgainAfterADeleteInFlight(t *testing.T) {
	ctx := context.Background()
	dsn := postgresDSN(t)
	p := openPostgres(t, dsn)
	defer p.Close()
	x := blobOf(4096)
	if err := p.Put(ctx, checkpoint.Checkpoint{ThreadID: "old", Seq: 1, Blobs: []checkpoint.Blob{x}}); err != nil {
		t.Fatal(err)
	}
	deleter, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer deleter.Close(ctx)
	watcher, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close(ctx)
	tx, err := deleter.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // committed below
	if err := checkpoint.PostgresDropBlobs(ctx, tx, "old"); err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		wrote <- p.Put(ctx, checkpoint.Checkpoint{ThreadID: "new", Seq: 1, Blobs: []checkpoint.Blob{x}})
	}()
	waitForLockWait(t, watcher, wrote)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	got, err := p.ReadBlob(ctx, "new", x.Ref)
	if err != nil || string(got.Data) != string(x.Data) {
		t.Fatalf("the new holder reads %d bytes, %v", len(got.Data), err)
	}
}
