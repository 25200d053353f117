package service_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/toolnode"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// These tests run the MCP bridge as the host does (`<this binary> plugin
// mcp`, see TestMain) against the pinned npm servers of
// plugins/mcp/testdata/npm, which scripts/test.sh installs.

func mcpModules(t *testing.T) string {
	t.Helper()
	nm, err := filepath.Abs("../../plugins/mcp/testdata/npm/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nm, "@modelcontextprotocol", "server-filesystem")); err != nil {
		t.Skipf("skipping: the pinned MCP test servers are not installed (run `npm ci` in %s, as scripts/test.sh does)", filepath.Dir(nm))
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	return nm
}

// startConfig writes the script and the config into a folder and starts
// the service; it is shut down when the test ends.
func startConfig(t *testing.T, cfgJSON, scriptJSON string) *service.Service {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(scriptJSON), 0o600)
	cfg, err := config.Parse([]byte(cfgJSON), dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.New(context.Background(), cfg, service.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s
}

func js(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

type streamed struct {
	res      graph.Result
	started  []string // provider:name of tool_started
	progress []toolnode.ToolProgress
}

func stream(t *testing.T, s *service.Service, threadID string, input []message.Message) streamed {
	t.Helper()
	var out streamed
	for ev, err := range s.App.Stream(context.Background(), input, thread.RunConfig{ThreadID: threadID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case toolnode.ToolEvent:
			if ev.Type == toolnode.EventToolStarted {
				out.started = append(out.started, d.Provider+":"+d.Name)
			}
		case toolnode.ToolProgress:
			out.progress = append(out.progress, d)
		case graph.Result:
			out.res = d
		}
	}
	return out
}

// The seed's scenario with an MCP tool: the model calls a server-filesystem
// tool and a remote tool in one step. The graph pauses with the MCP tool's
// result saved; the resume runs nothing again (the file was edited once);
// progress notifications of a long MCP tool arrive as tool_progress events.
func TestMCPToolAndRemoteToolInOneStep(t *testing.T) {
	nm := mcpModules(t)
	data := t.TempDir()
	counter := filepath.Join(data, "count.txt")
	if err := os.WriteFile(counter, []byte("count:\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := `{"rules": [
	  {"match": "count", "tool_calls": [
	    {"name": "edit_file", "arguments": {"path": ` + js(counter) + `, "edits": [{"oldText": "count:", "newText": "count:I"}]}},
	    {"name": "read_clipboard", "arguments": {}}],
	   "then": "Counted. The clipboard holds {{field 1 \"text\"}}."},
	  {"match": "progress", "tool_calls": [{"name": "trigger-long-running-operation", "arguments": {"duration": 1, "steps": 4}}]}
	]}`
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
	  "mcp_servers": {
	    "files": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js"))+`, `+js(data)+`]},
	    "everything": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"],
	                   "allow_tools": ["trigger-long-running-operation"], "timeout": "20s"}
	  }}`, script)

	r := stream(t, s, "t1", []message.Message{message.Text(message.RoleUser, "count")})
	if r.res.Status != graph.StatusInterrupted || len(r.res.RemoteToolCalls) != 1 || r.res.RemoteToolCalls[0].Name != "read_clipboard" {
		t.Fatalf("first run: %+v", r.res)
	}
	if !slices.Equal(r.started, []string{"mcp:edit_file"}) {
		t.Fatalf("server tools started: %v", r.started)
	}
	saved := r.res.Messages[len(r.res.Messages)-1].ToolResults()
	if len(saved) != 1 || saved[0].IsError || !strings.Contains(string(saved[0].Content), "count:I") {
		t.Fatalf("the MCP tool's saved result: %+v", saved)
	}

	answer := message.Message{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{
		ToolCallID: r.res.RemoteToolCalls[0].ID, Content: json.RawMessage(`{"text": "hello"}`)}}}
	r = stream(t, s, "t1", []message.Message{answer})
	if r.res.Status != graph.StatusCompleted || len(r.started) != 0 {
		t.Fatalf("resume: status %s, tools run again: %v", r.res.Status, r.started)
	}
	last := r.res.Messages[len(r.res.Messages)-1]
	if last.Role != message.RoleAssistant || !strings.Contains(last.Text(), "The clipboard holds hello") {
		t.Fatalf("final answer: %+v", last)
	}
	if got, _ := os.ReadFile(counter); string(got) != "count:I\n" {
		t.Fatalf("the file after the pause and resume: %q; the MCP tool must have run exactly once", got)
	}

	// A client tool named like an MCP tool is not offered: the MCP tool
	// keeps its name, and the run says it ignored the client's.
	var ignored []string
	cfg := thread.RunConfig{ThreadID: "t3", Configurable: remotetool.Configurable([]json.RawMessage{json.RawMessage(`{"name": "edit_file", "description": "a client edit_file"}`)})}
	for ev, err := range s.App.Stream(context.Background(), []message.Message{message.Text(message.RoleUser, "hello")}, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := ev.Data.(toolnode.ToolIgnored); ok {
			ignored = append(ignored, d.Name)
		}
	}
	if !slices.Equal(ignored, []string{"edit_file"}) {
		t.Fatalf("ignored client tools %v, want [edit_file]", ignored)
	}

	r = stream(t, s, "t2", []message.Message{message.Text(message.RoleUser, "progress")})
	if r.res.Status != graph.StatusCompleted || len(r.progress) < 3 {
		t.Fatalf("progress run: %s, %d progress events", r.res.Status, len(r.progress))
	}
	if p := r.progress[0]; p.Provider != "mcp" || p.Name != "trigger-long-running-operation" || p.Total != 4 || p.Progress != 1 || p.Node != "tools" {
		t.Fatalf("progress event %+v", p)
	}
}

// A tool the MCP server adds at run time (tools/list_changed) is offered
// from then on; names shared between servers, or with another provider's
// tool, are prefixed with the server's key and listed so by Tools (what
// `tenxgraph tools` prints).
func TestMCPListChangedAndCollisions(t *testing.T) {
	nm := mcpModules(t)
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../plugins/mcp/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("build the Go test server: %v\n%s", err, out)
	}
	script := `{"rules": [
	  {"match": "add", "tool_calls": [{"name": "add_tool", "arguments": {"name": "late_tool"}}]},
	  {"match": "late", "tool_calls": [{"name": "late_tool", "arguments": {"text": "new tool"}}]},
	  {"match": "both", "tool_calls": [{"name": "ev__echo", "arguments": {"message": "a"}}, {"name": "go__echo", "arguments": {"text": "b"}}]}
	]}`
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "remote_tools": [{"name": "sleep", "description": "A client tool.", "parameters": {"type": "object", "properties": {}}}],
	  "mcp_servers": {
	    "ev": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"], "allow_tools": ["echo"]},
	    "go": {"command": `+js(bin)+`},
	    "off": {"command": "/nonexistent", "disabled": true}
	  }}`, script)

	tools := map[string]string{}
	for _, ti := range s.Tools() {
		tools[ti.Name] = ti.Provider
	}
	for name, provider := range map[string]string{"ev__echo": "mcp", "go__echo": "mcp", "go__sleep": "mcp", "sleep": "remote", "add_tool": "mcp", "big": "mcp"} {
		if tools[name] != provider {
			t.Errorf("tool %s: provider %q, want %q (tools: %v)", name, tools[name], provider, tools)
		}
	}
	if _, ok := tools["echo"]; ok {
		t.Error("an unprefixed echo is listed")
	}
	res, err := s.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "both")}, thread.RunConfig{ThreadID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Messages[len(res.Messages)-2].ToolResults()
	if len(rs) != 2 || string(rs[0].Content) != `"Echo: a"` || string(rs[1].Content) != `"b"` {
		t.Fatalf("results %+v", rs)
	}

	res, err = s.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "add")}, thread.RunConfig{ThreadID: "l"})
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatal(err, res.Status)
	}
	listed := func() bool {
		for _, ti := range s.Tools() {
			if ti.Name == "late_tool" {
				return true
			}
		}
		return false
	}
	for end := time.Now().Add(10 * time.Second); !listed(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the added tool never reached the node")
		}
	}
	res, err = s.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "late")}, thread.RunConfig{ThreadID: "l"})
	if err != nil {
		t.Fatal(err)
	}
	rs = res.Messages[len(res.Messages)-2].ToolResults()
	if len(rs) != 1 || rs[0].IsError || string(rs[0].Content) != `"new tool"` {
		t.Fatalf("the added tool's result: %+v", rs)
	}
}

