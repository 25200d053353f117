package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/build"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// The engine knows nothing of tools, leases or stores: nothing it
// imports, directly or through another package, is of the tool SDK (its
// strict JSON aside), a ToolNode, remote tools, plugins or their host,
// the agent, the service or the server; nor the checkpoint stores, their
// leases and drivers, or the media they keep; nor the runtime beside it
// (package thread), which imports it. Tools reach a graph as nodes (a
// ToolNode), a store as the Saver the runtime hands a run, and nothing
// else.
func TestEngineImportsNoToolPackages(t *testing.T) {
	if bad := forbiddenImports(t, "host/graph"); len(bad) > 0 {
		for _, b := range bad {
			t.Error(b)
		}
	}
	// The walk can fail: a package that imports one of them is caught.
	if bad := forbiddenImports(t, "host/thread"); len(bad) == 0 {
		t.Error("host/thread imports host/checkpoint, and the walk did not see it")
	}
}

// forbiddenImports lists what the module's package pkg imports, directly or
// through others, that the engine may not.
func forbiddenImports(t *testing.T, pkg string) []string {
	t.Helper()
	const module = "github.com/tenxgraph/tenxgraph/"
	var bad []string
	seen := map[string]bool{}
	var walk func(path, from string)
	walk = func(path, from string) {
		if seen[path] {
			return
		}
		seen[path] = true
		rel := strings.TrimPrefix(path, module)
		forbidden := rel == "sdk" || strings.HasPrefix(rel, "sdk/") && rel != "sdk/strictjson" || strings.HasPrefix(rel, "plugins/")
		for _, p := range []string{"host/toolnode", "host/remotetool", "host/pluginhost", "host/agent", "host/service", "host/server",
			"host/thread", "host/checkpoint", "host/media", "host/config", "host/model",
			"database/sql", "modernc.org/sqlite", "github.com/jackc/pgx", "github.com/hashicorp/go-plugin", "google.golang.org/grpc"} {
			forbidden = forbidden || rel == p || strings.HasPrefix(rel, p+"/")
		}
		if forbidden && path != module+pkg {
			bad = append(bad, fmt.Sprintf("%s imports %s (through %s)", pkg, path, from))
			return
		}
		if !strings.HasPrefix(path, module) {
			return
		}
		p, err := build.Import(path, "", 0)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		for _, imp := range p.Imports {
			walk(imp, path)
		}
	}
	walk(module+pkg, "")
	if !seen[module+"host/message"] {
		t.Fatalf("the walk of %s did not reach host/message: it read nothing", pkg)
	}
	return bad
}

