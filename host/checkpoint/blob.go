package checkpoint

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Blob is content a thread's messages hold by reference (an image, a file,
// a sound): its bytes are kept once per content in the store, however many
// checkpoints, turns or threads refer to them, never inside a checkpoint.
//
// A thread holds a blob from the Put that first carries it
// (Checkpoint.Blobs) until the thread is deleted (DeleteThread, an idle
// sweep); a blob no thread holds any more is deleted with the last thread
// that held it. KeepHistory drops checkpoints, never blobs: the thread's
// messages, which refer to them, are kept whole.
type Blob struct {
	// Ref names the blob: BlobPrefix and the 64 lowercase hex digits of the
	// SHA-256 of its bytes.
	Ref string
	// MimeType is what the bytes are ("image/png"), as the host checked
	// them.
	MimeType string
	// Size is the length of the bytes.
	Size int64
	// Width and Height are an image's pixels, 0 for anything else.
	Width, Height int
	// Data is the bytes: required in Checkpoint.Blobs, nil from StatBlob.
	Data []byte
}

// BlobPrefix starts every blob reference (message.BlobPrefix).
const BlobPrefix = "sha256:"

// BlobRef returns the reference of data: BlobPrefix and the hex SHA-256.
func BlobRef(data []byte) string {
	sum := sha256.Sum256(data)
	return BlobPrefix + hex.EncodeToString(sum[:])
}

// BlobStore is the part of a store that keeps the blobs of its threads
// (Checkpoint.Blobs). Every read
// is scoped to a thread: a blob another thread holds is, to this one, a
// blob that does not exist.
type BlobStore interface {
	// StatBlob returns the blob ref the thread holds, without its bytes,
	// or an error wrapping ErrBlobNotFound when the thread holds none
	// (another thread's blob included).
	StatBlob(ctx context.Context, threadID, ref string) (Blob, error)
	// ReadBlob is StatBlob with the bytes.
	ReadBlob(ctx context.Context, threadID, ref string) (Blob, error)
	// BlobUsage counts the store's blobs, their bytes, and the links
	// from threads to them, for operators and for tests of what a write
	// or a delete costs.
	BlobUsage(ctx context.Context) (BlobUsage, error)
}

// BlobUsage is what a store's blobs take.
type BlobUsage struct {
	// Blobs is how many distinct contents the store keeps, and Bytes
	// their total size.
	Blobs, Bytes int64
	// Links is how many (thread, blob) pairs there are.
	Links int64
}

// ErrBlobNotFound: the thread holds no such blob.
var ErrBlobNotFound = errors.New("blob not found")

// checkBlobs checks a checkpoint's blobs before any store writes them: a
// well-formed reference that is the hash of the bytes, a media type, a
// size that is the bytes' length. It returns them sorted by reference with
// duplicates dropped, so that every store writes (and locks) them in one
// order.
func checkBlobs(blobs []Blob) ([]Blob, error) {
	if len(blobs) == 0 {
		return nil, nil
	}
	out := make([]Blob, 0, len(blobs))
	for _, b := range blobs {
		if !validRef(b.Ref) {
			return nil, fmt.Errorf("blob %q: not a reference (want %q and 64 lowercase hex digits)", b.Ref, BlobPrefix)
		}
		if b.Data == nil {
			return nil, fmt.Errorf("blob %s: no data", b.Ref)
		}
		if got := BlobRef(b.Data); got != b.Ref {
			return nil, fmt.Errorf("blob %s: the data's hash is %s", b.Ref, got)
		}
		if b.Size != int64(len(b.Data)) {
			return nil, fmt.Errorf("blob %s: size %d, but the data is %d bytes", b.Ref, b.Size, len(b.Data))
		}
		if b.MimeType == "" || !utf8.ValidString(b.MimeType) || strings.ContainsRune(b.MimeType, 0) {
			return nil, fmt.Errorf("blob %s: media type %q is empty or not text", b.Ref, b.MimeType)
		}
		if b.Width < 0 || b.Height < 0 {
			return nil, fmt.Errorf("blob %s: negative pixels %dx%d", b.Ref, b.Width, b.Height)
		}
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Blob) int { return cmp.Compare(a.Ref, b.Ref) })
	return slices.CompactFunc(out, func(a, b Blob) bool { return a.Ref == b.Ref }), nil
}

// validRef reports whether ref is BlobPrefix and 64 lowercase hex digits.
func validRef(ref string) bool {
	h, ok := strings.CutPrefix(ref, BlobPrefix)
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// blobNotFound is the error for a blob the thread does not hold.
func blobNotFound(threadID, ref string) error {
	return fmt.Errorf("checkpoint: blob %s of thread %q: %w", ref, threadID, ErrBlobNotFound)
}
