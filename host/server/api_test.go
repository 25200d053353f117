package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
)

var (
	runsCompleted   = `tenxgraph_runs_total{outcome="completed"}`
	runsInterrupted = `tenxgraph_runs_total{outcome="interrupted"}`
	runsRefused     = `tenxgraph_runs_total{outcome="refused"}`
	pauses          = `tenxgraph_pauses_total`
	resumes         = `tenxgraph_resumes_total`
	builtinCalls    = `tenxgraph_tool_calls_total{outcome="ok",provider="builtin"}`
	clientIgnored   = `tenxgraph_client_tools_ignored_total`
	allSeries       = []string{runsCompleted, runsInterrupted, runsRefused, pauses, resumes, builtinCalls}
)

// The seed's loop over the API: a server tool and a remote tool in one
// step pause the thread with the server result saved; the client's result
// resumes it; the server tool ran exactly once; the metrics say so.
func TestInvokePauseResume(t *testing.T) {
	e := start(t, setup{})
	m0 := e.metrics()

	r := e.do("POST", "/v1/graph/invoke", runBody("t1", mixedQuestion))
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	raw := jsonObject(t, r.body)
	if got := sortedKeys(raw); !slices.Equal(got, []string{"messages", "remote_tool_calls", "run_id", "status", "thread_id"}) {
		t.Fatalf("response keys %v", got)
	}
	calls := raw["remote_tool_calls"].([]any)
	if len(calls) != 1 {
		t.Fatalf("remote_tool_calls %v", calls)
	}
	call := calls[0].(map[string]any)
	want := map[string]any{"type": "remote_tool_call", "id": call["id"], "name": "read_clipboard", "arguments": map[string]any{}, "node": "tools", "expires_at": call["expires_at"]}
	if !reflect.DeepEqual(call, want) || call["id"] == "" {
		t.Fatalf("remote call %v, want %v", call, want)
	}
	if s, _ := call["expires_at"].(string); s == "" {
		t.Fatalf("remote call %v has no expires_at", call)
	} else if at, err := time.Parse(time.RFC3339Nano, s); err != nil || !at.After(time.Now()) {
		t.Fatalf("remote call's expires_at %q is not a time to come: %v", s, err)
	}
	res := decodeRun(t, r.body)
	callID := res.RemoteToolCalls[0].ID
	if res.ThreadID != "t1" || res.Status != "interrupted" || res.RunID == "" {
		t.Fatalf("%+v", res)
	}
	// The server tool's result is saved before the pause, in the thread.
	var calcID string
	for _, m := range res.Messages {
		for _, c := range m.ToolCalls() {
			if c.Name == "calculator" {
				calcID = c.ID
			}
		}
	}
	if n := toolResults(res.Messages); calcID == "" || n[calcID] != 1 || n[callID] != 0 {
		t.Fatalf("results after the pause: %v (calculator %q)", n, calcID)
	}
	if !strings.Contains(string(r.body), `"result":14`) {
		t.Fatalf("the calculator's result is not in the thread: %s", r.body)
	}
	m1 := e.metrics()
	if d := delta(m0, m1, allSeries...); !reflect.DeepEqual(d, map[string]float64{runsCompleted: 0, runsInterrupted: 1, runsRefused: 0, pauses: 1, resumes: 0, builtinCalls: 1}) {
		t.Fatalf("metrics after the pause moved by %v", d)
	}
	// The thread is durable: every step is a checkpoint in SQLite.
	hist, err := e.svc.App.History(context.Background(), "", "t1", 0)
	if err != nil || len(hist) < 2 || hist[0].Status != "interrupted" {
		t.Fatalf("history: %d checkpoints, %v", len(hist), err)
	}

	res = e.invoke(resumeBody("t1", callID, map[string]any{"text": "hi"}))
	if res.Status != "completed" || len(res.RemoteToolCalls) != 0 {
		t.Fatalf("resume: %+v", res)
	}
	last := res.Messages[len(res.Messages)-1]
	if last.Role != message.RoleAssistant || last.Text() != "2+3*4 = 14. Your clipboard holds: hi" {
		t.Fatalf("final answer %+v", last)
	}
	if n := toolResults(res.Messages); n[calcID] != 1 || n[callID] != 1 {
		t.Fatalf("results after the resume: %v: every call answered exactly once", n)
	}
	uniqueIDs(t, res.Messages)
	th := e.thread("t1")
	if !reflect.DeepEqual(th.Messages, res.Messages) || th.Status != "completed" {
		t.Fatalf("GET after the resume differs from the run's answer")
	}
	m2 := e.metrics()
	if d := delta(m1, m2, allSeries...); !reflect.DeepEqual(d, map[string]float64{runsCompleted: 1, runsInterrupted: 0, runsRefused: 0, pauses: 0, resumes: 1, builtinCalls: 0}) {
		t.Fatalf("metrics after the resume moved by %v (the calculator must not run again)", d)
	}
	// An empty list is [] on the wire, never null.
	if r := e.do("GET", "/v1/threads/t1", nil); !strings.Contains(string(r.body), `"remote_tool_calls":[]`) {
		t.Fatalf("completed thread: %s", r.body)
	}
}

