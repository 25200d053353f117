package service_test

import (
	"syscall"

	"github.com/tenxgraph/tenxgraph/internal/proctest"

	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

var (
	hostileOnce sync.Once
	hostileBin  string
	hostileErr  error
)

// hostile builds the misbehaving test plugin once per test binary.
func hostile(t *testing.T) string {
	t.Helper()
	hostileOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hostile")
		if err != nil {
			hostileErr = err
			return
		}
		tempDirs = append(tempDirs, dir)
		hostileBin = filepath.Join(dir, "hostile")
		if out, err := exec.Command("go", "build", "-o", hostileBin, "./testdata/hostile").CombinedOutput(); err != nil {
			hostileErr = fmt.Errorf("build the hostile plugin: %v\n%s", err, out)
		}
	})
	if hostileErr != nil {
		t.Fatal(hostileErr)
	}
	return hostileBin
}

// marked lists the live processes whose environment holds
// HOSTILE_MARK=mark: a hostile plugin, an MCP server and what they started.
func marked(mark string) []int { return proctest.Marked("HOSTILE_MARK", mark) }

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// environOf reads a process's environment as a map.
func environOf(t *testing.T, pid int) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatalf("read the environment of %d: %v", pid, err)
	}
	out := map[string]string{}
	for _, kv := range strings.Split(string(raw), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// descendants are every process below pid.
func descendants(pid int) map[int]string {
	out := map[int]string{}
	for c, cmd := range children(pid) {
		out[c] = cmd
		for d, dcmd := range descendants(c) {
			out[d] = dcmd
		}
	}
	return out
}

// hostileScript answers each word with a call of the tool of that name.
const hostileScript = `{"rules": [
  {"match": "^ok$", "tool_calls": [{"name": "ok", "arguments": {}}]},
  {"match": "^calc$", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]},
  {"match": "^forkbomb$", "tool_calls": [{"name": "forkbomb", "arguments": {}}]},
  {"match": "^spin$", "tool_calls": [{"name": "spin", "arguments": {}}]},
  {"match": "^hog$", "tool_calls": [{"name": "hog", "arguments": {}}]},
  {"match": "^fork50$", "tool_calls": [{"name": "fork", "arguments": {"n": 50, "crash": true}}]},
  {"match": "^fork5$", "tool_calls": [{"name": "fork", "arguments": {"n": 5}}]},
  {"match": "^mcpcrash$", "tool_calls": [{"name": "mcp_crash", "arguments": {}}]},
  {"match": "^dial (.*)$", "tool_calls": [{"name": "dial", "arguments": {"addr": "$1"}}]},
  {"match": "^read (.*)$", "tool_calls": [{"name": "readfile", "arguments": {"path": "$1"}}]},
  {"match": "^write (.*)$", "tool_calls": [{"name": "writefile", "arguments": {"path": "$1"}}]}
]}`

// toolResult runs one turn and returns its one tool result.
func toolResult(t *testing.T, s *service.Service, threadID, text string) message.ToolResultBlock {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, text)}, thread.RunConfig{ThreadID: threadID})
	if err != nil {
		t.Fatalf("%s: the run failed instead of giving a result: %v", text, err)
	}
	var got []message.ToolResultBlock
	for _, m := range res.Messages {
		got = append(got, m.ToolResults()...)
	}
	if len(got) != 1 {
		t.Fatalf("%s: %d tool results, want 1: %+v", text, len(got), got)
	}
	return got[0]
}

func startHostile(t *testing.T, pluginExtra, rest string) *service.Service {
	t.Helper()
	return startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "builtin_tools": {"enable": ["calculator"]},
	  "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`]`+pluginExtra+`}]`+rest+`}`, hostileScript)
}

