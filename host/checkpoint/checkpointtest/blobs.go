package checkpointtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// The blob cases: a thread holds the blobs its checkpoints carried, reads
// only those, shares their bytes with every other thread of the same
// content, and lets go of them when deleted; a refused Put stores none.
// Usage is compared before and after, since stores opened by one test may
// share a database.

// blobStore returns s as a BlobStore; every store of the suite keeps blobs.
func blobStore(t *testing.T, s checkpoint.Checkpointer) checkpoint.BlobStore {
	t.Helper()
	bs, ok := s.(checkpoint.BlobStore)
	if !ok {
		t.Fatal("the store does not implement checkpoint.BlobStore")
	}
	return bs
}

// newBlob returns a blob of n random bytes, different from every other.
func newBlob(n int) checkpoint.Blob {
	data := make([]byte, n)
	_, _ = rand.Read(data)
	return checkpoint.Blob{Ref: checkpoint.BlobRef(data), MimeType: "image/png", Size: int64(n), Width: 640, Height: 480, Data: data}
}

func usage(t *testing.T, bs checkpoint.BlobStore) checkpoint.BlobUsage {
	t.Helper()
	u, err := bs.BlobUsage(context.Background())
	if err != nil {
		t.Fatalf("BlobUsage: %v", err)
	}
	return u
}

// wantUsage checks that usage grew by (blobs, bytes, links) since before.
func wantUsage(t *testing.T, bs checkpoint.BlobStore, before checkpoint.BlobUsage, blobs, bytes, links int64, what string) {
	t.Helper()
	u := usage(t, bs)
	if got := (checkpoint.BlobUsage{Blobs: u.Blobs - before.Blobs, Bytes: u.Bytes - before.Bytes, Links: u.Links - before.Links}); got != (checkpoint.BlobUsage{Blobs: blobs, Bytes: bytes, Links: links}) {
		t.Fatalf("%s: usage grew by %+v, want {Blobs:%d Bytes:%d Links:%d}", what, got, blobs, bytes, links)
	}
}

// wantBlob checks that thread holds b, with its bytes.
func wantBlob(t *testing.T, bs checkpoint.BlobStore, thread string, b checkpoint.Blob) {
	t.Helper()
	ctx := context.Background()
	st, err := bs.StatBlob(ctx, thread, b.Ref)
	if err != nil {
		t.Fatalf("StatBlob(%q, %s): %v", thread, b.Ref, err)
	}
	if st.Ref != b.Ref || st.MimeType != b.MimeType || st.Size != b.Size || st.Width != b.Width || st.Height != b.Height || st.Data != nil {
		t.Fatalf("StatBlob(%q) = %s %s %d bytes %dx%d (data %d bytes), want %s %s %d bytes %dx%d without data", thread,
			st.Ref, st.MimeType, st.Size, st.Width, st.Height, len(st.Data), b.Ref, b.MimeType, b.Size, b.Width, b.Height)
	}
	rd, err := bs.ReadBlob(ctx, thread, b.Ref)
	if err != nil {
		t.Fatalf("ReadBlob(%q, %s): %v", thread, b.Ref, err)
	}
	if rd.Ref != b.Ref || rd.MimeType != b.MimeType || rd.Size != b.Size || rd.Width != b.Width || rd.Height != b.Height || !bytes.Equal(rd.Data, b.Data) {
		t.Fatalf("ReadBlob(%q) = %s %s %d bytes %dx%d, want the blob as written", thread, rd.Ref, rd.MimeType, len(rd.Data), rd.Width, rd.Height)
	}
}

// wantNoBlob checks that thread does not hold ref, on both reads.
func wantNoBlob(t *testing.T, bs checkpoint.BlobStore, thread, ref string) {
	t.Helper()
	ctx := context.Background()
	if b, err := bs.StatBlob(ctx, thread, ref); !errors.Is(err, checkpoint.ErrBlobNotFound) {
		t.Fatalf("StatBlob(%q, %s) = %+v, %v; want ErrBlobNotFound", thread, ref, b, err)
	}
	if b, err := bs.ReadBlob(ctx, thread, ref); !errors.Is(err, checkpoint.ErrBlobNotFound) {
		t.Fatalf("ReadBlob(%q, %s) = %d bytes, %v; want ErrBlobNotFound", thread, ref, len(b.Data), err)
	}
}

// withBlobs is sample with blobs.
func withBlobs(thread string, seq int64, blobs ...checkpoint.Blob) checkpoint.Checkpoint {
	cp := sample(thread, seq)
	cp.Blobs = blobs
	return cp
}

