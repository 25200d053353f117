package anthropic

import (
	"context"

	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// A Model's encoded histories are bounded as memo.PerThread's defaults
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
// megabyte of JSON, sent on every call), and its blobs are read and
// encoded once: see model.Encodings. A thread with media keeps its
// fragments whatever its length. Turns are merged when the body is
// assembled, not here, so a fragment never depends on its neighbours.
type histories = memo.PerThread[model.Encodings[fragment]]

// encoder encodes a thread's messages for model.Encodings.
var encoder = &model.Encoder[fragment]{
	Name:   "anthropic",
	Media:  func(msg message.Message) []model.Item { return model.Items(msg, classify) },
	Limits: limits,
	Encode: encodeMessage,
	Size:   func(f fragment) int { return len(f.blocks) + historyOverhead },
}

// fragments returns the encoded messages of a call, in order, the thread
// rewritten for the model (message.ForModel) first. With no thread id, or
// a short thread without media, nothing is kept.
func (m *Model) fragments(ctx context.Context, req model.Request) ([]fragment, error) {
	thread, msgs := req.ThreadID, req.Messages
	if thread == "" || len(msgs) < minHistory && !model.HasMedia(msgs) {
		out, _, err := new(model.Encodings[fragment]).Encode(ctx, message.ForModel(msgs), req.Blobs, encoder)
		return out, err
	}
	h := m.histories.Get(thread)
	out, size, err := h.Encode(ctx, h.View.ForModel(msgs), req.Blobs, encoder)
	m.histories.Counted(thread, h, size)
	return out, err
}
