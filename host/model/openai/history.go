package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// A Model's encoded histories are bounded as message.PerThread's
// defaults are: beyond 256 threads or 64 MiB of JSON (about the size of
// the threads' messages), the least recently used thread's is dropped and
// its next call encodes the whole thread once.
const (
	historyOverhead = 64 // bytes counted per message beside its JSON
	// minHistory is the length from which a thread's history is kept:
	// encoding a shorter thread again costs less than keeping it.
	minHistory = 32
)

// histories keeps, per thread, the chat messages a Model last sent,
// encoded, so that a call on a long thread encodes what the thread gained
// since the last one instead of the whole thread: a thread of 5,000
// messages is about a megabyte of JSON, sent on every call, and encoding
// it was most of the server's CPU per turn. Each message's encoding is
// kept apart and recognised by the message's id, role and content array
// (message.Same), so a message the thread's rewrite for the model
// (message.ForModel) replaced is encoded again, and a deleted and
// re-created thread starts over.
type histories = message.PerThread[history]

// history is one thread's.
type history struct {
	mu    sync.Mutex
	view  message.ModelView // the thread rewritten for the model
	sent  []message.Message // what frags encode: the view's last output
	frags [][]byte          // frags[i]: sent[i]'s chat messages, comma-separated
	count []int             // count[i]: how many chat messages frags[i] holds
	size  int               // bytes of frags, plus historyOverhead a message
}

// messages returns the chat messages of a thread's call, encoded (each
// element one or more elements of the JSON array, comma-separated), and
// how many there are. The thread is rewritten for the model
// (message.ForModel) first. With no thread id nothing is kept.
func (m *Model) messages(thread string, msgs []message.Message) ([][]byte, int, error) {
	if thread == "" || len(msgs) < minHistory {
		var h history
		return h.encode(message.ForModel(msgs))
	}
	h := m.histories.Get(thread)
	h.mu.Lock()
	out, n, err := h.encode(h.view.ForModel(msgs))
	size := h.size
	h.mu.Unlock()
	m.histories.Counted(thread, h, size)
	return out, n, err
}

// encode brings frags to msgs, encoding only the messages that are not
// the ones sent last time, and returns the encodings to send, in order
// (each never changes: a later call replaces it), and how many chat
// messages they hold. h.mu is held (or h is not shared).
func (h *history) encode(msgs []message.Message) ([][]byte, int, error) {
	keep := min(len(h.sent), len(msgs))
	h.frags, h.count = h.frags[:keep], h.count[:keep]
	for i := range keep {
		if !message.Same(&h.sent[i], &msgs[i]) {
			f, n, err := encodeMessage(i, msgs[i])
			if err != nil {
				h.reset()
				return nil, 0, err
			}
			h.frags[i], h.count[i] = f, n
		}
	}
	for i := keep; i < len(msgs); i++ {
		f, n, err := encodeMessage(i, msgs[i])
		if err != nil {
			h.reset()
			return nil, 0, err
		}
		h.frags, h.count = append(h.frags, f), append(h.count, n)
	}
	h.sent = msgs[:len(msgs):len(msgs)]

	size, chats := 0, 0
	out := make([][]byte, 0, len(h.frags))
	for i, f := range h.frags {
		if h.count[i] == 0 {
			continue
		}
		out = append(out, f)
		chats += h.count[i]
		size += len(f) + historyOverhead
	}
	h.size = size
	return out, chats, nil
}

// reset forgets what was sent, after an error.
func (h *history) reset() {
	h.sent, h.frags, h.count, h.size = nil, nil, nil, 0
}

// encodeMessage encodes the chat messages of the thread's i-th message,
// comma-separated, as encoding/json writes them inside the request.
func encodeMessage(i int, msg message.Message) ([]byte, int, error) {
	chats, err := chatMessagesOf(i, msg)
	if err != nil {
		return nil, 0, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for j, c := range chats {
		if j > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(c); err != nil {
			return nil, 0, fmt.Errorf("openai: messages[%d]: %w", i, err)
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	return b.Bytes(), len(chats), nil
}
