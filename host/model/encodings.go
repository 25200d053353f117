package model

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// Encodings is a thread's messages as a provider last encoded them, one
// encoding (F) a message, kept so that a call on a long thread encodes
// what the thread gained since the last one instead of the whole thread:
// a thread of 5,000 messages is about a megabyte of JSON, sent on every
// call, and encoding it was most of the host's CPU per turn. A message is
// recognised by its id, role and content array (message.Same), so one that
// the thread's rewrite for the model (message.ForModel) replaced is
// encoded again, and a deleted and re-created thread starts over.
//
// A message's media are in its encoding, so a blob is read and encoded
// once per thread, not on every turn (the request carries every image of
// the thread, in base64, on every turn: what is not repeated is reading
// and encoding it). Blobs are read with no lock held. A request carries
// the newest media that fit in the provider's Limits; from the first
// that does not (going back from the newest), every older block is sent
// as a stand-in saying so, and a message is encoded again only when that
// changes for it.
//
// Providers keep one per thread in a memo.PerThread, bounded by the
// sizes Encode returns. It is safe for concurrent use.
type Encodings[F any] struct {
	// View rewrites the thread for the model; its output is what Encode
	// is given.
	View message.ModelView

	mu    sync.Mutex
	sent  []message.Message // what frags encode
	frags []F               // frags[i] encodes sent[i] (once done[i])
	done  []bool
	media []*Sends // media[i]: sent[i]'s media, nil when it has none
	todo  []int    // the messages that may need encoding
	nm    int      // how many messages have media
	size  int      // the Size of the encodings done
}

// Len is how many messages the encodings hold.
func (e *Encodings[F]) Len() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.sent) }

// Bytes is the size the last Encode returned (the sum of the encodings'
// Size).
func (e *Encodings[F]) Bytes() int { e.mu.Lock(); defer e.mu.Unlock(); return e.size }

// Encoder is how a provider encodes a message for Encodings.
type Encoder[F any] struct {
	// Name prefixes errors ("openai").
	Name string
	// Media lists the media blocks a message of the rewritten thread
	// sends, in the order Encode sends them, nil for none.
	Media func(msg message.Message) []Item
	// Limits bound the media of one request.
	Limits Limits
	// Encode encodes the thread's i-th message. s is its media (nil for
	// none): the k-th goes inline when s.Sent(k), with its bytes from
	// data or, for a blob, from blobs, which holds every blob it sends.
	Encode func(i int, msg message.Message, s *Sends, blobs map[string][]byte) (F, error)
	// Size is what an encoding counts against the memo's bound.
	Size func(F) int
}

// Item is one media block of a message as a provider sends it.
type Item struct {
	// Inline is whether the block itself can be sent; if not, Why says
	// why and a stand-in goes instead (StandIn).
	Inline bool
	Why    string
	// Size is the bytes it adds to a request, Image and PDF what it
	// counts as against Limits.
	Size       int64
	Image, PDF bool
	// Ref is the blob to read when it is sent, if it is one.
	Ref string
	// Noun ("image", "file", "audio") and Of (`message "m1"`, `the
	// result of call "c1"`) name it in errors; Items sets them.
	Noun, Of string
}

// Limits bound the media one request carries.
type Limits struct {
	Images   int   // how many images
	Bytes    int64 // the bytes of all media
	PDFBytes int64 // the bytes of PDFs among them
}

// Sends are a message's media, in the order they are sent.
type Sends struct {
	Items []Item
	// Cut is how many of the first Items the request leaves out.
	Cut int
}

// Sent reports whether the k-th item goes inline.
func (s *Sends) Sent(k int) bool { return k >= s.Cut && k < len(s.Items) && s.Items[k].Inline }

// LeftOut is why an item that would fit on its own is a stand-in.
const LeftOut = "left out: a request carries the newest media only"

// StandIn is the text a provider sends for a media block it does not
// send, with why: "[image image/png 64x64: not sent: ...]".
func StandIn(b message.MediaBlock, why string) string {
	return strings.TrimSuffix(b.Describe(), "]") + ": " + why + "]"
}

// Items lists the media blocks msg sends, each as classify says, named
// for errors: a user message's media blocks, a tool message's attachments
// result by result; nil when it has none.
func Items(msg message.Message, classify func(message.MediaBlock) Item) []Item {
	var out []Item
	switch msg.Role {
	case message.RoleUser:
		for _, c := range msg.Content {
			if b, ok := c.(message.MediaBlock); ok {
				it := classify(b)
				it.Noun, it.Of = b.Kind, fmt.Sprintf("message %q", msg.ID)
				out = append(out, it)
			}
		}
	case message.RoleTool:
		for _, c := range msg.Content {
			if r, ok := c.(message.ToolResultBlock); ok {
				for _, a := range r.Attachments {
					it := classify(a)
					it.Noun, it.Of = a.Kind, fmt.Sprintf("the result of call %q", r.ToolCallID)
					out = append(out, it)
				}
			}
		}
	}
	return out
}

