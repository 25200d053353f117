package graph_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine knows no tools: nothing it imports, directly or not, is of
// the tool SDK, a ToolNode, remote tools, plugins or their host. Tools
// reach a graph as nodes (a ToolNode) and nothing else. Nor does it import
// the runtime beside it (package thread), which imports it.
func TestEngineImportsNoTools(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/tenxgraph/tenxgraph/"
	forbidden := []string{"sdk", "sdk/toolspec", "sdk/proto/", "plugins/", "host/toolnode", "host/remotetool", "host/pluginhost", "host/agent", "host/service", "host/server", "host/thread"}
	deps := strings.Fields(string(out))
	if len(deps) < 2 {
		t.Fatalf("go list gave %q: too few packages to be the engine's", out)
	}
	for _, dep := range deps {
		rest, ok := strings.CutPrefix(dep, mod)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rest == f || strings.HasSuffix(f, "/") && strings.HasPrefix(rest, f) || strings.HasPrefix(rest, f+"/") && f != "sdk" {
				t.Errorf("the engine imports %s", dep)
			}
		}
	}
}
