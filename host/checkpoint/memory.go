package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// errMemoryClosed is returned by a Memory used after Close, so a test that
// closes its store too early fails loudly instead of passing by accident.
var errMemoryClosed = errors.New("checkpoint: memory store is closed")

// Memory is a Checkpointer that keeps every checkpoint in process memory.
//
// It is not durable: everything is lost when the process exits. It exists so
// tests and programs that embed the graph engine can run without a database,
// with the same conflict and copy semantics as the durable stores. It is safe
// for concurrent use.
type Memory struct {
	mu      sync.RWMutex
	threads map[string][]Checkpoint // checkpoint i has Seq i+1
	closed  bool
}

var (
	_ Checkpointer = (*Memory)(nil)
	_ SeqReader    = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store, ready to use; there is nothing
// to open or configure.
func NewMemory() *Memory {
	return &Memory{threads: make(map[string][]Checkpoint)}
}

// Put appends cp to its thread. It stores a deep copy, so the caller may reuse
// cp's slices and map afterwards.
func (m *Memory) Put(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	cp = cloneCheckpoint(cp)
	if cp.CreatedAt.IsZero() {
		cp.CreatedAt = time.Now().UTC()
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, errMemoryClosed)
	}
	cps := m.threads[cp.ThreadID]
	if latest := int64(len(cps)); cp.Seq != latest+1 {
		return fmt.Errorf("checkpoint: put thread %q seq %d: latest is %d: %w", cp.ThreadID, cp.Seq, latest, ErrConflict)
	}
	m.threads[cp.ThreadID] = append(cps, cp)
	return nil
}

// LatestSeq implements SeqReader.
func (m *Memory) LatestSeq(ctx context.Context, threadID string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("checkpoint: latest seq of thread %q: %w", threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, fmt.Errorf("checkpoint: latest seq of thread %q: %w", threadID, errMemoryClosed)
	}
	cps := m.threads[threadID]
	if len(cps) == 0 {
		return 0, nil
	}
	return cps[len(cps)-1].Seq, nil
}

// Latest returns a deep copy of the thread's newest checkpoint, so the caller
// may modify it freely.
func (m *Memory) Latest(ctx context.Context, threadID string) (Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, errMemoryClosed)
	}
	cps := m.threads[threadID]
	if len(cps) == 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, ErrNotFound)
	}
	return cloneCheckpoint(cps[len(cps)-1]), nil
}

// History returns deep copies of up to limit checkpoints, newest first
// (limit <= 0 means all).
func (m *Memory) History(ctx context.Context, threadID string, limit int) ([]Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: history of thread %q: %w", threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("checkpoint: history of thread %q: %w", threadID, errMemoryClosed)
	}
	cps := m.threads[threadID]
	n := len(cps)
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]Checkpoint, 0, n)
	for i := len(cps) - 1; i >= len(cps)-n; i-- {
		out = append(out, cloneCheckpoint(cps[i]))
	}
	return out, nil
}

// DeleteThread forgets the thread; its next Put must use Seq 1 again.
func (m *Memory) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint: delete thread %q: %w", threadID, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("checkpoint: delete thread %q: %w", threadID, errMemoryClosed)
	}
	delete(m.threads, threadID)
	return nil
}

// Close drops every checkpoint; later calls return an error, which catches
// code that keeps using a store it has already closed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.threads = nil
	return nil
}

// cloneCheckpoint returns a deep copy of cp, with empty Next, State and
// Metadata normalised to nil and CreatedAt in UTC without a monotonic
// reading, as the durable stores return them.
func cloneCheckpoint(cp Checkpoint) Checkpoint {
	if len(cp.Next) == 0 {
		cp.Next = nil
	} else {
		cp.Next = slices.Clone(cp.Next)
	}
	if len(cp.State) == 0 {
		cp.State = nil
	} else {
		cp.State = slices.Clone(cp.State)
	}
	if len(cp.Metadata) == 0 {
		cp.Metadata = nil
	} else {
		cp.Metadata = maps.Clone(cp.Metadata)
	}
	if !cp.CreatedAt.IsZero() {
		cp.CreatedAt = cp.CreatedAt.Round(0).UTC()
	}
	return cp
}