// testBlobsHeldByThread: a Put's blobs are its thread's, read back whole,
// and nobody else's (another thread, another tenant's thread of the same
// id); what a caller does with the bytes it gave or got changes nothing.
func testBlobsHeldByThread(t *testing.T, s checkpoint.Checkpointer) {
	bs := blobStore(t, s)
	th, other := threadID(t, "a"), threadID(t, "b")
	x := newBlob(100 << 10)
	want := x
	want.Data = bytes.Clone(x.Data)
	cp := withBlobs(th, 1, x)
	put(t, s, cp)
	x.Data[0] ^= 0xff // the caller reuses its buffer
	wantBlob(t, bs, th, want)
	put(t, s, sample(other, 1))
	wantNoBlob(t, bs, other, want.Ref)
	wantNoBlob(t, bs, checkpoint.ThreadKey("tenant", th), want.Ref)
	wantNoBlob(t, bs, th, newBlob(10).Ref)
	wantNoBlob(t, bs, threadID(t, "never"), want.Ref)
	got, err := bs.ReadBlob(context.Background(), th, want.Ref)
	if err != nil {
		t.Fatal(err)
	}
	got.Data[0] ^= 0xff // the caller scribbles over what it read
	wantBlob(t, bs, th, want)
	if cp := latest(t, s, th); cp.Blobs != nil {
		t.Fatalf("Latest returned %d blobs; reads return none", len(cp.Blobs))
	}
	// A blob with no pixels (a PDF) keeps its zero width and height.
	pdf := newBlob(10)
	pdf.MimeType, pdf.Width, pdf.Height = "application/pdf", 0, 0
	put(t, s, withBlobs(th, 2, pdf, pdf)) // listed twice: stored once
	wantBlob(t, bs, th, pdf)
}

// testBlobsOncePerContent: however many checkpoints and threads carry the
// same content, the store keeps its bytes once, and each thread holds it
// once.
func testBlobsOncePerContent(t *testing.T, s checkpoint.Checkpointer) {
	bs := blobStore(t, s)
	before := usage(t, bs)
	x := newBlob(64 << 10)
	a, b := threadID(t, "a"), threadID(t, "b")
	for seq := int64(1); seq <= 3; seq++ {
		put(t, s, withBlobs(a, seq, x))
	}
	put(t, s, withBlobs(b, 1, x))
	wantUsage(t, bs, before, 1, x.Size, 2, "one blob sent in 3 checkpoints of one thread and 1 of another")
	wantBlob(t, bs, a, x)
	wantBlob(t, bs, b, x)
}

// testBlobsRefusedPutStoresNone: a Put that is refused (a conflict, a
// lost lease, a blob whose bytes are not its reference's) stores no blob
// and no link.
func testBlobsRefusedPutStoresNone(t *testing.T, s checkpoint.Checkpointer) {
	bs := blobStore(t, s)
	ctx := context.Background()
	th := threadID(t, "a")
	put(t, s, sample(th, 1))
	before := usage(t, bs)
	x := newBlob(1000)
	if err := s.Put(ctx, withBlobs(th, 1, x)); !errors.Is(err, checkpoint.ErrConflict) {
		t.Fatalf("Put of a taken seq with a blob = %v, want ErrConflict", err)
	}
	wantNoBlob(t, bs, th, x.Ref)
	lying := newBlob(1000)
	lying.Ref = x.Ref
	for _, bad := range []checkpoint.Blob{lying, {Ref: x.Ref, MimeType: "image/png", Size: x.Size}, {Ref: "sha256:ABC", MimeType: "image/png", Data: x.Data, Size: x.Size},
		{Ref: x.Ref, Data: x.Data, Size: x.Size}, {Ref: x.Ref, MimeType: "image/png", Data: x.Data, Size: 1}} {
		if err := s.Put(ctx, withBlobs(th, 2, x, bad)); err == nil || errors.Is(err, checkpoint.ErrConflict) {
			t.Fatalf("Put with a bad blob (%s, %d bytes of %d) = %v; want an error, not a conflict", bad.Ref, len(bad.Data), bad.Size, err)
		}
	}
	wantNoBlob(t, bs, th, x.Ref)
	if l, ok := s.(checkpoint.Leaser); ok {
		lt := threadID(t, "leased")
		le := claim(t, l, lt, time.Minute)
		if err := l.Release(ctx, le); err != nil {
			t.Fatal(err)
		}
		le2 := claim(t, l, lt, time.Minute)
		cp := leased(le, 1)
		cp.Blobs = []checkpoint.Blob{x}
		if err := s.Put(ctx, cp); !errors.Is(err, checkpoint.ErrLeaseLost) {
			t.Fatalf("Put under a superseded lease = %v, want ErrLeaseLost", err)
		}
		wantNoBlob(t, bs, lt, x.Ref)
		cp = leased(le2, 1)
		cp.Blobs = []checkpoint.Blob{x}
		put(t, s, cp)
		wantBlob(t, bs, lt, x)
		before.Blobs, before.Bytes, before.Links = before.Blobs+1, before.Bytes+x.Size, before.Links+1
	}
	wantUsage(t, bs, before, 0, 0, 0, "after refused Puts")
}

