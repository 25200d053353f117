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

// history is one thread's.
type history struct {
	mu    sync.Mutex
	view  message.ModelView // the thread rewritten for the model
	sent  []message.Message // what ents encode: the view's last output
	ents  []encoded         // ents[i]: sent[i]'s chat messages
	media int               // how many ents have media
	size  int               // bytes of the encodings, plus historyOverhead a message
}

// encoded is one message's chat messages.
type encoded struct {
	frag  []byte // the chat messages, comma-separated
	count int    // how many
	done  bool   // frag encodes the message with cut
	media []item // its media blocks, in the order they are sent
	cut   int    // the first cut of them are left out of the request
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
	for i := keep; i < len(h.ents); i++ {
		h.forget(i)
	}
	h.ents = h.ents[:keep]
	for i := range keep {
		if !message.Same(&h.sent[i], &msgs[i]) {
			h.forget(i)
			h.ents[i] = h.entry(msgs[i])
		}
	}
	for i := keep; i < len(msgs); i++ {
		h.ents = append(h.ents, h.entry(msgs[i]))
	}
	h.sent = msgs[:len(msgs):len(msgs)]
	if h.media > 0 {
		h.budget()
	}

	var needs []need
	size, chats := 0, 0
	out := make([][]byte, 0, len(h.ents))
	for i := range h.ents {
		e := &h.ents[i]
		if !e.done {
			if n := e.needs(msgs[i].ID, have, needs); len(n) > len(needs) {
				needs = n
				continue
			}
			f, n, err := encodeMessage(i, msgs[i], &sender{items: e.media, cut: e.cut, have: have})
			if err != nil {
				h.reset()
				return nil, 0, nil, err
			}
			e.frag, e.count, e.done = f, n, true
		}
		if e.count == 0 {
			continue
		}
		out = append(out, e.frag)
		chats += e.count
		size += len(e.frag) + historyOverhead
	}
	if len(needs) > 0 {
		return nil, 0, needs, nil
	}
	h.size = size
	return out, chats, nil, nil
}

// entry is a message's entry before it is encoded.
func (h *history) entry(msg message.Message) encoded {
	e := encoded{media: mediaOf(msg)}
	if len(e.media) > 0 {
		h.media++
	}
	return e
}

// forget uncounts the i-th entry's media, before it is replaced or dropped.
func (h *history) forget(i int) {
	if len(h.ents[i].media) > 0 {
		h.media--
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
	for i := len(h.ents) - 1; i >= 0; i-- {
		e := &h.ents[i]
		if len(e.media) == 0 {
			continue
		}
		cut := 0
		if full {
			cut = len(e.media)
		}
		for j := len(e.media) - 1; j >= 0 && !full; j-- {
			it := e.media[j]
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
		if cut != e.cut {
			e.cut, e.done = cut, false
		}
	}
}

// needs appends to out the blobs e sends that have not been read.
func (e *encoded) needs(msg string, have map[string][]byte, out []need) []need {
	for j, it := range e.media {
		if j < e.cut || it.kind == standIn || it.ref == "" {
			continue
		}
		if _, ok := have[it.ref]; !ok {
			out = append(out, need{ref: it.ref, kind: it.noun(), msg: msg})
		}
	}
	return out
}

// reset forgets what was sent, after an error.
func (h *history) reset() {
	h.sent, h.ents, h.media, h.size = nil, nil, 0, 0
}

// encodeMessage encodes the chat messages of the thread's i-th message,
// comma-separated, as encoding/json writes them inside the request.
func encodeMessage(i int, msg message.Message, s *sender) ([]byte, int, error) {
	chats, err := chatMessagesOf(i, msg, s)
	if err != nil {
		return nil, 0, err
	}
	var b bytes.Buffer
	if s.grow > 0 {
		b.Grow(s.grow + 256*len(chats))
	}
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