// A paused thread outlives the server: a new service on the same SQLite
// file resumes it, and the server tool does not run again.
func TestPausedThreadSurvivesRestart(t *testing.T) {
	e := start(t, setup{})
	callID := e.paused("durable")
	before := e.thread("durable")
	e.stop()

	e2 := start(t, setup{dir: e.dir})
	if got := e2.thread("durable"); !reflect.DeepEqual(got, before) {
		t.Fatalf("after a restart the thread is\n%+v\nwant\n%+v", got, before)
	}
	m0 := e2.metrics()
	res := e2.invoke(resumeBody("durable", callID, map[string]any{"text": "kept"}))
	if res.Status != "completed" || !strings.HasSuffix(res.Messages[len(res.Messages)-1].Text(), "Your clipboard holds: kept") {
		t.Fatalf("resume after restart: %+v", res)
	}
	if d := delta(m0, e2.metrics(), builtinCalls, resumes); d[builtinCalls] != 0 || d[resumes] != 1 {
		t.Fatalf("metrics moved by %v", d)
	}
	for id, n := range toolResults(res.Messages) {
		if n != 1 {
			t.Fatalf("call %s has %d results", id, n)
		}
	}
}

// normalized is a response with its run id (which also prefixes the ids of
// the messages the run made) and thread id replaced, so that two runs of
// the same input on two threads compare equal.
var expiresAt = regexp.MustCompile(`"expires_at":"[^"]+"`)

// callIDs matches the host's call ids, which name the thread's life and
// the run (see graph.Update).
var callIDs = regexp.MustCompile(`call_[0-9a-f]+_`)

func normalized(t *testing.T, data []byte) string {
	t.Helper()
	obj := jsonObject(t, data)
	runID, _ := obj["run_id"].(string)
	thread, _ := obj["thread_id"].(string)
	if len(runID) < 12 || thread == "" {
		t.Fatalf("no run_id or thread_id in %s", data)
	}
	s := strings.ReplaceAll(string(data), runID, "RUN")
	s = strings.ReplaceAll(s, runID[:12], "RUN")
	s = expiresAt.ReplaceAllString(s, `"expires_at":"EXPIRES"`) // each call's own deadline
	s = callIDs.ReplaceAllString(s, "call_ID_")
	return strings.ReplaceAll(s, `"thread_id":"`+thread+`"`, `"thread_id":"THREAD"`)
}

