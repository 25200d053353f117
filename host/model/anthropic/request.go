package anthropic

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// The content blocks of a Messages API request, as they go on the wire.
// appendBlock is where a thread's block becomes one of them.
type (
	textBlock struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
	toolUseBlock struct {
		Type  string          `json:"type"` // "tool_use"
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	}
	toolResultBlock struct {
		Type      string `json:"type"` // "tool_result"
		ToolUseID string `json:"tool_use_id"`
		// Content is the result as text; left out when empty, since the
		// API refuses empty text.
		Content string `json:"content,omitempty"`
		IsError bool   `json:"is_error,omitempty"`
	}
	wireTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
)

// The roles of a fragment (see history.go): a thread message's role as the
// API sees it. A tool message's results go in a user turn.
const (
	roleSystem byte = 's'
	roleUser   byte = 'u'
	roleAsst   byte = 'a'
)

// fragment is one thread message encoded: its role and its content
// blocks, comma-separated as they stand in a content array (empty when the
// message has nothing to send).
type fragment struct {
	role   byte
	blocks []byte
}

// request builds the body of req's call: the model, max_tokens, stream
// (when streams says so),
// the system blocks, the messages (merged into alternating turns) and the
// tools, in that order. The thread is rewritten for the model
// (message.ForModel) first, and each message's encoding is kept per thread
// (history.go).
func (m *Model) request(ctx context.Context, req model.Request) ([]byte, error) {
	return m.requestBody(ctx, req, streams(req, m.maxTokens))
}

// nonStreamingMaxTokens is the largest max_tokens asked for without a
// stream: the SDK's own rule (a longer answer may outlast the 10 minutes a
// network keeps an idle connection), which it enforces on its non-streaming
// method.
const nonStreamingMaxTokens = 128000 / 6

// streams reports whether req's call is streamed: when the caller wants the
// text as it comes, or the answer may take long.
func streams(req model.Request, maxTokens int) bool {
	return req.OnDelta != nil || maxTokens > nonStreamingMaxTokens
}

