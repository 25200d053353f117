package server_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/server"
)

// Every error the graph returns maps to one status and code, however it
// is wrapped.
func TestErrorMapping(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("node %q: %w", "tools", err) }
	for _, c := range []struct {
		err    error
		status int
		code   string
		ids    []string
	}{
		{&graph.StateError{Kind: graph.ErrNotPaused, ThreadID: "t", CallIDs: []string{"a"}}, 409, "not_paused", []string{"a"}},
		{&graph.StateError{Kind: graph.ErrUnknownCall, ThreadID: "t", CallIDs: []string{"a", "b"}}, 409, "unknown_call", []string{"a", "b"}},
		{&graph.StateError{Kind: graph.ErrResultConflict, ThreadID: "t", CallIDs: []string{"a"}}, 409, "result_conflict", []string{"a"}},
		{&graph.StateError{Kind: graph.ErrPendingCalls, ThreadID: "t", CallIDs: []string{"p1", "p2"}}, 409, "pending_calls", []string{"p1", "p2"}},
		{wrap(&graph.StateError{Kind: graph.ErrThreadBusy, ThreadID: "t"}), 409, "thread_busy", nil},
		{fmt.Errorf("thread %q: %w", "t", graph.ErrThreadNotFound), 404, "thread_not_found", nil},
		{fmt.Errorf("%w: messages[0]: bad", graph.ErrInvalidInput), 422, "invalid_input", nil},
		{fmt.Errorf("thread %q: %w: 50 super-steps", "t", graph.ErrStepLimit), 500, "step_limit", nil},
		{errors.New("model: connection refused"), 500, "run_failed", nil},
		{wrap(&http.MaxBytesError{Limit: 10}), 413, "body_too_large", nil},
	} {
		status, body := server.ErrorStatus(c.err)
		if status != c.status || body.Error.Code != c.code || !reflect.DeepEqual(body.Error.CallIDs, c.ids) || body.Error.Message == "" {
			t.Errorf("%v: %d %+v, want %d %s %v", c.err, status, body, c.status, c.code, c.ids)
		}
	}
}

// failingStore is a memory store whose writes fail while fail is set.
type failingStore struct {
	checkpoint.Checkpointer
	fail atomic.Bool
}

func (s *failingStore) Put(ctx context.Context, cp checkpoint.Checkpoint) error {
	if s.fail.Load() {
		return errors.New("disk full (injected)")
	}
	return s.Checkpointer.Put(ctx, cp)
}

// A run that fails is a 500 run_failed on invoke; on a stream that has
// started, an "error" event ends it instead of "end"; AG-UI says RUN_ERROR.
func TestRunFailed(t *testing.T) {
	fs := &failingStore{Checkpointer: checkpoint.NewMemory()}
	e := start(t, setup{store: fs})
	m0 := e.metrics()
	fs.fail.Store(true)

	errorOf(t, e.do("POST", "/v1/graph/invoke", runBody("f1", "hello")), 500, "run_failed", "save checkpoint", "disk full (injected)")
	errorOf(t, e.do("GET", "/v1/threads/f1", nil), 404, "thread_not_found")

	evs := e.stream(runBody("f2", "hello"))
	got := names(evs)
	if got[0] != "run_started" || got[len(got)-1] != "error" || strings.Contains(strings.Join(got, " "), "end") {
		t.Fatalf("events %v: want run_started first, error last, no end", got)
	}
	var b server.ErrorBody
	if err := jsonStrict(evs[len(evs)-1].data, &b); err != nil || b.Error.Code != "run_failed" || !strings.Contains(b.Error.Message, "disk full (injected)") {
		t.Fatalf("error event %s: %v", evs[len(evs)-1].data, err)
	}

	aevs := e.agui(aguiInput("f3", userMsg("u1", "hello")))
	checkAGUI(t, aevs, "f3", "run-f3")
	if last := aevs[len(aevs)-1]; last.Type != "RUN_ERROR" || last.Code != "run_failed" || !strings.Contains(last.Message, "disk full") {
		t.Fatalf("AG-UI: %+v", last)
	}
	if d := delta(m0, e.metrics(), `tenxgraph_runs_total{outcome="failed"}`); d[`tenxgraph_runs_total{outcome="failed"}`] != 3 {
		t.Fatalf("failed runs counted %v, want 3", d)
	}

	// Once the store works again, so do the threads.
	fs.fail.Store(false)
	if res := e.invoke(runBody("f2", "hello")); res.Status != "completed" {
		t.Fatalf("%+v", res)
	}
}

// unreadableStore is a memory store whose reads fail while fail is set.
type unreadableStore struct {
	checkpoint.Checkpointer
	fail atomic.Bool
}

func (s *unreadableStore) Latest(ctx context.Context, id string) (checkpoint.Checkpoint, error) {
	if s.fail.Load() {
		return checkpoint.Checkpoint{}, errors.New("database disk image is malformed (injected)")
	}
	return s.Checkpointer.Latest(ctx, id)
}

// /healthz reflects the store: 503 naming the problem while it cannot be
// read, 200 again once it can.
func TestHealthReflectsStore(t *testing.T) {
	us := &unreadableStore{Checkpointer: checkpoint.NewMemory()}
	e := start(t, setup{store: us})
	if r := e.do("GET", "/healthz", nil); r.status != 200 {
		t.Fatalf("healthz: %d %s", r.status, r.body)
	}
	us.fail.Store(true)
	errorOf(t, e.do("GET", "/healthz", nil), http.StatusServiceUnavailable, "store_unavailable", "checkpoint store", "malformed (injected)")
	us.fail.Store(false)
	if r := e.do("GET", "/healthz", nil); r.status != 200 {
		t.Fatalf("healthz after the store recovered: %d %s", r.status, r.body)
	}
}
