package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// appendTo returns a function appending a line to the file at path: the
// tools of the crash tests count their runs there, across processes.
func appendTo(path string) func(line string) error {
	return func(line string) error {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.WriteString(line + "\n")
		return err
	}
}

// reactOnSQLite is the react agent both processes of a crash test build:
// its model calls first on a user message and quotes the results after
// them, deciding from the thread alone as a real model does (so the second
// process needs no memory of the first); tools serve the "tools" node,
// with the remote tools attached; the store is SQLite at dbPath.
func reactOnSQLite(t testing.TB, dbPath string, tools sdk.Provider, remote []graph.RemoteToolConfig, first ...message.ToolCallBlock) (*thread.App, func()) {
	stepAware := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == message.RoleTool {
			return model.Response{Message: quoting(req)}, nil
		}
		return model.Response{Message: calls(first...)(req)}, nil
	})
	g, err := agent.React(context.Background(), agent.Env{Model: stepAware, Providers: map[string][]sdk.Provider{"tools": {tools}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachRemoteTools(remote); err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.OpenSQLite(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(g, cp)
	if err != nil {
		t.Fatal(err)
	}
	return app, func() { cp.Close() }
}

// crashApp builds the app both processes use: a server tool that records
// each run in a file (so runs are counted across processes) and the remote
// clipboard tool, on SQLite at dbPath.
func crashApp(t testing.TB, dbPath, countPath string) (*thread.App, func()) {
	record := appendTo(countPath)
	log := sdk.MustTools("journal", "1",
		sdk.Func("record", "Record a line.", json.RawMessage(`{"type":"object","properties":{"line":{"type":"string"}},"required":["line"]}`),
			func(ctx context.Context, args json.RawMessage) (any, error) {
				return "recorded", record(string(args))
			}))
	return reactOnSQLite(t, dbPath, log, []graph.RemoteToolConfig{clipboard}, call("w1", "record", `{"line":"x"}`), call("w2", "read_clipboard", `{}`))
}

// TestCrashChild is the process that gets killed; it only runs when the
// parent test starts it.
func TestCrashChild(t *testing.T) {
	db, count := os.Getenv("TENXGRAPH_CRASH_DB"), os.Getenv("TENXGRAPH_CRASH_COUNT")
	if db == "" {
		t.Skip("run by TestKillBetweenPauseAndResume")
	}
	app, _ := crashApp(t, db, count)
	res, err := app.Invoke(ctx, user("record and read"), thread.RunConfig{ThreadID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.RemoteToolCalls)
	os.Stdout.WriteString("PAUSED " + string(raw) + "\n")
	select {} // wait to be killed
}

// The host is killed with SIGKILL while the thread is paused; a new process
// resumes it on the same SQLite file: nothing is lost and the server tool
// that ran before the pause does not run again.
func TestKillBetweenPauseAndResume(t *testing.T) {
	dir := t.TempDir()
	db, count := filepath.Join(dir, "state.db"), filepath.Join(dir, "runs.txt")
	var pending []message.RemoteToolCallBlock
	cmd := pausedChild(t, "TestCrashChild", []string{"TENXGRAPH_CRASH_DB=" + db, "TENXGRAPH_CRASH_COUNT=" + count}, &pending)
	if len(pending) != 1 || pending[0].Name != "read_clipboard" {
		cmd.Process.Kill()
		t.Fatalf("child did not pause on read_clipboard: %+v", pending)
	}
	killChild(t, cmd)

	app, closeStore := crashApp(t, db, count)
	defer closeStore()
	th, err := app.Thread(ctx, "crash")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != graph.StatusInterrupted || len(th.RemoteToolCalls) != 1 || th.RemoteToolCalls[0].ID != pending[0].ID {
		t.Fatalf("after the crash the thread is %s with %+v", th.Status, th.RemoteToolCalls)
	}
	ids := hostIDs(t, th.Messages, "w1", "w2")
	res, err := app.Invoke(ctx, results(result(ids["w2"], `{"text":"from the clipboard"}`)), thread.RunConfig{ThreadID: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	if got := res.Messages[len(res.Messages)-1].Text(); got != withHostIDs(ids, `w1="recorded" w2={"text":"from the clipboard"}`) {
		t.Fatalf("final answer %q", got)
	}
	runs, err := os.ReadFile(count)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "\n"); n != 1 {
		t.Fatalf("the server tool ran %d times across the crash, want exactly 1", n)
	}
}

// pausedChild runs the test named child in a subprocess of this test
// binary with env added, reads what it prints after "PAUSED " (JSON) into
// pending, and returns the subprocess, still running.
func pausedChild(t *testing.T, child string, env []string, pending any) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "PAUSED "); ok {
			if err := json.Unmarshal([]byte(rest), pending); err != nil {
				cmd.Process.Kill()
				t.Fatal(err)
			}
			break
		}
	}
	return cmd
}

// killChild kills a paused child with SIGKILL, which runs none of its code,
// and checks that is how it ended.
func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("child exit: %v, want killed", err)
	}
}