func (m *Model) requestBody(ctx context.Context, req model.Request, stream bool) ([]byte, error) {
	frags, err := m.fragments(ctx, req)
	if err != nil {
		return nil, err
	}
	var tools []byte
	if len(req.Tools) > 0 {
		ts := make([]wireTool, 0, len(req.Tools))
		for _, t := range req.Tools {
			schema, err := m.schemas.Canonical(t.Parameters)
			if err != nil {
				return nil, fmt.Errorf("anthropic: tool %q: %w", t.Name, err)
			}
			ts = append(ts, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
		}
		if tools, err = encode(ts); err != nil {
			return nil, fmt.Errorf("anthropic: tools: %w", err)
		}
	}
	name, err := encode(m.name)
	if err != nil {
		return nil, err
	}
	return assemble(name, m.maxTokens, stream, frags, tools)
}

// assemble writes the body. System fragments before the first other one
// are the top-level "system"; a later one is user text. Consecutive
// fragments of one role are one turn; fragments without blocks are left
// out.
func assemble(name []byte, maxTokens int, stream bool, frags []fragment, tools []byte) ([]byte, error) {
	n := len(name) + len(tools) + 96
	for _, f := range frags {
		n += len(f.blocks) + 32
	}
	out := make([]byte, 0, n)
	out = append(out, `{"model":`...)
	out = append(out, name...)
	out = append(out, `,"max_tokens":`...)
	out = strconv.AppendInt(out, int64(maxTokens), 10)
	if stream {
		out = append(out, `,"stream":true`...)
	}

	i := 0
	for ; i < len(frags) && (frags[i].role == roleSystem || len(frags[i].blocks) == 0); i++ {
	}
	system := false
	for _, f := range frags[:i] {
		if len(f.blocks) == 0 {
			continue
		}
		if !system {
			out = append(out, `,"system":[`...)
			system = true
		} else {
			out = append(out, ',')
		}
		out = append(out, f.blocks...)
	}
	if system {
		out = append(out, ']')
	}

	out = append(out, `,"messages":[`...)
	turns := 0
	var open byte // the role of the turn being written, 0 for none
	for _, f := range frags[i:] {
		if len(f.blocks) == 0 {
			continue
		}
		role := f.role
		if role == roleSystem {
			role = roleUser
		}
		switch {
		case role == open:
			out = append(out, ',')
		default:
			if open != 0 {
				out = append(out, "]},"...)
			}
			if role == roleAsst {
				out = append(out, `{"role":"assistant","content":[`...)
			} else {
				out = append(out, `{"role":"user","content":[`...)
			}
			open = role
			turns++
		}
		out = append(out, f.blocks...)
	}
	if open != 0 {
		out = append(out, "]}"...)
	}
	out = append(out, ']')
	if turns == 0 {
		return nil, fmt.Errorf("anthropic: no messages to send (the API needs at least one user or assistant message with content)")
	}
	if len(tools) > 0 {
		out = append(out, `,"tools":`...)
		out = append(out, tools...)
	}
	return append(out, '}', '\n'), nil
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

// appendBlock is the one place where a block of the thread becomes a
// content block of the request, or nothing (nil): a block that the role
// cannot carry, blank text (the API refuses it), and the host's own
// bookkeeping (remote_tool_call markers, approval requests and answers),
// which is not conversation. A new block kind is mapped here.
func appendBlock(role message.Role, b message.Block) any {
	switch b := b.(type) {
	case message.TextBlock:
		if role == message.RoleTool || isBlank(b.Text) {
			return nil
		}
		return textBlock{Type: "text", Text: b.Text}
	case message.ToolCallBlock:
		if role != message.RoleAssistant {
			return nil
		}
		return toolUseBlock{Type: "tool_use", ID: toolID(b.ID), Name: b.Name, Input: input(b.Arguments)}
	case message.ToolResultBlock:
		if role != message.RoleTool {
			return nil
		}
		return toolResultBlock{Type: "tool_result", ToolUseID: toolID(b.ToolCallID), Content: resultText(b.Content), IsError: b.IsError}
	}
	return nil
}

// isBlank reports whether s has no character but white space.
func isBlank(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !unicode.IsSpace(r) }) < 0
}

// maxToolID is the longest call id sent as it is.
const maxToolID = 64

// toolID is the id a call goes by in the request: its own when it is of
// letters, digits, '_' and '-' (the only ones the API takes, and what the
// host names calls), otherwise "toolu_h" and a digest of it, the same for
// the tool_use and the tool_result that answers it.
func toolID(id string) string {
	ok := id != "" && len(id) <= maxToolID
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "toolu_h" + hex.EncodeToString(sum[:12])
}

// input is a call's arguments as a tool_use input, which must be an
// object: empty arguments are {}, and anything but an object is kept as
// its text under message.InvalidArgumentsKey (as the providers keep
// arguments a model wrote that are not JSON).
func input(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || string(a) == "null" {
		return json.RawMessage(`{}`)
	}
	if a[0] == '{' && strictjson.Check(a) == nil {
		return a
	}
	raw, _ := json.Marshal(map[string]string{message.InvalidArgumentsKey: string(a)}) // strings always encode
	return raw
}

// resultText is a tool result's content as text: a JSON string as its
// text, any other JSON value as compact JSON; empty (and so left out) for
// an empty string or white space.
func resultText(raw json.RawMessage) string {
	c := bytes.TrimSpace(raw)
	if len(c) == 0 {
		return ""
	}
	text := string(c)
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			text = s
		}
	} else {
		var b bytes.Buffer
		if json.Compact(&b, c) == nil {
			text = b.String()
		}
	}
	if isBlank(text) {
		return ""
	}
	return text
}

// encode is v as encoding/json writes it, without HTML escapes or the
// final newline.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
