package message

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMessage decodes arbitrary input: it must never panic, and whatever
// decodes must encode and decode again to the same message.
func FuzzMessage(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"id":"m1","role":"assistant","content":[{"type":"text","text":"x"},{"type":"tool_call","id":"c","name":"n","arguments":{"a":[1,2]}}]}`,
		`{"role":"tool","content":[{"type":"tool_result","tool_call_id":"c","content":{"x":1},"is_error":true}]}`,
		`{"role":"tool","content":[{"type":"remote_tool_call","id":"c","name":"n","arguments":{},"node":"tools"}]}`,
		`{"role":"user","content":[{"type":"bogus"}]}`,
		`{"role":"user","content":[]}`,
		`[]`, `null`, `{"role":"user","content":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Message
		if err := json.Unmarshal(data, &m); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("decoded message does not encode: %v", err)
		}
		var again Message
		if err := json.Unmarshal(out, &again); err != nil {
			t.Fatalf("encoded message does not decode: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("not stable:\n%s\n%s", out, out2)
		}
	})
}