// A server's timeout and its tool_timeouts travel from the file to the
// bridge, which cuts a call off by them and names the key that did: the
// test server reports progress every 100ms, later than either timeout, so
// each call would otherwise run its full 5s.
func TestMCPTimeoutsReachTheBridge(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "testserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../plugins/mcp/internal/testserver").CombinedOutput(); err != nil {
		t.Fatalf("build the Go test server: %v\n%s", err, out)
	}
	script := `{"rules": [{"match": "sleep", "tool_calls": [
	  {"name": "short__sleep", "arguments": {"ms": 5000}}, {"name": "tool__sleep", "arguments": {"ms": 5000}}]}]}`
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {
	    "short": {"command": `+js(bin)+`, "allow_tools": ["sleep"], "timeout": "50ms"},
	    "tool": {"command": `+js(bin)+`, "allow_tools": ["sleep"], "timeout": "30s", "tool_timeouts": {"sleep": "60ms"}}
	  }}`, script)
	started := time.Now()
	res, err := s.App.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "sleep")}, thread.RunConfig{ThreadID: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(started); d > 4*time.Second {
		t.Errorf("the calls were cut off after %s", d)
	}
	rs := res.Messages[len(res.Messages)-2].ToolResults()
	if len(rs) != 2 {
		t.Fatalf("results %+v", rs)
	}
	for i, want := range []string{"within 50ms (mcp_servers.short.timeout)", "within 60ms (mcp_servers.tool.tool_timeouts.sleep)"} {
		if !rs[i].IsError || !strings.Contains(string(rs[i].Content), want) {
			t.Errorf("result %d: %s, want an error saying %q", i, rs[i].Content, want)
		}
	}
}

// An unset ${VAR} is reported at its config path before anything starts.
func TestMCPUnsetVariable(t *testing.T) {
	os.Unsetenv("TENXGRAPH_TEST_NO_SUCH_VAR")
	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "s.json"},
	  "mcp_servers": {"x": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TENXGRAPH_TEST_NO_SUCH_VAR}"}}}}`), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, err = service.New(context.Background(), cfg, service.Options{})
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.x.headers.Authorization: environment variable TENXGRAPH_TEST_NO_SUCH_VAR is not set") {
		t.Fatalf("error %v", err)
	}
}
