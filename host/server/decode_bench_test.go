package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/server"
)

// invokeBody is a typical invoke request: a short user message on a thread.
var invokeBody = []byte(`{"input": {"messages": [{"role": "user", "content": "what is 2+3*4 and what is on my clipboard?"}]}, "config": {"thread_id": "t-4f1c9a"}}`)

// largeThread is a request carrying a long history of 200 messages of
// every block type, as an AG-UI-style client resending its transcript
// would, about 28 KB.
func largeThread() []byte {
	var msgs []any
	for i := range 50 {
		msgs = append(msgs,
			map[string]any{"id": fmt.Sprintf("u%d", i), "role": "user", "content": "please compute something rather long and tell me what is on my clipboard today"},
			map[string]any{"id": fmt.Sprintf("a%d", i), "role": "assistant", "content": []any{
				map[string]any{"type": "text", "text": "Let me work that out for you."},
				map[string]any{"type": "tool_call", "id": fmt.Sprintf("c%d", i), "name": "calculator", "arguments": map[string]any{"expression": "2+3*4", "precision": 4}},
			}},
			map[string]any{"id": fmt.Sprintf("t%d", i), "role": "tool", "content": []any{
				map[string]any{"type": "tool_result", "tool_call_id": fmt.Sprintf("c%d", i), "content": map[string]any{"expression": "2+3*4", "result": 14}, "is_error": false},
			}},
			map[string]any{"id": fmt.Sprintf("r%d", i), "role": "assistant", "content": []any{map[string]any{"type": "text", "text": "2+3*4 is 14. Your clipboard says hello."}}},
		)
	}
	raw, err := json.Marshal(map[string]any{"input": map[string]any{"messages": msgs}, "config": map[string]any{"thread_id": "t-long"}})
	if err != nil {
		panic(err)
	}
	return raw
}

// BenchmarkDecodeRunRequest measures reading a run request strictly, the
// work every invoke, stream and resume does before the run starts.
func BenchmarkDecodeRunRequest(b *testing.B) {
	for _, c := range []struct {
		name string
		body []byte
	}{{"invoke", invokeBody}, {"thread200", largeThread()}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := server.DecodeRunRequest(bytes.NewReader(c.body), config.DefaultMaxRequestMessages); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRefuseDeepRequest measures refusing the malformed corpus's
// deep_nesting.json, 20 KB of a tool result nested 10,001 deep: a cheap
// request that cost over half a second of CPU before strictjson refused
// depth before decoding.
func BenchmarkRefuseDeepRequest(b *testing.B) {
	body, err := os.ReadFile(filepath.Join("testdata", "malformed", "deep_nesting.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := server.DecodeRunRequest(bytes.NewReader(body), config.DefaultMaxRequestMessages); err == nil {
			b.Fatal("the deep body was accepted")
		}
	}
}