// Secrets in the host's environment reach no provider and no MCP server;
// a variable a profile passes does.
func TestProvidersGetNoSecrets(t *testing.T) {
	secrets := map[string]string{"TENXGRAPH_TOKEN": "tok-123", "OPENAI_API_KEY": "sk-test", "DATABASE_URL": "postgres://u:p@h/db", "TENX_SECRET": "s3cret"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("GITHUB_TOKEN", "gh-pass-me")
	mark := "secrets" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	s := startHostile(t, `, "env": {"HOSTILE_MARK": "`+mark+`"}, "pass_env": ["GITHUB_TOKEN"]`,
		`, "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+`"}, "pass_env": ["GITHUB_TOKEN"]}}`)
	_ = s
	kids := descendants(os.Getpid())
	if len(kids) < 5 {
		t.Fatalf("want builtin, remote, hostile, the MCP bridge and its server running: %v", kids)
	}
	for pid, cmd := range kids {
		env := environOf(t, pid)
		for k := range secrets {
			if _, ok := env[k]; ok {
				t.Errorf("%s (%d) can read %s", cmd, pid, k)
			}
		}
		for _, k := range []string{"TENXGRAPH_BUILTIN_OPTIONS", "TENXGRAPH_MCP_OPTIONS"} {
			if _, ok := env[k]; ok {
				t.Errorf("%s (%d) has its options in its environment (%s)", cmd, pid, k)
			}
		}
		if strings.Contains(cmd, " "+sandbox.ExecArg+" init ") {
			// A provider's init, the sandbox's own: only its instructions.
			if len(env) != 2 || env["GOMAXPROCS"] != "1" {
				t.Errorf("%s (%d): the sandbox's init has an environment of its own: %v", cmd, pid, env)
			}
			continue
		}
		if home := env["HOME"]; home == os.Getenv("HOME") || home == "" || env["TMPDIR"] != home {
			t.Errorf("%s (%d): HOME %q, TMPDIR %q: want a private folder", cmd, pid, home, env["TMPDIR"])
		}
	}
	passed := 0
	for _, pid := range marked(mark) {
		if env := environOf(t, pid); env["GITHUB_TOKEN"] == "gh-pass-me" {
			passed++
		}
	}
	if passed < 2 {
		t.Errorf("GITHUB_TOKEN reached %d marked processes, want the plugin and the MCP server", passed)
	}

	// A profile that names a secret of the host is refused at validate.
	_, err := config.Parse([]byte(`{"agent": "a", "server": {"auth": {"tokens_env": ["TENXGRAPH_TOKEN"]}},
	  "model": {"provider": "openai", "model": "m"}, "checkpointer": {"type": "postgres", "dsn_env": "DATABASE_URL"},
	  "provider_defaults": {"pass_env": ["OPENAI_API_KEY"]},
	  "plugins": [{"name": "p", "command": ["p"], "pass_env": ["HOME", "TENXGRAPH_TOKEN"]}],
	  "mcp_servers": {"m": {"command": "x", "env": {"K": "${DATABASE_URL}"}, "pass_env": ["DATABASE_URL"]}}}`), t.TempDir())
	for _, want := range []string{"provider_defaults.pass_env[0]: OPENAI_API_KEY", "plugins[0].pass_env[1]: TENXGRAPH_TOKEN", "mcp_servers.m.pass_env[0]: DATABASE_URL", "mcp_servers.m.env.K: ${DATABASE_URL}"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: want a problem %q, got %v", want, err)
		}
	}
}

// A fork bomb, a CPU spinner and a memory hog are each stopped by their
// limit: the model gets an error result, the plugin restarts, and the host
// keeps serving.
func TestHostilePluginIsBoundedByItsLimits(t *testing.T) {
	mark := "limits" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	s := startHostile(t, `, "env": {"HOSTILE_MARK": "`+mark+`"}, "limits": {"processes": 40, "cpu_seconds": 2, "memory_mb": 256}`, "")
	pidOf := func() string {
		r := toolResult(t, s, "ok-"+strconv.FormatInt(time.Now().UnixNano(), 10), "ok")
		if r.IsError {
			t.Fatalf("ok: %s", r.Content)
		}
		return string(r.Content)
	}
	for _, tool := range []string{"forkbomb", "spin", "hog"} {
		before := pidOf()
		r := toolResult(t, s, tool, tool)
		if !r.IsError || !strings.Contains(string(r.Content), `plugin \"hostile\"`) {
			t.Fatalf("%s: want an error result naming the plugin, got %s", tool, r.Content)
		}
		if n := len(marked(mark)); n > 41 {
			t.Fatalf("%s: %d processes marked, above the limit of 40", tool, n)
		}
		after := pidOf()
		if after == before {
			t.Fatalf("%s: the plugin was not restarted (%s)", tool, after)
		}
		if r := toolResult(t, s, tool+"-calc", "calc"); r.IsError {
			t.Fatalf("the host stopped serving other threads: %s", r.Content)
		}
	}
	eventually(t, 5*time.Second, "the fork bomb's children are gone", func() bool { return len(marked(mark)) <= 1 })
}

// Nothing a plugin or an MCP server started survives it: not after the
// plugin crashes, not after the MCP server crashes, not after a graceful
// stop.
func TestNothingSurvivesItsProvider(t *testing.T) {
	mark := "orphans" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	s := startHostile(t, `, "env": {"HOSTILE_MARK": "`+mark+`"}`,
		`, "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+"-mcp"+`"}}}`)
	eventually(t, 10*time.Second, "the MCP server and its child run", func() bool { return len(marked(mark+"-mcp")) == 2 })

	// A plugin that forks 50 children and crashes.
	r := toolResult(t, s, "f50", "fork50")
	if !r.IsError {
		t.Fatalf("fork50: %s", r.Content)
	}
	eventually(t, 10*time.Second, "the crashed plugin's 50 children are gone", func() bool { return len(marked(mark)) <= 1 })

	// An MCP server with a child, crashing.
	first := marked(mark + "-mcp")
	r = toolResult(t, s, "mc", "mcpcrash")
	if !r.IsError {
		t.Fatalf("mcp_crash: %s", r.Content)
	}
	eventually(t, 10*time.Second, "the crashed MCP server's child is gone", func() bool {
		for _, pid := range marked(mark + "-mcp") {
			for _, old := range first {
				if pid == old {
					return false
				}
			}
		}
		return true
	})

	// The bridge killed with SIGKILL runs none of its code: its server and
	// the server's child go with it all the same.
	eventually(t, 10*time.Second, "the restarted MCP server and its child run", func() bool { return len(marked(mark+"-mcp")) == 2 })
	before := marked(mark + "-mcp")
	bridge := mcpBridge(t)
	if err := syscall.Kill(bridge, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the killed bridge's server and its child are gone", func() bool {
		for _, pid := range before {
			if proctest.Alive(pid) {
				return false
			}
		}
		return true
	})

	// A graceful stop, with children running under both.
	if r := toolResult(t, s, "f5", "fork5"); r.IsError {
		t.Fatalf("fork5: %s", r.Content)
	}
	eventually(t, 10*time.Second, "the restarted MCP server and its child run", func() bool { return len(marked(mark+"-mcp")) == 2 })
	if n := len(marked(mark)); n < 6 {
		t.Fatalf("%d marked processes, want the plugin and its 5 children", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "nothing is left after a graceful stop", func() bool { return len(marked(mark))+len(marked(mark+"-mcp")) == 0 })
}

// A provider with network "none" cannot reach a listener on the host's
// loopback; one with the host's network can. Where the kernel refuses a
// network namespace, the start fails with an error naming the key.
func TestNetworkNone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	open := startHostile(t, "", "")
	if r := toolResult(t, open, "d1", "dial "+ln.Addr().String()); r.IsError || !strings.Contains(string(r.Content), "connected") {
		t.Fatalf("with the host's network: %s", r.Content)
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(hostileScript), 0o600)
	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`], "network": "none"}]}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.New(context.Background(), cfg, service.Options{})
	if err != nil {
		if !strings.Contains(err.Error(), "plugins[0].network") {
			t.Fatalf("the kernel refused, but the error does not name the key: %v", err)
		}
		t.Logf("saw: the kernel refused a network namespace, and the start failed naming plugins[0].network: %v", err)
		return
	}
	defer s.Shutdown(context.Background())
	t.Log("saw: network namespaces are available; the isolated provider runs")
	r := toolResult(t, s, "d2", "dial "+ln.Addr().String())
	if !r.IsError {
		t.Fatalf("a provider with network none reached the host's loopback: %s", r.Content)
	}
	var detail any
	_ = json.Unmarshal(r.Content, &detail)
	t.Logf("isolated dial: %v", detail)
}

// A host running as root starts a provider as the account its profile
// names.
func TestProviderRunsAsItsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: only a host running as root can start a provider as another user")
	}
	bin := hostile(t)
	// The account must reach the binary: the folder os.MkdirTemp made is 0700.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	mark := "user" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	s := startHostile(t, `, "user": "nobody", "env": {"HOSTILE_MARK": "`+mark+`"}`, "")
	if r := toolResult(t, s, "u", "ok"); r.IsError {
		t.Fatalf("ok: %s", r.Content)
	}
	pids := marked(mark)
	if len(pids) != 1 {
		t.Fatalf("marked processes %v, want the plugin", pids)
	}
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "status"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t65534\t65534\t65534\t65534\n") {
		t.Fatalf("the plugin does not run as nobody:\n%s", status)
	}
}

// require_approval on an MCP server gates its tools by the server's own
// names, whatever name the bridge gives them on the node; a name the server
// does not have stops the start, at its path.
func TestMCPRequireApproval(t *testing.T) {
	mark := "approve" + strconv.Itoa(os.Getpid())
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+`"},
	    "require_approval": ["mcp_environ"]}}}`,
		`{"rules": [{"match": "^env$", "tool_calls": [{"name": "mcp_environ", "arguments": {}}]}]}`)
	ctx := context.Background()
	res, err := s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, "env")}, thread.RunConfig{ThreadID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || len(res.ApprovalRequests) != 1 || res.ApprovalRequests[0].Name != "mcp_environ" {
		t.Fatalf("want a pause for approval: %s %+v", res.Status, res.ApprovalRequests)
	}
	for _, m := range res.Messages {
		if len(m.ToolResults()) > 0 {
			t.Fatalf("the tool ran before it was approved: %+v", m)
		}
	}
	approve := []message.Message{{Role: message.RoleTool, Content: []message.Block{message.ApprovalBlock{ToolCallID: res.ApprovalRequests[0].ID, Approved: true}}}}
	res, err = s.App.Invoke(ctx, approve, thread.RunConfig{ThreadID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	var got []message.ToolResultBlock
	for _, m := range res.Messages {
		got = append(got, m.ToolResults()...)
	}
	if res.Status != graph.StatusCompleted || len(got) != 1 || got[0].IsError || !strings.Contains(string(got[0].Content), "HOSTILE_MARK="+mark) {
		t.Fatalf("after approval: %s %+v", res.Status, got)
	}

	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [{"match": "x", "text": "x"}]}`), 0o600)
	cfg, err := config.Parse([]byte(`{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"], "require_approval": ["mcp_environ", "rm_rf"]}}}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := service.New(ctx, cfg, service.Options{})
	if err == nil {
		bad.Shutdown(ctx)
		t.Fatal("a require_approval name the server does not have was accepted")
	}
	if !strings.Contains(err.Error(), `mcp_servers.evil.require_approval[1]: the server has no tool "rm_rf"`) {
		t.Fatalf("error %v, want one naming mcp_servers.evil.require_approval[1]", err)
	}
}

// A provider confined with filesystem reads and writes only what its
// profile lists; a secret beside it stays unread, and a file outside its
// write list unwritten.
func TestFilesystemConfinement(t *testing.T) {
	allowed, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(allowed, "ok.txt"), []byte("fine"), 0o644)
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("s3cret"), 0o600)
	out := filepath.Join(t.TempDir(), "out")
	os.Mkdir(out, 0o755)
	s := startHostile(t, `, "filesystem": {"read": [`+js(allowed)+`], "write": [`+js(out)+`]}`, "")
	if r := toolResult(t, s, "f1", "read "+filepath.Join(allowed, "ok.txt")); r.IsError || !strings.Contains(string(r.Content), "fine") {
		t.Fatalf("reading a listed file: %s", r.Content)
	}
	if r := toolResult(t, s, "f2", "read "+secret); !r.IsError || !strings.Contains(string(r.Content), "permission denied") {
		t.Fatalf("reading a file outside the list: %s", r.Content)
	}
	if r := toolResult(t, s, "f3", "write "+filepath.Join(out, "new.txt")); r.IsError {
		t.Fatalf("writing into the write list: %s", r.Content)
	}
	if r := toolResult(t, s, "f4", "write "+filepath.Join(allowed, "ok.txt")); !r.IsError {
		t.Fatalf("writing a file that is only readable: %s", r.Content)
	}
	if b, _ := os.ReadFile(filepath.Join(allowed, "ok.txt")); string(b) != "fine" {
		t.Fatalf("the read-only file now holds %q", b)
	}
}

// The builtin file tools keep their workspace under a filesystem profile
// that does not list it.
func TestFilesystemKeepsTheWorkspace(t *testing.T) {
	ws := t.TempDir()
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "builtin_tools": {"enable": ["write_file"], "workspace": {"root": `+js(ws)+`}, "filesystem": {"read": []}}}`,
		`{"rules": [{"match": "^w$", "tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "kept"}}]}]}`)
	if r := toolResult(t, s, "w", "w"); r.IsError {
		t.Fatalf("write_file in the workspace: %s", r.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("the workspace file: %q %v", b, err)
	}
	if p := s.Profiles(); !strings.Contains(fmt.Sprint(p), "filesystem: read nothing listed") {
		t.Fatalf("tools shows %v", p)
	}
}

// secretValues puts real-looking secrets in the test host's environment
// (what tokens_env, api_key_env, dsn_env and libpq read) and returns their
// values.
func secretValues(t *testing.T) []string {
	t.Helper()
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	secrets := map[string]string{
		"TENXGRAPH_TOKEN": "tok-" + tag, "OPENAI_API_KEY": "sk-" + tag,
		"DATABASE_URL": "postgres://app:pw-" + tag + "@db/app", "PGPASSWORD": "pg-" + tag,
	}
	var values []string
	for k, v := range secrets {
		t.Setenv(k, v)
		values = append(values, v)
	}
	return values
}

// snoopResult is the hostile plugin's snoop tool's answer.
type snoopResult struct {
	Seen     int      `json:"seen"`
	Environs int      `json:"environs"`
	Found    []string `json:"found"`
}

// A hostile plugin with the default profile reads every /proc/*/environ
// and /proc/*/cmdline it can see, and its own environment: the secret a
// sibling provider was given is in none of them, nor the host's secrets.
// (A variable set by this test is not in this process's /proc/PID/environ,
// which holds the environment it was started with: the host's own
// environment is attacked with a real serve, in cmd/tenxgraph.)
func TestHostileSeesNoSecret(t *testing.T) {
	find := append(secretValues(t), "sibling-"+strconv.Itoa(os.Getpid()))
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`]},
	              {"name": "sibling", "command": [`+js(hostile(t))+`], "prefix": "s_", "env": {"SIBLING_SECRET": `+js(find[len(find)-1])+`}}]}`,
		`{"rules": [{"match": "^snoop$", "tool_calls": [{"name": "snoop", "arguments": {"find": `+js(find)+`}}]}]}`)
	r := toolResult(t, s, "snoop", "snoop")
	if r.IsError {
		t.Fatalf("snoop: %s", r.Content)
	}
	var got snoopResult
	if err := json.Unmarshal(r.Content, &got); err != nil {
		t.Fatalf("snoop: %v: %s", err, r.Content)
	}
	if got.Environs == 0 {
		t.Fatalf("snoop read no environment at all, not even its own: %+v", got)
	}
	if len(got.Found) > 0 {
		t.Fatalf("the plugin read secrets it must not: %v", got.Found)
	}
	t.Logf("the plugin saw %d processes and could read %d environments, none with a secret", got.Seen, got.Environs)
}

