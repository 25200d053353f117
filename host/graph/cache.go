package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// threadCache keeps the latest checkpoint of the threads this app works on,
// decoded, so a run on a thread the app just wrote (a resume, the next turn)
// does not read and decode the state again. An entry is used only while the
// store confirms it is still the latest (checkpoint.SeqReader, a cheap
// index-only read): another process writing the thread makes it stale, and
// it is then read afresh. Stores without SeqReader get no cache.
type threadCache struct {
	seqs checkpoint.SeqReader
	mu   sync.Mutex
	m    map[string]cached
}

type cached struct {
	cp    checkpoint.Checkpoint // State left nil: state holds it decoded
	state wireState
}

// cacheMax bounds the cache: enough for the threads in flight on a busy
// host, small enough that memory stays bounded however many threads exist.
const cacheMax = 4096

func newThreadCache(cp checkpoint.Checkpointer) *threadCache {
	seqs, ok := cp.(checkpoint.SeqReader)
	if !ok {
		return nil
	}
	return &threadCache{seqs: seqs, m: map[string]cached{}}
}

func (c *threadCache) store(thread string, cp checkpoint.Checkpoint, state wireState) {
	if c == nil {
		return
	}
	cp.State = nil
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[thread]; !ok && len(c.m) >= cacheMax {
		for k := range c.m { // drop any one: a miss only costs a read
			delete(c.m, k)
			break
		}
	}
	c.m[thread] = cached{cp: cp, state: state}
}

func (c *threadCache) drop(thread string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	delete(c.m, thread)
	c.mu.Unlock()
}

// load returns the thread's latest checkpoint and its decoded state, or a
// nil checkpoint for a thread that has none.
func (a *App) load(ctx context.Context, thread string) (*checkpoint.Checkpoint, wireState, error) {
	if c := a.cache; c != nil {
		c.mu.Lock()
		hit, ok := c.m[thread]
		c.mu.Unlock()
		if ok {
			if seq, err := c.seqs.LatestSeq(ctx, thread); err == nil && seq == hit.cp.Seq {
				return &hit.cp, hit.state, nil
			}
			c.drop(thread)
		}
	}
	cp, err := a.cp.Latest(ctx, thread)
	switch {
	case errors.Is(err, checkpoint.ErrNotFound):
		return nil, wireState{}, nil
	case err != nil:
		return nil, wireState{}, fmt.Errorf("thread %q: load: %w", thread, err)
	}
	state, err := decodeState(cp)
	if err != nil {
		return nil, wireState{}, fmt.Errorf("thread %q: read checkpoint %d: %w", thread, cp.Seq, err)
	}
	a.cache.store(thread, cp, state)
	return &cp, state, nil
}
