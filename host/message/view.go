package message

import (
	"sync"
	"unsafe"
)

// ModelView is ForModel for a thread that grows. It keeps the rewrite of
// the messages it was last given, and when the next messages extend those
// it rewrites only the new ones, so a model call on a long thread costs
// what the thread gained since the last call plus one comparison of the
// kept messages, without allocating for the old ones. Given messages that
// do not extend the kept ones (another thread, an edited or re-created
// one), it starts again from scratch: its output is always ForModel's.
//
// The messages given must not be changed in place afterwards, as a
// graph's state never is: a message is recognised by its id, role and
// content array, not by its content's value. The slices returned are
// shared and must not be modified; appending to them copies.
//
// A ModelView is safe for concurrent use; its zero value is ready.
type ModelView struct {
	mu  sync.Mutex
	src []Message // the messages out rewrites
	out []Message // ForModel(src); callers get out[:len:len]
	// answered is the first result of each call in src (a
	// ToolResultBlock, in the Block it came in: kept and handed on as is,
	// it is neither copied nor boxed again); open is where each
	// unanswered call's filler is in out, to put the result there if it
	// comes.
	answered map[string]Block
	open     map[string][]slot
	size     int // estimated bytes of src (see Size)
}

type slot struct{ msg, block int }

// ForModel returns ForModel(msgs).
func (v *ModelView) ForModel(msgs []Message) []Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.sync(msgs)
	return v.out[:len(v.out):len(v.out)]
}

// Size estimates the bytes of the messages the view was last given (their
// text, arguments and results), for callers that bound what they keep.
func (v *ModelView) Size() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.size
}

// sync brings the view to msgs, rewriting only what follows the kept
// messages when msgs begins with them.
func (v *ModelView) sync(msgs []Message) {
	if v.answered == nil || !SamePrefix(v.src, msgs) {
		v.src, v.out, v.size = nil, nil, 0
		v.answered = map[string]Block{}
		v.open = map[string][]slot{}
	}
	added := msgs[len(v.src):]
	v.src = msgs[:len(msgs):len(msgs)]
	if len(added) == 0 {
		return
	}
	// ForModel reads the results of the whole thread before it writes
	// anything, so the new results come first: a result for an earlier
	// call replaces that call's filler.
	copied := false
	for _, m := range added {
		for _, b := range m.Content {
			r, ok := b.(ToolResultBlock)
			if !ok {
				continue
			}
			if _, dup := v.answered[r.ToolCallID]; dup {
				continue
			}
			v.answered[r.ToolCallID] = b
			slots := v.open[r.ToolCallID]
			if len(slots) == 0 {
				continue
			}
			delete(v.open, r.ToolCallID)
			if !copied {
				// out's prefix was handed out: rewrite a copy.
				v.out = append([]Message(nil), v.out...)
				copied = true
			}
			for _, s := range slots {
				m := &v.out[s.msg]
				m.Content = append([]Block(nil), m.Content...)
				m.Content[s.block] = b
			}
		}
	}
	for _, m := range added {
		v.size += SizeOf(m)
		n := 0
		for _, b := range m.Content {
			if _, ok := b.(ToolCallBlock); ok {
				n++
			}
		}
		if m.Role == RoleTool {
			continue // re-emitted after the call that asked for it
		}
		v.out = append(v.out, m)
		if m.Role != RoleAssistant || n == 0 {
			continue
		}
		results := make([]Block, 0, n)
		for _, b := range m.Content {
			c, ok := b.(ToolCallBlock)
			if !ok {
				continue
			}
			r, ok := v.answered[c.ID]
			if !ok {
				r = ToolResultBlock{ToolCallID: c.ID, Content: unanswered, IsError: true}
				v.open[c.ID] = append(v.open[c.ID], slot{len(v.out), len(results)})
			}
			results = append(results, r)
		}
		v.out = append(v.out, Message{ID: m.ID + "/results", Role: RoleTool, Content: results})
	}
}

// SamePrefix reports whether msgs begins with the messages of prefix: the
// same ids, roles and content arrays (so it assumes, as a graph's state
// guarantees, that messages are not changed in place). It is one pass over
// the message headers that allocates nothing, for memos that extend what
// they computed for a thread instead of computing it again; none when
// msgs extends prefix in the same array, as a run's appends do (see
// graph's appendMessages), since a message there is its own prefix's.
func SamePrefix(prefix, msgs []Message) bool {
	if len(msgs) < len(prefix) {
		return false
	}
	if len(prefix) == 0 || &prefix[0] == &msgs[0] {
		return true
	}
	for i := range prefix {
		if !Same(&prefix[i], &msgs[i]) {
			return false
		}
	}
	return true
}

// Same reports whether a and b are the same message: the same id, role
// and content array, as SamePrefix compares them.
func Same(a, b *Message) bool {
	if !sameString(a.ID, b.ID) || !sameString(string(a.Role), string(b.Role)) || len(a.Content) != len(b.Content) {
		return false
	}
	return len(a.Content) == 0 || &a.Content[0] == &b.Content[0]
}

// sameString is a == b, without reading the bytes when both are the same
// string (as a thread's messages are from one call to the next).
func sameString(a, b string) bool {
	return len(a) == len(b) && (unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}
