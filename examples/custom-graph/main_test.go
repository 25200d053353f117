package main

import (
	"bufio"
	"encoding/json"
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

// The example builds, its config validates, and it serves the API with the
// code-first graph: the in-process Go tool answers over HTTP.
func TestBuildValidateServe(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "custom-graph")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, f := range []string{"10xgraph.json", "script.json"} {
		data, _ := os.ReadFile(f)
		os.WriteFile(filepath.Join(dir, f), data, 0o600)
	}
	cfg := filepath.Join(dir, "10xgraph.json")
	out, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `agent "graph.agent:app"`) {
		t.Fatalf("validate: %v\n%s", err, out)
	}

	srv := exec.Command(bin, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	stdout, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
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
	body := `{"input": {"messages": [{"role": "user", "content": "how many words are in: the quick brown fox"}]}, "config": {"thread_id": "w"}}`
	resp, err := http.Post("http://"+addr+"/v1/graph/invoke", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Status   string
		Messages []json.RawMessage
	}
	json.NewDecoder(resp.Body).Decode(&res)
	last := string(res.Messages[len(res.Messages)-1])
	if resp.StatusCode != 200 || res.Status != "completed" || !strings.Contains(last, "That text has 4 words.") {
		t.Fatalf("invoke: %d %s %s", resp.StatusCode, res.Status, last)
	}
	srv.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
	}
}
