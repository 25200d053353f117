package memo

import (
	"container/list"
	"sync"
)

// The bounds of a per-thread memo (PerThread, Fold) when its own are
// zero.
const (
	DefaultThreads = 256
	DefaultBytes   = 64 << 20
)

// PerThread keeps a value per thread for memos that extend what they
// computed for a thread instead of computing it again (a model's view of
// the thread, what a provider last sent), within bounds: beyond Max
// threads (DefaultThreads when zero) or MaxBytes (DefaultBytes
// when zero, as the values' users count them), the least recently used
// thread's value is dropped, except the most recent one, and that
// thread's next use starts over. It is safe for concurrent use; each value
// guards itself.
type PerThread[T any] struct {
	Max, MaxBytes int

	mu    sync.Mutex
	byID  map[string]*list.Element // of *perThread[T]
	lru   list.List                // front: most recently used
	bytes int
}

type perThread[T any] struct {
	thread string
	v      *T
	bytes  int
}

// Get returns the thread's value, a new zero T if it had none.
func (p *PerThread[T]) Get(thread string) *T {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byID == nil {
		p.byID = map[string]*list.Element{}
	}
	if e, ok := p.byID[thread]; ok {
		p.lru.MoveToFront(e)
		return e.Value.(*perThread[T]).v
	}
	e := &perThread[T]{thread: thread, v: new(T)}
	p.byID[thread] = p.lru.PushFront(e)
	p.evict()
	return e.v
}

// Counted records that v, the thread's value from Get, now holds bytes,
// and drops values beyond the bounds. A value dropped meanwhile is not
// counted.
func (p *PerThread[T]) Counted(thread string, v *T, bytes int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.byID[thread]
	if !ok || e.Value.(*perThread[T]).v != v {
		return
	}
	t := e.Value.(*perThread[T])
	p.bytes += bytes - t.bytes
	t.bytes = bytes
	p.evict()
}

// Len is how many threads' values are kept, so that a caller can check
// (and report) the bounds.
func (p *PerThread[T]) Len() int { p.mu.Lock(); defer p.mu.Unlock(); return p.lru.Len() }

// Bytes is the sum of the sizes last counted for the values kept.
func (p *PerThread[T]) Bytes() int { p.mu.Lock(); defer p.mu.Unlock(); return p.bytes }

// Has reports whether the thread's value is kept, without making one.
func (p *PerThread[T]) Has(thread string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.byID[thread]
	return ok
}

func (p *PerThread[T]) evict() {
	max, maxBytes := p.Max, p.MaxBytes
	if max <= 0 {
		max = DefaultThreads
	}
	if maxBytes <= 0 {
		maxBytes = DefaultBytes
	}
	for p.lru.Len() > 1 && (p.lru.Len() > max || p.bytes > maxBytes) {
		t := p.lru.Remove(p.lru.Back()).(*perThread[T])
		delete(p.byID, t.thread)
		p.bytes -= t.bytes
	}
}
