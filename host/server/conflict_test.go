package server_test

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Each kind of thread-state conflict is a 409 naming its kind and the
// calls involved, and changes nothing.
func TestConflicts(t *testing.T) {
	e := start(t, setup{})
	callID := e.paused("paused")
	var serverCall string // the calculator's call, answered by the server
	for _, m := range e.thread("paused").Messages {
		for _, c := range m.ToolCalls() {
			if c.Name == "calculator" {
				serverCall = c.ID
			}
		}
	}
	e.invoke(runBody("done", "hello"))

	two := e.invoke(runBody("two", "zztwo"))
	if two.Status != "interrupted" || len(two.RemoteToolCalls) != 2 {
		t.Fatalf("zztwo: %+v", two)
	}
	c1, c2 := two.RemoteToolCalls[0].ID, two.RemoteToolCalls[1].ID
	// Answer the first of the two: the thread stays paused on the second.
	half := e.invoke(resumeBody("two", c1, map[string]any{"text": "first"}))
	if half.Status != "interrupted" || len(half.RemoteToolCalls) != 1 || half.RemoteToolCalls[0].ID != c2 {
		t.Fatalf("after one of two results: %+v", half)
	}
	// Sending the same result again (a retry after a lost response) is
	// accepted and changes nothing.
	before := e.state("two")
	again := e.invoke(resumeBody("two", c1, map[string]any{"text": "first"}))
	if again.Status != "interrupted" || !reflect.DeepEqual(again.Messages, half.Messages) {
		t.Fatalf("retry: %+v", again)
	}
	if e.state("two") != before {
		t.Fatalf("a retried result changed the thread")
	}

	for _, c := range []struct {
		name, thread string
		body         any
		code         string
		ids          []string
		want         []string
	}{
		{"not_paused: results on a completed thread", "done", resumeBody("done", "call_x", 1), "not_paused", []string{"call_x"}, []string{`"done"`, "not paused"}},
		{"not_paused: results on a new thread", "new", resumeBody("new", callID, 1), "not_paused", []string{callID}, nil},
		{"unknown_call", "paused", resumeBody("paused", "call_nope", 1), "unknown_call", []string{"call_nope"}, []string{"pending calls are " + callID}},
		{"unknown_call: one of two unknown", "paused", resumeBody("paused", callID, 1, "call_nope", 2), "unknown_call", []string{"call_nope"}, nil},
		{"unknown_call: a server call's id", "paused", resumeBody("paused", serverCall, 1), "unknown_call", []string{serverCall}, nil},
		{"result_conflict", "two", resumeBody("two", c1, map[string]any{"text": "changed"}), "result_conflict", []string{c1}, []string{"final"}},
		{"result_conflict: with the pending one", "two", resumeBody("two", c2, "x", c1, "changed"), "result_conflict", []string{c1}, nil},
		{"pending_calls", "paused", runBody("paused", "hello"), "pending_calls", []string{callID}, []string{"tool_result"}},
		{"pending_calls: still one of two", "two", runBody("two", "hello"), "pending_calls", []string{c2}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.state(c.thread)
			for _, path := range []string{"/v1/graph/invoke", "/v1/graph/stream"} {
				b := errorOf(t, e.do("POST", path, c.body), http.StatusConflict, c.code, c.want...)
				if !reflect.DeepEqual(b.Error.CallIDs, c.ids) {
					t.Fatalf("%s: call_ids %v, want %v", path, b.Error.CallIDs, c.ids)
				}
			}
			if after := e.state(c.thread); after != before {
				t.Fatalf("the refused request changed the thread:\n%s\n%s", before, after)
			}
		})
	}
	// After all that, both threads resume normally.
	if r := e.invoke(resumeBody("paused", callID, map[string]any{"text": "ok"})); r.Status != "completed" {
		t.Fatalf("%+v", r)
	}
	if r := e.invoke(resumeBody("two", c2, map[string]any{"text": "sel"})); r.Status != "completed" {
		t.Fatalf("%+v", r)
	}
}

// Two requests on one thread at once: the second is refused with
// thread_busy while the first runs (held inside a server tool), the first
// completes, and nothing ran twice.
func TestThreadBusy(t *testing.T) {
	var hits atomic.Int32
	entered := make(chan struct{}, 8)
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("slow page"))
	}))
	defer slow.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	e := start(t, setup{fetchHost: "127.0.0.1/32:" + strings.TrimPrefix(slow.URL, "http://127.0.0.1:")})
	e.invoke(runBody("busy", "hello")) // the thread exists before the race
	m0 := e.metrics()

	first := make(chan resp, 1)
	go func() {
		first <- e.do("POST", "/v1/graph/invoke", runBody("busy", "zzfetch "+slow.URL+"/page"))
	}()
	select {
	case <-entered:
	case r := <-first:
		t.Fatalf("the first run ended before its tool was called: %d %s", r.status, r.body)
	case <-time.After(waitLimit):
		t.Fatal("the fetch never reached the test server")
	}
	// The first run is now inside its tool call.
	running := e.thread("busy")
	if running.Status != "running" {
		t.Fatalf("GET while the run works: status %q", running.Status)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/graph/invoke", runBody("busy", "hello")},
		{"POST", "/v1/graph/invoke", runBody("busy", "zzfetch "+slow.URL+"/again")},
		{"POST", "/v1/graph/stream", runBody("busy", "hello")},
		{"DELETE", "/v1/threads/busy", nil},
	} {
		errorOf(t, e.do(c.method, c.path, c.body), http.StatusConflict, "thread_busy", `"busy"`)
	}
	evs := e.agui(aguiInput("busy", userMsg("u-busy", "hello")))
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "thread_busy" {
		t.Fatalf("AG-UI on a busy thread: %+v", last)
	}
	if after := e.thread("busy"); !reflect.DeepEqual(after, running) {
		t.Fatalf("refused requests changed the running thread")
	}
	close(release)
	var r resp
	select {
	case r = <-first:
	case <-time.After(waitLimit):
		t.Fatal("the first run did not finish")
	}
	if r.status != 200 {
		t.Fatalf("first run: %d %s", r.status, r.body)
	}
	res := decodeRun(t, r.body)
	if res.Status != "completed" || !strings.Contains(res.Messages[len(res.Messages)-1].Text(), "slow page") {
		t.Fatalf("first run: %+v", res)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the slow tool ran %d times", n)
	}
	th := e.thread("busy")
	uniqueIDs(t, th.Messages)
	users := 0
	for _, m := range th.Messages {
		if m.Role == "user" {
			users++
		}
	}
	if users != 2 || len(th.Messages) != 6 {
		t.Fatalf("thread has %d user messages, %d in all (want 2 and 6): refused input leaked in", users, len(th.Messages))
	}
	for id, n := range toolResults(th.Messages) {
		if n != 1 {
			t.Fatalf("call %s has %d results", id, n)
		}
	}
	d := delta(m0, e.metrics(), runsCompleted, runsRefused, `tenxgraph_tool_calls_total{outcome="ok",provider="builtin"}`)
	if d[runsCompleted] != 1 || d[runsRefused] != 4 {
		t.Fatalf("metrics moved by %v: want one completed run and four refused (invoke twice, stream, AG-UI)", d)
	}
	// Now free, the thread takes new input.
	if r := e.invoke(runBody("busy", "hello")); r.Status != "completed" {
		t.Fatalf("after the race: %+v", r)
	}
}
