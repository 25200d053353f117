// Package message defines the messages a thread is made of and their JSON.
//
// A message is a role and a list of content blocks. Blocks are a closed set
// (text, tool_call, tool_result, remote_tool_call, approval_request, approval):
// decoding refuses any other
// type, so a typo in a client's request is an error the client sees instead of
// content the model silently never gets.
package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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
// marks a failure the model should see and may recover from.
type ToolResultBlock struct {
	ToolCallID string          `json:"tool_call_id"`
	Content    json.RawMessage `json:"content"`
	IsError    bool            `json:"is_error"`
}

// RemoteToolCallBlock is what a ToolNode returns instead of running a remote
// tool: the call, handed to the client, with the node that will resume.
type RemoteToolCallBlock struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Node      string          `json:"node"`
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

func (TextBlock) sealed()            {}
func (ToolCallBlock) sealed()        {}
func (ToolResultBlock) sealed()      {}
func (RemoteToolCallBlock) sealed()  {}
func (ApprovalRequestBlock) sealed() {}
func (ApprovalBlock) sealed()        {}

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
// an array of typed blocks.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	writeString(&b, m.ID)
	b.WriteString(`,"role":`)
	writeString(&b, string(m.Role))
	b.WriteString(`,"content":[`)
	for i, c := range m.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		raw, err := MarshalBlock(c)
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		b.Write(raw)
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}

func writeString(b *bytes.Buffer, s string) {
	raw, _ := json.Marshal(s) // strings always marshal
	b.Write(raw)
}

// MarshalBlock writes one block with its "type" first.
func MarshalBlock(c Block) ([]byte, error) {
	if c == nil {
		return nil, fmt.Errorf("nil block")
	}
	body, err := json.Marshal(fields(normalised(c)))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(body)+len(c.BlockType())+12)
	out = append(out, `{"type":"`...)
	out = append(out, c.BlockType()...)
	out = append(out, '"')
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// fields is a block as a plain struct of its fields, without the
// MarshalJSON that adds "type" (which calls MarshalBlock).
func fields(c Block) any {
	switch b := c.(type) {
	case TextBlock:
		type plain TextBlock
		return plain(b)
	case ToolCallBlock:
		type plain ToolCallBlock
		return plain(b)
	case ToolResultBlock:
		type plain ToolResultBlock
		return plain(b)
	case RemoteToolCallBlock:
		type plain RemoteToolCallBlock
		return plain(b)
	case ApprovalRequestBlock:
		type plain ApprovalRequestBlock
		return plain(b)
	case ApprovalBlock:
		type plain ApprovalBlock
		return plain(b)
	}
	return c
}

// normalised fills nil JSON fields so the wire never carries an empty
// RawMessage (which encoding/json refuses) and arguments are always objects.
func normalised(c Block) Block {
	switch b := c.(type) {
	case ToolCallBlock:
		if len(b.Arguments) == 0 {
			b.Arguments = emptyObject
		}
		return b
	case RemoteToolCallBlock:
		if len(b.Arguments) == 0 {
			b.Arguments = emptyObject
		}
		return b
	case ApprovalRequestBlock:
		if len(b.Arguments) == 0 {
			b.Arguments = emptyObject
		}
		return b
	case ToolResultBlock:
		if len(b.Content) == 0 {
			b.Content = null
		}
		return b
	}
	return c
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
		{"approved", w.Approved != nil}, {"reason", w.Reason != nil}} {
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
	TypeToolResult:      {"tool_call_id", "content", "is_error"},
	TypeRemoteToolCall:  {"id", "name", "arguments", "node"},
	TypeApprovalRequest: {"id", "name", "arguments", "node"},
	TypeApproval:        {"tool_call_id", "approved", "reason"},
}

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
	extra := append(w.present(), slices.Sorted(maps.Keys(w.Unknown))...)
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
	default: // TypeToolResult
		b := ToolResultBlock{ToolCallID: str(w.ToolCallID), Content: w.Content, IsError: w.IsError != nil && *w.IsError}
		if b.ToolCallID == "" {
			return nil, &strictjson.Error{Path: "tool_call_id", Msg: "missing"}
		}
		if len(b.Content) == 0 {
			b.Content = null
		} else {
			b.Content = compact(b.Content)
		}
		return b, nil
	}
}

const typeList = "text, tool_call, tool_result, remote_tool_call, approval_request or approval"

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
