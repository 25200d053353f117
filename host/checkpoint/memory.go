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
	opts    options
	mu      sync.RWMutex
	threads map[string]*memThread // written or claimed
	blobs   map[string]*memBlob   // by ref
	links   map[string][]string   // thread -> the refs it holds
	closed  bool
}

// memBlob is one blob and how many threads hold it.
type memBlob struct {
	Blob
	holders int
}

// memThread is one thread's kept checkpoints (consecutive seqs, the latest
// last; KeepHistory drops the oldest), its log and its lease. A thread
// claimed before its first write has no checkpoints yet.
type memThread struct {
	cps    []memCheckpoint
	log    [][]byte
	latest int64 // the latest seq, 0 for none
	memLease
}

// memLease is a thread's incarnation and lease once it has been claimed
// (token > 0); until then, token is 0 and inc unset.
type memLease struct {
	inc   string
	token int64
	until int64 // unix ms; 0: released
}

// claimed reports whether the thread has ever been claimed.
func (l *memLease) claimed() bool { return l.token > 0 }

// memCheckpoint is what a Memory keeps of a checkpoint: the fields a read
// returns, without those it never stores (ThreadID is the thread's key;
// Token, Release, Blobs and Append are the write's), so the per-thread
// slice it grows in is smaller.
type memCheckpoint struct {
	seq         int64
	runID       string
	step        int
	status      Status
	next        []string
	state       []byte
	metadata    map[string]string
	createdAt   time.Time
	incarnation string
	wakeAt      time.Time
	logLen      int // len(log) as of this checkpoint
}

// newMemCheckpoint keeps cp's stored fields, as they are; cp is the
// store's own copy.
func newMemCheckpoint(cp Checkpoint, logLen int) memCheckpoint {
	return memCheckpoint{seq: cp.Seq, runID: cp.RunID, step: cp.Step, status: cp.Status, next: cp.Next, state: cp.State,
		metadata: cp.Metadata, createdAt: cp.CreatedAt, incarnation: cp.Incarnation, wakeAt: cp.WakeAt, logLen: logLen}
}

// checkpoint returns c as a Checkpoint of thread, sharing c's memory (no
// Log).
func (c *memCheckpoint) checkpoint(thread string) Checkpoint {
	return Checkpoint{ThreadID: thread, Seq: c.seq, RunID: c.runID, Step: c.step, Status: c.status, Next: c.next,
		State: c.state, Metadata: c.metadata, CreatedAt: c.createdAt, Incarnation: c.incarnation, WakeAt: c.wakeAt}
}

var _ Checkpointer = (*Memory)(nil)

// NewMemory returns an empty in-memory store, ready to use; there is nothing
// to open or configure.
func NewMemory(opts ...Option) *Memory {
	return &Memory{opts: newOptions(opts), threads: make(map[string]*memThread), blobs: make(map[string]*memBlob),
		links: make(map[string][]string)}
}

// Put appends cp to its thread. It stores a deep copy, so the caller may reuse
// cp's slices and map afterwards.
func (m *Memory) Put(ctx context.Context, cp Checkpoint) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	w, err := newMemWrite(cp)
	if err != nil {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	cp = w.cp
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w", cp.ThreadID, cp.Seq, errMemoryClosed)
	}
	th := m.threads[cp.ThreadID]
	var l memLease
	if th != nil {
		l = th.memLease
	}
	if latest := th.latestSeq(); cp.Seq != latest+1 {
		return fmt.Errorf("checkpoint: put thread %q seq %d: latest is %d: %w", cp.ThreadID, cp.Seq, latest, ErrConflict)
	}
	if l.token != cp.Token || l.claimed() && l.inc != cp.Incarnation {
		// A claimed thread takes only writes under its current lease; an
		// unclaimed one (token 0) only unleased writes.
		return fmt.Errorf("checkpoint: put thread %q seq %d: %w: %w", cp.ThreadID, cp.Seq, ErrLeaseLost, ErrConflict)
	}
	th = m.put(th, w)
	if cp.Release && cp.Token != 0 {
		th.until = 0
	}
	return nil
}

