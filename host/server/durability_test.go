package server_test

import (
	"context"
	"reflect"
	"slices"
	"testing"
)

// The quickstart's round trip (the model calls the calculator and the
// client's read_clipboard; the resume gets the final answer) writes a
// checkpoint per super-step with durability "sync" and "async", and only
// where each run stops with "exit", set by the request or by
// checkpointer.durability. The thread reads the same either way.
func TestDurabilityOverHTTP(t *testing.T) {
	roundTrip := func(e *env, thread, durability string) ([]string, int) {
		t.Helper()
		body := runBody(thread, mixedQuestion)
		if durability != "" {
			body["config"].(map[string]any)["durability"] = durability
		}
		res := e.invoke(body)
		if res.Status != "interrupted" || len(res.RemoteToolCalls) != 1 {
			t.Fatalf("%s: first run %+v", thread, res)
		}
		resume := resumeBody(thread, res.RemoteToolCalls[0].ID, "hi")
		if durability != "" {
			resume["config"].(map[string]any)["durability"] = durability
		}
		if res = e.invoke(resume); res.Status != "completed" {
			t.Fatalf("%s: resume %+v", thread, res)
		}
		hist, err := e.svc.App.History(context.Background(), "", thread, 0)
		if err != nil {
			t.Fatal(err)
		}
		return texts(e.thread(thread)), len(hist)
	}
	e := start(t, setup{})
	syncMsgs, syncN := roundTrip(e, "s", "")
	exitMsgs, exitN := roundTrip(e, "x", "exit")
	asyncMsgs, asyncN := roundTrip(e, "a", "async")
	if syncN != 4 || asyncN != 4 || exitN != 2 {
		t.Fatalf("checkpoints: %d with sync and %d with async (want 4: model, tools, the resumed tools, model), %d with exit (want 2: the pause and the end)", syncN, asyncN, exitN)
	}
	if len(syncMsgs) == 0 || !slices.Equal(syncMsgs, exitMsgs) || !slices.Equal(syncMsgs, asyncMsgs) {
		t.Fatalf("the threads differ:\nsync %q\nexit %q\nasync %q", syncMsgs, exitMsgs, asyncMsgs)
	}
	// The resume sent again (a retry after a lost response) gets the
	// recorded outcome from the one checkpoint the resume wrote, and
	// changes nothing.
	first := e.invoke(runBody("r", mixedQuestion))
	resume := resumeBody("r", first.RemoteToolCalls[0].ID, "hi")
	resume["config"].(map[string]any)["durability"] = "exit"
	done := e.invoke(resume)
	before := e.state("r")
	again := e.invoke(resume)
	if again.Status != "completed" || again.RunID != done.RunID || !reflect.DeepEqual(again.Messages, done.Messages) {
		t.Fatalf("the resume again: %+v\nwant the recorded %+v", again, done)
	}
	if e.state("r") != before {
		t.Fatal("a replayed resume changed the thread")
	}

	// The server's default, overridden per request.
	e = start(t, setup{durability: "exit"})
	if _, n := roundTrip(e, "d", ""); n != 2 {
		t.Fatalf("checkpointer.durability exit: %d checkpoints, want 2", n)
	}
	if _, n := roundTrip(e, "o", "sync"); n != 4 {
		t.Fatalf("config.durability sync on an exit server: %d checkpoints, want 4", n)
	}
}

// texts are each message's text, in order.
func texts(r run) []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, string(m.Role)+": "+m.Text())
	}
	return out
}

// An AG-UI client sets a run's durability in forwardedProps.tenxgraph,
// as config.durability: a run that pauses writes one checkpoint with
// "exit" (two with the default, and with "async"). A wrong value is a 400 naming it, and
// nothing runs.
func TestDurabilityOverAGUI(t *testing.T) {
	e := start(t, setup{})
	run := func(thread string, props map[string]any) int {
		t.Helper()
		in := aguiInput(thread, userMsg("u1", mixedQuestion))
		in["forwardedProps"] = props
		evs := e.agui(in)
		if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" {
			t.Fatalf("%s: %+v", thread, last)
		}
		hist, err := e.svc.App.History(context.Background(), "", thread, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(hist)
	}
	if n := run("ag-sync", map[string]any{}); n != 2 {
		t.Fatalf("default: %d checkpoints, want 2 (the model's step, the pause)", n)
	}
	if n := run("ag-exit", map[string]any{"tenxgraph": map[string]any{"durability": "exit"}}); n != 1 {
		t.Fatalf("durability exit: %d checkpoints, want 1 (the pause)", n)
	}
	if n := run("ag-async", map[string]any{"tenxgraph": map[string]any{"durability": "async"}}); n != 2 {
		t.Fatalf("durability async: %d checkpoints, want 2 (the model's step, the pause)", n)
	}
	for _, bad := range []any{"eventually", 1, nil} {
		in := aguiInput("ag-bad", userMsg("u1", mixedQuestion))
		in["forwardedProps"] = map[string]any{"tenxgraph": map[string]any{"durability": bad}}
		errorOf(t, e.do("POST", "/v1/agui", in), 400, "malformed_request", "forwardedProps.tenxgraph.durability: must be \"sync\", \"async\" or \"exit\", got ")
	}
	if r := e.do("GET", "/v1/threads/ag-bad", nil); r.status != 404 {
		t.Fatalf("a refused run created a thread: %d %s", r.status, r.body)
	}
}
