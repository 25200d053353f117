// Package checkpoint stores a thread's state as its runs write it (after
// every super-step by default), so a paused or crashed run resumes where
// it stopped.
//
// A Checkpointer is a small append-only log per thread. Each Put names the
// sequence number it expects to write (the latest plus one); a writer that
// lost a race gets ErrConflict instead of overwriting, which is what keeps
// two runs on one thread from both succeeding.
//
// Beside its checkpoints, a thread has an append-only log of entries (the
// graph engine keeps its messages there): a Put appends only what its step
// added (Checkpoint.Append), and a read returns the log as of the
// checkpoint read (Checkpoint.Log). A step's cost so does not grow with the
// length of the thread, and the history is stored once, not once per
// checkpoint.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status is where a thread stands after a checkpoint.
type Status string

// The statuses a checkpoint records.
const (
	// StatusRunning: a super-step finished and more remain.
	StatusRunning Status = "running"
	// StatusInterrupted: the graph paused; Next holds the nodes to resume.
	StatusInterrupted Status = "interrupted"
	// StatusCompleted: the graph reached END.
	StatusCompleted Status = "completed"
	// StatusFailed: a node returned an error; the previous state is intact.
	StatusFailed Status = "failed"
	// StatusCancelled: the run was cancelled mid-way (by its caller, a
	// client that went away, a server shutting down); the state is the
	// one before the step that was cut short, and Next holds that step.
	StatusCancelled Status = "cancelled"
)

// Checkpoint is one snapshot of one thread.
type Checkpoint struct {
	// ThreadID names the thread.
	ThreadID string
	// Seq numbers the thread's checkpoints 1, 2, 3, ... with no gaps.
	Seq int64
	// RunID is the run that wrote the checkpoint.
	RunID string
	// Step is the super-step within that run (0 for the run's input).
	Step int
	// Status is the thread's status after this checkpoint.
	Status Status
	// Next lists the nodes that run next; empty when completed.
	Next []string
	// State is the graph's state, encoded by the graph engine. The store
	// treats it as opaque bytes.
	State []byte
	// Metadata holds small string facts about the thread (the owner of the
	// thread for the API server, say); it is copied forward by the engine.
	Metadata map[string]string
	// CreatedAt is when the checkpoint was written (set by Put when zero).
	CreatedAt time.Time
	// Incarnation names the life of the thread the checkpoint belongs to
	// (see Lease); stored and returned as written.
	Incarnation string
	// Token is the fencing token of the Lease the write is made under, 0
	// for an unleased write (see Leaser). It is checked by Put, never
	// stored: Latest and History return 0.
	Token int64
	// Blobs are the blobs this checkpoint's entries (Append, State) are the
	// first of the thread's to refer to. Put stores them with the
	// checkpoint, atomically, and the thread holds them from then on (see
	// Blob and BlobStore): content the store already keeps, for any
	// thread, is not written again, only linked to this one. A Put that
	// is refused writes none of them. Reads return nil.
	Blobs []Blob
	// Append holds the entries this checkpoint adds to the thread's log,
	// after those of the thread's latest checkpoint. Put stores them with
	// the checkpoint, atomically; reads return nil.
	Append [][]byte
	// Log is, on reads, the thread's log as of this checkpoint: every entry
	// appended up to and including it, oldest first. Checkpoints read
	// together (History) may share the entries' memory, so treat them as
	// read-only. Put ignores it.
	Log [][]byte
	// Release, with a Token, also ends the Lease the write is made under,
	// with the same commit, when the checkpoint goes in: a run's last
	// write frees its thread without a write of its own. Never stored.
	Release bool
	// WakeAt, when not zero, asks for the thread to be woken then (the
	// deadline of a call it waits for, say): while this is the thread's
	// latest checkpoint, Scheduler.Due lists the thread from that time
	// on. Stored to the millisecond.
	WakeAt time.Time
}

// Checkpointer stores checkpoints. It is what every store does: Memory,
// SQLite and Postgres implement all of it, so that the engine and the
// runtime beside it have one store to speak to and no fallbacks for a
// store that can do less. Implementations must be safe for concurrent use
// and must pass the conformance suite in checkpointtest.
type Checkpointer interface {
	// Put appends cp to its thread. cp.Seq must be one more than the
	// thread's latest (1 for a new thread); otherwise Put writes nothing and
	// returns an error wrapping ErrConflict.
	Put(ctx context.Context, cp Checkpoint) error
	// ClaimPut is Leaser.Claim and Put in one write: it takes cp's thread
	// for ttl and appends cp under the new lease, atomically, so that a
	// run whose first write comes before any of its work pays one commit
	// for both.
	// cp.Token is ignored (the claim's is the checkpoint's). cp.Incarnation
	// must be the thread's when the thread has checkpoints (cp.Seq > 1);
	// the first checkpoint of a thread gets the thread's incarnation, a new
	// one for a new thread. With cp.Release the lease ends with the write
	// too: a run that writes once costs one commit.
	//
	// It fails with an error wrapping ErrLeased while another unexpired
	// lease holds the thread, and with one wrapping ErrConflict when cp.Seq
	// is not the latest plus one or cp.Incarnation is not the thread's;
	// either way it has claimed and written nothing. The Lease returned
	// has Seq cp.Seq.
	ClaimPut(ctx context.Context, cp Checkpoint, ttl time.Duration) (Lease, error)
	// Latest returns the thread's newest checkpoint, or an error wrapping
	// ErrNotFound.
	Latest(ctx context.Context, threadID string) (Checkpoint, error)
	// History returns up to limit checkpoints of the thread, newest first
	// (limit <= 0 means all). An unknown thread has an empty history.
	History(ctx context.Context, threadID string, limit int) ([]Checkpoint, error)
	// DeleteThread removes every checkpoint of the thread. Deleting an
	// unknown thread is not an error.
	DeleteThread(ctx context.Context, threadID string) error
	// Close releases the store's resources.
	Close() error

	Leaser
	TailReader
	Scheduler
	Pruner
	BlobStore
}

