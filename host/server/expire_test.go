package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

// waitStatus polls the thread until its status is want.
func (e *env) waitStatus(thread, want string) run {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		th := e.thread(thread)
		if th.Status == want {
			return th
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("thread %s is %s after %v, want %s", thread, th.Status, waitLimit, want)
		}
		time.Sleep(20 * time.Millisecond) // polling
	}
}

// A remote call no client answers expires by itself: responses, stream
// events and AG-UI interrupts carry its deadline, the server answers it with
// an error result and the run goes on to the model, and a late result gets
// 409 expired, over the API and over AG-UI, changing nothing.
func TestPendingCallExpires(t *testing.T) {
	e := start(t, setup{memory: true, remoteTimeout: "1s"})
	m0 := e.metrics()
	before := time.Now()
	r := e.invoke(runBody("exp", mixedQuestion))
	if r.Status != "interrupted" || len(r.RemoteToolCalls) != 1 {
		t.Fatalf("not paused: %+v", r)
	}
	call := r.RemoteToolCalls[0]
	if d := call.ExpiresAt.Sub(before); d < 900*time.Millisecond || d > time.Second+waitLimit {
		t.Fatalf("expires_at %v is %v after the request, want about 1s", call.ExpiresAt, d)
	}
	// The stream's interrupted event carries it too.
	var sawExpiry bool
	for _, ev := range e.stream(runBody("exp-stream", mixedQuestion)) {
		if ev.event != "interrupted" {
			continue
		}
		var d struct {
			RemoteToolCalls []struct {
				ExpiresAt time.Time `json:"expires_at"`
			} `json:"remote_tool_calls"`
		}
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil || len(d.RemoteToolCalls) != 1 || d.RemoteToolCalls[0].ExpiresAt.IsZero() {
			t.Fatalf("interrupted event %s: %v", ev.data, err)
		}
		sawExpiry = true
	}
	if !sawExpiry {
		t.Fatal("no interrupted event")
	}
	// AG-UI interrupts carry expiresAt.
	in := aguiInput("exp-agui", userMsg("u1", mixedQuestion))
	in["forwardedProps"] = map[string]any{"tenxgraph": map[string]any{"interrupts": true}}
	evs := e.agui(in)
	fin := evs[len(evs)-1]
	if fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 {
		t.Fatalf("outcome %+v", fin.Outcome)
	}
	if at, err := time.Parse(time.RFC3339Nano, fin.Outcome.Interrupts[0].ExpiresAt); err != nil || at.Before(before) {
		t.Fatalf("AG-UI expiresAt %q: %v", fin.Outcome.Interrupts[0].ExpiresAt, err)
	}
	aguiCall := fin.Outcome.Interrupts[0].ToolCallID

	// Nobody answers: the thread completes by itself, with an error result.
	th := e.waitStatus("exp", "completed")
	if got := time.Since(before); got > 1*time.Second+waitLimit {
		t.Fatalf("expired after %v", got)
	}
	var result string
	for _, m := range th.Messages {
		for _, tr := range m.ToolResults() {
			if tr.ToolCallID == call.ID {
				if !tr.IsError {
					t.Fatalf("the expired call's result is not an error: %s", tr.Content)
				}
				_ = json.Unmarshal(tr.Content, &result)
			}
		}
	}
	if !strings.Contains(result, "the client did not answer within 1s") {
		t.Fatalf("expired call's result %q", result)
	}
	if last := th.Messages[len(th.Messages)-1]; last.Role != "assistant" {
		t.Fatalf("the run did not go on to the model: last message %+v", last)
	}
	n := len(th.Messages)
	late := e.do("POST", "/v1/graph/invoke", resumeBody("exp", call.ID, "too late"))
	errorOf(t, late, http.StatusConflict, "expired", call.ID)
	if th := e.thread("exp"); len(th.Messages) != n || th.Status != "completed" {
		t.Fatalf("a late result changed the thread: %d messages, %s", len(th.Messages), th.Status)
	}

	// Over AG-UI, a late result is a RUN_ERROR with the code.
	e.waitStatus("exp-agui", "completed")
	e.waitStatus("exp-stream", "completed")
	const expiredCalls = "tenxgraph_remote_calls_expired_total"
	if d := delta(m0, e.metrics(), expiredCalls); d[expiredCalls] != 3 {
		t.Fatalf("metrics: %v, want 3 calls expired", d)
	}
	in = aguiInput("exp-agui", userMsg("u1", mixedQuestion), toolMsg("t-late", aguiCall, `"too late"`))
	evs = e.agui(in)
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "expired" || !strings.Contains(last.Message, aguiCall) {
		t.Fatalf("AG-UI late result: %+v", last)
	}
}

// Calls of one step with different timeouts expire one at a time: the
// expired one is answered by the server, the other stays pending with its
// own deadline. A late result for the expired one is refused over AG-UI
// with the code, even while the thread still waits for the other; the
// other's result then completes the run.
func TestPartialExpiryOverAGUI(t *testing.T) {
	e := start(t, setup{memory: true, toolTimeouts: map[string]string{"read_clipboard": "1s"}})
	in := aguiInput("part", userMsg("u1", "zztwo"))
	evs := e.agui(in)
	checkAGUI(t, evs, "part", "run-part")
	calls := e.thread("part").RemoteToolCalls
	if len(calls) != 2 || calls[0].Name != "read_clipboard" || calls[1].Name != "get_selection" {
		t.Fatalf("pending %+v", calls)
	}
	if d := calls[1].ExpiresAt.Sub(calls[0].ExpiresAt); d < 9*time.Minute {
		t.Fatalf("get_selection expires %v after read_clipboard, want about 10m (the default) - 1s", d)
	}
	deadline := time.Now().Add(waitLimit)
	for {
		th := e.thread("part")
		if th.Status == "interrupted" && len(th.RemoteToolCalls) == 1 && th.RemoteToolCalls[0].ID == calls[1].ID {
			break
		}
		if time.Now().After(deadline) || th.Status != "interrupted" {
			t.Fatalf("after read_clipboard's deadline: %s %+v", th.Status, th.RemoteToolCalls)
		}
		time.Sleep(20 * time.Millisecond) // polling
	}
	late := aguiInput("part", userMsg("u1", "zztwo"), toolMsg("t-late", calls[0].ID, `"too late"`))
	evs = e.agui(late)
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "expired" || !strings.Contains(last.Message, calls[0].ID) {
		t.Fatalf("late result while the other call is pending: %+v", last)
	}
	if th := e.thread("part"); th.Status != "interrupted" || len(th.RemoteToolCalls) != 1 {
		t.Fatalf("a refused late result changed the thread: %s %+v", th.Status, th.RemoteToolCalls)
	}
	evs = e.agui(aguiInput("part", userMsg("u1", "zztwo"), toolMsg("t-sel", calls[1].ID, `"selected"`)))
	checkAGUI(t, evs, "part", "run-part")
	th := e.thread("part")
	if th.Status != "completed" {
		t.Fatalf("after the timely result: %s", th.Status)
	}
	results := map[string]message.ToolResultBlock{}
	for _, m := range th.Messages {
		for _, r := range m.ToolResults() {
			results[r.ToolCallID] = r
		}
	}
	if r := results[calls[0].ID]; !r.IsError || !strings.Contains(string(r.Content), "did not answer within 1s") {
		t.Fatalf("read_clipboard's result %+v", r)
	}
	if r := results[calls[1].ID]; r.IsError || string(r.Content) != `"selected"` {
		t.Fatalf("get_selection's result %+v", r)
	}
}
