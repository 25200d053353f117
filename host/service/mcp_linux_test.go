package service_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/internal/sandbox"
)

// children lists the processes whose parent is pid, with their command
// lines.
func children(pid int) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(pid) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[child] = strings.ReplaceAll(string(cmd), "\x00", " ")
	}
	return out
}

func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	return err == nil && !strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')'):]), ") Z ")
}

// mcpBridge is the pid of the one MCP bridge below this process: the
// process serving `plugin mcp`, not its sandbox's init, whose command line
// ends the same.
func mcpBridge(t *testing.T) int {
	t.Helper()
	var bridges []int
	all := descendants(os.Getpid())
	for pid, cmd := range all {
		if strings.HasSuffix(cmd, " plugin mcp ") && !strings.Contains(cmd, sandbox.ExecArg) {
			bridges = append(bridges, pid)
		}
	}
	if len(bridges) != 1 {
		t.Fatalf("want one MCP bridge, found %v among %v", bridges, all)
	}
	return bridges[0]
}

// A stdio MCP server does not outlive its bridge, even one killed with
// SIGKILL (which runs no cleanup): the kernel's parent-death signal ends it.
func TestMCPServerDiesWithItsBridge(t *testing.T) {
	nm := mcpModules(t)
	startConfig(t, `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "checkpointer": {"type": "memory"},
	  "mcp_servers": {"ev": {"command": "node", "args": [`+js(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"]}}}`,
		`{"rules": [{"match": "x", "text": "x"}]}`)
	// The bridge runs below its sandbox's init, and the server below its
	// own init, below the bridge.
	bridge, server := mcpBridge(t), 0
	for c, ccmd := range descendants(bridge) {
		if strings.Contains(ccmd, "server-everything") && !strings.Contains(ccmd, sandbox.ExecArg) {
			server = c
		}
	}
	if server == 0 {
		t.Fatalf("bridge %d, server %d; descendants: %v", bridge, server, descendants(os.Getpid()))
	}
	if err := syscall.Kill(bridge, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); alive(server); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the MCP server %d outlived its bridge %d", server, bridge)
		}
	}
}
