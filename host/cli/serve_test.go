package cli_test

import (
	"bufio"
	"encoding/json"
	"io"
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

// built builds the tenxgraph binary and the test plugin.
func built(t *testing.T) (bin, plugin string) {
	t.Helper()
	dir := t.TempDir()
	bin, plugin = filepath.Join(dir, "tenxgraph"), filepath.Join(dir, "testplugin")
	// The test plugin is the SDK test kit's, built in the SDK's module.
	for out, pkg := range map[string][]string{bin: {".", "../../cmd/tenxgraph"}, plugin: {"../../sdk", "./sdktest/testdata/testplugin"}} {
		if b, err := exec.Command("go", "-C", pkg[0], "build", "-o", out, pkg[1]).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", pkg[1], err, b)
		}
	}
	return bin, plugin
}

// serving starts `tenxgraph serve` and returns it with its base URL.
func serving(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	re := regexp.MustCompile(`on (http://\S+) `)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, out)
			return cmd, m[1]
		}
	}
	t.Fatal("serve never said where it listens")
	return nil, ""
}

func invoke(t *testing.T, base, thread, text string) (int, map[string]any) {
	t.Helper()
	body := `{"input": {"messages": [{"role": "user", "content": ` + quote(text) + `}]}, "config": {"thread_id": "` + thread + `"}}`
	resp, err := http.Post(base+"/v1/graph/invoke", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// SIGTERM with a tool call in flight that ignores its context: serve lets it
// run for the grace period, cancels the run, stops the plugin and exits 0
// within grace + 5s. The thread is left consistent: a later serve reads it
// and continues it. Limits reach the model as error results naming them.
func TestServeSIGTERMWithAStuckTool(t *testing.T) {
	bin, plugin := built(t)
	dir := t.TempDir()
	marks := filepath.Join(dir, "marks")
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [
  {"match": "(?i)stuck", "tool_calls": [{"name": "sleep", "arguments": {"ms": 600000, "ignore_cancel": true, "tag": "stuck"}}], "then": "slept: {{result 0}}"},
  {"match": "(?i)huge", "tool_calls": [{"name": "big", "arguments": {"bytes": 5000}}], "then": "big: {{result 0}}"},
  {"match": ".", "text": "hello again"}
]}`), 0o600)
	cfg := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "scripted", "script": "script.json"},
  "provider_defaults": {"timeout": "3s"},
  "plugins": [{"name": "testplugin", "command": [`+quote(plugin)+`], "env": {"TESTPLUGIN_MARKS": `+quote(marks)+`}, "max_result_bytes": 1000}],
  "checkpointer": {"type": "sqlite", "path": "state.db"}}`), 0o600)

	cmd, base := serving(t, bin, "--config", cfg, "--shutdown-grace", "1s")
	code, res := invoke(t, base, "t-huge", "something huge")
	msgs, _ := json.Marshal(res["messages"])
	if code != 200 || !strings.Contains(string(msgs), `"is_error":true`) || !strings.Contains(string(msgs), "plugins[0].max_result_bytes") {
		t.Fatalf("an over-size result: %d %s", code, msgs)
	}

	go invoke(t, base, "t-stuck", "get stuck")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _ := os.ReadFile(marks); strings.Contains(string(data), "started stuck") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stuck tool never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	began := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited with %v after SIGTERM, want 0", err)
		}
		if took := time.Since(began); took > 6*time.Second {
			t.Fatalf("serve took %s to exit, want within grace (1s) + 5s", took)
		}
	case <-time.After(6 * time.Second):
		t.Fatal("serve did not exit within grace (1s) + 5s of SIGTERM")
	}

	// The thread of the cancelled run is readable and continues.
	_, base = serving(t, bin, "--config", cfg)
	resp, err := http.Get(base + "/v1/threads/t-stuck")
	if err != nil {
		t.Fatal(err)
	}
	var th map[string]any
	json.NewDecoder(resp.Body).Decode(&th)
	resp.Body.Close()
	if resp.StatusCode != 200 || th["status"] != "cancelled" {
		t.Fatalf("GET the thread after the cancelled run: %d, status %v, want 200 and cancelled (never running without a run)", resp.StatusCode, th["status"])
	}
	code, res = invoke(t, base, "t-stuck", "are you there?")
	msgs, _ = json.Marshal(res["messages"])
	if code != 200 || res["status"] != "completed" || !strings.Contains(string(msgs), "hello again") {
		t.Fatalf("continuing the thread: %d %v %s", code, res["status"], msgs)
	}
}
