package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
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
//
// A message's media are in its encoding (base64, as the request carries
// them), so an image is read from the blob store and encoded once per
// thread, not on every turn: a thread with media keeps its history
// whatever its length. The bytes count against the bounds like any
// others; a thread whose history was dropped reads its blobs again.
type histories = message.PerThread[history]

// history is one thread's. Its slices are parallel, one element a
// message; frags and count are all a call on a long thread walks.
type history struct {
	mu    sync.Mutex
	view  message.ModelView // the thread rewritten for the model
	sent  []message.Message // what frags encode: the view's last output
	frags [][]byte          // frags[i]: sent[i]'s chat messages, comma-separated
	count []int             // count[i]: how many chat messages frags[i] holds; -1: to encode
	media []*sends          // media[i]: sent[i]'s media, nil when it has none
	todo  []int             // the messages that may need encoding
	nm    int               // how many messages have media
	size  int               // bytes of frags, plus historyOverhead a message
}

// sends are the media blocks of a message, in the order they are sent.
type sends struct {
	items []item
	cut   int // the first cut of them are left out of the request
}

// messages returns the chat messages of a call, encoded (each element one
// or more elements of the JSON array, comma-separated), and how many there
// are. The thread is rewritten for the model (message.ForModel) first.
// With no thread id nothing is kept. The blobs the messages send are read
// with no lock held, and the call encodes again once they are there.
func (m *Model) messages(ctx context.Context, req model.Request) ([][]byte, int, error) {
	thread, msgs := req.ThreadID, req.Messages
	keep := thread != "" && (len(msgs) >= minHistory || hasMedia(msgs))
	var h *history
	var view []message.Message
	if keep {
		h = m.histories.Get(thread)
		view = h.view.ForModel(msgs)
	} else {
		h = new(history)
		view = message.ForModel(msgs)
	}
	var have map[string][]byte
	for {
		h.mu.Lock()
		out, n, needs, err := h.encode(view, have)
		size := h.size
		h.mu.Unlock()
		if err != nil {
			return nil, 0, err
		}
		if len(needs) == 0 {
			if keep {
				m.histories.Counted(thread, h, size)
			}
			return out, n, nil
		}
		if have == nil {
			have = make(map[string][]byte, len(needs))
		}
		if err := readBlobs(ctx, req.Blobs, needs, have); err != nil {
			return nil, 0, err
		}
	}
}

// encode brings the encodings to msgs, encoding only the messages that are
// not the ones sent last time (or whose media the request's budget now
// leaves out otherwise), and returns the encodings to send, in order (each
// never changes: a later call replaces it), and how many chat messages
// they hold. A message whose blobs are not in have is not encoded: encode
// returns the blobs to read instead, and the caller calls again with them.
// h.mu is held (or h is not shared).
func (h *history) encode(msgs []message.Message, have map[string][]byte) ([][]byte, int, []need, error) {
	keep := min(len(h.sent), len(msgs))
	for i := keep; i < len(h.media); i++ {
		h.forget(i)
	}
	h.frags, h.count, h.media = h.frags[:keep], h.count[:keep], h.media[:keep]
	for i := range keep {
		if !message.Same(&h.sent[i], &msgs[i]) {
			h.forget(i)
			h.count[i], h.media[i] = -1, h.mediaOf(msgs[i])
			h.todo = append(h.todo, i)
		}
	}
	for i := keep; i < len(msgs); i++ {
		h.frags, h.count, h.media = append(h.frags, nil), append(h.count, -1), append(h.media, h.mediaOf(msgs[i]))
		h.todo = append(h.todo, i)
	}
	h.sent = msgs[:len(msgs):len(msgs)]
	if h.nm > 0 {
		h.budget()
	}

	var needs []need
	for _, i := range h.todo {
		if i >= len(h.count) || h.count[i] >= 0 {
			continue
		}
		s := sender{have: have}
		if m := h.media[i]; m != nil {
			if n := m.needs(have, needs); len(n) > len(needs) {
				needs = n
				continue
			}
			s.items, s.cut = m.items, m.cut
		}
		f, n, err := encodeMessage(i, msgs[i], &s)
		if err != nil {
			h.reset()
			return nil, 0, nil, err
		}
		h.frags[i], h.count[i] = f, n
	}
	if len(needs) > 0 {
		return nil, 0, needs, nil // the rest stays in todo
	}
	h.todo = h.todo[:0]

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
	return out, chats, nil, nil
}