// A plugin's children that leave its process group and session (setsid,
// double fork) die with it when it crashes.
func TestEscapedChildrenDieWithTheirPlugin(t *testing.T) {
	mark := "escape" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`], "env": {"HOSTILE_MARK": "`+mark+`"}}]}`,
		`{"rules": [{"match": "^escape$", "tool_calls": [{"name": "escape", "arguments": {"n": 5}}]},
		  {"match": "^escape-crash$", "tool_calls": [{"name": "escape", "arguments": {"n": 5, "crash": true}}]}]}`)
	t.Cleanup(func() { killMarked(mark) })
	if r := toolResult(t, s, "e1", "escape"); r.IsError {
		t.Fatalf("escape: %s", r.Content)
	}
	escaped := escapees(mark)
	if len(escaped) != 5 {
		t.Fatalf("%d escaped children run, want 5", len(escaped))
	}
	for _, pid := range escaped {
		if sid := proctest.Session(pid); sid != pid {
			t.Fatalf("escaped child %d is in session %d, not one of its own", pid, sid)
		}
	}
	if r := toolResult(t, s, "e2", "escape-crash"); !r.IsError {
		t.Fatalf("escape-crash: %s", r.Content)
	}
	eventually(t, 10*time.Second, "the crashed plugin's 10 escaped children are gone", func() bool { return len(escapees(mark)) == 0 })
}

