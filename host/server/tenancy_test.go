package server_test

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// tenancyServer starts a server that accepts two tokens (A, the default,
// and B) on the store s names, with http_fetch allowed to fetchHost.
func tenancyServer(t *testing.T, s setup) *env {
	t.Helper()
	t.Setenv("TG_TEST_TOKEN_A", tokenA)
	t.Setenv("TG_TEST_TOKEN_B", tokenB)
	s.server = map[string]any{"auth": map[string]any{"tokens_env": []any{"TG_TEST_TOKEN_A", "TG_TEST_TOKEN_B"}}}
	e := start(t, s)
	e.token = tokenA
	e.tenants = map[string]string{tokenA: "TG_TEST_TOKEN_A", tokenB: "TG_TEST_TOKEN_B"}
	return e
}

// onStores runs f on a server with SQLite and, when a PostgreSQL server is
// configured, on one with PostgreSQL.
func onStores(t *testing.T, f func(t *testing.T, s setup)) {
	t.Run("sqlite", func(t *testing.T) { f(t, setup{}) })
	t.Run("postgres", func(t *testing.T) { f(t, setup{postgres: true}) })
}

// known is what token B may know, or guess, of a thread of token A's: its
// pending call, its first message and the blob of the image in it.
type known struct{ call, message, blob string }

// tenancyCase is one request token B makes naming a thread id, on one of
// the API's routes (route is its pattern, as the server lists it).
type tenancyCase struct {
	route, name string
	req         func(id string, k known) (method, path string, body any)
}

func post(path string, body func(id string, k known) any) func(string, known) (string, string, any) {
	return func(id string, k known) (string, string, any) { return "POST", path, body(id, k) }
}

// tenancyCases cover every route that names a thread, with every kind of
// request: new input (which makes a thread of the caller's own), tool
// results and approvals for the other token's pending call, an empty run,
// reads with and without paging, a delete. A route the server adds must be
// added here (TestTenancyCoversEveryRoute fails until it is).
var tenancyCases = []tenancyCase{
	{"POST /v1/graph/invoke", "new input", post("/v1/graph/invoke", func(id string, _ known) any { return runBody(id, "hello") })},
	{"POST /v1/graph/invoke", "result for the other's call", post("/v1/graph/invoke", func(id string, k known) any { return resumeBody(id, k.call, "stolen") })},
	{"POST /v1/graph/invoke", "approval of the other's call", post("/v1/graph/invoke", func(id string, k known) any {
		return map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "tool", "content": []any{
			map[string]any{"type": "approval", "tool_call_id": k.call, "approved": true}}}}}, "config": map[string]any{"thread_id": id}}
	})},
	{"POST /v1/graph/invoke", "no input", post("/v1/graph/invoke", func(id string, _ known) any {
		return map[string]any{"input": map[string]any{"messages": []any{}}, "config": map[string]any{"thread_id": id}}
	})},
	{"POST /v1/graph/invoke", "new input, delta response", post("/v1/graph/invoke", func(id string, _ known) any {
		b := runBody(id, "hello")
		b["config"].(map[string]any)["response"] = "delta"
		return b
	})},
	{"POST /v1/graph/stream", "new input", post("/v1/graph/stream", func(id string, _ known) any { return runBody(id, "hello") })},
	{"POST /v1/graph/stream", "result for the other's call", post("/v1/graph/stream", func(id string, k known) any { return resumeBody(id, k.call, "stolen") })},
	{"POST /v1/agui", "new input", post("/v1/agui", func(id string, _ known) any { return aguiInput(id, userMsg("u1", "hello")) })},
	{"POST /v1/agui", "tool message for the other's call", post("/v1/agui", func(id string, k known) any {
		return aguiInput(id, userMsg("u1", "hello"), toolMsg("t1", k.call, "stolen"))
	})},
	{"POST /v1/agui", "the other's first message and a result", post("/v1/agui", func(id string, k known) any {
		return aguiInput(id, userMsg(k.message, mixedQuestion), toolMsg("t1", k.call, "stolen"))
	})},
	{"POST /v1/agui", "resume of the other's interrupt", post("/v1/agui", func(id string, k known) any {
		in := aguiInput(id)
		in["forwardedProps"] = map[string]any{"tenxgraph": map[string]any{"interrupts": true}}
		in["resume"] = []any{map[string]any{"interruptId": k.call, "status": "resolved", "payload": "stolen"}}
		return in
	})},
	{"GET /v1/threads/{thread_id}", "read", func(id string, _ known) (string, string, any) { return "GET", "/v1/threads/" + id, nil }},
	{"GET /v1/threads/{thread_id}", "first page", func(id string, _ known) (string, string, any) { return "GET", "/v1/threads/" + id + "?limit=1", nil }},
	{"GET /v1/threads/{thread_id}", "page after the other's first message", func(id string, k known) (string, string, any) {
		return "GET", "/v1/threads/" + id + "?after=" + k.message + "&limit=2", nil
	}},
	{"DELETE /v1/threads/{thread_id}", "delete", func(id string, _ known) (string, string, any) { return "DELETE", "/v1/threads/" + id, nil }},
	{"GET /v1/threads/{thread_id}/blobs/{ref}", "the other's blob", func(id string, k known) (string, string, any) {
		return "GET", "/v1/threads/" + id + "/blobs/" + k.blob, nil
	}},
	{"GET /v1/threads/{thread_id}/blobs/{ref}", "a blob nobody has", func(id string, _ known) (string, string, any) {
		return "GET", "/v1/threads/" + id + "/blobs/sha256:" + strings.Repeat("0", 64), nil
	}},
	{"POST /v1/graph/invoke", "the other's blob by reference", post("/v1/graph/invoke", func(id string, k known) any {
		return imageBody(id, "hello", map[string]any{"type": "image", "mime_type": "image/png", "blob": k.blob})
	})},
}