// ClaimPut implements Checkpointer: the claim and the checkpoint under one
// lock.
func (m *Memory) ClaimPut(ctx context.Context, cp Checkpoint, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	w, err := newMemWrite(cp)
	if err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, err)
	}
	now := time.Now()
	exp := leaseExpiry(now, ttl)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, errMemoryClosed)
	}
	th := m.threads[cp.ThreadID]
	var l memLease
	if th != nil {
		l = th.memLease
	}
	if l.until > leaseMillis(now) {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, ErrLeased)
	}
	latest := th.latestSeq()
	if cp.Seq != latest+1 {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: latest is %d: %w", cp.ThreadID, cp.Seq, latest, ErrConflict)
	}
	if !l.claimed() {
		l.inc = th.firstIncarnation()
	}
	if latest > 0 && l.inc != w.cp.Incarnation {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q with seq %d: %w", cp.ThreadID, cp.Seq, errIncarnation(w.cp.Incarnation))
	}
	l.token++
	l.until = leaseMillis(exp)
	if cp.Release {
		l.until = 0
	}
	w.cp.Incarnation = l.inc
	th = m.put(th, w)
	th.memLease = l
	return Lease{ThreadID: cp.ThreadID, Incarnation: l.inc, Token: l.token, Seq: cp.Seq, Expires: exp}, nil
}

// memWrite is a checkpoint copied for a Memory to store, its log entries
// and blobs beside it.
type memWrite struct {
	cp    Checkpoint
	entry [][]byte // the caller's Append, read only for its entries' lengths
	bytes []byte   // a copy of every entry of Append, end to end
	blobs []Blob
}

// newMemWrite copies cp, so the caller may reuse its slices and map, and
// checks its blobs.
func newMemWrite(cp Checkpoint) (memWrite, error) {
	blobs, err := checkBlobs(cp.Blobs)
	if err != nil {
		return memWrite{}, err
	}
	w := memWrite{entry: cp.Append, blobs: blobs}
	if len(cp.Append) > 0 {
		w.bytes = slices.Concat(cp.Append...)
	}
	w.cp = cloneCheckpoint(cp)
	if w.cp.CreatedAt.IsZero() {
		w.cp.CreatedAt = time.Now().UTC()
	}
	return w, nil
}

// firstIncarnation is the incarnation a thread's first claim gives it:
// its checkpoints' when it was written without a lease, as the other
// stores keep, else a new one (th may be nil: a new thread).
func (th *memThread) firstIncarnation() string {
	if th.latestSeq() > 0 {
		return th.cps[len(th.cps)-1].incarnation
	}
	return newIncarnation()
}

// latestSeq is the thread's latest seq, 0 for none (th nil included).
func (th *memThread) latestSeq() int64 {
	if th == nil {
		return 0
	}
	return th.latest
}

// memTurn is how many checkpoints, and log entries, a thread's first write
// makes room for: a turn's.
const memTurn = 4

// put appends a checked write to th, its thread, made when nil, and
// returns th; m.mu is held.
func (m *Memory) put(th *memThread, w memWrite) *memThread {
	cp := w.cp
	if th == nil {
		th = &memThread{}
		m.threads[cp.ThreadID] = th
	}
	if th.cps == nil {
		// Room for a turn's writes (a run's input and its steps, a pause
		// and its resume) in one allocation instead of three.
		th.cps = make([]memCheckpoint, 0, memTurn)
		th.log = make([][]byte, 0, max(memTurn, len(w.entry)))
	}
	th.log = appendEntries(th.log, w.bytes, w.entry)
	m.link(cp.ThreadID, w.blobs)
	th.cps = append(th.cps, newMemCheckpoint(cp, len(th.log)))
	th.latest = cp.Seq
	if k := m.opts.keep; k >= 0 && len(th.cps) > k+1 {
		th.cps = slices.Delete(th.cps, 0, len(th.cps)-k-1)
	}
	return th
}

// appendEntries appends to log the entries laid end to end in b, one as
// long as each of lengths', each capped at its end so that appending to
// one cannot write over the next.
func appendEntries(log [][]byte, b []byte, lengths [][]byte) [][]byte {
	log = slices.Grow(log, len(lengths))
	for _, e := range lengths {
		log = append(log, b[:len(e):len(e)])
		b = b[len(e):]
	}
	return log
}

