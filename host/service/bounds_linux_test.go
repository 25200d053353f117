package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// boundsScript calls the hostile plugin's and MCP server's tools that
// return far more than max_result_bytes.
const boundsScript = `{"rules": [
  {"match": "^ok$", "tool_calls": [{"name": "ok", "arguments": {}}]},
  {"match": "^big$", "tool_calls": [{"name": "big", "arguments": {"mb": 200}}]},
  {"match": "^mcpbig$", "tool_calls": [{"name": "mcp_big", "arguments": {"mb": 100, "together": 3}}]},
  {"match": "^mcpok$", "tool_calls": [{"name": "mcp_environ", "arguments": {}}]}
]}`

// memField is a field of /proc/PID/status in bytes: VmRSS, or VmHWM, its
// high-water mark.
func memField(t *testing.T, pid, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%s/status", field, pid)
	return 0
}

// resetPeak returns memory this process no longer uses to the system, sets
// a process's VmHWM back to its VmRSS, and returns that.
func resetPeak(t *testing.T, pid string) int64 {
	t.Helper()
	if pid == "self" {
		runtime.GC()
		debug.FreeOSMemory()
	}
	if err := os.WriteFile(filepath.Join("/proc", pid, "clear_refs"), []byte("5"), 0); err != nil {
		t.Fatalf("cannot reset VmHWM of %s: %v", pid, err)
	}
	return memField(t, pid, "VmRSS")
}

// invokeOne runs one turn and returns its one tool result; safe to call from
// several goroutines.
func invokeOne(s *service.Service, threadID, text string) (message.ToolResultBlock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, text)}, thread.RunConfig{ThreadID: threadID})
	if err != nil {
		return message.ToolResultBlock{}, err
	}
	var got []message.ToolResultBlock
	for _, m := range res.Messages {
		got = append(got, m.ToolResults()...)
	}
	if len(got) != 1 {
		return message.ToolResultBlock{}, fmt.Errorf("%d tool results, want 1: %+v", len(got), got)
	}
	return got[0], nil
}

// concurrently runs text on three threads at once.
func concurrently(t *testing.T, s *service.Service, text string) []message.ToolResultBlock {
	t.Helper()
	out := make([]message.ToolResultBlock, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range out {
		wg.Go(func() { out[i], errs[i] = invokeOne(s, fmt.Sprintf("%s-%d", text, i), text) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s #%d: the run failed instead of giving a result: %v", text, i, err)
		}
	}
	return out
}

const mib = 1 << 20

// A plugin answering three calls at once with 200 MB each, 50 times its
// max_result_bytes (the default, 4 MiB), moves serve's peak memory by less
// than 100 MB: each answer is refused as it arrives. Each call gets an
// error result naming the key, serve holds nothing afterwards, and the
// plugin, which is not blamed, answers the next call.
func TestHugePluginResultsRefusedAsTheyArrive(t *testing.T) {
	if raceEnabled {
		t.Skip("measures memory, which the race detector multiplies; scripts/test.sh runs it without -race")
	}
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "plugins": [{"name": "hostile", "command": [`+js(hostile(t))+`]}]}`, boundsScript)
	first, err := invokeOne(s, "ok-before", "ok")
	if err != nil || first.IsError {
		t.Fatalf("ok: %s %v", first.Content, err)
	}
	base := resetPeak(t, "self")
	results := concurrently(t, s, "big")
	peak := memField(t, "self", "VmHWM") - base
	for i, r := range results {
		if !r.IsError || !strings.Contains(string(r.Content), `tool \"big\" returned more than the limit of 4194304 bytes (plugins[0].max_result_bytes); the result was dropped`) {
			t.Errorf("big #%d: want an error result naming max_result_bytes, got %.300s", i, r.Content)
		}
	}
	held := memField(t, "self", "VmRSS") - base // as serve runs: no GC forced
	t.Logf("three 200 MiB results at once: serve's peak RSS %+.1f MiB over %.1f MiB, %+.1f MiB held after", float64(peak)/mib, float64(base)/mib, float64(held)/mib)
	if peak > 100*mib {
		t.Errorf("serve's peak RSS grew by %.1f MiB, want under 100 MiB", float64(peak)/mib)
	}
	if held > 100*mib {
		t.Errorf("serve holds %.1f MiB more after the calls, want under 100 MiB", float64(held)/mib)
	}
	after, err := invokeOne(s, "ok-after", "ok")
	if err != nil || after.IsError || string(after.Content) != string(first.Content) {
		t.Fatalf("the next call: %s %v; want the same plugin process as before (%s)", after.Content, err, first.Content)
	}
}

// A stdio MCP server answering three calls at once with 100 MB each, 25
// times max_result_bytes, makes neither serve nor the bridge hold it: the
// bridge reads at most twice max_result_bytes of a message from the
// server. Each call gets an error result naming the key, and the server,
// connected again, answers the next call.
func TestHugeMCPResultsRefusedAsTheyArrive(t *testing.T) {
	if raceEnabled {
		t.Skip("measures memory, which the race detector multiplies; scripts/test.sh runs it without -race")
	}
	s := startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"}, "mcp_servers": {"evil": {"command": `+js(hostile(t))+`, "args": ["mcp"]}}}`, boundsScript)
	if r, err := invokeOne(s, "mcpok-before", "mcpok"); err != nil || r.IsError {
		t.Fatalf("mcp_environ: %s %v", r.Content, err)
	}
	bridge := strconv.Itoa(mcpBridge(t))
	bridgeBase := resetPeak(t, bridge)
	base := resetPeak(t, "self")
	results := concurrently(t, s, "mcpbig")
	peak := memField(t, "self", "VmHWM") - base
	bridgePeak := memField(t, bridge, "VmHWM") - bridgeBase
	for i, r := range results {
		if !r.IsError || !strings.Contains(string(r.Content), `twice mcp_servers.evil.max_result_bytes (4194304)`) {
			t.Errorf("mcp_big #%d: want an error result naming max_result_bytes, got %.300s", i, r.Content)
		}
	}
	t.Logf("three 100 MiB MCP results at once: serve's peak RSS %+.1f MiB over %.1f MiB; the bridge's %+.1f MiB over %.1f MiB",
		float64(peak)/mib, float64(base)/mib, float64(bridgePeak)/mib, float64(bridgeBase)/mib)
	if peak > 100*mib {
		t.Errorf("serve's peak RSS grew by %.1f MiB, want under 100 MiB", float64(peak)/mib)
	}
	if bridgePeak > 100*mib {
		t.Errorf("the bridge's peak RSS grew by %.1f MiB, want under 100 MiB", float64(bridgePeak)/mib)
	}
	if r, err := invokeOne(s, "mcpok-after", "mcpok"); err != nil || r.IsError {
		t.Fatalf("the next call: %s %v", r.Content, err)
	}
}