// The stream reports progress as named events and ends with "end", whose
// data is exactly what invoke answers for the same run.
func TestStream(t *testing.T) {
	e := start(t, setup{})
	evs := e.stream(runBody("s1", mixedQuestion))
	got := names(evs)
	if got[0] != "run_started" || got[len(got)-1] != "end" {
		t.Fatalf("events %v: want run_started first and end last", got)
	}
	for _, name := range []string{"node_started", "node_finished", "message", "usage", "tool_started", "tool_finished", "interrupted"} {
		if !slices.Contains(got, name) {
			t.Fatalf("no %s event in %v", name, got)
		}
	}
	if slices.Contains(got, "error") || slices.Contains(got, "config_ignored") {
		t.Fatalf("unexpected events in %v", got)
	}
	for _, ev := range evs {
		if !json.Valid([]byte(ev.data)) {
			t.Fatalf("event %s: data is not JSON: %q", ev.event, ev.data)
		}
	}
	var started struct {
		ThreadID string `json:"thread_id"`
		RunID    string `json:"run_id"`
		Resumed  bool   `json:"resumed"`
	}
	if err := json.Unmarshal([]byte(evs[0].data), &started); err != nil || started.ThreadID != "s1" || started.RunID == "" || started.Resumed {
		t.Fatalf("run_started %s", evs[0].data)
	}
	end := evs[len(evs)-1]
	// Invoke the same input on another thread: the same answer, ids aside.
	inv := e.do("POST", "/v1/graph/invoke", runBody("s2", mixedQuestion))
	if n1, n2 := normalized(t, []byte(end.data)), normalized(t, inv.body[:len(inv.body)-1]); n1 != n2 {
		t.Fatalf("end event data\n%s\ndiffers from the invoke response\n%s", n1, n2)
	}
	// The interrupted event names the same calls as end, typed blocks both.
	var interrupted map[string]json.RawMessage
	for _, ev := range evs {
		if ev.event == "interrupted" {
			_ = json.Unmarshal([]byte(ev.data), &interrupted)
		}
	}
	endObj := map[string]json.RawMessage{}
	_ = json.Unmarshal([]byte(end.data), &endObj)
	if string(interrupted["remote_tool_calls"]) != string(endObj["remote_tool_calls"]) || !strings.Contains(string(endObj["remote_tool_calls"]), `"type":"remote_tool_call"`) {
		t.Fatalf("interrupted %s, end %s", interrupted["remote_tool_calls"], endObj["remote_tool_calls"])
	}
	// The tool events name the server call; the remote one is not run here.
	for _, ev := range evs {
		if ev.event == "tool_started" || ev.event == "tool_finished" {
			var te struct{ Name, Provider string }
			_ = json.Unmarshal([]byte(ev.data), &te)
			if te.Name != "calculator" || te.Provider != "builtin" {
				t.Fatalf("%s %s", ev.event, ev.data)
			}
		}
	}
	res := decodeRun(t, []byte(end.data))

	// Resume over the stream: the model's text arrives as deltas that add
	// up to the final message, and end equals the thread as GET shows it.
	evs = e.stream(resumeBody("s1", res.RemoteToolCalls[0].ID, map[string]any{"text": "streamed"}))
	got = names(evs)
	if got[0] != "run_started" || got[len(got)-1] != "end" || !slices.Contains(got, "text_delta") {
		t.Fatalf("resume events %v", got)
	}
	if err := json.Unmarshal([]byte(evs[0].data), &started); err != nil || !started.Resumed {
		t.Fatalf("run_started of a resume: %s", evs[0].data)
	}
	var text strings.Builder
	var msgID string
	for _, ev := range evs {
		if ev.event == "text_delta" {
			var d struct {
				Node, Text string
				MessageID  string `json:"message_id"`
			}
			_ = json.Unmarshal([]byte(ev.data), &d)
			text.WriteString(d.Text)
			msgID = d.MessageID
		}
	}
	final := decodeRun(t, []byte(evs[len(evs)-1].data))
	last := final.Messages[len(final.Messages)-1]
	if final.Status != "completed" || last.ID != msgID || last.Text() != text.String() || !strings.HasSuffix(text.String(), "streamed") {
		t.Fatalf("deltas %q (message %s), final %+v", text.String(), msgID, last)
	}
	th := e.thread("s1")
	if !reflect.DeepEqual(th.Messages, final.Messages) || th.Status != final.Status || len(th.RemoteToolCalls) != 0 {
		t.Fatalf("end differs from GET")
	}
}