// Scheduler is the part of a store that finds the threads whose latest
// checkpoint asked to be woken (Checkpoint.WakeAt), so that whichever
// process shares the store, after a restart too, wakes them on time.
type Scheduler interface {
	// Due returns up to limit ids of threads whose latest checkpoint's
	// WakeAt is not after now, earliest first. A thread stays due until a
	// later checkpoint (or DeleteThread) replaces it.
	Due(ctx context.Context, now time.Time, limit int) ([]string, error)
}

// TailReader is the part of a store that reads a thread's latest
// checkpoint with only the end of its log, for a reader that holds the
// rest: a replica whose copy of a thread another replica has since
// extended reads what was added, not the whole thread again.
type TailReader interface {
	// LatestTail is Latest with Log holding only the entries from index
	// from on (none when the log is not longer), and logLen the length of
	// the whole log. The caller's entries before from must be of the same
	// incarnation as the checkpoint (Checkpoint.Incarnation) and from a
	// log at least from long; otherwise it reads the thread with Latest.
	LatestTail(ctx context.Context, threadID string, from int) (cp Checkpoint, logLen int, err error)
}

// Pruner is the part of a store that deletes the threads nobody has
// written for a while (an idle-thread TTL).
type Pruner interface {
	// DeleteIdle deletes up to limit threads whose latest checkpoint was
	// written before cutoff and that no unexpired lease holds, as
	// DeleteThread would, and returns how many it deleted.
	DeleteIdle(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// Compacter is implemented by stores that can give the space of deleted
// checkpoints back to the file system (SQLite; Postgres's autovacuum does
// it on its own).
type Compacter interface {
	// Compact returns free space to the file system, and reports how many
	// bytes the store's files shrank by.
	Compact(ctx context.Context) (int64, error)
}

// Option configures a store when it is opened.
type Option func(*options)

type options struct {
	keep int // checkpoints kept beyond the latest; < 0: all
}

func newOptions(opts []Option) options {
	o := options{keep: -1}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// KeepHistory bounds each thread's checkpoints to its latest plus the n
// before it: every Put deletes the older ones, with the same commit. The
// thread's log is kept whole (the latest checkpoint's state needs it), so
// History then lists fewer snapshots, never shorter ones. Resuming needs
// only the latest, so any n >= 0 is safe; n < 0 (the default) keeps all.
func KeepHistory(n int) Option { return func(o *options) { o.keep = n } }

// latestFrom and historyFrom give Latest and History their meaning over a
// store's one query (newest first), so every store reports them alike.
func latestFrom(threadID string, cps []Checkpoint, err error) (Checkpoint, error) {
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, err)
	}
	if len(cps) == 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, ErrNotFound)
	}
	return cps[0], nil
}

func historyFrom(threadID string, cps []Checkpoint, err error) ([]Checkpoint, error) {
	if err != nil {
		return nil, fmt.Errorf("checkpoint: history of thread %q: %w", threadID, err)
	}
	if cps == nil {
		cps = []Checkpoint{}
	}
	return cps, nil
}

// Sentinel errors, for errors.Is.
var (
	// ErrNotFound: the thread has no checkpoint.
	ErrNotFound = errors.New("thread not found")
	// ErrConflict: another writer already wrote that sequence number.
	ErrConflict = errors.New("checkpoint conflict: the thread was changed by another run")
)

// errIncarnation is ClaimPut's error for a checkpoint of another
// incarnation than its thread's (the thread was deleted and created again).
func errIncarnation(inc string) error {
	return fmt.Errorf("the thread is not of incarnation %q any more: %w", inc, ErrConflict)
}

// DefaultCacheBytes is the budget of the engine's cache of decoded thread
// state, in front of the checkpointer, when none is set: enough for the
// threads in flight on a busy host (a thousand threads of 256 KiB), small
// next to the memory of the machines that serve them.
const DefaultCacheBytes = 256 << 20
