package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// gatedTools is a provider with a dangerous tool that needs approval
// ("wipe", counted) beside a plain one ("echo", counted).
type gatedTools struct {
	wipes, echoes atomic.Int32
	*sdk.Tools
}

func newGated() *gatedTools {
	g := &gatedTools{}
	g.Tools = sdk.MustTools("ops", "1.0.0",
		sdk.Func("wipe", "Wipe a disk.", json.RawMessage(`{"type":"object","properties":{"disk":{"type":"string"}},"required":["disk"]}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				g.wipes.Add(1)
				var in struct{ Disk string }
				_ = json.Unmarshal(args, &in)
				return "wiped " + in.Disk, nil
			}),
		sdk.Func("echo", "Echo.", json.RawMessage(`{"type":"object","properties":{"s":{"type":"string"}}}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				g.echoes.Add(1)
				return "echoed", nil
			}))
	return g
}

type approvalFixture struct {
	app   *thread.App
	model *plan
	ops   *gatedTools
}

func buildGated(t *testing.T, cp checkpoint.Checkpointer, steps ...func(model.Request) message.Message) approvalFixture {
	t.Helper()
	f := approvalFixture{model: &plan{steps: steps}, ops: newGated()}
	g, err := agent.React(context.Background(), agent.Env{Model: f.model,
		Providers: map[string][]sdk.Provider{"tools": {toolnode.RequireApproval(f.ops, []string{"wipe"})}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachRemoteTools([]graph.RemoteToolConfig{clipboard}); err != nil {
		t.Fatal(err)
	}
	if f.app, err = thread.Compile(g, cp); err != nil {
		t.Fatal(err)
	}
	return f
}

func approval(id string, ok bool, reason string) []message.Message {
	return []message.Message{{Role: message.RoleTool, Content: []message.Block{message.ApprovalBlock{ToolCallID: id, Approved: ok, Reason: reason}}}}
}

// Approved: the tool runs once, after the approval, with the model's
// arguments; the model sees its result.
func TestApprovalApproved(t *testing.T) {
	stores(t, func(t *testing.T, cp checkpoint.Checkpointer) {
		f := buildGated(t, cp, calls(call("w1", "wipe", `{"disk":"sdb"}`)), quoting)
		cfg := thread.RunConfig{ThreadID: "a"}
		res, err := f.app.Invoke(ctx, user("wipe sdb"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != graph.StatusInterrupted || len(res.ApprovalRequests) != 1 || len(res.RemoteToolCalls) != 0 {
			t.Fatalf("first run: %s approvals %+v remote %+v", res.Status, res.ApprovalRequests, res.RemoteToolCalls)
		}
		w1 := hostIDs(t, res.Messages, "w1")["w1"]
		req := res.ApprovalRequests[0]
		if req.ID != w1 || req.Name != "wipe" || req.Node != "tools" || string(req.Arguments) != `{"disk":"sdb"}` {
			t.Fatalf("approval request %+v", req)
		}
		if n := f.ops.wipes.Load(); n != 0 {
			t.Fatalf("the gated tool ran %d times before approval", n)
		}
		th, err := f.app.Thread(ctx, "a")
		if err != nil || len(th.ApprovalRequests) != 1 || th.ApprovalRequests[0].ID != w1 {
			t.Fatalf("thread lists %+v (%v)", th.ApprovalRequests, err)
		}
		// A tool_result is not an answer to an approval request.
		if _, err := f.app.Invoke(ctx, results(result(w1, `"fake"`)), cfg); !errors.Is(err, graph.ErrInvalidInput) {
			t.Fatalf("tool_result for an approval: %v, want ErrInvalidInput", err)
		}
		res, err = f.app.Invoke(ctx, approval(w1, true, ""), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != graph.StatusCompleted {
			t.Fatalf("after approval: %s", res.Status)
		}
		if n := f.ops.wipes.Load(); n != 1 {
			t.Fatalf("the approved tool ran %d times, want 1", n)
		}
		if got := res.Messages[len(res.Messages)-1].Text(); got != w1+`="wiped sdb"` {
			t.Fatalf("final answer %q", got)
		}
		// The same approval again is a retry: accepted on a paused thread,
		// refused (not paused) here, and the tool never runs again.
		if _, err := f.app.Invoke(ctx, approval(w1, true, ""), cfg); !errors.Is(err, graph.ErrNotPaused) {
			t.Fatalf("approval on a completed thread: %v", err)
		}
		if n := f.ops.wipes.Load(); n != 1 {
			t.Fatalf("the approved tool ran %d times, want 1", n)
		}
	})
}

// Denied: the tool never runs; the model gets an error result with the
// reason.
func TestApprovalDenied(t *testing.T) {
	stores(t, func(t *testing.T, cp checkpoint.Checkpointer) {
		f := buildGated(t, cp, calls(call("w1", "wipe", `{"disk":"sda"}`)), quoting)
		cfg := thread.RunConfig{ThreadID: "d"}
		res, err := f.app.Invoke(ctx, user("wipe sda"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		w1 := res.ApprovalRequests[0].ID
		res, err = f.app.Invoke(ctx, approval(w1, false, "that is the system disk"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != graph.StatusCompleted || f.ops.wipes.Load() != 0 {
			t.Fatalf("status %s, wipes %d", res.Status, f.ops.wipes.Load())
		}
		var denied *message.ToolResultBlock
		for _, m := range f.model.last().Messages {
			for _, r := range m.ToolResults() {
				if r.ToolCallID == w1 {
					denied = &r
				}
			}
		}
		if denied == nil || !denied.IsError || !strings.Contains(string(denied.Content), "that is the system disk") {
			t.Fatalf("the model saw %+v, want an error result with the reason", denied)
		}
	})
}

// One step mixing an approval, a remote tool and a plain server tool: the
// server tool runs and is saved before the pause, the answers come in two
// requests in any order, and each tool runs exactly once.
func TestApprovalMixedStep(t *testing.T) {
	stores(t, func(t *testing.T, cp checkpoint.Checkpointer) {
		f := buildGated(t, cp, calls(call("e1", "echo", `{}`), call("w1", "wipe", `{"disk":"sdc"}`), call("r1", "read_clipboard", `{}`)), quoting)
		cfg := thread.RunConfig{ThreadID: "m"}
		res, err := f.app.Invoke(ctx, user("all three"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != graph.StatusInterrupted || len(res.ApprovalRequests) != 1 || len(res.RemoteToolCalls) != 1 {
			t.Fatalf("first run: %s %+v %+v", res.Status, res.ApprovalRequests, res.RemoteToolCalls)
		}
		ids := hostIDs(t, res.Messages, "e1", "w1", "r1")
		if f.ops.echoes.Load() != 1 || f.ops.wipes.Load() != 0 {
			t.Fatalf("echo ran %d, wipe %d before the answers", f.ops.echoes.Load(), f.ops.wipes.Load())
		}
		// New input is refused while anything is open, naming both.
		var se *graph.StateError
		if _, err := f.app.Invoke(ctx, user("hello"), cfg); !errors.As(err, &se) || !errors.Is(err, graph.ErrPendingCalls) || len(se.CallIDs) != 2 {
			t.Fatalf("new input while paused: %v", err)
		}
		// The approval first: still paused for the remote result.
		res, err = f.app.Invoke(ctx, approval(ids["w1"], true, ""), cfg)
		if err != nil || res.Status != graph.StatusInterrupted || len(res.ApprovalRequests) != 0 || len(res.RemoteToolCalls) != 1 {
			t.Fatalf("after the approval: %v %s %+v %+v", err, res.Status, res.ApprovalRequests, res.RemoteToolCalls)
		}
		if f.ops.wipes.Load() != 0 {
			t.Fatal("the approved tool ran before every answer was in")
		}
		// A different answer to the approval is a conflict.
		if _, err := f.app.Invoke(ctx, approval(ids["w1"], false, "changed my mind"), cfg); !errors.Is(err, graph.ErrResultConflict) {
			t.Fatalf("changed approval: %v, want ErrResultConflict", err)
		}
		res, err = f.app.Invoke(ctx, results(result(ids["r1"], `{"text":"clip"}`)), cfg)
		if err != nil || res.Status != graph.StatusCompleted {
			t.Fatalf("after the result: %v %s", err, res.Status)
		}
		if f.ops.echoes.Load() != 1 || f.ops.wipes.Load() != 1 {
			t.Fatalf("echo ran %d, wipe %d; want 1 each", f.ops.echoes.Load(), f.ops.wipes.Load())
		}
		if got := res.Messages[len(res.Messages)-1].Text(); got != withHostIDs(ids, `e1="echoed" w1="wiped sdc" r1={"text":"clip"}`) {
			t.Fatalf("final answer %q: one result per call, in call order", got)
		}
	})
}

// Duplicate approvals sent at once: the tool runs once, and every request
// either succeeds or is a state conflict.
func TestApprovalConcurrentDuplicates(t *testing.T) {
	stores(t, func(t *testing.T, cp checkpoint.Checkpointer) {
		f := buildGated(t, cp, calls(call("w1", "wipe", `{"disk":"sdd"}`)), quoting)
		cfg := thread.RunConfig{ThreadID: "c"}
		res, err := f.app.Invoke(ctx, user("wipe"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		w1 := res.ApprovalRequests[0].ID
		var wg sync.WaitGroup
		var ok atomic.Int32
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = f.app.Invoke(ctx, approval(w1, true, ""), cfg)
				if errs[i] == nil {
					ok.Add(1)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil && !errors.Is(err, graph.ErrStateConflict) {
				t.Fatalf("duplicate approval: %v, want success or a state conflict", err)
			}
		}
		if ok.Load() == 0 {
			t.Fatal("no approval went through")
		}
		if n := f.ops.wipes.Load(); n != 1 {
			t.Fatalf("the tool ran %d times, want 1", n)
		}
		th, _ := f.app.Thread(ctx, "c")
		if th.Status != graph.StatusCompleted {
			t.Fatalf("thread %s", th.Status)
		}
	})
}
