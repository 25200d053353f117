package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// deep is 10,001 nested arrays: 20 KB that the JSON decoder alone would
// walk ten thousand levels into.
var deep = strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001)

// A body nested deeper than strictjson.MaxDepth is refused with 400 on
// every endpoint that reads JSON, with the limit and the path where it was
// passed, and nothing is run or stored. AG-UI's state and forwardedProps,
// which the AG-UI SDK decodes itself, are checked with the rest of the
// body. (GET and DELETE of a thread read no body.)
func TestDeepBodiesAreRefusedOnEveryEndpoint(t *testing.T) {
	e := start(t, setup{memory: true})
	for _, c := range []struct {
		name, path, body, at string
	}{
		{"invoke: a tool result", "/v1/graph/invoke", resultBodyRaw("d1", deep), "input.messages[0].content[0].content[0][0]"},
		{"invoke: the config", "/v1/graph/invoke", `{"config": {"thread_id": "d1", "x": ` + deep + `}}`, "config.x[0][0]"},
		{"stream: a message", "/v1/graph/stream", `{"input": {"messages": [` + deep + `]}, "config": {"thread_id": "d1"}}`, "input.messages[0][0][0]"},
		{"agui: state", "/v1/agui", `{"threadId": "d1", "runId": "r", "messages": [], "state": {"s": ` + deep + `}}`, "state.s[0][0]"},
		{"agui: forwardedProps", "/v1/agui", `{"threadId": "d1", "runId": "r", "messages": [], "forwardedProps": {"tenxgraph": ` + deep + `}}`, "forwardedProps.tenxgraph[0][0]"},
		{"agui: a tool's parameters", "/v1/agui", `{"threadId": "d1", "runId": "r", "messages": [], "tools": [{"name": "t", "description": "", "parameters": ` + deep + `}]}`, "tools[0].parameters[0][0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			errorOf(t, e.do("POST", c.path, c.body), http.StatusBadRequest, "malformed_request",
				"exceeded max depth", fmt.Sprintf("at most %d deep", strictjson.MaxDepth), c.at)
		})
	}
	if r := e.do("GET", "/v1/threads/d1", nil); r.status != http.StatusNotFound {
		t.Fatalf("thread d1 after the refusals: %d %s, want 404", r.status, r.body)
	}
}

// resultBodyRaw is a resume body whose result content is raw JSON.
func resultBodyRaw(thread, content string) string {
	return `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c", "content": ` + content + `}]}]}, "config": {"thread_id": "` + thread + `"}}`
}
