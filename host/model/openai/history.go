package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

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

// chatMessagesOf maps a model-shaped thread's i-th message to chat messages:
// one, except that a tool message becomes one per result, in the order
// the results are listed (which ForModel makes the call order), followed
// by one user message with the results' attachments when they have any
// (a tool message takes text only). s sends the message's media.
func chatMessagesOf(i int, msg message.Message, s *sender) ([]chatMessage, error) {
	switch msg.Role {
	case message.RoleSystem:
		text := msg.Text()
		return []chatMessage{{Role: string(msg.Role), Content: &text}}, nil
	case message.RoleUser:
		if s.media == nil {
			text := msg.Text()
			return []chatMessage{{Role: "user", Content: &text}}, nil
		}
		var p parts
		for _, c := range msg.Content {
			switch c := c.(type) {
			case message.TextBlock:
				p.text(c.Text)
			case message.MediaBlock:
				part, media, err := s.part(c)
				if err != nil {
					return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
				}
				p.add(part, media)
			}
		}
		return []chatMessage{p.message()}, nil
	case message.RoleAssistant:
		return []chatMessage{assistantMessage(msg)}, nil
	case message.RoleTool:
		var out []chatMessage
		var p parts
		for _, r := range msg.ToolResults() {
			text := ResultText(r)
			if len(r.Attachments) > 0 {
				text += "\n\nAttached, in the user message after the tool results: " + message.DescribeAll(r.Attachments)
				p.text(fmt.Sprintf("Attached to the result of %s:", r.ToolCallID))
				for _, a := range r.Attachments {
					part, media, err := s.part(a)
					if err != nil {
						return nil, fmt.Errorf("openai: messages[%d]: %w", i, err)
					}
					p.add(part, media)
				}
			}
			out = append(out, chatMessage{Role: "tool", Content: &text, ToolCallID: r.ToolCallID})
		}
		if len(p.list) > 0 {
			out = append(out, p.message())
		}
		return out, nil
	}
	return nil, fmt.Errorf("openai: messages[%d]: role %q cannot be sent to a chat model", i, msg.Role)
}

func assistantMessage(msg message.Message) chatMessage {
	a := chatMessage{Role: "assistant"}
	text, calls := msg.Text(), msg.ToolCalls()
	// OpenAI's own answers carry "content": null next to tool_calls; an
	// assistant message with neither gets "" rather than nothing.
	if text != "" || len(calls) == 0 {
		a.Content = &text
	}
	for _, c := range calls {
		a.ToolCalls = append(a.ToolCalls, chatToolCall{ID: c.ID, Type: "function",
			Function: chatFunction{Name: c.Name, Arguments: argumentsText(c.Arguments)}})
	}
	return a
}

func argumentsText(args json.RawMessage) string {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		return "{}"
	}
	return string(a)
}

// ResultText is the text a tool result is sent as: a JSON string result as
// its text, any other JSON value as compact JSON, and an error result
// prefixed with "Error: " so the model knows the call failed.
func ResultText(r message.ToolResultBlock) string {
	text := jsonText(r.Content)
	if r.IsError {
		return "Error: " + text
	}
	return text
}

func jsonText(raw json.RawMessage) string {
	c := bytes.TrimSpace(raw)
	if len(c) == 0 {
		return "null"
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, c) == nil {
		return b.String()
	}
	return string(c)
}