// A node interrupts with values and is resumed with values; the interrupts
// are saved with the checkpoint; answering only some keeps the pause; the
// node's writes from before the pause are kept.
func TestGenericInterrupt(t *testing.T) {
	var runs atomic.Int32
	ask := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		runs.Add(1)
		if in.Resume == nil {
			return graph.Update{
				Messages: []message.Message{message.Text(message.RoleAssistant, "asking")},
				Interrupts: []graph.Interrupt{
					{ID: "q1", Value: json.RawMessage(`{"question":"colour?"}`)},
					{ID: "q2", Value: json.RawMessage(`{"question":"size?"}`)},
				},
			}, nil
		}
		var parts []string
		for _, it := range in.Interrupts {
			parts = append(parts, it.ID+"="+string(in.Resume[it.ID].Value))
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, strings.Join(parts, " "))}}, nil
	})
	g := graph.New().AddNode("ask", ask).AddNode("after", say("after")).
		AddEdge(graph.START, "ask").AddEdge("ask", "after").AddEdge("after", graph.END)
	cp := checkpoint.NewMemory()
	app, err := thread.Compile(g, cp)
	if err != nil {
		t.Fatal(err)
	}
	cfg := thread.RunConfig{ThreadID: "i"}
	res, err := app.Invoke(ctx, user("go"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != graph.StatusInterrupted || len(res.Interrupts) != 2 || res.Interrupts[0].Node != "ask" || len(res.RemoteToolCalls) != 0 {
		t.Fatalf("first run: %s %+v", res.Status, res.Interrupts)
	}
	// A second app on the same store sees the saved interrupts.
	app2, _ := thread.Compile(g, cp)
	th, err := app2.Thread(ctx, "i")
	if err != nil || len(th.Interrupts) != 2 || th.Interrupts[1].ID != "q2" {
		t.Fatalf("saved interrupts: %+v %v", th.Interrupts, err)
	}
	// New input while interrupts are open is refused.
	if _, err := app2.Invoke(ctx, user("hello"), cfg); !errors.Is(err, graph.ErrPendingCalls) {
		t.Fatalf("new input while paused: %v", err)
	}
	// Answering one keeps the pause, with the other still open.
	res, err = app2.Invoke(ctx, nil, thread.RunConfig{ThreadID: "i", Resume: map[string]json.RawMessage{"q2": json.RawMessage(`"large"`)}})
	if err != nil || res.Status != graph.StatusInterrupted || len(res.Interrupts) != 1 || res.Interrupts[0].ID != "q1" {
		t.Fatalf("partial answer: %v %s %+v", err, res.Status, res.Interrupts)
	}
	// An unknown id is refused; a different answer to q2 is a conflict.
	if _, err := app2.Invoke(ctx, nil, thread.RunConfig{ThreadID: "i", Resume: map[string]json.RawMessage{"zz": json.RawMessage(`1`)}}); !errors.Is(err, graph.ErrUnknownCall) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := app2.Invoke(ctx, nil, thread.RunConfig{ThreadID: "i", Resume: map[string]json.RawMessage{"q2": json.RawMessage(`"small"`)}}); !errors.Is(err, graph.ErrResultConflict) {
		t.Fatalf("conflicting answer: %v", err)
	}
	res, err = app2.Invoke(ctx, nil, thread.RunConfig{ThreadID: "i", Resume: map[string]json.RawMessage{"q1": json.RawMessage(`"red"`)}})
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("full answer: %v %s", err, res.Status)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"go", "asking", `q1="red" q2="large"`, "after"}) {
		t.Fatalf("messages %q", got)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the node ran %d times, want 2 (asking, resumed)", n)
	}
}

// When one node of a parallel step fails, the siblings that finished keep
// their writes: the retry runs only the failed node, and the step's updates
// are applied in declaration order as if it had run at once.
func TestPendingWritesOfAFailedStep(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	var okRuns, flakyRuns atomic.Int32
	ok := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		okRuns.Add(1)
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "ok")}}, nil
	})
	flaky := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		flakyRuns.Add(1)
		if fail.Load() {
			return graph.Update{}, errors.New("upstream is down")
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "flaky")}}, nil
	})
	g := graph.New().AddNode("ok", ok).AddNode("flaky", flaky).AddNode("join", say("join")).
		AddEdge(graph.START, "ok").AddEdge(graph.START, "flaky").
		AddEdge("ok", "join").AddEdge("flaky", "join").AddEdge("join", graph.END)
	cp := checkpoint.NewMemory()
	app, _ := thread.Compile(g, cp)
	cfg := thread.RunConfig{ThreadID: "p"}
	if _, err := app.Invoke(ctx, user("x"), cfg); err == nil || !strings.Contains(err.Error(), "upstream is down") {
		t.Fatalf("err %v", err)
	}
	th, _ := app.Thread(ctx, "p")
	if th.Status != graph.StatusFailed || !slices.Equal(texts(th.Messages), []string{"x"}) {
		t.Fatalf("after failure: %s %v (the step's writes are pending, not applied)", th.Status, texts(th.Messages))
	}
	fail.Store(false)
	// Another app on the store: the pending writes are in the checkpoint.
	app2, _ := thread.Compile(g, cp)
	res, err := app2.Invoke(ctx, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"x", "ok", "flaky", "join"}) {
		t.Fatalf("retry: %v", got)
	}
	if o, f := okRuns.Load(), flakyRuns.Load(); o != 1 || f != 2 {
		t.Fatalf("ok ran %d times (want 1), flaky %d (want 2)", o, f)
	}
}