// config.remote_tools is server-owned over /v1/graph/*: the stream says it
// was ignored, invoke says so in a header, and the tool is not offered.
func TestClientRemoteToolsDropped(t *testing.T) {
	e := start(t, setup{})
	body := runBody("dropped-stream", "zzconfetti")
	tools := []any{map[string]any{"name": "show_confetti", "description": "Confetti.", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}}
	body["config"].(map[string]any)["remote_tools"] = tools
	evs := e.stream(body)
	if evs[0].event != "config_ignored" {
		t.Fatalf("events %v: want config_ignored first", names(evs))
	}
	var ci map[string]string
	if err := json.Unmarshal([]byte(evs[0].data), &ci); err != nil || ci["key"] != "remote_tools" || ci["reason"] == "" {
		t.Fatalf("config_ignored %s", evs[0].data)
	}
	res := decodeRun(t, []byte(evs[len(evs)-1].data))
	// The model would call show_confetti, which this run does not offer
	// (the scripted model says so instead of calling it): no pause.
	if res.Status != "completed" || len(res.RemoteToolCalls) != 0 || !strings.Contains(res.Messages[len(res.Messages)-1].Text(), "show_confetti, but this step does not offer it") {
		t.Fatalf("a dropped client tool was offered: %+v", res)
	}

	body["config"].(map[string]any)["thread_id"] = "dropped-invoke"
	r := e.do("POST", "/v1/graph/invoke", body)
	if r.status != http.StatusOK || r.header.Get("Tenxgraph-Ignored-Config") != "remote_tools" {
		t.Fatalf("invoke: %d %q %s", r.status, r.header.Get("Tenxgraph-Ignored-Config"), r.body)
	}
	if res := decodeRun(t, r.body); res.Status != "completed" {
		t.Fatalf("invoke: %+v", res)
	}
	// Without remote_tools, no header.
	if r := e.do("POST", "/v1/graph/invoke", runBody("plain", "hello")); r.header.Get("Tenxgraph-Ignored-Config") != "" {
		t.Fatalf("header set without remote_tools")
	}
}

// A stream refused before the run starts answers like invoke: a plain
// status and JSON error, not an event stream.
func TestStreamRefusedBeforeStart(t *testing.T) {
	e := start(t, setup{})
	callID := e.paused("p")
	before := e.state("p")
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
		want   string
	}{
		{"new input while paused", runBody("p", "hello"), 409, "pending_calls", callID},
		{"unknown call", resumeBody("p", "nope", 1), 409, "unknown_call", "nope"},
		{"no thread_id", map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}}, 422, "invalid_input", "config.thread_id"},
		{"malformed", `{"input": [}`, 400, "malformed_request", "invalid JSON"},
		{"unknown key", `{"inputs": {}}`, 400, "malformed_request", "inputs: unknown key"},
		{"results on a new thread", resumeBody("fresh", "x", 1), 409, "not_paused", "x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("POST", "/v1/graph/stream", c.body)
			errorOf(t, r, c.status, c.code, c.want)
		})
	}
	if after := e.state("p"); after != before {
		t.Fatalf("refused streams changed the thread:\n%s\n%s", before, after)
	}
	if r := e.do("GET", "/v1/threads/fresh", nil); r.status != 404 {
		t.Fatalf("a refused stream created a thread: %d", r.status)
	}
}

// GET and DELETE of threads.
func TestThreads(t *testing.T) {
	e := start(t, setup{})
	callID := e.paused("th")
	r := e.do("GET", "/v1/threads/th", nil)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %d %s", r.status, r.body)
	}
	raw := jsonObject(t, r.body)
	if got := sortedKeys(raw); !slices.Equal(got, []string{"messages", "remote_tool_calls", "status", "thread_id"}) {
		t.Fatalf("thread keys %v", got)
	}
	th := decodeRun(t, r.body)
	if th.ThreadID != "th" || th.Status != "interrupted" || len(th.RemoteToolCalls) != 1 || th.RemoteToolCalls[0].ID != callID || len(th.Messages) != 3 {
		t.Fatalf("thread %+v", th)
	}
	if !strings.Contains(string(r.body), `"remote_tool_calls":[{"type":"remote_tool_call"`) {
		t.Fatalf("remote_tool_calls are not typed blocks: %s", r.body)
	}

	errorOf(t, e.do("GET", "/v1/threads/nope", nil), 404, "thread_not_found", `"nope"`)
	errorOf(t, e.do("DELETE", "/v1/threads/nope", nil), 404, "thread_not_found", `"nope"`)

	r = e.do("DELETE", "/v1/threads/th", nil)
	if r.status != http.StatusNoContent || len(r.body) != 0 {
		t.Fatalf("DELETE: %d %q", r.status, r.body)
	}
	errorOf(t, e.do("GET", "/v1/threads/th", nil), 404, "thread_not_found", `"th"`)
	errorOf(t, e.do("DELETE", "/v1/threads/th", nil), 404, "thread_not_found", `"th"`)
	if hist, err := e.svc.App.History(context.Background(), "", "th", 0); err != nil || len(hist) != 0 {
		t.Fatalf("history after DELETE: %d, %v", len(hist), err)
	}
	// The id is free again: a new conversation starts from nothing.
	res := e.invoke(runBody("th", "hello"))
	if res.Status != "completed" || len(res.Messages) != 2 {
		t.Fatalf("after DELETE: %+v", res)
	}
}