// escapees lists the live escaped children of the hostile plugin marked
// mark.
func escapees(mark string) []int {
	var out []int
	for _, pid := range marked(mark) {
		if environ(pid)["HOSTILE_ESCAPEE"] == "1" {
			out = append(out, pid)
		}
	}
	return out
}

// environ reads a process's environment, empty when it is gone.
func environ(pid int) map[string]string {
	raw, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	out := map[string]string{}
	for _, kv := range strings.Split(string(raw), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// killMarked kills, by pid, what a failed test left behind.
func killMarked(mark string) {
	for _, pid := range marked(mark) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// limits.memory_mb holds against memory RLIMIT_DATA does not count: a
// shared anonymous mapping of 1 GiB under a limit of 256 MiB is an error
// result, the plugin is restarted, and the host keeps serving.
func TestMemoryLimitHoldsAgainstSharedMemory(t *testing.T) {
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "builtin_tools": {"enable": ["calculator"]},
	  "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`], "limits": {"memory_mb": 256}}]}`,
		`{"rules": [{"match": "^shm$", "tool_calls": [{"name": "shm", "arguments": {"mb": 1024}}]},
		  {"match": "^ok$", "tool_calls": [{"name": "ok", "arguments": {}}]},
		  {"match": "^calc$", "tool_calls": [{"name": "calculator", "arguments": {"expression": "2+3"}}]}]}`)
	if p := fmt.Sprint(s.Profiles()); !strings.Contains(p, "memory_mb: cgroup") {
		t.Logf("no memory cgroup on this host; the limit is RLIMIT_DATA: %s", p)
	}
	r := toolResult(t, s, "shm", "shm")
	if !r.IsError || !strings.Contains(string(r.Content), `plugin \"hostile\"`) {
		t.Fatalf("1 GiB of shared memory under memory_mb 256: want an error result naming the plugin, got %s", r.Content)
	}
	if r := toolResult(t, s, "calc", "calc"); r.IsError {
		t.Fatalf("the host stopped serving other tools: %s", r.Content)
	}
	if r := toolResult(t, s, "ok", "ok"); r.IsError {
		t.Fatalf("the plugin was not restarted: %s", r.Content)
	}
}

// An MCP server that crashes leaves no zombie behind, in the bridge or
// anywhere below this test.
func TestMCPServerCrashLeavesNoZombie(t *testing.T) {
	mark := "zombie" + strconv.Itoa(os.Getpid())
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+`"}}}}`,
		`{"rules": [{"match": "^crash$", "tool_calls": [{"name": "mcp_crash", "arguments": {}}]}]}`)
	eventually(t, 10*time.Second, "the MCP server and its child run", func() bool { return len(marked(mark)) == 2 })
	first := marked(mark)
	for i := range 2 {
		if r := toolResult(t, s, "c"+strconv.Itoa(i), "crash"); !r.IsError {
			t.Fatalf("mcp_crash: %s", r.Content)
		}
		eventually(t, 10*time.Second, "the MCP server is restarted with its child", func() bool {
			now := marked(mark)
			return len(now) == 2 && !slices.Contains(first, now[0]) && !slices.Contains(first, now[1])
		})
		first = marked(mark)
	}
	eventually(t, 5*time.Second, "no zombie below the test", func() bool { return len(zombies(os.Getpid())) == 0 })
}

// zombies lists the processes below pid that exited and that their
// parent has not reaped.
func zombies(pid int) []int {
	var out []int
	for d := range descendants(pid) {
		if proctest.Zombie(d) {
			out = append(out, d)
		}
	}
	return out
}

// `tenxgraph tools` says what each provider process actually got: as
// root a PID namespace with its own /proc, the kernel's Landlock ABI, and
// a warning that a provider running as root is not contained.
func TestProfilesSayWhatTheKernelGave(t *testing.T) {
	s := startHostile(t, "", "")
	var got *service.Profile
	for _, p := range s.Profiles() {
		if p.Provider == "plugins[0] hostile" {
			got = &p
		}
	}
	if got == nil {
		t.Fatalf("no plugins[0] hostile in %+v", s.Profiles())
	}
	host := sandbox.Host()
	t.Logf("this host: %s\nthe plugin: %s %v", host, got.Isolation, got.Warnings)
	if m := regexp.MustCompile(`landlock: ABI (\d+)`).FindStringSubmatch(host); m != nil && !strings.Contains(got.Isolation, "landlock ABI "+m[1]) {
		t.Errorf("the kernel has Landlock ABI %s, the plugin's isolation says %q", m[1], got.Isolation)
	}
	if os.Geteuid() != 0 {
		return
	}
	if strings.Contains(host, "pid namespaces: yes") && !strings.Contains(got.Isolation, "pid namespace with its own /proc") {
		t.Errorf("as root, want a pid namespace with its own /proc: %q", got.Isolation)
	}
	if !strings.Contains(strings.Join(got.Warnings, "\n"), "runs as root") {
		t.Errorf("a plugin running as root: want a warning, got %v", got.Warnings)
	}
}
