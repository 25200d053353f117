package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The HTTP surface of approval gates: the paused response and the thread
// list approval_requests; the stream reports each; an approval block
// answers; AG-UI shows them as interrupts when opted in and otherwise
// ends with a RUN_ERROR saying what to do.
func TestApprovalOverHTTP(t *testing.T) {
	e := start(t, setup{memory: true, approve: []any{"calculator"}})
	body := map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "what is 2+3*4"}}},
		"config": map[string]any{"thread_id": "ap"}}
	r := e.do("POST", "/v1/graph/stream", body)
	if r.status != http.StatusOK {
		t.Fatalf("stream: %d %s", r.status, r.body)
	}
	var requested, end string
	for _, ev := range readSSE(t, r.body) {
		switch ev.event {
		case "approval_requested":
			requested = ev.data
		case "end":
			end = ev.data
		}
	}
	var paused struct {
		Status           string `json:"status"`
		ApprovalRequests []struct {
			Type, ID, Name, Node string
			Arguments            json.RawMessage
		} `json:"approval_requests"`
	}
	if err := json.Unmarshal([]byte(end), &paused); err != nil || paused.Status != "interrupted" || len(paused.ApprovalRequests) != 1 {
		t.Fatalf("end %s (%v)", end, err)
	}
	req := paused.ApprovalRequests[0]
	if req.Type != "approval_request" || req.Name != "calculator" || req.Node != "tools" || !strings.Contains(requested, req.ID) {
		t.Fatalf("request %+v, event %s", req, requested)
	}
	if g := e.do("GET", "/v1/threads/ap", nil); !strings.Contains(string(g.body), `"approval_requests":[{"type":"approval_request","id":"`+req.ID+`"`) {
		t.Fatalf("GET thread: %s", g.body)
	}
	// A result for the approval is refused with 422/400, changing nothing.
	bad := map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "tool", "content": []any{
		map[string]any{"type": "tool_result", "tool_call_id": req.ID, "content": 14}}}}}, "config": map[string]any{"thread_id": "ap"}}
	if b := e.do("POST", "/v1/graph/invoke", bad); b.status/100 != 4 || !strings.Contains(string(b.body), "approval") {
		t.Fatalf("tool_result for an approval: %d %s", b.status, b.body)
	}
	ok := map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "tool", "content": []any{
		map[string]any{"type": "approval", "tool_call_id": req.ID, "approved": true}}}}}, "config": map[string]any{"thread_id": "ap"}}
	res := e.invoke(ok)
	if res.Status != "completed" || !strings.Contains(res.Messages[len(res.Messages)-1].Text(), "14") {
		t.Fatalf("after approval: %+v", res)
	}
	// The same approval again: the thread is no longer paused (409).
	if again := e.do("POST", "/v1/graph/invoke", ok); again.status != http.StatusConflict {
		t.Fatalf("approval again: %d %s", again.status, again.body)
	}

	// AG-UI without interrupts: a clear RUN_ERROR.
	evs := e.agui(aguiInput("ap-agui", userMsg("u1", "what is 2+3*4")))
	if last := evs[len(evs)-1]; last.Type != "RUN_ERROR" || last.Code != "approval_required" || !strings.Contains(last.Message, "interrupts") {
		t.Fatalf("AG-UI without interrupts: %+v", last)
	}
	// With interrupts: an approval interrupt, answered with resume[].
	in := aguiInput("ap-int", userMsg("u1", "what is 2+3*4"))
	in["forwardedProps"] = map[string]any{"tenxgraph": map[string]any{"interrupts": true}}
	evs = e.agui(in)
	fin := evs[len(evs)-1]
	if fin.Type != "RUN_FINISHED" || fin.Outcome == nil || len(fin.Outcome.Interrupts) != 1 || fin.Outcome.Interrupts[0].Reason != "approval" {
		t.Fatalf("AG-UI with interrupts: %+v", fin)
	}
	id := fin.Outcome.Interrupts[0].ID
	resume := aguiInput("ap-int")
	resume["runId"] = "run-resume"
	resume["forwardedProps"] = in["forwardedProps"]
	resume["resume"] = []any{map[string]any{"interruptId": id, "status": "cancelled"}}
	evs = e.agui(resume)
	if last := evs[len(evs)-1]; last.Type != "RUN_FINISHED" || last.Outcome != nil {
		t.Fatalf("AG-UI resume: %+v", last)
	}
	th := e.thread("ap-int")
	var denied bool
	for _, m := range th.Messages {
		for _, r := range m.ToolResults() {
			denied = denied || r.ToolCallID == id && r.IsError && strings.Contains(string(r.Content), "cancelled by the user")
		}
	}
	if th.Status != "completed" || !denied {
		t.Fatalf("after cancelling the approval: %+v", th)
	}
}
