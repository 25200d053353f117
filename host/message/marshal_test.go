package message

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// reflectMarshal is how messages were encoded before the hand-written
// encoder: each block's fields through encoding/json's reflection. The
// hand-written one must write the same bytes.
func reflectMarshal(m Message) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"id":`)
	id, _ := json.Marshal(m.ID)
	b.Write(id)
	b.WriteString(`,"role":`)
	role, _ := json.Marshal(string(m.Role))
	b.Write(role)
	b.WriteString(`,"content":[`)
	for i, c := range m.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		body, err := json.Marshal(reflectFields(c))
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
		b.WriteString(`{"type":"` + c.BlockType() + `"`)
		if len(body) > 2 {
			b.WriteByte(',')
			b.Write(body[1:])
		} else {
			b.WriteByte('}')
		}
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}

func reflectFields(c Block) any {
	orEmpty := func(raw json.RawMessage, empty string) json.RawMessage {
		if len(raw) == 0 {
			return json.RawMessage(empty)
		}
		return raw
	}
	switch b := c.(type) {
	case TextBlock:
		type plain TextBlock
		return plain(b)
	case ToolCallBlock:
		type plain ToolCallBlock
		b.Arguments = orEmpty(b.Arguments, `{}`)
		return plain(b)
	case ToolResultBlock:
		type plain ToolResultBlock
		b.Content = orEmpty(b.Content, `null`)
		return plain(b)
	case RemoteToolCallBlock:
		type plain RemoteToolCallBlock
		b.Arguments = orEmpty(b.Arguments, `{}`)
		return plain(b)
	case ApprovalRequestBlock:
		type plain ApprovalRequestBlock
		b.Arguments = orEmpty(b.Arguments, `{}`)
		return plain(b)
	case ApprovalBlock:
		type plain ApprovalBlock
		return plain(b)
	}
	panic(fmt.Sprintf("block %T", c))
}

// tricky are strings and JSON values encoding/json escapes or rewrites.
var tricky = []string{
	"", "plain", `quote " and backslash \ and slash /`, "<script>&amp;</script>",
	"control \x00 \x01 \x1f \b \f \n \r \t \x7f", "line\u2028and\u2029paragraph",
	"invalid \xff utf-8 \xc3", "cut \xe2\x80", "emoji 😀 and 中文", "\ufffd", "é",
}

var trickyRaw = []string{
	``, `{}`, `null`, `5`, `"s"`, ` { "a" : [ 1 , 2.50e3 , true ] } `, `{"html":"<b>&</b>"}`,
	"{\"ls\":\"\u2028\u2029\"}", `{"esc":"\u003c\n\"\\"}`, "{\"bad\":\"\xff\"}", `[{"nested":{"deep":[null]}}]`,
}

func trickyMessages() []Message {
	var msgs []Message
	for i, s := range tricky {
		raw := json.RawMessage(trickyRaw[i%len(trickyRaw)])
		msgs = append(msgs, Message{ID: s, Role: Role(s), Content: []Block{
			TextBlock{Text: s},
			ToolCallBlock{ID: s, Name: s, Arguments: raw},
			ToolResultBlock{ToolCallID: s, Content: raw, IsError: i%2 == 0},
			RemoteToolCallBlock{ID: s, Name: s, Arguments: raw, Node: s},
			// A deadline, in zones and precisions encoding/json writes
			// differently.
			RemoteToolCallBlock{ID: s, Name: s, Arguments: raw, Node: s,
				ExpiresAt: time.Date(2026, 12, 1, 16, 30, i, i*1000, time.FixedZone("", i*1800))},
			ApprovalRequestBlock{ID: s, Name: s, Arguments: raw, Node: s},
			ApprovalBlock{ToolCallID: s, Approved: i%2 == 1, Reason: s},
		}})
	}
	for _, r := range trickyRaw {
		raw := json.RawMessage(r)
		msgs = append(msgs, Message{ID: "m", Role: RoleTool, Content: []Block{
			ToolResultBlock{ToolCallID: "c", Content: raw}, ToolCallBlock{ID: "c", Name: "n", Arguments: raw}}})
	}
	return append(msgs, Message{}, Message{ID: "e", Role: RoleUser, Content: []Block{}})
}

func TestMarshalMatchesEncodingJSON(t *testing.T) {
	for _, m := range trickyMessages() {
		want, err := reflectMarshal(m)
		if err != nil {
			t.Fatalf("reference encoder: %v", err)
		}
		got, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("%+v: %v", m, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("message %q:\n got %s\nwant %s", m.ID, got, want)
		}
		// And as part of a larger value, where encoding/json checks it.
		outer, err := json.Marshal(map[string][]Message{"messages": {m, m}})
		if err != nil {
			t.Fatalf("inside encoding/json: %v", err)
		}
		if !bytes.Contains(outer, want) {
			t.Errorf("inside encoding/json, message %q changed: %s", m.ID, outer)
		}
		for _, c := range m.Content {
			block, err := MarshalBlock(c)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(want, block) {
				t.Errorf("MarshalBlock(%T) = %s, not a part of %s", c, block, want)
			}
		}
	}
}

func TestMarshalRefusesInvalidValues(t *testing.T) {
	for _, raw := range []string{`{`, `{"a":}`, `nul`, `{} {}`, "  ", `{"a":1,}`} {
		for _, b := range []Block{
			ToolCallBlock{ID: "c", Name: "n", Arguments: json.RawMessage(raw)},
			ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(raw)},
			RemoteToolCallBlock{ID: "c", Name: "n", Arguments: json.RawMessage(raw), Node: "tools"},
			ApprovalRequestBlock{ID: "c", Name: "n", Arguments: json.RawMessage(raw), Node: "tools"},
		} {
			m := Message{ID: "m", Role: RoleAssistant, Content: []Block{TextBlock{Text: "x"}, b}}
			if _, err := reflectMarshal(m); err == nil {
				t.Fatalf("the reference encoder took %q", raw)
			}
			out, err := m.MarshalJSON()
			if err == nil || !strings.Contains(err.Error(), "content[1]") {
				t.Errorf("%T with %q: got %s, %v; want an error naming content[1]", b, raw, out, err)
			}
		}
	}
	if _, err := (Message{Content: []Block{nil}}).MarshalJSON(); err == nil {
		t.Error("a nil block encoded")
	}
}

