package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// users is n user messages as JSON text.
func users(n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"role": "user", "content": "m%d"}`, i)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// aguiUsers is n AG-UI user messages with ids from prefix.
func aguiUsers(prefix string, n int) string {
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"id": "%s%d", "role": "user", "content": "m%d"}`, prefix, i, i)
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// A request that would add more messages than server.max_request_messages
// is refused with 413 naming the key and the count, on every route that
// takes messages, and nothing is stored. AG-UI counts only the messages
// new to the thread: a client resends its transcript.
func TestTooManyMessagesAreRefused(t *testing.T) {
	e := start(t, setup{memory: true, server: map[string]any{"max_request_messages": 3}})
	for _, c := range []struct{ name, path, body string }{
		{"invoke", "/v1/graph/invoke", `{"input": {"messages": ` + users(4) + `}, "config": {"thread_id": "n1"}}`},
		{"stream", "/v1/graph/stream", `{"input": {"messages": ` + users(4) + `}, "config": {"thread_id": "n1"}}`},
		{"agui", "/v1/agui", `{"threadId": "n1", "runId": "r", "messages": ` + aguiUsers("u", 4) + `}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			errorOf(t, e.do("POST", c.path, c.body), http.StatusRequestEntityTooLarge, "too_many_messages",
				"4 messages", "server.max_request_messages (3)")
			if r := e.do("GET", "/v1/threads/n1", nil); r.status != http.StatusNotFound {
				t.Fatalf("thread n1 after the refusal: %d %s, want 404", r.status, r.body)
			}
		})
	}
	// At the limit, a run goes; an AG-UI transcript longer than the limit
	// goes too when no more than the limit of it is new.
	if r := e.do("POST", "/v1/graph/invoke", `{"input": {"messages": `+users(3)+`}, "config": {"thread_id": "n2"}}`); r.status != http.StatusOK {
		t.Fatalf("three messages: %d %s", r.status, r.body)
	}
	e.agui(json.RawMessage(`{"threadId": "n3", "runId": "r1", "messages": ` + aguiUsers("a", 2) + `}`))
	th := e.thread("n3")
	var transcript []any
	for _, m := range th.Messages {
		transcript = append(transcript, map[string]any{"id": m.ID, "role": string(m.Role), "content": m.Text()})
	}
	transcript = append(transcript, userMsg("b0", "again"), userMsg("b1", "and again"))
	if len(transcript) <= 3 {
		t.Fatalf("the transcript has %d messages, want more than the limit", len(transcript))
	}
	e.agui(map[string]any{"threadId": "n3", "runId": "r2", "messages": transcript})
	if n := len(e.thread("n3").Messages); n <= len(th.Messages)+1 {
		t.Fatalf("the second AG-UI run stored %d messages, want its two new ones and an answer", n-len(th.Messages))
	}
}

// With no setting, a request of 1,001 messages is refused: one body of
// tiny messages once stored a hundred thousand.
func TestMessageLimitHasADefault(t *testing.T) {
	e := start(t, setup{memory: true})
	errorOf(t, e.do("POST", "/v1/graph/invoke", `{"input": {"messages": `+users(1001)+`}, "config": {"thread_id": "many"}}`),
		http.StatusRequestEntityTooLarge, "too_many_messages", "1001 messages", "server.max_request_messages (1000)")
}
