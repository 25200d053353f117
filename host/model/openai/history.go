package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// A Model's encoded histories are bounded as memo.PerThread's
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
// encoded, one []byte a thread message (its chat messages comma-separated,
// empty for none), media included: see model.Encodings. A thread with
// media keeps them whatever its length, so that its blobs are read and
// encoded once.
type histories = memo.PerThread[model.Encodings[[]byte]]

// encoder encodes a thread's messages for model.Encodings.
var encoder = &model.Encoder[[]byte]{
	Name:   "openai",
	Media:  func(msg message.Message) []model.Item { return model.Items(msg, classify) },
	Limits: limits,
	Encode: func(i int, msg message.Message, s *model.Sends, blobs map[string][]byte) ([]byte, error) {
		return encodeMessage(i, msg, &sender{media: s, have: blobs})
	},
	Size: func(f []byte) int {
		if len(f) == 0 {
			return 0
		}
		return len(f) + historyOverhead
	},
}

// messages returns the chat messages of a call, encoded (each element one
// or more elements of the JSON array, comma-separated; empty for none).
// The thread is rewritten for the model (message.ForModel) first. With no
// thread id nothing is kept.
func (m *Model) messages(ctx context.Context, req model.Request) ([][]byte, error) {
	thread, msgs := req.ThreadID, req.Messages
	if thread == "" || len(msgs) < minHistory && !model.HasMedia(msgs) {
		out, _, err := new(model.Encodings[[]byte]).Encode(ctx, message.ForModel(msgs), req.Blobs, encoder)
		return out, err
	}
	h := m.histories.Get(thread)
	out, size, err := h.Encode(ctx, h.View.ForModel(msgs), req.Blobs, encoder)
	m.histories.Counted(thread, h, size)
	return out, err
}

// encodeMessage encodes the chat messages of the thread's i-th message,
// comma-separated, as encoding/json writes them inside the request.
func encodeMessage(i int, msg message.Message, s *sender) ([]byte, error) {
	chats, err := chatMessagesOf(i, msg, s)
	if err != nil {
		return nil, err
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
				return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
			}
			b.Truncate(b.Len() - 1) // Encode's newline
		}
		return b.Bytes(), nil
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
				return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
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
	return out, nil
}

func hasParts(chats []chatMessage) bool {
	for _, c := range chats {
		if c.parts != nil {
			return true
		}
	}
	return false
}
