package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

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

// encodeMessage encodes the i-th message of a thread rewritten for the
// model. s is its media (nil for none), blobs the bytes read for them
// (see model.Encoder).
func encodeMessage(i int, msg message.Message, s *model.Sends, blobs map[string][]byte) (fragment, error) {
	var f fragment
	switch msg.Role {
	case message.RoleSystem:
		f.role = roleSystem
	case message.RoleUser, message.RoleTool:
		f.role = roleUser
	case message.RoleAssistant:
		f.role = roleAsst
	default:
		return f, fmt.Errorf("anthropic: messages[%d]: role %q cannot be sent to the Messages API", i, msg.Role)
	}
	if s != nil {
		return encodeMedia(i, msg, f, s, blobs)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for j, block := range msg.Content {
		v := appendBlock(msg.Role, block)
		if v == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if err := enc.Encode(v); err != nil {
			return f, fmt.Errorf("anthropic: messages[%d].content[%d]: %w", i, j, err)
		}
		b.Truncate(b.Len() - 1) // Encode's newline
	}
	f.blocks = b.Bytes()
	return f, nil
}
