package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
)

// postgresStore opens the PostgreSQL store on a new schema (postgresDSN),
// dropped when the test ends; it skips the test without a server.
func postgresStore(t *testing.T) checkpoint.Checkpointer {
	t.Helper()
	store, err := checkpoint.OpenPostgres(context.Background(), postgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// A thread id with a control character (C0 with NUL, DEL, C1) is refused
// with 422 naming where it came from, on every route and on every store,
// before the store sees it: SQLite stored a NUL, PostgreSQL answered 500
// with its SQL error.
func TestThreadIDsWithControlCharactersAreRefused(t *testing.T) {
	for _, store := range []string{"memory", "sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			s := setup{memory: store == "memory"}
			if store == "postgres" {
				s.store = postgresStore(t)
			}
			e := start(t, s)
			for _, id := range []string{"a\x00b", "\x00", "t\x1b[31mred", "tab\there", "del\x7f", "c1\u0085", "csi\u009b"} {
				q, _ := json.Marshal(id)
				for _, c := range []struct {
					method, path, body, at string
				}{
					{"POST", "/v1/graph/invoke", `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": ` + string(q) + `}}`, "config.thread_id"},
					{"POST", "/v1/graph/stream", `{"input": {"messages": [{"role": "user", "content": "hi"}]}, "config": {"thread_id": ` + string(q) + `}}`, "config.thread_id"},
					{"POST", "/v1/agui", `{"threadId": ` + string(q) + `, "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]}`, "threadId"},
					{"GET", "/v1/threads/" + url.PathEscape(id), "", "thread_id"},
					{"DELETE", "/v1/threads/" + url.PathEscape(id), "", "thread_id"},
				} {
					var body any
					if c.body != "" {
						body = c.body
					}
					errorOf(t, e.do(c.method, c.path, body), http.StatusUnprocessableEntity, "invalid_input",
						c.at+": must not contain control characters")
				}
				if _, err := e.svc.Store.Latest(context.Background(), id); !errors.Is(err, checkpoint.ErrNotFound) && !strings.Contains(id, "\x00") {
					t.Fatalf("the store has thread %q after the refusals: %v", id, err)
				}
			}
			// Printable ids still work, non-ASCII ones included.
			if r := e.invoke(runBody("ok-é-✓", "hello")); r.Status != "completed" {
				t.Fatalf("a printable id: %+v", r)
			}
		})
	}
}