// testBlobsDeletedWithLastHolder: deleting a thread lets go of its blobs;
// a blob goes when its last holder does, by DeleteThread or by an idle
// sweep, and a thread created again under the id holds nothing.
func testBlobsDeletedWithLastHolder(t *testing.T, s checkpoint.Checkpointer) {
	bs := blobStore(t, s)
	ctx := context.Background()
	before := usage(t, bs)
	shared, own := newBlob(4096), newBlob(2048)
	a, b := threadID(t, "a"), threadID(t, "b")
	put(t, s, withBlobs(a, 1, shared, own))
	put(t, s, withBlobs(b, 1, shared))
	wantUsage(t, bs, before, 2, shared.Size+own.Size, 3, "two threads")
	if err := s.DeleteThread(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, bs, before, 1, shared.Size, 1, "after deleting the first thread")
	wantNoBlob(t, bs, a, shared.Ref)
	wantBlob(t, bs, b, shared)
	put(t, s, sample(a, 1))
	wantNoBlob(t, bs, a, shared.Ref)
	wantNoBlob(t, bs, a, own.Ref)
	if err := s.DeleteThread(ctx, b); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, bs, before, 0, 0, 0, "after deleting both")

	pr, ok := s.(checkpoint.Pruner)
	if !ok {
		return
	}
	idle := threadID(t, "idle")
	cp := withBlobs(idle, 1, own)
	cp.CreatedAt = time.Date(2000, 6, 1, 0, 0, 0, 0, time.UTC)
	put(t, s, cp)
	wantUsage(t, bs, before, 1, own.Size, 1, "an idle thread")
	if _, err := pr.DeleteIdle(ctx, time.Date(2000, 6, 2, 0, 0, 0, 0, time.UTC), 1000); err != nil {
		t.Fatal(err)
	}
	wantUsage(t, bs, before, 0, 0, 0, "after the idle sweep")
}

// testBlobsRacingDeletes: threads that write a blob while others that
// hold it are deleted never end up holding a blob the store lost, and the
// blob goes with its last holder. (PostgreSQL serves the writes and the
// deletes on connections of their own, at once.)
func testBlobsRacingDeletes(t *testing.T, s checkpoint.Checkpointer) {
	bs := blobStore(t, s)
	ctx := context.Background()
	before := usage(t, bs)
	const rounds, threads = 5, 8
	for round := range rounds {
		x := newBlob(8 << 10)
		ids := make([]string, threads)
		for i := range ids {
			ids[i] = threadID(t, fmt.Sprintf("r%d-%d", round, i))
		}
		// The even threads hold x already; they are deleted while the odd
		// ones write it.
		for i := 0; i < threads; i += 2 {
			put(t, s, withBlobs(ids[i], 1, x))
		}
		var wg sync.WaitGroup
		errs := make([]error, threads)
		for i := range threads {
			wg.Go(func() {
				if i%2 == 0 {
					errs[i] = s.DeleteThread(ctx, ids[i])
				} else {
					errs[i] = s.Put(ctx, withBlobs(ids[i], 1, x))
				}
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, thread %d: %v", round, i, err)
			}
		}
		for i := 1; i < threads; i += 2 {
			wantBlob(t, bs, ids[i], x)
		}
		wantUsage(t, bs, before, 1, x.Size, threads/2, fmt.Sprintf("round %d, with the writers", round))
		for i := 1; i < threads; i += 2 {
			if err := s.DeleteThread(ctx, ids[i]); err != nil {
				t.Fatal(err)
			}
		}
		wantUsage(t, bs, before, 0, 0, 0, fmt.Sprintf("round %d, all deleted", round))
	}
}
