package main

import (
	"strconv"

	"github.com/tenxgraph/tenxgraph/internal/proctest"

	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// markedProcs lists the live processes whose environment holds
// HOSTILE_MARK=mark.
func markedProcs(mark string) []int { return proctest.Marked("HOSTILE_MARK", mark) }

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveHostile starts `tenxgraph serve` with the hostile test plugin and
// the hostile MCP server, makes the plugin start 5 children, and returns
// the running serve once every marked process is up.
func serveHostile(t *testing.T, mark string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "hostile")
	if out, err := exec.Command("go", "build", "-o", bin, "../../host/service/testdata/hostile").CombinedOutput(); err != nil {
		t.Fatalf("build the hostile plugin: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [
	  {"match": "^fork5$", "tool_calls": [{"name": "fork", "arguments": {"n": 5}}]}]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "10xgraph.json"), []byte(`{"agent": "tenxgraph:react",
	  "model": {"provider": "scripted", "script": "script.json"}, "checkpointer": {"type": "memory"},
	  "plugins": [{"name": "hostile", "command": ["`+bin+`"], "env": {"HOSTILE_MARK": "`+mark+`"}}],
	  "mcp_servers": {"evil": {"command": "`+bin+`", "args": ["mcp"], "env": {"HOSTILE_MARK": "`+mark+`"}}}}`), 0o600)
	srv := exec.Command(os.Args[0], "serve", "--config", filepath.Join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "TENXGRAPH_BE_MAIN=1")
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	addr := ""
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatal("serve did not say where it listens")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	body := `{"input": {"messages": [{"role": "user", "content": "fork5"}]}, "config": {"thread_id": "f"}}`
	resp, err := http.Post("http://"+addr+"/v1/graph/invoke", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: %d", resp.StatusCode)
	}
	// The plugin and its 5 children, the MCP server and its child.
	waitFor(t, 10*time.Second, "the plugin's children and the MCP server's child run", func() bool { return len(markedProcs(mark)) >= 8 })
	return srv
}

// SIGTERM of serve leaves no process of any provider behind: not a
// plugin's children, not an MCP server's child.
func TestServeSIGTERMLeavesNothing(t *testing.T) {
	mark := "sigterm" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	srv := serveHostile(t, mark)
	srv.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("serve did not exit after SIGTERM")
	}
	waitFor(t, 10*time.Second, "nothing marked is left after SIGTERM", func() bool { return len(markedProcs(mark)) == 0 })
}

// SIGKILL of serve runs none of its code; the kernel's parent-death signal
// still ends every provider, and each ends what it started.
func TestServeSIGKILLLeavesNothing(t *testing.T) {
	mark := "sigkill" + strconv.Itoa(os.Getpid()) // unique: a failed run may leave processes behind
	srv := serveHostile(t, mark)
	srv.Process.Kill()
	_ = srv.Wait()
	waitFor(t, 15*time.Second, "nothing marked is left after SIGKILL", func() bool { return len(markedProcs(mark)) == 0 })
}
