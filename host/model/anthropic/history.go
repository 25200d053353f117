package anthropic

import (
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// A Model's encoded histories are bounded as message.PerThread's defaults
// are: beyond 256 threads or 64 MiB of JSON, the least recently used
// thread's is dropped and its next call encodes the whole thread once.
const (
	historyOverhead = 64 // bytes counted per message beside its JSON
	// minHistory is the length from which a thread's history is kept:
	// encoding a shorter thread again costs less than keeping it.
	minHistory = 32
)

// histories keeps, per thread, the fragments a Model last sent, so that a
// call on a long thread encodes what the thread gained since the last one
// instead of the whole thread (a thread of 5,000 messages is about a
// megabyte of JSON, sent on every call). Each message's fragment is kept
// apart and recognised by the message's id, role and content array
// (message.Same), so a message the thread's rewrite for the model
// (message.ForModel) replaced is encoded again, and a deleted and
// re-created thread starts over. Turns are merged when the body is
// assembled, not here, so a fragment never depends on its neighbours.
type histories = message.PerThread[history]

// history is one thread's.
type history struct {
	mu    sync.Mutex
	view  message.ModelView // the thread rewritten for the model
	sent  []message.Message // what frags encode: the view's last output
	frags []fragment        // frags[i] encodes sent[i]
	size  int               // bytes of frags, plus historyOverhead a message
}

// fragments returns the encoded messages of a thread's call, in order,
// the thread rewritten for the model (message.ForModel) first. With no
// thread id, or a short thread, nothing is kept.
func (m *Model) fragments(thread string, msgs []message.Message) ([]fragment, error) {
	if thread == "" || len(msgs) < minHistory {
		var h history
		return h.encode(message.ForModel(msgs))
	}
	h := m.histories.Get(thread)
	h.mu.Lock()
	out, err := h.encode(h.view.ForModel(msgs))
	size := h.size
	h.mu.Unlock()
	m.histories.Counted(thread, h, size)
	return out, err
}

// encode brings frags to msgs, encoding only the messages that are not the
// ones sent last time, and returns a copy of them (each fragment's bytes
// never change: a later call replaces them). h.mu is held (or h is not
// shared).
func (h *history) encode(msgs []message.Message) ([]fragment, error) {
	keep := min(len(h.sent), len(msgs))
	h.frags = h.frags[:keep]
	for i := range keep {
		if !message.Same(&h.sent[i], &msgs[i]) {
			f, err := encodeMessage(i, msgs[i])
			if err != nil {
				h.reset()
				return nil, err
			}
			h.frags[i] = f
		}
	}
	for i := keep; i < len(msgs); i++ {
		f, err := encodeMessage(i, msgs[i])
		if err != nil {
			h.reset()
			return nil, err
		}
		h.frags = append(h.frags, f)
	}
	h.sent = msgs[:len(msgs):len(msgs)]
	size := 0
	for _, f := range h.frags {
		size += len(f.blocks) + historyOverhead
	}
	h.size = size
	return append([]fragment(nil), h.frags...), nil
}

// reset forgets what was sent, after an error.
func (h *history) reset() {
	h.sent, h.frags, h.size = nil, nil, 0
}