// Every route of the API is in tenancyCases.
func TestTenancyCoversEveryRoute(t *testing.T) {
	e := start(t, setup{memory: true})
	covered := map[string]bool{}
	for _, c := range tenancyCases {
		covered[c.route] = true
	}
	routes := e.srv.APIRoutes()
	if len(routes) == 0 {
		t.Fatal("the server lists no routes")
	}
	for _, r := range routes {
		if !covered[r] {
			t.Errorf("route %q has no tenancy case: add the requests it takes to tenancyCases", r)
		}
		delete(covered, r)
	}
	for r := range covered {
		t.Errorf("tenancyCases name %q, which the server does not serve", r)
	}
}

// volatile matches what differs between two runs of one request: run,
// message and call ids (hex), and times.
var volatile = regexp.MustCompile(`[0-9a-f]{8,}|"(timestamp|expires_at|expiresAt)":("[^"]*"|\d+)`)

// answer is a response as another request for another id would give it:
// the id replaced, volatile parts masked, the Date header dropped.
func answer(r resp, id string) string {
	h := r.header.Clone()
	h.Del("Date")
	var head strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fmt.Fprintf(&head, "%s: %q\n", k, h[k])
	}
	body := volatile.ReplaceAllString(strings.ReplaceAll(string(r.body), id, "ID"), "X")
	return fmt.Sprintf("%d\n%s\n%s", r.status, head.String(), body)
}

// Token B cannot tell token A's thread from one that does not exist: on
// every route, every request B makes naming A's thread, paused or held by
// a run, gets the same answer (status, headers, body but for the id and
// what differs between any two runs) as the same request naming an id
// nobody used; and none of them changes A's thread. On SQLite and on
// PostgreSQL.
func TestForeignThreadAnswersAsUnknown(t *testing.T) {
	onStores(t, func(t *testing.T, s setup) {
		var entered atomic.Int32
		release := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered.Add(1)
			select {
			case <-release:
			case <-r.Context().Done():
			}
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("slow page"))
		}))
		defer slow.Close()
		released := false
		defer func() {
			if !released {
				close(release)
			}
		}()
		s.fetchHost = "127.0.0.1/32:" + strings.TrimPrefix(slow.URL, "http://127.0.0.1:")
		e := tenancyServer(t, s)
		b := withToken(tokenB)

		// A's threads: one paused per case, and one per case that a run of
		// A's holds (inside a tool call) while B asks: every other one
		// existed before that run, the rest are being created by it.
		k := make([]known, len(tenancyCases))
		img := testPNG(3, 2)
		for i := range tenancyCases {
			id := fmt.Sprintf("p-%02d", i)
			r := e.invoke(imageBody(id, mixedQuestion, pngData(img)))
			if r.Status != "interrupted" || len(r.RemoteToolCalls) != 1 {
				t.Fatalf("A's thread %s did not pause: %+v", id, r)
			}
			k[i] = known{call: r.RemoteToolCalls[0].ID, message: r.Messages[0].ID, blob: blobRef(img)}
		}
		if r := e.do("GET", "/v1/threads/p-00/blobs/"+blobRef(img), nil); r.status != 200 || !bytes.Equal(r.body, img) {
			t.Fatalf("A reads its own blob: %d", r.status)
		}
		held := make(chan resp, len(tenancyCases))
		for i := range tenancyCases {
			if i%2 == 0 {
				e.invoke(runBody(fmt.Sprintf("h-%02d", i), "hello"))
			}
		}
		for i := range tenancyCases {
			go func() {
				held <- e.do("POST", "/v1/graph/invoke", runBody(fmt.Sprintf("h-%02d", i), "zzfetch "+slow.URL+"/page"))
			}()
		}
		deadline := time.Now().Add(waitLimit)
		for entered.Load() < int32(len(tenancyCases)) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of A's runs reached their tool call", entered.Load())
			}
			time.Sleep(5 * time.Millisecond)
		}

		// A is told the truth about its own.
		errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("h-00", "hello")), 409, "thread_busy", "h-00")
		errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("h-01", "hello")), 409, "thread_busy", "h-01")
		for _, state := range []string{"paused", "held"} {
			for i, c := range tenancyCases {
				foreign, unknown := fmt.Sprintf("%c-%02d", state[0], i), fmt.Sprintf("u%c%02d", state[0], i)[:len("p-00")]
				before := e.state(foreign)
				fm, fp, fb := c.req(foreign, k[i])
				um, up, ub := c.req(unknown, k[i])
				got, want := answer(e.do(fm, fp, fb, b), foreign), answer(e.do(um, up, ub, b), unknown)
				if got != want {
					t.Errorf("%s, %s, A's thread %s: B's answer differs from the one for an unknown id:\n--- A's thread:\n%s\n--- unknown:\n%s",
						c.route, c.name, state, got, want)
				}
				if after := e.state(foreign); after != before && state == "paused" {
					t.Errorf("%s, %s: B's request changed A's thread %s:\n%s\n%s", c.route, c.name, foreign, before, after)
				}
			}
		}

		// A's held runs finish with their own work, and nothing of B's.
		close(release)
		released = true
		for range tenancyCases {
			select {
			case r := <-held:
				if run := decodeRun(t, r.body); r.status != 200 || run.Status != "completed" || (len(run.Messages) != 4 && len(run.Messages) != 6) ||
					run.Messages[len(run.Messages)-4].Text() != "zzfetch "+slow.URL+"/page" || !strings.Contains(run.Messages[len(run.Messages)-1].Text(), "slow page") {
					t.Fatalf("A's held run: %d %s", r.status, r.body)
				}
			case <-time.After(waitLimit):
				t.Fatal("A's held runs did not finish")
			}
		}
	})
}

