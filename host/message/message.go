// Package message defines the messages a thread is made of and their JSON.
//
// A message is a role and a list of content blocks. Blocks are a closed set
// (text, image, file, audio, tool_call, tool_result, remote_tool_call,
// approval_request, approval):
// decoding refuses any other
// type, so a typo in a client's request is an error the client sees instead of
// content the model silently never gets.
package message

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// Role says who wrote a message. The four roles are the ones every chat model
// API understands, so a thread can be sent to any provider unchanged.
type Role string

// The roles a message may have.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

func (r Role) valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// Message is one entry of a thread. ID is assigned by the host when empty so
// that clients and checkpoints can refer to messages stably.
type Message struct {
	ID      string
	Role    Role
	Content []Block
}

// Block is one piece of a message's content. The set is closed: only the
// types in this package implement it, which lets code switch over blocks
// exhaustively.
type Block interface {
	// BlockType is the block's JSON "type" value.
	BlockType() string
	sealed()
}

// Block type names as they appear on the wire.
const (
	TypeText            = "text"
	TypeToolCall        = "tool_call"
	TypeToolResult      = "tool_result"
	TypeRemoteToolCall  = "remote_tool_call"
	TypeApprovalRequest = "approval_request"
	TypeApproval        = "approval"
	TypeImage           = "image"
	TypeFile            = "file"
	TypeAudio           = "audio"
)

// TextBlock is prose from any role.
type TextBlock struct {
	Text string `json:"text"`
}

// ToolCallBlock is the model asking for a tool. Arguments is the JSON object
// the model produced, kept verbatim so it can be validated and forwarded
// without a lossy round trip through Go maps.
type ToolCallBlock struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// InvalidArgumentsKey holds the text of tool-call arguments a model wrote
// that are not a JSON object. A thread must stay valid JSON to be saved, so a
// model provider wraps such text as {"_invalid_arguments": "<text>"}; the
// ToolNode answers that call with an error result quoting the text, and the
// tool never runs (nor reaches a client).
const InvalidArgumentsKey = "_invalid_arguments"