// read returns a copy of c, of thread, with its Log from entry from on;
// m.mu is held.
func (th *memThread) read(thread string, c *memCheckpoint, from int) Checkpoint {
	cp := cloneCheckpoint(c.checkpoint(thread))
	if entries := th.log[min(max(from, 0), c.logLen):c.logLen]; len(entries) > 0 {
		cp.Log = appendEntries(nil, slices.Concat(entries...), entries)
	}
	return cp
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
	th := m.threads[threadID]
	if th.latestSeq() == 0 {
		return Checkpoint{}, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, ErrNotFound)
	}
	return th.read(threadID, &th.cps[len(th.cps)-1], 0), nil
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
	th := m.threads[threadID]
	if th.latestSeq() == 0 {
		return []Checkpoint{}, nil
	}
	n := len(th.cps)
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]Checkpoint, 0, n)
	for i := len(th.cps) - 1; i >= len(th.cps)-n; i-- {
		out = append(out, th.read(threadID, &th.cps[i], 0))
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
	m.unlink(threadID)
	return nil
}

// link has thread hold blobs, storing those the store does not keep yet;
// m.mu is held.
func (m *Memory) link(thread string, blobs []Blob) {
	for _, b := range blobs {
		if slices.Contains(m.links[thread], b.Ref) {
			continue
		}
		mb := m.blobs[b.Ref]
		if mb == nil {
			b.Data = slices.Clone(b.Data)
			mb = &memBlob{Blob: b}
			m.blobs[b.Ref] = mb
		}
		mb.holders++
		m.links[thread] = append(m.links[thread], b.Ref)
	}
}

// unlink drops thread's hold on its blobs, and the blobs no thread holds
// any more; m.mu is held.
func (m *Memory) unlink(thread string) {
	for _, ref := range m.links[thread] {
		if mb := m.blobs[ref]; mb != nil {
			if mb.holders--; mb.holders <= 0 {
				delete(m.blobs, ref)
			}
		}
	}
	delete(m.links, thread)
}

// StatBlob implements BlobStore.
func (m *Memory) StatBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b, err := m.readBlob(ctx, threadID, ref)
	b.Data = nil
	return b, err
}

// ReadBlob implements BlobStore; the bytes are a copy.
func (m *Memory) ReadBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	b, err := m.readBlob(ctx, threadID, ref)
	b.Data = slices.Clone(b.Data)
	return b, err
}

func (m *Memory) readBlob(ctx context.Context, threadID, ref string) (Blob, error) {
	if err := ctx.Err(); err != nil {
		return Blob{}, fmt.Errorf("checkpoint: blob %s of thread %q: %w", ref, threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Blob{}, fmt.Errorf("checkpoint: blob %s of thread %q: %w", ref, threadID, errMemoryClosed)
	}
	mb := m.blobs[ref]
	if mb == nil || !slices.Contains(m.links[threadID], ref) {
		return Blob{}, blobNotFound(threadID, ref)
	}
	return mb.Blob, nil
}

// BlobUsage implements BlobStore.
func (m *Memory) BlobUsage(ctx context.Context) (BlobUsage, error) {
	if err := ctx.Err(); err != nil {
		return BlobUsage{}, fmt.Errorf("checkpoint: blob usage: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return BlobUsage{}, fmt.Errorf("checkpoint: blob usage: %w", errMemoryClosed)
	}
	var u BlobUsage
	for _, b := range m.blobs {
		u.Blobs++
		u.Bytes += b.Size
	}
	for _, refs := range m.links {
		u.Links += int64(len(refs))
	}
	return u, nil
}

// Claim implements Leaser.
func (m *Memory) Claim(ctx context.Context, threadID string, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q: %w", threadID, err)
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q: %w", threadID, errMemoryClosed)
	}
	th := m.threads[threadID]
	switch {
	case th == nil:
		th = &memThread{}
		m.threads[threadID] = th
		fallthrough
	case !th.claimed():
		th.inc = th.firstIncarnation()
	case th.until > leaseMillis(now):
		return Lease{}, fmt.Errorf("checkpoint: claim thread %q: %w", threadID, ErrLeased)
	}
	th.token++
	exp := leaseExpiry(now, ttl)
	th.until = leaseMillis(exp)
	return Lease{ThreadID: threadID, Incarnation: th.inc, Token: th.token, Seq: th.latest, Expires: exp}, nil
}

// Extend implements Leaser.
func (m *Memory) Extend(ctx context.Context, le Lease, ttl time.Duration) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return le, fmt.Errorf("checkpoint: extend lease of thread %q: %w", le.ThreadID, err)
	}
	exp := leaseExpiry(time.Now(), ttl)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return le, fmt.Errorf("checkpoint: extend lease of thread %q: %w", le.ThreadID, errMemoryClosed)
	}
	th := m.threads[le.ThreadID]
	if th == nil || !th.claimed() || th.token != le.Token || th.until == 0 {
		return le, fmt.Errorf("checkpoint: extend lease of thread %q: %w", le.ThreadID, ErrLeaseLost)
	}
	th.until = leaseMillis(exp)
	le.Expires = exp
	return le, nil
}

