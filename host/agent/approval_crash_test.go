package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// approvalCrashApp is crashApp with the journal's "record" tool gated: each
// run of either tool appends its name to the count file, so runs are
// counted across processes.
func approvalCrashApp(t testing.TB, dbPath, countPath string) (*thread.App, func()) {
	appendLine := appendTo(countPath)
	tools := sdk.MustTools("journal", "1",
		sdk.Func("record", "Record a line.", json.RawMessage(`{"type":"object","properties":{"line":{"type":"string"}},"required":["line"]}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				return "recorded", appendLine("record " + string(args))
			}),
		sdk.Func("note", "Note something.", json.RawMessage(`{"type":"object"}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				return "noted", appendLine("note")
			}))
	return reactOnSQLite(t, dbPath, toolnode.RequireApproval(tools, []string{"record"}), nil, call("n1", "note", `{}`), call("g1", "record", `{"line":"x"}`))
}

// TestApprovalCrashChild is the process that gets killed; it only runs
// when the parent test starts it.
func TestApprovalCrashChild(t *testing.T) {
	db, count := os.Getenv("TENXGRAPH_APPROVAL_CRASH_DB"), os.Getenv("TENXGRAPH_APPROVAL_CRASH_COUNT")
	if db == "" {
		t.Skip("run by TestKillBetweenApprovalRequestAndApproval")
	}
	app, _ := approvalCrashApp(t, db, count)
	res, err := app.Invoke(ctx, user("note and record"), thread.RunConfig{ThreadID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.ApprovalRequests)
	os.Stdout.WriteString("PAUSED " + string(raw) + "\n")
	select {} // wait to be killed
}

// The host is killed with SIGKILL while a call waits for approval; a new
// process finds the request, takes the approval and runs the tool once,
// and the plain tool of the same step is not run again.
func TestKillBetweenApprovalRequestAndApproval(t *testing.T) {
	dir := t.TempDir()
	db, count := filepath.Join(dir, "state.db"), filepath.Join(dir, "runs.txt")
	var pending []message.ApprovalRequestBlock
	cmd := pausedChild(t, "TestApprovalCrashChild", []string{"TENXGRAPH_APPROVAL_CRASH_DB=" + db, "TENXGRAPH_APPROVAL_CRASH_COUNT=" + count}, &pending)
	if len(pending) != 1 || pending[0].Name != "record" {
		cmd.Process.Kill()
		t.Fatalf("child did not pause on the record call: %+v", pending)
	}
	killChild(t, cmd)

	app, closeStore := approvalCrashApp(t, db, count)
	defer closeStore()
	th, err := app.Thread(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != graph.StatusInterrupted || len(th.ApprovalRequests) != 1 || th.ApprovalRequests[0].ID != pending[0].ID {
		t.Fatalf("after the crash the thread is %s with %+v", th.Status, th.ApprovalRequests)
	}
	ids := hostIDs(t, th.Messages, "n1", "g1")
	res, err := app.Invoke(ctx, approval(ids["g1"], true, ""), thread.RunConfig{ThreadID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Messages[len(res.Messages)-1].Text(); res.Status != graph.StatusCompleted || got != withHostIDs(ids, `n1="noted" g1="recorded"`) {
		t.Fatalf("status %s, final answer %q", res.Status, got)
	}
	runs, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(runs); got != "note\nrecord {\"line\":\"x\"}\n" {
		t.Fatalf("tool runs across both processes:\n%s\nwant note once, then record once", got)
	}
}