// HasMedia reports whether msgs hold any media block, in a message or
// attached to a tool result.
func HasMedia(msgs []message.Message) bool {
	for _, m := range msgs {
		for _, c := range m.Content {
			switch c := c.(type) {
			case message.MediaBlock:
				return true
			case message.ToolResultBlock:
				if len(c.Attachments) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// Encode returns the encodings of msgs, the thread rewritten for the model
// (by View, or message.ForModel), each a copy of the one kept (an encoding
// never changes: a later call replaces it), and the sum of their sizes.
// Only the messages that are not the ones encoded last time are encoded,
// with the blobs they send, read through blobs with no lock held.
func (e *Encodings[F]) Encode(ctx context.Context, msgs []message.Message, blobs BlobReader, enc *Encoder[F]) ([]F, int, error) {
	var have map[string][]byte
	for {
		e.mu.Lock()
		out, size, needs, err := e.encode(msgs, have, enc)
		e.mu.Unlock()
		if err != nil || len(needs) == 0 {
			return out, size, err
		}
		if have == nil {
			have = make(map[string][]byte, len(needs))
		}
		if err := readBlobs(ctx, enc.Name, blobs, needs, have); err != nil {
			return nil, 0, err
		}
	}
}

// encode brings the encodings to msgs. A message whose blobs are not in
// have is not encoded: encode returns the blobs to read instead, and Encode
// calls again with them. e.mu is held.
func (e *Encodings[F]) encode(msgs []message.Message, have map[string][]byte, enc *Encoder[F]) ([]F, int, []Item, error) {
	keep := min(len(e.sent), len(msgs))
	for i := keep; i < len(e.media); i++ {
		e.forget(i, enc)
	}
	e.frags, e.done, e.media = e.frags[:keep], e.done[:keep], e.media[:keep]
	for i := range keep {
		if !message.Same(&e.sent[i], &msgs[i]) {
			e.forget(i, enc)
			e.media[i] = e.mediaOf(msgs[i], enc)
			e.todo = append(e.todo, i)
		}
	}
	for i := keep; i < len(msgs); i++ {
		var zero F
		e.frags, e.done, e.media = append(e.frags, zero), append(e.done, false), append(e.media, e.mediaOf(msgs[i], enc))
		e.todo = append(e.todo, i)
	}
	e.sent = msgs[:len(msgs):len(msgs)]
	if e.nm > 0 {
		e.budget(enc)
	}

	var needs []Item
	for _, i := range e.todo {
		if i >= len(e.done) || e.done[i] {
			continue
		}
		s := e.media[i]
		if n := s.needs(have, needs); len(n) > len(needs) {
			needs = n
			continue
		}
		f, err := enc.Encode(i, msgs[i], s, have)
		if err != nil {
			e.reset()
			return nil, 0, nil, err
		}
		e.frags[i], e.done[i] = f, true
		e.size += enc.Size(f)
	}
	if len(needs) > 0 {
		return nil, 0, needs, nil // the rest stays in todo
	}
	e.todo = e.todo[:0]
	return append([]F(nil), e.frags...), e.size, nil, nil
}

func (e *Encodings[F]) mediaOf(msg message.Message, enc *Encoder[F]) *Sends {
	items := enc.Media(msg)
	if len(items) == 0 {
		return nil
	}
	e.nm++
	return &Sends{Items: items}
}

// forget uncounts the i-th message's media and encoding, before it is
// replaced or dropped.
func (e *Encodings[F]) forget(i int, enc *Encoder[F]) {
	if e.media[i] != nil {
		e.nm--
	}
	e.redo(i, enc)
}

// redo marks the i-th message to be encoded again.
func (e *Encodings[F]) redo(i int, enc *Encoder[F]) {
	if e.done[i] {
		e.size -= enc.Size(e.frags[i])
		e.done[i] = false
	}
}

// budget decides which media the request carries: the newest, while they
// fit in the limits. From the first that does not, going back from the
// newest, every older one is left out, so a block is a stand-in once and
// then for good as the thread grows.
func (e *Encodings[F]) budget(enc *Encoder[F]) {
	images, bytes, pdfs := enc.Limits.Images, enc.Limits.Bytes, enc.Limits.PDFBytes
	full := false
	for i := len(e.media) - 1; i >= 0; i-- {
		s := e.media[i]
		if s == nil {
			continue
		}
		cut := 0
		if full {
			cut = len(s.Items)
		}
		for j := len(s.Items) - 1; j >= 0 && !full; j-- {
			it := s.Items[j]
			if !it.Inline {
				continue
			}
			if it.Image && images == 0 || it.Size > bytes || it.PDF && it.Size > pdfs {
				full, cut = true, j+1
				break
			}
			bytes -= it.Size
			if it.Image {
				images--
			}
			if it.PDF {
				pdfs -= it.Size
			}
		}
		if cut != s.Cut {
			s.Cut = cut
			e.redo(i, enc)
			e.todo = append(e.todo, i)
		}
	}
}

// needs appends to out the blobs s sends that have not been read.
func (s *Sends) needs(have map[string][]byte, out []Item) []Item {
	if s == nil {
		return out
	}
	for k, it := range s.Items {
		if it.Ref == "" || !s.Sent(k) {
			continue
		}
		if _, ok := have[it.Ref]; !ok {
			out = append(out, it)
		}
	}
	return out
}

// reset forgets what was encoded, after an error.
func (e *Encodings[F]) reset() {
	e.sent, e.frags, e.done, e.media, e.todo, e.nm, e.size = nil, nil, nil, nil, nil, 0, 0
}

// readBlobs reads the blobs needed, once each, into have.
func readBlobs(ctx context.Context, name string, blobs BlobReader, needs []Item, have map[string][]byte) error {
	for _, n := range needs {
		if _, ok := have[n.Ref]; ok {
			continue
		}
		if blobs == nil {
			return fmt.Errorf("%s: %s holds the %s blob %s, and this host keeps no blobs to read it from", name, n.Of, n.Noun, n.Ref)
		}
		raw, err := blobs.ReadBlob(ctx, n.Ref)
		if err != nil {
			return fmt.Errorf("%s: cannot read the %s blob %s of %s: %w", name, n.Noun, n.Ref, n.Of, err)
		}
		if raw == nil {
			raw = []byte{}
		}
		have[n.Ref] = raw
	}
	return nil
}