// Release implements Leaser.
func (m *Memory) Release(ctx context.Context, le Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("checkpoint: release lease of thread %q: %w", le.ThreadID, errMemoryClosed)
	}
	if th := m.threads[le.ThreadID]; th != nil && th.claimed() && th.token == le.Token {
		th.until = 0
	}
	return nil
}

// Head implements Leaser.
func (m *Memory) Head(ctx context.Context, threadID string) (Head, error) {
	if err := ctx.Err(); err != nil {
		return Head{}, fmt.Errorf("checkpoint: head of thread %q: %w", threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Head{}, fmt.Errorf("checkpoint: head of thread %q: %w", threadID, errMemoryClosed)
	}
	th := m.threads[threadID]
	if th.latestSeq() == 0 {
		return Head{}, nil
	}
	h := Head{Incarnation: th.cps[len(th.cps)-1].incarnation, Seq: th.latest}
	if th.claimed() {
		h.Incarnation = th.inc
	}
	return h, nil
}

// LatestTail implements TailReader.
func (m *Memory) LatestTail(ctx context.Context, threadID string, from int) (Checkpoint, int, error) {
	if err := ctx.Err(); err != nil {
		return Checkpoint{}, 0, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Checkpoint{}, 0, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, errMemoryClosed)
	}
	th := m.threads[threadID]
	if th.latestSeq() == 0 {
		return Checkpoint{}, 0, fmt.Errorf("checkpoint: latest of thread %q: %w", threadID, ErrNotFound)
	}
	c := &th.cps[len(th.cps)-1]
	return th.read(threadID, c, from), c.logLen, nil
}

// Due implements Scheduler by looking at every thread's latest checkpoint.
func (m *Memory) Due(ctx context.Context, now time.Time, limit int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: due threads: %w", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("checkpoint: due threads: %w", errMemoryClosed)
	}
	type due struct {
		thread string
		at     time.Time
	}
	var ds []due
	for id, th := range m.threads {
		if th.latest == 0 {
			continue
		}
		if at := th.cps[len(th.cps)-1].wakeAt; !at.IsZero() && !at.After(now) {
			ds = append(ds, due{id, at})
		}
	}
	slices.SortFunc(ds, func(a, b due) int { return a.at.Compare(b.at) })
	out := make([]string, 0, min(len(ds), max(limit, 0)))
	for _, d := range ds[:min(len(ds), max(limit, 0))] {
		out = append(out, d.thread)
	}
	return out, nil
}

// DeleteIdle implements Pruner.
func (m *Memory) DeleteIdle(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("checkpoint: delete idle threads: %w", err)
	}
	now := leaseMillis(time.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return 0, fmt.Errorf("checkpoint: delete idle threads: %w", errMemoryClosed)
	}
	n := 0
	for id, th := range m.threads {
		if n >= limit {
			break
		}
		if th.latest == 0 || th.until > now || !th.cps[len(th.cps)-1].createdAt.Before(cutoff) {
			continue
		}
		delete(m.threads, id)
		m.unlink(id)
		n++
	}
	return n, nil
}

// Close drops every checkpoint; later calls return an error, which catches
// code that keeps using a store it has already closed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.threads, m.blobs, m.links = nil, nil, nil
	return nil
}

// cloneCheckpoint returns a deep copy of cp (without Append, Log and Blobs), with
// empty Next, State and Metadata normalised to nil and CreatedAt in UTC without a monotonic
// reading, as the durable stores return them.
func cloneCheckpoint(cp Checkpoint) Checkpoint {
	cp.Append, cp.Log, cp.Blobs = nil, nil, nil
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
	if !cp.WakeAt.IsZero() {
		cp.WakeAt = time.UnixMilli(cp.WakeAt.UnixMilli()).UTC()
	}
	return cp
}
