package scripted

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
)

// FuzzParse checks that no script makes Parse panic, and that a script Parse
// accepts answers any message (with its own tools, then with results) without
// panicking.
func FuzzParse(f *testing.F) {
	demo, err := os.ReadFile("testdata/demo.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(demo, "make the background blue")
	f.Add([]byte(briefScript), "what is on my clipboard")
	f.Add([]byte(`{"rules":[{"match":"(?P<x>a)(b)?","tool_calls":[{"name":"t","arguments":{"k":["$x${2}$$",{"n":1}]}}],"then":"{{if error 0}}{{result 0}}{{else}}{{field 0 \"x\"}}{{end}}{{arg 0 \"k\"}}"}]}`), "ab")
	f.Add([]byte(`{"rules":[{"match":"x","text":"y","example":"x"}],"fallback":"z"}`), "")
	f.Add([]byte(`{"rules":[{"match":"(","text":1,"then":"{{"}],"rules":2}`), "x")
	f.Add([]byte(`{"rules":[{"match":"a","tool_calls":[{"name":"t"}],"then":"{{with user}}{{printf \"%q\" .}}{{end}}{{results}}"}]}`), "a")
	f.Fuzz(func(t *testing.T, script []byte, user string) {
		m, err := Parse(script)
		if err != nil {
			if m != nil {
				t.Fatal("a model and an error")
			}
			return
		}
		var specs = tools()
		for _, r := range m.rules {
			for _, c := range r.calls {
				specs = append(specs, tools(c.name)...)
			}
		}
		msgs := []message.Message{message.Text(message.RoleUser, user)}
		var streamed string
		resp, err := m.Generate(context.Background(), model.Request{Messages: msgs, Tools: specs, OnDelta: func(d string) { streamed += d }})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if streamed != resp.Message.Text() {
			t.Fatalf("streamed %q, reply %q", streamed, resp.Message.Text())
		}
		calls := resp.Message.ToolCalls()
		if len(calls) == 0 {
			return
		}
		var results []message.Block
		for i, c := range calls {
			if !json.Valid(c.Arguments) {
				t.Fatalf("invalid arguments %q", c.Arguments)
			}
			results = append(results, message.ToolResultBlock{ToolCallID: c.ID, Content: json.RawMessage(`{"text":"r"}`), IsError: i%2 == 1})
		}
		msgs = append(msgs, resp.Message, message.Message{Role: message.RoleTool, Content: results})
		// A then template may fail on real results (arg of a key a
		// different call lacks), but must not panic or call tools again.
		resp, err = m.Generate(context.Background(), model.Request{Messages: msgs, Tools: specs})
		if err == nil && len(resp.Message.ToolCalls()) != 0 {
			t.Fatal("tool calls right after tool results")
		}
	})
}
