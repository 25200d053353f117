package thread

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// This file is what an App does with its threads besides running them:
// read one, its history, its metadata and its media, delete it, and check
// that the store answers.

// Thread returns the thread's current state as a Result (RunID is the run
// that last wrote it), or an error wrapping graph.ErrThreadNotFound:
// ThreadFor of the tenant "".
func (a *App) Thread(ctx context.Context, threadID string) (graph.Result, error) {
	return a.ThreadFor(ctx, "", threadID)
}

// ThreadFor returns tenant's thread threadID: its current state, or
// graph.ErrThreadNotFound when tenant has no such thread (another tenant's
// thread of that id included). It reads the state the app keeps decoded
// for threads it works on, so many readers of one large thread share one
// copy; treat the Result as read-only.
func (a *App) ThreadFor(ctx context.Context, tenant, threadID string) (graph.Result, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return graph.Result{}, err
	}
	latest, err := a.cache.load(ctx, key, nil)
	if err != nil {
		return graph.Result{}, err
	}
	if latest == nil {
		return graph.Result{}, notFound(threadID)
	}
	return latest.saved.Result(threadID), nil
}

// Snapshot is one checkpoint of a thread's history.
type Snapshot struct {
	graph.Result
	Seq  int64             `json:"seq"`
	Step int               `json:"step"`
	Next []string          `json:"next"`
	Raw  checkpoint.Status `json:"checkpoint_status"`
}

// History returns up to limit snapshots of tenant's thread threadID,
// newest first (none for a thread tenant does not have).
func (a *App) History(ctx context.Context, tenant, threadID string, limit int) ([]Snapshot, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return nil, err
	}
	cps, err := a.store.History(ctx, key, limit)
	if err != nil {
		return nil, fmt.Errorf("thread %q: history: %w", threadID, err)
	}
	out := make([]Snapshot, 0, len(cps))
	// The checkpoints' logs are prefixes of the newest one's: decode it
	// once.
	var msgs []message.Message
	if len(cps) > 0 {
		if msgs, _, err = graph.DecodeLog(cps[0].Log); err != nil {
			return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", threadID, cps[0].Seq, err)
		}
	}
	for _, cp := range cps {
		n := min(len(cp.Log), len(msgs))
		s, err := decode(cp, msgs[:n:n])
		if err != nil {
			return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", threadID, cp.Seq, err)
		}
		out = append(out, Snapshot{Result: s.Result(threadID), Seq: cp.Seq, Step: cp.Step, Next: cp.Next, Raw: cp.Status})
	}
	return out, nil
}

// ThreadMetadata returns the metadata stored with tenant's thread
// threadID (RunConfig.Metadata).
func (a *App) ThreadMetadata(ctx context.Context, tenant, threadID string) (map[string]string, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return nil, err
	}
	cp, err := a.store.Latest(ctx, key)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, notFound(threadID)
	}
	return cp.Metadata, err
}

// Blob returns the blob ref of tenant's thread threadID, with its bytes,
// or an error wrapping graph.ErrBlobNotFound: for a thread tenant does not
// have and for a blob the thread does not hold alike, so that neither
// tells anything of another tenant's threads or of other threads' blobs.
func (a *App) Blob(ctx context.Context, tenant, threadID, ref string) (checkpoint.Blob, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return checkpoint.Blob{}, err
	}
	if !message.ValidBlobRef(ref) {
		return checkpoint.Blob{}, invalid("blob: want %q and the 64 lowercase hex digits of the bytes' SHA-256", message.BlobPrefix)
	}
	b, err := a.store.ReadBlob(ctx, key, ref)
	if errors.Is(err, checkpoint.ErrBlobNotFound) {
		return checkpoint.Blob{}, fmt.Errorf("thread %q: blob %s: %w", threadID, ref, graph.ErrBlobNotFound)
	}
	return b, err
}

// DeleteThread forgets tenant's thread threadID. A thread with a run in
// progress is not deleted (graph.ErrThreadBusy); one tenant has not is
// graph.ErrThreadNotFound. Created again, the thread is a new incarnation:
// nothing sent for the old one (a result for one of its calls, say) is
// accepted by the new one.
func (a *App) DeleteThread(ctx context.Context, tenant, threadID string) error {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return err
	}
	ctx, h, err := a.claims.take(ctx, key, false)
	if err != nil {
		return err
	}
	defer a.claims.release(ctx, h)
	_, err = a.store.Latest(ctx, key)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return notFound(threadID)
	case err != nil:
		return fmt.Errorf("thread %q: load: %w", threadID, err)
	}
	a.cache.drop(key)
	return a.store.DeleteThread(ctx, key)
}

// CacheStats reports the cache of decoded threads: its content and its
// evictions so far (zero when the app has no cache).
func (a *App) CacheStats() CacheStats { return a.cache.stats() }

// Probe reads the store cheaply (the latest checkpoint of a thread id no
// thread can have) and returns what failed, or nil when the store answers.
// The health check uses it, so a store that cannot be read is not reported
// healthy.
func (a *App) Probe(ctx context.Context) error {
	if _, err := a.store.Latest(ctx, ""); err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("checkpoint store: %w", err)
	}
	return nil
}