// FuzzMarshalMatchesEncodingJSON writes messages of arbitrary text and
// values with both encoders.
func FuzzMarshalMatchesEncodingJSON(f *testing.F) {
	for i, s := range tricky {
		f.Add(s, trickyRaw[i%len(trickyRaw)])
	}
	f.Fuzz(func(t *testing.T, s, raw string) {
		m := Message{ID: s, Role: Role(s), Content: []Block{TextBlock{Text: s},
			ToolCallBlock{ID: s, Name: s, Arguments: json.RawMessage(raw)},
			ToolResultBlock{ToolCallID: s, Content: json.RawMessage(raw)},
			ApprovalBlock{ToolCallID: s, Reason: s}}}
		want, werr := reflectMarshal(m)
		got, gerr := m.MarshalJSON()
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: reference %v, hand-written %v", werr, gerr)
		}
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkMarshal encodes a round trip's assistant message (text and two
// tool calls) with the hand-written encoder and the reflective one.
func BenchmarkMarshal(b *testing.B) {
	m := Message{ID: "msg_0123456789", Role: RoleAssistant, Content: []Block{
		TextBlock{Text: "Let me compute that and look at your clipboard."},
		ToolCallBlock{ID: "call_1_0", Name: "calculator", Arguments: json.RawMessage(`{"expression":"2+3*4"}`)},
		RemoteToolCallBlock{ID: "call_1_1", Name: "read_clipboard", Arguments: json.RawMessage(`{}`), Node: "tools"},
	}}
	b.Run("hand-written", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reflect", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := reflectMarshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
