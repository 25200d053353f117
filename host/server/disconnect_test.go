package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	runsCancelled = `tenxgraph_runs_total{outcome="cancelled"}`
	runsFailed    = `tenxgraph_runs_total{outcome="failed"}`
)

// slowPage is a page the http_fetch tool reads: each request waits until
// the test releases it, or until the fetch is cancelled, which it reports.
type slowPage struct {
	srv       *httptest.Server
	entered   chan string // the request path, when a fetch arrives
	cancelled chan string // the request path, when a fetch is cancelled
	mu        sync.Mutex
	release   chan struct{}
}

func newSlowPage(t *testing.T) *slowPage {
	p := &slowPage{entered: make(chan string, 16), cancelled: make(chan string, 16), release: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		release := p.release
		p.mu.Unlock()
		p.entered <- r.URL.Path
		select {
		case <-release:
			w.Header().Set("Content-Type", "text/plain")
			_, _ = w.Write([]byte("slow page " + r.URL.Path))
		case <-r.Context().Done():
			p.cancelled <- r.URL.Path
		}
	}))
	t.Cleanup(func() {
		p.open()
		p.srv.Close()
	})
	return p
}

// open lets every fetch, waiting or to come, finish.
func (p *slowPage) open() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.release:
	default:
		close(p.release)
	}
}

// host is the allow_hosts entry that lets http_fetch reach the page: its
// loopback address in CIDR form, with its port.
func (p *slowPage) host() string {
	return "127.0.0.1/32:" + strings.TrimPrefix(p.srv.URL, "http://127.0.0.1:")
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// abandon posts body to path and hangs up once the run is inside the
// slow tool (the page's fetch has arrived), as a client whose tab closes.
func (e *env) abandon(page *slowPage, path string, body any, wantPath string) {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", e.url+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	done := make(chan error, 1)
	go func() {
		res, err := e.client.Do(req)
		if err == nil {
			// A stream answers its headers at once; read until hung up.
			_, err = bytes.NewBuffer(nil).ReadFrom(res.Body)
			res.Body.Close()
		}
		done <- err
	}()
	if got := waitFor(e.t, page.entered, "the tool's fetch"); got != wantPath {
		e.t.Fatalf("fetch of %s, want %s", got, wantPath)
	}
	if st := e.thread(threadOf(body)).Status; st != "running" {
		e.t.Fatalf("while the tool runs the thread is %q, want running", st)
	}
	cancel()
	if err := waitFor(e.t, done, "the client to hang up"); !errors.Is(err, context.Canceled) {
		e.t.Fatalf("the client request ended with %v, want it cancelled", err)
	}
}

func threadOf(body any) string {
	m := body.(map[string]any)
	if id, ok := m["threadId"].(string); ok {
		return id
	}
	return m["config"].(map[string]any)["thread_id"].(string)
}

// settled polls the thread until no run holds it and returns it.
func (e *env) settled(id string) run {
	e.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		th := e.thread(id)
		if th.Status != "running" {
			return th
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("thread %s is still running", id)
		}
		time.Sleep(10 * time.Millisecond) // polling, with the deadline above
	}
}

// A client that hangs up while its run is inside a server tool, with the
// default server.on_disconnect ("cancel"): the tool's work is cancelled,
// the thread says "cancelled" (never "running" without a run), and it
// resumes from its last checkpoint: a call without input runs the cut step
// again, new input starts a new turn, and a remote call of that step is
// answerable afterwards. For invoke, stream and AG-UI alike.
func TestDisconnectCancels(t *testing.T) {
	page := newSlowPage(t)
	e := start(t, setup{fetchHost: page.host()})
	m0 := e.metrics()
	cases := []struct {
		path, thread string
		body         any
	}{
		{"/v1/graph/invoke", "d-invoke", runBody("d-invoke", "zzfetch "+page.srv.URL+"/invoke")},
		{"/v1/graph/stream", "d-stream", runBody("d-stream", "zzfetch "+page.srv.URL+"/stream")},
		{"/v1/agui", "d-agui", aguiInput("d-agui", userMsg("u-agui", "zzfetch "+page.srv.URL+"/agui"))},
		{"/v1/graph/invoke", "d-mix", runBody("d-mix", "zzslowmix "+page.srv.URL+"/mix")},
	}
	for _, c := range cases {
		want := strings.TrimPrefix(c.thread, "d-")
		e.abandon(page, c.path, c.body, "/"+want)
		if got := waitFor(t, page.cancelled, "the fetch to be cancelled"); got != "/"+want {
			t.Fatalf("%s: cancelled fetch of %s", c.path, got)
		}
		th := e.settled(c.thread)
		if th.Status != "cancelled" {
			t.Fatalf("%s: after the client left the thread is %q, want cancelled", c.path, th.Status)
		}
		// The input is kept and the model's call too; no result for the
		// cut call was invented.
		if len(th.Messages) != 2 || th.Messages[0].Role != "user" || len(th.Messages[1].ToolCalls()) == 0 || len(toolResults(th.Messages)) != 0 {
			t.Fatalf("%s: cancelled thread holds %+v", c.path, th.Messages)
		}
	}
	// A run is counted as it returns, a moment after its thread settled.
	d := delta(m0, e.metrics(), runsCancelled, runsCompleted, runsFailed)
	for deadline := time.Now().Add(5 * time.Second); d[runsCancelled] < 4 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		d = delta(m0, e.metrics(), runsCancelled, runsCompleted, runsFailed)
	}
	if d[runsCancelled] != 4 || d[runsCompleted]+d[runsFailed] != 0 {
		t.Fatalf("metrics moved by %v: want four cancelled runs, none completed or failed", d)
	}

	page.open()
	// A call without input runs the cut step again, to the end.
	r := e.invoke(map[string]any{"config": map[string]any{"thread_id": "d-invoke"}})
	if r.Status != "completed" || !strings.Contains(r.Messages[len(r.Messages)-1].Text(), "slow page /invoke") {
		t.Fatalf("resumed invoke thread: %+v", r)
	}
	// New input starts a new turn after the cut one.
	evs := e.stream(runBody("d-stream", "hello"))
	if last := evs[len(evs)-1]; last.event != "end" || decodeRun(t, []byte(last.data)).Status != "completed" {
		t.Fatalf("new input on the cancelled stream thread: %v", names(evs))
	}
	ag := e.agui(aguiInput("d-agui", userMsg("u-agui", "zzfetch "+page.srv.URL+"/agui"), userMsg("u-agui-2", "hello")))
	if last := ag[len(ag)-1]; last.Type != "RUN_FINISHED" {
		t.Fatalf("new input on the cancelled AG-UI thread: %v", eventTypes(ag))
	}
	if st := e.thread("d-agui").Status; st != "completed" {
		t.Fatalf("AG-UI thread after new input: %s", st)
	}
	// The step with a server and a remote call runs again and pauses on
	// the remote call, which the client then answers.
	r = e.invoke(map[string]any{"config": map[string]any{"thread_id": "d-mix"}})
	if r.Status != "interrupted" || len(r.RemoteToolCalls) != 1 || r.RemoteToolCalls[0].Name != "read_clipboard" {
		t.Fatalf("resumed mixed thread: %+v", r)
	}
	r = e.invoke(resumeBody("d-mix", r.RemoteToolCalls[0].ID, map[string]any{"text": "hi"}))
	if r.Status != "completed" {
		t.Fatalf("answering the remote call: %+v", r)
	}
	for id, n := range toolResults(r.Messages) {
		if n != 1 {
			t.Fatalf("call %s has %d results", id, n)
		}
	}
}