// No squatting: token B using an id first takes nothing from token A. A's
// invoke of that id runs on A's own thread, which holds only A's messages,
// and each token reads and deletes only its own. On SQLite and PostgreSQL.
func TestNoSquatting(t *testing.T) {
	onStores(t, func(t *testing.T, s setup) {
		e := tenancyServer(t, s)
		b := withToken(tokenB)
		bCall := e.paused("x", b) // B's thread x, waiting on B's call

		res := e.invoke(runBody("x", "hello"))
		if res.Status != "completed" || res.ThreadID != "x" || len(res.Messages) != 2 || res.Messages[0].Text() != "hello" {
			t.Fatalf("A's invoke of the id B took: %+v", res)
		}
		a := e.thread("x")
		if len(a.Messages) != 2 || len(a.RemoteToolCalls) != 0 {
			t.Fatalf("A reads %+v: want only A's two messages", a)
		}
		bt := e.thread("x", b)
		if bt.Status != "interrupted" || len(bt.RemoteToolCalls) != 1 || bt.RemoteToolCalls[0].ID != bCall || bt.Messages[0].Text() != mixedQuestion {
			t.Fatalf("B's thread after A's invoke: %+v", bt)
		}
		// A cannot answer B's call, which is not pending on A's thread.
		errorOf(t, e.do("POST", "/v1/graph/invoke", resumeBody("x", bCall, "from A")), 409, "not_paused", bCall)
		// Deleting is per token too.
		if r := e.do("DELETE", "/v1/threads/x", nil); r.status != 204 {
			t.Fatalf("A deleting its x: %d %s", r.status, r.body)
		}
		errorOf(t, e.do("GET", "/v1/threads/x", nil), 404, "thread_not_found")
		if bt2 := e.thread("x", b); bt2.Status != "interrupted" || bt2.RemoteToolCalls[0].ID != bCall {
			t.Fatalf("B's thread after A deleted its own: %+v", bt2)
		}
		if r := e.invoke(resumeBody("x", bCall, map[string]any{"text": "b's clipboard"}), b); r.Status != "completed" {
			t.Fatalf("B's resume: %+v", r)
		}
	})
}

// A result a stale client sends for a call of a thread that was deleted
// and created again under its id is refused (409 unknown_call, naming the
// call and the one that is pending) and changes nothing, although the
// model gave the new call the same id as the old one. On SQLite and
// PostgreSQL.
func TestStaleResultAfterRecreate(t *testing.T) {
	onStores(t, func(t *testing.T, s setup) {
		e := tenancyServer(t, s)
		old := e.paused("t")
		if r := e.do("DELETE", "/v1/threads/t", nil); r.status != 204 {
			t.Fatalf("delete: %d %s", r.status, r.body)
		}
		pending := e.paused("t")
		if pending == old {
			t.Fatalf("the thread created again has the old thread's call id %q", old)
		}
		before := e.state("t")
		body := errorOf(t, e.do("POST", "/v1/graph/invoke", resumeBody("t", old, map[string]any{"text": "stale"})), 409, "unknown_call", old, pending)
		if !slices.Equal(body.Error.CallIDs, []string{old}) {
			t.Fatalf("call_ids %q, want the stale call's", body.Error.CallIDs)
		}
		errorOf(t, e.do("POST", "/v1/graph/stream", resumeBody("t", old, map[string]any{"text": "stale"})), 409, "unknown_call", old)
		if after := e.state("t"); after != before {
			t.Fatalf("the stale result changed the thread:\n%s\n%s", before, after)
		}
		if r := e.invoke(resumeBody("t", pending, map[string]any{"text": "fresh"})); r.Status != "completed" ||
			!strings.Contains(r.Messages[len(r.Messages)-1].Text(), "fresh") {
			t.Fatalf("the pending call's result: %+v", r)
		}
	})
}
