package agent

import (
	"container/list"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// The bounds of a ModelNode's views: beyond either, the least recently
// used thread's view is dropped (its next model call rewrites the whole
// thread once). A view shares its messages with the thread's state, but
// keeps them alive after the thread cache lets them go, hence the bytes.
const (
	maxViews     = 256
	maxViewBytes = 64 << 20
)

// views keeps, per thread, the model's view of the thread (message.ModelView),
// so that each model call of a long thread costs what the thread gained
// since the last one. A thread deleted and re-created has other messages,
// which a view recognises and rewrites from scratch.
type views struct {
	mu    sync.Mutex
	byID  map[string]*list.Element // of *view
	lru   list.List                // front: most recently used
	bytes int
}

type view struct {
	thread string
	v      message.ModelView
	bytes  int // v's size when last counted

	mu sync.Mutex
	// withPrompt is the system prompt followed by base, the output of v it
	// was built from; it grows with v's output instead of being copied.
	prompt     string
	base       []message.Message
	withPrompt []message.Message
}

// get returns the thread's view, made if needed.
func (vs *views) get(thread string) *view {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.byID == nil {
		vs.byID = map[string]*list.Element{}
	}
	if e, ok := vs.byID[thread]; ok {
		vs.lru.MoveToFront(e)
		return e.Value.(*view)
	}
	v := &view{thread: thread}
	vs.byID[thread] = vs.lru.PushFront(v)
	vs.evict()
	return v
}

// counted records v's size after a call and drops views beyond the bounds.
func (vs *views) counted(v *view) {
	n := v.v.Size()
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if e, ok := vs.byID[v.thread]; !ok || e.Value != v {
		return // dropped meanwhile
	}
	vs.bytes += n - v.bytes
	v.bytes = n
	vs.evict()
}

func (vs *views) evict() {
	for vs.lru.Len() > 1 && (vs.lru.Len() > maxViews || vs.bytes > maxViewBytes) {
		v := vs.lru.Remove(vs.lru.Back()).(*view)
		delete(vs.byID, v.thread)
		vs.bytes -= v.bytes
	}
}

// history is what the model is sent: message.ForModel(msgs), after the
// system prompt when there is one.
func (v *view) history(msgs []message.Message, prompt string) []message.Message {
	out := v.v.ForModel(msgs)
	if prompt == "" {
		return out
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// The view only appends to an output it handed out, so an output in
	// the same array and no shorter begins with base.
	if v.prompt != prompt || len(v.base) == 0 || len(out) < len(v.base) || &out[0] != &v.base[0] {
		v.prompt, v.base = prompt, nil
		v.withPrompt = append(make([]message.Message, 0, 1+len(out)+len(out)/2), message.Text(message.RoleSystem, prompt))
	}
	v.withPrompt = append(v.withPrompt, out[len(v.base):]...)
	v.base = out
	return v.withPrompt[:len(v.withPrompt):len(v.withPrompt)]
}
