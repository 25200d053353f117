package server_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/server"
)

// The server writes a run's response around its messages' own encoding;
// the bytes are json.Marshal's, for full and delta responses, paused and
// completed, with strings encoding/json escapes, whether built whole
// (marshal) or written a message at a time, large ones shared.
func TestMarshalRunIsJSONMarshal(t *testing.T) {
	tricky := "<b>&amp;</b> \u2028 \u2029 \"quoted\" \\ \x01 é"
	call := message.RemoteToolCallBlock{ID: "c<2>", Name: "read_clipboard", Arguments: json.RawMessage(`{ "a" : "<x>" }`), Node: "tools",
		ExpiresAt: time.Date(2026, 12, 1, 18, 0, 0, 123000000, time.UTC)}
	approval := message.ApprovalRequestBlock{ID: "c3", Name: "delete_file", Arguments: json.RawMessage(`{"path":"/tmp/&x"}`), Node: "tools"}
	msgs := []message.Message{
		{ID: "m0", Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: tricky}}},
		{ID: "m1", Role: message.RoleAssistant, Content: []message.Block{
			message.TextBlock{Text: "calling"},
			message.ToolCallBlock{ID: "c1", Name: "calculator", Arguments: json.RawMessage(`{"expression": "2+3*4"}`)},
			message.ToolCallBlock{ID: "c<2>", Name: "read_clipboard", Arguments: json.RawMessage(`{}`)},
		}},
		{ID: "m2", Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: "c1", Content: json.RawMessage(`{"result": 14, "note": "<&>"}`)},
			call,
		}},
	}
	// A message small enough to be written with the bytes around it, but
	// that fills the bytes gathered for one write; a message large enough
	// that responses share its encoding; a small one after it.
	msgs = append(msgs,
		message.Message{ID: "m3", Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: strings.Repeat(tricky, 500)}}},
		message.Message{ID: "m4", Role: message.RoleUser, Content: []message.Block{message.TextBlock{Text: strings.Repeat(tricky, 4096)}}},
		message.Message{ID: "m5", Role: message.RoleAssistant, Content: []message.Block{message.TextBlock{Text: tricky}}})
	results := map[string]graph.Result{
		"paused":    {ThreadID: "t<1>", RunID: "r1", Status: graph.StatusInterrupted, Messages: msgs, RemoteToolCalls: []message.RemoteToolCallBlock{call}, ApprovalRequests: []message.ApprovalRequestBlock{approval}},
		"completed": {ThreadID: "t1", RunID: "r2", Status: graph.StatusCompleted, Messages: msgs[:1], RemoteToolCalls: []message.RemoteToolCallBlock{}},
		"empty":     {ThreadID: tricky, Status: graph.StatusCompleted, Messages: []message.Message{}},
		"nil":       {},
	}
	for name, res := range results {
		for _, v := range []any{res, server.DeltaResult{Result: res, Offset: 7}} {
			got, err := server.Marshal(v)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %T:\n got %s\nwant %s", name, v, got, want)
			}
			// What the invoke route writes, from the shared encodings.
			var w bytes.Buffer
			if err := server.WriteResult(&w, v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(w.Bytes(), append(want, '\n')) {
				t.Errorf("%s %T written:\n got %s\nwant %s", name, v, w.Bytes(), want)
			}
		}
	}
	// marshal names Result's fields: one added to its JSON must be added
	// there too.
	var fields []string
	rt := reflect.TypeFor[graph.Result]()
	for i := range rt.NumField() {
		if tag := rt.Field(i).Tag.Get("json"); tag != "-" {
			fields = append(fields, strings.Split(tag, ",")[0])
		}
	}
	if want := "thread_id run_id status messages remote_tool_calls approval_requests"; strings.Join(fields, " ") != want {
		t.Fatalf("graph.Result's JSON fields are %v, marshal writes %s: update it", fields, want)
	}
}