// InvalidArguments returns the model's raw text when args is such a wrapper.
func InvalidArguments(args json.RawMessage) (string, bool) {
	if !bytes.Contains(args, []byte(InvalidArgumentsKey)) {
		return "", false
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(args, &w) != nil || len(w) != 1 {
		return "", false
	}
	var text string
	if json.Unmarshal(w[InvalidArgumentsKey], &text) != nil {
		return "", false
	}
	return text, true
}

// ToolResultBlock answers one tool call. Content is any JSON value; IsError
// marks a failure the model should see and may recover from. Attachments
// are the images and files the tool returned beside its content (a
// screenshot, a picked file), each a MediaBlock, sent to the model as
// media rather than as base64 text.
type ToolResultBlock struct {
	ToolCallID  string          `json:"tool_call_id"`
	Content     json.RawMessage `json:"content"`
	IsError     bool            `json:"is_error"`
	Attachments []MediaBlock    `json:"attachments,omitempty"`
}

// MediaBlock is an image, a file or a sound: in a user message, or among a
// tool result's attachments. Kind is its type (TypeImage, TypeFile or
// TypeAudio).
//
// It names its bytes by exactly one source. On input that is Data (base64
// on the wire), URL (https, fetched by the host) or Blob (a blob the same
// thread already holds). Once the host has stored the bytes, a block holds
// only Blob, "sha256:" and the 64 lowercase hex digits of the bytes' hash,
// with Size (and an image's Width and Height): messages and checkpoints
// carry references, and the bytes are kept once per content, however many
// turns or threads send them.
type MediaBlock struct {
	Kind string
	// MimeType is the bytes' media type ("image/png", "application/pdf"),
	// which the host checks against the bytes themselves.
	MimeType string
	// Filename is the name the bytes came with, if any.
	Filename string
	// Data, URL and Blob are the sources; exactly one is set.
	Data []byte
	URL  string
	Blob string
	// Size is the bytes' length, and Width and Height an image's pixels:
	// set by the host once it has stored them, ignored on input.
	Size          int64
	Width, Height int
}

// BlobPrefix starts every blob reference: a blob is named by its bytes'
// SHA-256.
const BlobPrefix = "sha256:"

// ValidBlobRef reports whether ref is a blob reference: BlobPrefix and 64
// lowercase hex digits.
func ValidBlobRef(ref string) bool {
	hexPart, ok := strings.CutPrefix(ref, BlobPrefix)
	if !ok || len(hexPart) != 64 {
		return false
	}
	for i := 0; i < len(hexPart); i++ {
		if c := hexPart[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// IsMedia reports whether a block type names a MediaBlock.
func IsMedia(blockType string) bool {
	return blockType == TypeImage || blockType == TypeFile || blockType == TypeAudio
}

// RemoteToolCallBlock is what a ToolNode returns instead of running a remote
// tool: the call, handed to the client, with the node that will resume.
type RemoteToolCallBlock struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Node      string          `json:"node"`
	// ExpiresAt is when the call expires unanswered: past it the server
	// answers it with an error result and a late result is refused
	// (409 expired). Zero for a call without a deadline.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// ApprovalRequestBlock is a call to a tool that needs a person's approval
// before it runs: the call as the model made it, with the node that holds
// it. It is what a paused run lists in approval_requests.
type ApprovalRequestBlock struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Node      string          `json:"node"`
}

// ApprovalBlock is a client's answer to an approval request: approved or
// not, with an optional reason the model sees when the call is denied.
type ApprovalBlock struct {
	ToolCallID string `json:"tool_call_id"`
	Approved   bool   `json:"approved"`
	Reason     string `json:"reason,omitempty"`
}

// AnswerID returns the id of the call b answers, when b is an answer a
// client may send to a paused thread (a tool_result or an approval).
func AnswerID(b Block) (string, bool) {
	switch b := b.(type) {
	case ToolResultBlock:
		return b.ToolCallID, true
	case ApprovalBlock:
		return b.ToolCallID, true
	}
	return "", false
}

// BlockType implements Block.
func (TextBlock) BlockType() string { return TypeText }

// BlockType implements Block.
func (ToolCallBlock) BlockType() string { return TypeToolCall }

// BlockType implements Block.
func (ToolResultBlock) BlockType() string { return TypeToolResult }

// BlockType implements Block.
func (RemoteToolCallBlock) BlockType() string { return TypeRemoteToolCall }

// BlockType implements Block.
func (ApprovalRequestBlock) BlockType() string { return TypeApprovalRequest }

// BlockType implements Block.
func (ApprovalBlock) BlockType() string { return TypeApproval }

// BlockType implements Block: the block's Kind.
func (b MediaBlock) BlockType() string { return b.Kind }

// MarshalJSON writes the block with its "type", wherever it appears (in a
// message, or alone, as in an invoke response's remote_tool_calls).
func (b TextBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b ToolCallBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b ToolResultBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b RemoteToolCallBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b ApprovalRequestBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b ApprovalBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// MarshalJSON writes the block with its "type".
func (b MediaBlock) MarshalJSON() ([]byte, error) { return MarshalBlock(b) }

// UnmarshalJSON reads a media block strictly, as UnmarshalBlock does: for
// a tool result's attachments.
func (b *MediaBlock) UnmarshalJSON(data []byte) error {
	v, err := UnmarshalBlock(data)
	if err != nil {
		return err
	}
	m, ok := v.(MediaBlock)
	if !ok {
		return &strictjson.Error{Path: "type", Msg: fmt.Sprintf("want image, file or audio, not %s", v.BlockType())}
	}
	*b = m
	return nil
}

func (TextBlock) sealed()            {}
func (ToolCallBlock) sealed()        {}
func (ToolResultBlock) sealed()      {}
func (RemoteToolCallBlock) sealed()  {}
func (ApprovalRequestBlock) sealed() {}
func (ApprovalBlock) sealed()        {}
func (MediaBlock) sealed()           {}

// Text returns a message holding one text block; the usual way to build user
// input in code.
func Text(role Role, text string) Message {
	return Message{Role: role, Content: []Block{TextBlock{Text: text}}}
}

// Text joins the message's text blocks.
func (m Message) Text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if t, ok := c.(TextBlock); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the message's tool_call blocks in order.
func (m Message) ToolCalls() []ToolCallBlock { return blocksOf[ToolCallBlock](m) }

// ToolResults returns the message's tool_result blocks in order.
func (m Message) ToolResults() []ToolResultBlock { return blocksOf[ToolResultBlock](m) }

// RemoteToolCalls returns the message's remote_tool_call blocks in order.
func (m Message) RemoteToolCalls() []RemoteToolCallBlock { return blocksOf[RemoteToolCallBlock](m) }

// blocksOf allocates once, exactly, and only when m has such blocks:
// callers run it over every message of long threads.
func blocksOf[T Block](m Message) []T {
	n := 0
	for _, c := range m.Content {
		if _, ok := c.(T); ok {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]T, 0, n)
	for _, c := range m.Content {
		if b, ok := c.(T); ok {
			out = append(out, b)
		}
	}
	return out
}

// MarshalJSON writes the message as DESIGN's wire shape, with content always
// an array of typed blocks. The bytes are what encoding/json would write for
// the same fields (HTML-safe strings, compact JSON values), written by hand:
// messages are encoded for every checkpoint and every response, and the
// reflective encoder cost several times as much.
func (m Message) MarshalJSON() ([]byte, error) {
	// SizeOf counts a message's values and some of its keys; a block's
	// other keys take up to about 48 bytes more. Sized so, the buffer
	// is not grown (and copied) as the message is written.
	return m.appendJSON(make([]byte, 0, SizeOf(m)+48*len(m.Content)))
}

// SizeOf estimates the bytes a message holds (about the length of its
// JSON), for caches that bound what they keep.
func SizeOf(m Message) int {
	n := len(m.ID) + 64
	for _, b := range m.Content {
		switch b := b.(type) {
		case TextBlock:
			n += len(b.Text)
		case ToolCallBlock:
			n += len(b.ID) + len(b.Name) + len(b.Arguments)
		case ToolResultBlock:
			n += len(b.ToolCallID) + len(b.Content) + 128*len(b.Attachments) // references
		case MediaBlock:
			n += len(b.Data) + len(b.URL) + len(b.Blob) + len(b.Filename)
		case RemoteToolCallBlock:
			n += len(b.ID) + len(b.Name) + len(b.Arguments) + len(b.Node)
		case ApprovalRequestBlock:
			n += len(b.ID) + len(b.Name) + len(b.Arguments) + len(b.Node)
		case ApprovalBlock:
			n += len(b.ToolCallID) + len(b.Reason)
		}
		n += 32
	}
	return n
}

// AppendJSON appends MarshalJSON's bytes to b, for an encoder of many
// messages: they are compact and HTML-safe already, so an enclosing
// encoder may copy them as they are.
func (m Message) AppendJSON(b []byte) ([]byte, error) { return m.appendJSON(b) }

func (m Message) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"role":`...)
	b = appendString(b, string(m.Role))
	b = append(b, `,"content":[`...)
	for i, c := range m.Content {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendBlock(b, c); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
	}
	return append(b, "]}"...), nil
}

// MarshalBlock writes one block with its "type" first.
func MarshalBlock(c Block) ([]byte, error) {
	return appendBlock(nil, c)
}

// appendBlock appends c's JSON to b: its "type" first, then its fields in
// the order of their declaration, as encoding/json writes a struct. Empty
// arguments are written as {} and empty content as null, so the wire never
// carries an empty JSON value.
func appendBlock(b []byte, c Block) ([]byte, error) {
	var err error
	switch c := c.(type) {
	case TextBlock:
		b = append(b, `{"type":"text","text":`...)
		b = appendString(b, c.Text)
	case ToolCallBlock:
		b = append(b, `{"type":"tool_call","id":`...)
		b = appendString(b, c.ID)
		b = append(b, `,"name":`...)
		b = appendString(b, c.Name)
		b = append(b, `,"arguments":`...)
		b, err = appendRaw(b, c.Arguments, emptyObject)
	case ToolResultBlock:
		b = append(b, `{"type":"tool_result","tool_call_id":`...)
		b = appendString(b, c.ToolCallID)
		b = append(b, `,"content":`...)
		if b, err = appendRaw(b, c.Content, null); err == nil {
			b = append(b, `,"is_error":`...)
			b = strconv.AppendBool(b, c.IsError)
			if len(c.Attachments) > 0 {
				b = append(b, `,"attachments":[`...)
				for i, a := range c.Attachments {
					if i > 0 {
						b = append(b, ',')
					}
					if b, err = appendBlock(b, a); err != nil {
						break
					}
				}
				b = append(b, ']')
			}
		}
	case MediaBlock:
		if !IsMedia(c.Kind) {
			return nil, fmt.Errorf("media block of unknown kind %q", c.Kind)
		}
		b = append(b, `{"type":`...)
		b = appendString(b, c.Kind)
		b = append(b, `,"mime_type":`...)
		b = appendString(b, c.MimeType)
		if c.Filename != "" {
			b = append(b, `,"filename":`...)
			b = appendString(b, c.Filename)
		}
		switch {
		case c.Blob != "":
			b = append(b, `,"blob":`...)
			b = appendString(b, c.Blob)
		case c.URL != "":
			b = append(b, `,"url":`...)
			b = appendString(b, c.URL)
		case c.Data != nil:
			b = append(b, `,"data":"`...)
			b = base64.StdEncoding.AppendEncode(b, c.Data)
			b = append(b, '"')
		}
		if c.Size > 0 {
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, c.Size, 10)
		}
		if c.Width > 0 && c.Height > 0 {
			b = append(b, `,"width":`...)
			b = strconv.AppendInt(b, int64(c.Width), 10)
			b = append(b, `,"height":`...)
			b = strconv.AppendInt(b, int64(c.Height), 10)
		}
	case RemoteToolCallBlock:
		b, err = appendHeldCall(b, `{"type":"remote_tool_call","id":`, c.ID, c.Name, c.Arguments, c.Node)
		if err == nil && !c.ExpiresAt.IsZero() {
			// As encoding/json writes a time.Time (RFC 3339, nanoseconds
			// as needed); MarshalJSON refuses years it cannot write.
			var t []byte
			if t, err = c.ExpiresAt.MarshalJSON(); err == nil {
				b = append(append(b, `,"expires_at":`...), t...)
			}
		}
	case ApprovalRequestBlock:
		b, err = appendHeldCall(b, `{"type":"approval_request","id":`, c.ID, c.Name, c.Arguments, c.Node)
	case ApprovalBlock:
		b = append(b, `{"type":"approval","tool_call_id":`...)
		b = appendString(b, c.ToolCallID)
		b = append(b, `,"approved":`...)
		b = strconv.AppendBool(b, c.Approved)
		if c.Reason != "" {
			b = append(b, `,"reason":`...)
			b = appendString(b, c.Reason)
		}
	case nil:
		return nil, fmt.Errorf("nil block")
	default:
		return nil, fmt.Errorf("unknown block type %T", c)
	}
	if err != nil {
		return nil, err
	}
	return append(b, '}'), nil
}

// appendHeldCall appends the fields of a remote_tool_call or an
// approval_request after head, which opens the object up to "id":.
func appendHeldCall(b []byte, head, id, name string, args json.RawMessage, node string) ([]byte, error) {
	b = append(b, head...)
	b = appendString(b, id)
	b = append(b, `,"name":`...)
	b = appendString(b, name)
	b = append(b, `,"arguments":`...)
	b, err := appendRaw(b, args, emptyObject)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"node":`...)
	return appendString(b, node), nil
}

// appendRaw appends raw compacted and HTML-escaped, as encoding/json writes
// a json.RawMessage, or empty when raw is empty; raw that is not valid JSON
// is an error.
func appendRaw(b []byte, raw, empty json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		raw = empty
	}
	buf := bytes.NewBuffer(b)
	if err := json.Compact(buf, raw); err != nil {
		return nil, fmt.Errorf("json: invalid value %s: %w", excerpt(raw), err)
	}
	out := buf.Bytes()
	if added := out[len(b):]; needsHTMLEscape(added) {
		var esc bytes.Buffer
		json.HTMLEscape(&esc, added)
		out = append(out[:len(b)], esc.Bytes()...)
	}
	return out, nil
}

// needsHTMLEscape reports whether raw holds a byte encoding/json escapes in
// HTML-safe output: <, >, & or the start of U+2028 or U+2029.
func needsHTMLEscape(raw []byte) bool {
	return bytes.ContainsAny(raw, "<>&") || bytes.Contains(raw, []byte("\xe2\x80\xa8")) || bytes.Contains(raw, []byte("\xe2\x80\xa9"))
}

func excerpt(raw []byte) string {
	const limit = 40
	if len(raw) > limit {
		return fmt.Sprintf("%q…", raw[:limit])
	}
	return fmt.Sprintf("%q", raw)
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json does
// with its default HTML escaping: <, > and & as \u003c, \u003e and
// \u0026; U+2028 and U+2029 escaped; invalid UTF-8 as U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

var (
	emptyObject = json.RawMessage(`{}`)
	null        = json.RawMessage(`null`)
)

// UnmarshalJSON reads a message, accepting a plain string as content (one
// text block) and refusing unknown roles, unknown block types and unknown,
// repeated or wrong-case keys, each with the path of the offending part
// (see package strictjson).
func (m *Message) UnmarshalJSON(data []byte) error {
	var w struct {
		ID      string          `json:"id"`
		Role    Role            `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := strictjson.Unmarshal(data, &w); err != nil {
		return err
	}
	if !w.Role.valid() {
		if w.Role == "" {
			return &strictjson.Error{Path: "role", Msg: "missing (want user, assistant, tool or system)"}
		}
		return &strictjson.Error{Path: "role", Msg: fmt.Sprintf("unknown role %q (want user, assistant, tool or system)", w.Role)}
	}
	out := Message{ID: w.ID, Role: w.Role}
	content := bytes.TrimSpace(w.Content)
	switch {
	case len(content) == 0 || bytes.Equal(content, null):
		return &strictjson.Error{Path: "content", Msg: "missing (want a string or an array of blocks)"}
	case content[0] == '"':
		var s string
		if err := strictjson.Unmarshal(content, &s); err != nil {
			return strictjson.At("content", err)
		}
		out.Content = []Block{TextBlock{Text: s}}
	case content[0] == '[':
		var raws []json.RawMessage
		if err := strictjson.Unmarshal(content, &raws); err != nil {
			return strictjson.At("content", err)
		}
		out.Content = make([]Block, 0, len(raws))
		for i, raw := range raws {
			b, err := UnmarshalBlock(raw)
			if err != nil {
				return strictjson.At(strictjson.Join("content", strictjson.Index(i)), err)
			}
			out.Content = append(out.Content, b)
		}
	default:
		return &strictjson.Error{Path: "content", Msg: "want a string or an array of blocks"}
	}
	*m = out
	return nil
}

// blockWire is every key a block may have; which ones a block may use
// depends on its type (blockKeys).
type blockWire struct {
	Type       *string         `json:"type"`
	Text       *string         `json:"text"`
	ID         *string         `json:"id"`
	Name       *string         `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	ToolCallID *string         `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	IsError    *bool           `json:"is_error"`
	Node       *string         `json:"node"`
	Approved   *bool           `json:"approved"`
	Reason     *string         `json:"reason"`
	ExpiresAt  *time.Time      `json:"expires_at"`
	// Attachments are a tool result's media blocks.
	Attachments []json.RawMessage `json:"attachments"`
	// The keys of a media block.
	MimeType *string `json:"mime_type"`
	Filename *string `json:"filename"`
	Data     *string `json:"data"`
	URL      *string `json:"url"`
	Blob     *string `json:"blob"`
	Size     *int64  `json:"size"`
	Width    *int    `json:"width"`
	Height   *int    `json:"height"`
	// Unknown catches other keys, so that an unknown type is reported as
	// such rather than as the keys that type would have.
	Unknown map[string]json.RawMessage `json:",embed"`
}

// present lists the keys w has, in a fixed order.
func (w *blockWire) present() []string {
	var out []string
	for _, f := range []struct {
		key string
		set bool
	}{{"text", w.Text != nil}, {"id", w.ID != nil}, {"name", w.Name != nil}, {"arguments", w.Arguments != nil},
		{"tool_call_id", w.ToolCallID != nil}, {"content", w.Content != nil}, {"is_error", w.IsError != nil}, {"node", w.Node != nil},
		{"approved", w.Approved != nil}, {"reason", w.Reason != nil}, {"expires_at", w.ExpiresAt != nil},
		{"attachments", w.Attachments != nil}, {"mime_type", w.MimeType != nil}, {"filename", w.Filename != nil},
		{"data", w.Data != nil}, {"url", w.URL != nil}, {"blob", w.Blob != nil}, {"size", w.Size != nil},
		{"width", w.Width != nil}, {"height", w.Height != nil}} {
		if f.set {
			out = append(out, f.key)
		}
	}
	return out
}

// blockKeys are the keys each block type allows besides "type".
var blockKeys = map[string][]string{
	TypeText:            {"text"},
	TypeToolCall:        {"id", "name", "arguments"},
	TypeToolResult:      {"tool_call_id", "content", "is_error", "attachments"},
	TypeImage:           mediaKeys,
	TypeFile:            mediaKeys,
	TypeAudio:           mediaKeys,
	TypeRemoteToolCall:  {"id", "name", "arguments", "node", "expires_at"},
	TypeApprovalRequest: {"id", "name", "arguments", "node"},
	TypeApproval:        {"tool_call_id", "approved", "reason"},
}

// mediaKeys are the keys of an image, file or audio block.
var mediaKeys = []string{"mime_type", "filename", "data", "url", "blob", "size", "width", "height"}

// UnmarshalBlock decodes one block by its "type", strictly (see package
// strictjson): a key the block's type does not have is an error.
func UnmarshalBlock(raw json.RawMessage) (Block, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return nil, fmt.Errorf("a block must be a JSON object with a \"type\" (%s)", typeList)
	}
	var w blockWire
	if err := strictjson.Unmarshal(raw, &w); err != nil {
		return nil, err
	}
	if w.Type == nil {
		for k := range w.Unknown {
			if strings.EqualFold(k, "type") {
				return nil, &strictjson.Error{Path: strictjson.Key(k), Msg: `unknown key (keys are case-sensitive: did you mean "type"?)`}
			}
		}
		return nil, &strictjson.Error{Path: "type", Msg: "missing (want " + typeList + ")"}
	}
	allowed, ok := blockKeys[*w.Type]
	if !ok {
		return nil, &strictjson.Error{Path: "type", Msg: fmt.Sprintf("unknown block type %q (want %s)", *w.Type, typeList)}
	}
	extra := w.present()
	if len(w.Unknown) > 0 { // sorting no keys still allocates the iterator and its slice
		extra = append(extra, slices.Sorted(maps.Keys(w.Unknown))...)
	}
	for _, k := range extra {
		if slices.Contains(allowed, k) {
			continue
		}
		msg := fmt.Sprintf("unknown key for a %s block (its keys: type, %s)", *w.Type, strings.Join(allowed, ", "))
		for _, a := range append([]string{"type"}, allowed...) {
			if strings.EqualFold(a, k) {
				msg = fmt.Sprintf("unknown key (keys are case-sensitive: did you mean %q?)", a)
			}
		}
		return nil, &strictjson.Error{Path: strictjson.Key(k), Msg: msg}
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch *w.Type {
	case TypeText:
		return TextBlock{Text: str(w.Text)}, nil
	case TypeToolCall:
		b := ToolCallBlock{ID: str(w.ID), Name: str(w.Name), Arguments: w.Arguments}
		if err := checkCall(b.ID, b.Name, b.Arguments); err != nil {
			return nil, err
		}
		b.Arguments = compactObject(b.Arguments)
		return b, nil
	case TypeRemoteToolCall:
		b := RemoteToolCallBlock{ID: str(w.ID), Name: str(w.Name), Arguments: w.Arguments, Node: str(w.Node)}
		if w.ExpiresAt != nil {
			b.ExpiresAt = *w.ExpiresAt
		}
		if err := checkCall(b.ID, b.Name, b.Arguments); err != nil {
			return nil, err
		}
		b.Arguments = compactObject(b.Arguments)
		return b, nil
	case TypeApprovalRequest:
		b := ApprovalRequestBlock{ID: str(w.ID), Name: str(w.Name), Arguments: w.Arguments, Node: str(w.Node)}
		if err := checkCall(b.ID, b.Name, b.Arguments); err != nil {
			return nil, err
		}
		b.Arguments = compactObject(b.Arguments)
		return b, nil
	case TypeApproval:
		b := ApprovalBlock{ToolCallID: str(w.ToolCallID), Reason: str(w.Reason)}
		if b.ToolCallID == "" {
			return nil, &strictjson.Error{Path: "tool_call_id", Msg: "missing"}
		}
		if w.Approved == nil {
			return nil, &strictjson.Error{Path: "approved", Msg: "missing (want true or false)"}
		}
		b.Approved = *w.Approved
		return b, nil
	case TypeImage, TypeFile, TypeAudio:
		return unmarshalMedia(*w.Type, &w)
	default: // TypeToolResult
		b := ToolResultBlock{ToolCallID: str(w.ToolCallID), Content: w.Content, IsError: w.IsError != nil && *w.IsError}
		if b.ToolCallID == "" {
			return nil, &strictjson.Error{Path: "tool_call_id", Msg: "missing"}
		}
		for i, raw := range w.Attachments {
			at := strictjson.Join("attachments", strictjson.Index(i))
			v, err := UnmarshalBlock(raw)
			if err != nil {
				return nil, strictjson.At(at, err)
			}
			m, ok := v.(MediaBlock)
			if !ok {
				return nil, &strictjson.Error{Path: strictjson.Join(at, "type"), Msg: fmt.Sprintf("an attachment is an image, file or audio block, not %s", v.BlockType())}
			}
			b.Attachments = append(b.Attachments, m)
		}
		if len(b.Content) == 0 {
			b.Content = null
		} else {
			b.Content = compact(b.Content)
		}
		return b, nil
	}
}

const typeList = "text, image, file, audio, tool_call, tool_result, remote_tool_call, approval_request or approval"

// unmarshalMedia builds an image, file or audio block from its keys:
// exactly one source, valid base64 in data, a well-formed blob reference.
// Whether the bytes are what mime_type says, and whether a url or a blob
// may be used, the host decides when it stores them.
func unmarshalMedia(kind string, w *blockWire) (Block, error) {
	b := MediaBlock{Kind: kind}
	if w.MimeType == nil || *w.MimeType == "" {
		return nil, &strictjson.Error{Path: "mime_type", Msg: "missing (the bytes' media type, such as \"image/png\" or \"application/pdf\")"}
	}
	b.MimeType = *w.MimeType
	if w.Filename != nil {
		b.Filename = *w.Filename
	}
	var sources []string
	if w.Data != nil {
		sources = append(sources, "data")
		raw, err := decodeBase64(*w.Data)
		if err != nil {
			return nil, &strictjson.Error{Path: "data", Msg: "not base64: " + err.Error()}
		}
		if len(raw) == 0 {
			return nil, &strictjson.Error{Path: "data", Msg: "empty"}
		}
		b.Data = raw
	}
	if w.URL != nil {
		sources = append(sources, "url")
		b.URL = *w.URL
		if b.URL == "" {
			return nil, &strictjson.Error{Path: "url", Msg: "empty"}
		}
	}
	if w.Blob != nil {
		sources = append(sources, "blob")
		b.Blob = *w.Blob
		if !ValidBlobRef(b.Blob) {
			return nil, &strictjson.Error{Path: "blob", Msg: fmt.Sprintf("want %q and the 64 lowercase hex digits of the bytes' SHA-256", BlobPrefix)}
		}
	}
	if len(sources) != 1 {
		what := "none"
		if len(sources) > 1 {
			what = strings.Join(sources, " and ")
		}
		return nil, &strictjson.Error{Msg: fmt.Sprintf("a %s block takes exactly one source, data (base64), url (https) or blob (\"sha256:...\"); got %s", kind, what)}
	}
	if w.Size != nil {
		b.Size = *w.Size
	}
	if w.Width != nil && w.Height != nil {
		b.Width, b.Height = *w.Width, *w.Height
	}
	return b, nil
}

// decodeBase64 reads standard base64, padded or not; whitespace (line
// breaks in base64 wrapped at 76 columns) is skipped. The decoder skips
// line breaks itself; spaces and tabs, rarer, cost a copy. Each check is
// a vectorised byte search: a megabyte of base64 is scanned in
// microseconds, where a set of four characters was a loop over bytes.
func decodeBase64(s string) ([]byte, error) {
	if strings.IndexByte(s, ' ') >= 0 || strings.IndexByte(s, '\t') >= 0 {
		s = strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, s)
	}
	enc := base64.RawStdEncoding // unpadded, or padding not needed
	if strings.HasSuffix(strings.TrimRight(s, "\r\n"), "=") {
		enc = base64.StdEncoding
	}
	return enc.DecodeString(s)
}

func checkCall(id, name string, args json.RawMessage) error {
	if id == "" {
		return &strictjson.Error{Path: "id", Msg: "missing"}
	}
	if name == "" {
		return &strictjson.Error{Path: "name", Msg: "missing"}
	}
	a := bytes.TrimSpace(args)
	if len(a) > 0 && !bytes.Equal(a, null) && a[0] != '{' {
		return &strictjson.Error{Path: "arguments", Msg: "want a JSON object"}
	}
	return nil
}

func compactObject(raw json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(raw)
	if len(a) == 0 || bytes.Equal(a, null) {
		return emptyObject
	}
	return compact(a)
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}