// With server.on_disconnect "continue", a run whose client hung up goes on
// to the end: the tool is not cancelled and the thread is completed with
// its result. For invoke, stream and AG-UI alike.
func TestDisconnectContinues(t *testing.T) {
	page := newSlowPage(t)
	e := start(t, setup{fetchHost: page.host(), server: map[string]any{"on_disconnect": "continue"}})
	for _, c := range []struct {
		path, thread string
		body         any
	}{
		{"/v1/graph/invoke", "c-invoke", runBody("c-invoke", "zzfetch "+page.srv.URL+"/invoke")},
		{"/v1/graph/stream", "c-stream", runBody("c-stream", "zzfetch "+page.srv.URL+"/stream")},
		{"/v1/agui", "c-agui", aguiInput("c-agui", userMsg("u-c", "zzfetch "+page.srv.URL+"/agui"))},
	} {
		want := "/" + strings.TrimPrefix(c.thread, "c-")
		e.abandon(page, c.path, c.body, want)
		// The run holds on without its client: the thread stays running
		// until the tool is released.
		if st := e.thread(c.thread).Status; st != "running" {
			t.Fatalf("%s: with its client gone the thread is %q, want still running", c.path, st)
		}
		page.mu.Lock()
		release := page.release
		page.release = make(chan struct{})
		page.mu.Unlock()
		close(release)
		th := e.settled(c.thread)
		if th.Status != "completed" || !strings.Contains(th.Messages[len(th.Messages)-1].Text(), "slow page "+want) {
			t.Fatalf("%s: thread after the run went on alone: %+v", c.path, th)
		}
		select {
		case p := <-page.cancelled:
			t.Fatalf("%s: the fetch of %s was cancelled", c.path, p)
		default:
		}
	}
}

// A shutdown whose grace period is over cancels the runs still going,
// through the same mechanism: the client, still connected, is told
// run_cancelled, and the thread records "cancelled", not "running". The
// server continues runs on disconnect here, so only the shutdown can
// have cancelled this one.
func TestShutdownCancelsRuns(t *testing.T) {
	page := newSlowPage(t)
	e := start(t, setup{fetchHost: page.host(), server: map[string]any{"on_disconnect": "continue"}})
	got := make(chan resp, 1)
	go func() { got <- e.do("POST", "/v1/graph/invoke", runBody("s-1", "zzfetch "+page.srv.URL+"/shutdown")) }()
	waitFor(t, page.entered, "the tool's fetch")
	over, cancel := context.WithCancel(context.Background())
	cancel() // no grace left
	if err := e.srv.Shutdown(over); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with a run in flight and no grace: %v", err)
	}
	if p := waitFor(t, page.cancelled, "the fetch to be cancelled"); p != "/shutdown" {
		t.Fatalf("cancelled fetch of %s", p)
	}
	errorOf(t, waitFor(t, got, "the invoke answer"), http.StatusServiceUnavailable, "run_cancelled", "shutting down", "call it again without input")
	th, err := e.svc.App.Thread(context.Background(), "s-1")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != "cancelled" {
		t.Fatalf("after the shutdown the thread is %q, want cancelled", th.Status)
	}
}
