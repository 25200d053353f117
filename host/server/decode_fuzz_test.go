package server_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/server"
)

// FuzzDecodeRunRequest: DecodeRunRequest never panics; what it accepts
// re-encodes to a request that decodes to the same messages and thread;
// what it refuses, it refuses as malformed with a message.
func FuzzDecodeRunRequest(f *testing.F) {
	fill := strings.NewReplacer("{P}", "call_2_1", "{Q}", "call_2_0", "{S}", "call_2_0", "{CID}", "m0")
	for _, m := range corpus {
		if m.body != "" && len(m.body) < 4096 {
			f.Add([]byte(fill.Replace(m.body)))
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "malformed", "*.json"))
	for _, name := range files {
		if raw, err := os.ReadFile(name); err == nil && len(raw) < 8192 {
			f.Add([]byte(fill.Replace(string(raw))))
		}
	}
	for _, ok := range []string{
		`{"input": {"messages": [{"role": "user", "content": "what is 2+3*4 and what is on my clipboard?"}]}, "config": {"thread_id": "t1"}}`,
		`{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "call_2", "content": {"text": "hi"}}]}]}, "config": {"thread_id": "t1"}}`,
		`{"input": {"messages": [{"id": "m1", "role": "system", "content": [{"type": "text", "text": "<b>&amp;</b>"}]}, {"role": "assistant", "content": [{"type": "tool_call", "id": "c", "name": "n", "arguments": {"a": [1, 2.50, "\u00e9"]}}]}]}, "config": {"thread_id": "t", "remote_tools": [{"name": "x"}]}}`,
		`{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c", "content": null, "is_error": true}, {"type": "remote_tool_call", "id": "r", "name": "n", "node": "tools"}]}]}}`,
		`{"input": null, "config": null}`,
		`{}`,
	} {
		f.Add([]byte(ok))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := server.DecodeRunRequest(bytes.NewReader(data), config.DefaultMaxRequestMessages)
		if err != nil {
			msg := err.Error()
			rest, ok := strings.CutPrefix(msg, "malformed request: ")
			if !ok {
				rest, ok = strings.CutPrefix(msg, "too many messages: ")
			}
			if !ok || strings.TrimSpace(rest) == "" {
				t.Fatalf("error %q: want \"malformed request: <what is wrong>\" (or too many messages)", msg)
			}
			return
		}
		raw, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("an accepted request does not encode: %v", err)
		}
		again, err := server.DecodeRunRequest(bytes.NewReader(raw), config.DefaultMaxRequestMessages)
		if err != nil {
			t.Fatalf("the re-encoded request %s is refused: %v", raw, err)
		}
		if again.Config.ThreadID != req.Config.ThreadID {
			t.Fatalf("thread_id %q became %q", req.Config.ThreadID, again.Config.ThreadID)
		}
		if len(again.Input.Messages) != len(req.Input.Messages) {
			t.Fatalf("%d messages became %d", len(req.Input.Messages), len(again.Input.Messages))
		}
		for i := range req.Input.Messages {
			a, b := req.Input.Messages[i], again.Input.Messages[i]
			if a.ID != b.ID || a.Role != b.Role || len(a.Content) != len(b.Content) {
				t.Fatalf("message %d: %+v became %+v", i, a, b)
			}
			for j := range a.Content {
				if a.Content[j].BlockType() != b.Content[j].BlockType() {
					t.Fatalf("message %d block %d: %s became %s", i, j, a.Content[j].BlockType(), b.Content[j].BlockType())
				}
			}
		}
		// The same JSON values throughout (raw JSON inside blocks may be
		// re-spelt, escapes for one, but not changed).
		if va, vb := tree(t, req.Input.Messages), tree(t, again.Input.Messages); !reflect.DeepEqual(va, vb) {
			t.Fatalf("messages changed in a round trip:\n%v\n%v", va, vb)
		}
		raw2, err := json.Marshal(again)
		if err != nil || !bytes.Equal(raw, raw2) {
			t.Fatalf("encoding is not stable:\n%s\n%s (%v)", raw, raw2, err)
		}
	})
}

// tree is v as plain JSON values, numbers kept as written.
func tree(t *testing.T, v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}