// mediaOf is a message's media, counted.
func (h *history) mediaOf(msg message.Message) *sends {
	items := mediaOf(msg)
	if len(items) == 0 {
		return nil
	}
	h.nm++
	return &sends{items: items}
}

// forget uncounts the i-th message's media, before it is replaced or
// dropped.
func (h *history) forget(i int) {
	if h.media[i] != nil {
		h.nm--
	}
}

// budget decides which media the request carries: the newest, while
// they fit in maxImages images, maxMediaBytes bytes and maxPDFBytes of
// PDFs. From the first that does not (going back from the newest), every
// older one is left out, so a thread's media are a stand-in once and then
// for good, and a message is encoded again only when its cut moves.
func (h *history) budget() {
	images, bytes, pdfs := maxImages, int64(maxMediaBytes), int64(maxPDFBytes)
	full := false
	for i := len(h.media) - 1; i >= 0; i-- {
		m := h.media[i]
		if m == nil {
			continue
		}
		cut := 0
		if full {
			cut = len(m.items)
		}
		for j := len(m.items) - 1; j >= 0 && !full; j-- {
			it := m.items[j]
			if it.kind == standIn {
				continue
			}
			if it.kind == imagePart && images == 0 || it.size > bytes || it.kind == filePart && it.size > pdfs {
				full, cut = true, j+1
				break
			}
			bytes -= it.size
			if it.kind == imagePart {
				images--
			}
			if it.kind == filePart {
				pdfs -= it.size
			}
		}
		if cut != m.cut {
			m.cut, h.count[i] = cut, -1
			h.todo = append(h.todo, i)
		}
	}
}

// needs appends to out the blobs m sends that have not been read.
func (m *sends) needs(have map[string][]byte, out []need) []need {
	for j, it := range m.items {
		if j < m.cut || it.kind == standIn || it.ref == "" {
			continue
		}
		if _, ok := have[it.ref]; !ok {
			out = append(out, need{ref: it.ref, kind: it.noun(), of: it.of})
		}
	}
	return out
}

// reset forgets what was sent, after an error.
func (h *history) reset() {
	h.sent, h.frags, h.count, h.media, h.todo, h.nm, h.size = nil, nil, nil, nil, nil, 0, 0
}

// encodeMessage encodes the chat messages of the thread's i-th message,
// comma-separated, as encoding/json writes them inside the request.
func encodeMessage(i int, msg message.Message, s *sender) ([]byte, int, error) {
	chats, err := chatMessagesOf(i, msg, s)
	if err != nil {
		return nil, 0, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if s.grow == 0 && !hasParts(chats) {
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
	// A message with parts: written by hand into one buffer of the right
	// size, b serving to encode the strings.
	str := func(out []byte, v string) []byte {
		b.Reset()
		_ = enc.Encode(v) // a string always encodes
		return append(out, b.Bytes()[:b.Len()-1]...)
	}
	out := make([]byte, 0, s.grow+512*len(chats))
	for j, c := range chats {
		if j > 0 {
			out = append(out, ',')
		}
		if c.parts == nil {
			b.Reset()
			if err := enc.Encode(c); err != nil {
				return nil, 0, fmt.Errorf("openai: messages[%d]: %w", i, err)
			}
			out = append(out, b.Bytes()[:b.Len()-1]...)
			continue
		}
		out = append(out, `{"role":`...)
		out = str(out, c.Role)
		out = append(out, `,"content":[`...)
		for k, p := range c.parts {
			if k > 0 {
				out = append(out, ',')
			}
			out = appendPart(out, p, str)
		}
		out = append(out, "]}"...)
	}
	return out, len(chats), nil
}

func hasParts(chats []chatMessage) bool {
	for _, c := range chats {
		if c.parts != nil {
			return true
		}
	}
	return false
}