func TestHealthAndRoutes(t *testing.T) {
	e := start(t, setup{})
	r := e.do("GET", "/healthz", nil)
	if r.status != 200 {
		t.Fatalf("healthz: %d", r.status)
	}
	h := jsonObject(t, r.body)
	if h["status"] != "ok" || h["agent"] != "tenxgraph:react" || h["tools"] != float64(len(e.svc.Tools())) || h["tools"] == float64(0) {
		t.Fatalf("healthz %s", r.body)
	}
	// Plain counters are there from the start, at 0 (the labelled ones
	// appear with their first observation: TestInvokePauseResume).
	m := e.metrics()
	for _, s := range []string{pauses, resumes, clientIgnored} {
		if v, ok := m[s]; !ok || v != 0 {
			t.Fatalf("metrics: %s is %v (present: %v), want 0", s, v, ok)
		}
	}

	for _, path := range []string{"/v1/nope", "/v1/graph", "/v1/graph/invoke/x", "/v1/threads", "/v1/threads/", "/v1/threads/a/b"} {
		errorOf(t, e.do("GET", path, nil), 404, "not_found", path)
	}
	if r := e.do("GET", "/nope", nil); r.status != 404 {
		t.Fatalf("/nope: %d", r.status)
	}
}

func TestMethodNotAllowed(t *testing.T) {
	e := start(t, setup{})
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/v1/graph/invoke", "POST"},
		{"PUT", "/v1/graph/invoke", "POST"},
		{"DELETE", "/v1/graph/stream", "POST"},
		{"GET", "/v1/agui", "POST"},
		{"POST", "/v1/threads/x", "GET, DELETE"},
		{"PUT", "/v1/threads/x", "GET, DELETE"},
		{"PATCH", "/v1/threads/x", "GET, DELETE"},
	} {
		r := e.do(c.method, c.path, nil)
		errorOf(t, r, 405, "method_not_allowed", c.method, c.path, c.allow)
		if got := r.header.Get("Allow"); got != c.allow {
			t.Fatalf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
	for _, c := range []struct{ method, path string }{{"POST", "/healthz"}, {"POST", "/metrics"}, {"DELETE", "/healthz"}} {
		if r := e.do(c.method, c.path, nil); r.status != 405 {
			t.Fatalf("%s %s: %d", c.method, c.path, r.status)
		}
	}
}

// A thread an AG-UI client started keeps that run's client tools: resumed
// over /v1/graph/stream, they are offered again, and the one named like a
// server tool is reported as ignored.
func TestStreamResumesAGUIThread(t *testing.T) {
	e := start(t, setup{})
	in := aguiInput("mixed-api", userMsg("u1", "zzconfetti"))
	in["tools"] = []any{confettiTool, map[string]any{"name": "calculator", "description": "EVIL", "parameters": map[string]any{"type": "object"}}}
	evs := e.agui(in)
	callID := starts(evs)[0].ToolCallID
	sevs := e.stream(resumeBody("mixed-api", callID, map[string]any{"shown": true}))
	var ignored []map[string]string
	for _, ev := range sevs {
		if ev.event == "tool_ignored" {
			var d map[string]string
			if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
				t.Fatal(err)
			}
			ignored = append(ignored, d)
		}
	}
	if len(ignored) != 1 || ignored[0]["name"] != "calculator" || ignored[0]["node"] != "tools" || ignored[0]["reason"] == "" {
		t.Fatalf("tool_ignored events %v in %v", ignored, names(sevs))
	}
	if res := decodeRun(t, []byte(sevs[len(sevs)-1].data)); res.Status != "completed" {
		t.Fatalf("%+v", res)
	}
}
