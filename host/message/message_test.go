package message

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestWireShapes(t *testing.T) {
	// The shapes DESIGN.md fixes, byte for byte after a round trip.
	in := `{"id":"m1","role":"assistant","content":[` +
		`{"type":"text","text":"..."},` +
		`{"type":"tool_call","id":"call_1","name":"add","arguments":{"a":2,"b":3}},` +
		`{"type":"tool_result","tool_call_id":"call_1","content":5,"is_error":false},` +
		`{"type":"remote_tool_call","id":"call_2","name":"read_clipboard","arguments":{},"node":"tools"}]}`
	var m Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 4 {
		t.Fatalf("content %v", m.Content)
	}
	if c := m.ToolCalls(); len(c) != 1 || c[0].Name != "add" || string(c[0].Arguments) != `{"a":2,"b":3}` {
		t.Fatalf("tool call %+v", c)
	}
	if r := m.RemoteToolCalls(); len(r) != 1 || r[0].Node != "tools" {
		t.Fatalf("remote call %+v", r)
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Fatalf("round trip:\n got %s\nwant %s", out, in)
	}
}

// A block marshalled on its own carries its type too, as remote_tool_calls
// in an invoke response does.
func TestBlockAloneHasItsType(t *testing.T) {
	raw, err := json.Marshal([]RemoteToolCallBlock{{ID: "c", Name: "n", Node: "tools"}})
	if err != nil || string(raw) != `[{"type":"remote_tool_call","id":"c","name":"n","arguments":{},"node":"tools"}]` {
		t.Fatalf("%s %v", raw, err)
	}
}

func TestStringContentAndDefaults(t *testing.T) {
	var m Message
	if err := json.Unmarshal([]byte(`{"role":"user","content":"hello"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.Text() != "hello" || len(m.Content) != 1 {
		t.Fatalf("string content: %+v", m)
	}
	// Missing arguments and content get their neutral values.
	if err := json.Unmarshal([]byte(`{"role":"tool","content":[{"type":"tool_result","tool_call_id":"c"}]}`), &m); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(m)
	if !strings.Contains(string(out), `"content":null,"is_error":false`) {
		t.Fatalf("defaults: %s", out)
	}
	raw, _ := json.Marshal(Message{Role: RoleAssistant, Content: []Block{ToolCallBlock{ID: "x", Name: "n"}}})
	if !strings.Contains(string(raw), `"arguments":{}`) {
		t.Fatalf("nil arguments: %s", raw)
	}
}

func TestDecodingErrorsNameThePart(t *testing.T) {
	cases := map[string]string{
		`{"role":"user","content":[{"type":"video","url":"x"}]}`:                                              `content[0].type: unknown block type "video"`,
		`{"role":"user","content":[{"type":"image","url":"x"}]}`:                                              `content[0].mime_type: missing`,
		`{"role":"user","content":[{"text":"x"}]}`:                                                            `content[0].type: missing`,
		`{"role":"robot","content":"x"}`:                                                                      `role: unknown role "robot"`,
		`{"content":"x"}`:                                                                                     `role: missing`,
		`{"role":"user"}`:                                                                                     `content: missing`,
		`{"role":"user","content":5}`:                                                                         `content: want a string or an array`,
		`{"role":"user","content":"x","extra":1}`:                                                             `extra: unknown key`,
		`{"role":"user","content":[{"type":"text","text":"x","bold":true}]}`:                                  `content[0].bold: unknown key for a text block`,
		`{"role":"tool","content":[{"type":"tool_result","content":1}]}`:                                      `content[0].tool_call_id: missing`,
		`{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"n","arguments":[1]}]}`:           `content[0].arguments: want a JSON object`,
		`{"role":"assistant","content":[{"type":"tool_call","name":"n"}]}`:                                    `content[0].id: missing`,
		`{"role":"user","content":[{"type":"text","text":5}]}`:                                                `content[0].text: must be a string, got number`,
		`{"role":"user","content":[1]}`:                                                                       `content[0]: a block must be a JSON object with a "type"`,
		`{"role":"user","role":"system","content":"x"}`:                                                       `role: duplicate key`,
		`{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}`:                                   `content[0].text: duplicate key`,
		`{"ROLE":"user","content":"x"}`:                                                                       `ROLE: unknown key (keys are case-sensitive: did you mean "role"?)`,
		`{"role":"user","content":[{"type":"text","Text":"x"}]}`:                                              `content[0].Text: unknown key (keys are case-sensitive: did you mean "text"?)`,
		`{"role":"user","content":[{"Type":"text","text":"x"}]}`:                                              `content[0].Type: unknown key (keys are case-sensitive: did you mean "type"?)`,
		"{\"role\":\"user\",\"content\":\"\xff\"}":                                                            `content: invalid UTF-8`,
		`{"role":"assistant","content":[{"type":"tool_call","id":"c","name":"n","arguments":{"a":1,"a":2}}]}`: `content[0].arguments.a: duplicate key`,
	}
	for in, want := range cases {
		var m Message
		err := json.Unmarshal([]byte(in), &m)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %q", in, err, want)
		}
	}
}

func TestPendingAndForModel(t *testing.T) {
	thread := []Message{
		Text(RoleUser, "go"),
		{Role: RoleAssistant, Content: []Block{
			ToolCallBlock{ID: "a", Name: "srv"},
			ToolCallBlock{ID: "b", Name: "remote1"},
			ToolCallBlock{ID: "c", Name: "remote2"},
		}},
		{Role: RoleTool, Content: []Block{
			ToolResultBlock{ToolCallID: "a", Content: json.RawMessage(`1`)},
			RemoteToolCallBlock{ID: "b", Name: "remote1"},
			RemoteToolCallBlock{ID: "c", Name: "remote2"},
		}},
		{Role: RoleTool, Content: []Block{ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(`3`)}}},
	}
	p := Pending(thread)
	if len(p) != 1 || p[0].ID != "b" {
		t.Fatalf("pending %+v, want b", p)
	}
	thread = append(thread, Message{Role: RoleTool, Content: []Block{
		ToolResultBlock{ToolCallID: "b", Content: json.RawMessage(`2`)},
		ToolResultBlock{ToolCallID: "zzz", Content: json.RawMessage(`9`)},
	}}, Text(RoleAssistant, "done"))
	if p := Pending(thread); len(p) != 0 {
		t.Fatalf("pending %+v, want none", p)
	}
	fm := ForModel(thread)
	if len(fm) != 4 || fm[2].Role != RoleTool || fm[3].Text() != "done" {
		t.Fatalf("ForModel shape: %+v", fm)
	}
	var got []string
	for _, r := range fm[2].ToolResults() {
		got = append(got, r.ToolCallID+"="+string(r.Content))
	}
	if strings.Join(got, ",") != "a=1,b=2,c=3" || len(fm[2].Content) != 3 {
		t.Fatalf("results %v, want a=1,b=2,c=3 and nothing else", got)
	}
	// A call never answered gets an error result instead of a broken history.
	orphan := ForModel([]Message{{Role: RoleAssistant, Content: []Block{ToolCallBlock{ID: "x", Name: "n"}}}, Text(RoleUser, "next")})
	if len(orphan) != 3 || !orphan[1].ToolResults()[0].IsError {
		t.Fatalf("orphan call: %+v", orphan)
	}
}
