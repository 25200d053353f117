package anthropic

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"unicode"

	"github.com/tenxgraph/tenxgraph/host/message"
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
