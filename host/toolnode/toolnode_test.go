package toolnode_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
)

// growing is a provider whose "grow" tool adds a tool to its own list, the
// way an MCP server announces tools/list_changed, and reports progress.
type growing struct {
	mu      sync.Mutex
	tools   []sdk.ToolSpec
	changed chan struct{}
}

func newGrowing() *growing {
	return &growing{tools: []sdk.ToolSpec{spec("grow"), spec("clash")}, changed: make(chan struct{})}
}

func spec(name string) sdk.ToolSpec {
	return sdk.ToolSpec{Name: name, Description: name + ".", Parameters: sdk.EmptyObjectSchema}
}

func (g *growing) ToolsChanged() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed
}

func (g *growing) Metadata(context.Context, sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return sdk.MetadataResponse{Name: "growing", Tools: slices.Clone(g.tools)}, nil
}

func (g *growing) CallTool(ctx context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
	switch req.Name {
	case "grow":
		sdk.ReportProgress(ctx, 1, 2, "half way")
		g.mu.Lock()
		// "late" is new; "echo" is another provider's name and "bad!" is
		// not a valid tool name: the node offers "late" and reports the two.
		g.tools = append(g.tools, spec("late"), spec("echo"), spec("bad!"))
		close(g.changed)
		g.changed = make(chan struct{})
		g.mu.Unlock()
		sdk.ReportProgress(ctx, 2, 2, "done")
		return sdk.Result("grown")
	case "late", "clash":
		return sdk.Result(req.Name + " ran")
	}
	return sdk.CallToolResponse{}, sdk.ErrUnknownTool
}

var echo = sdk.MustTools("other", "1", sdk.Func("echo", "Echo.", nil, func(context.Context, json.RawMessage) (any, error) { return "echo", nil }))

// A provider's tool list changing mid-run reaches the very next model step,
// progress reports become tool_progress events between tool_started and
// tool_finished, and a new tool the node cannot take is reported rather
// than silently dropped.
func TestToolsChangedReachTheNextStepAndProgressIsStreamed(t *testing.T) {
	g := newGrowing()
	var seen [][]string
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		var names []string
		for _, s := range req.Tools {
			names = append(names, s.Name)
		}
		seen = append(seen, names)
		call := func(name string) (model.Response, error) {
			return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
				message.ToolCallBlock{ID: name, Name: name, Arguments: json.RawMessage(`{}`)}}}}, nil
		}
		switch len(seen) {
		case 1:
			return call("grow")
		case 2:
			return call("late")
		}
		return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
	})
	sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {echo, g}}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(sg, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	var ignored []toolnode.ToolIgnored
	var res graph.Result
	for ev, err := range app.Stream(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "t"}) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case toolnode.ToolEvent:
			events = append(events, ev.Type+" "+d.Name)
		case toolnode.ToolProgress:
			if d.Provider != "growing" || d.Total != 2 || d.Node != "tools" {
				t.Errorf("progress event %+v", d)
			}
			events = append(events, ev.Type+" "+d.Message)
		case toolnode.ToolIgnored:
			ignored = append(ignored, d)
		case graph.Result:
			res = d
		}
	}
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status %s", res.Status)
	}
	if len(seen) != 3 || slices.Contains(seen[0], "late") || !slices.Contains(seen[1], "late") {
		t.Fatalf("tools per model step: %v; want late offered from the second step on", seen)
	}
	want := []string{"tool_started grow", "tool_progress half way", "tool_progress done", "tool_finished grow", "tool_started late", "tool_finished late"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v\nwant %v", events, want)
	}
	var names []string
	for _, ig := range ignored {
		names = append(names, ig.Name)
	}
	if !slices.Equal(names, []string{"echo", "bad!"}) {
		t.Fatalf("ignored %+v, want echo (taken) and bad! (invalid) reported", ignored)
	}
	last := res.Messages[len(res.Messages)-2].ToolResults()
	if len(last) != 1 || last[0].IsError || string(last[0].Content) != `"late ran"` {
		t.Fatalf("the new tool's result: %+v", last)
	}
	// Listing without a run also sees the change.
	tn := sg.Node("tools").(*toolnode.Node)
	var all []string
	for _, tool := range tn.Tools() {
		all = append(all, tool.Spec.Name)
	}
	if !slices.Equal(all, []string{"clash", "echo", "grow", "late"}) {
		t.Fatalf("node tools %v", all)
	}
}

// hostileResults answers each tool with JSON that encoding/json accepts
// but the store's strict reader does not: a key twice, or nesting deeper
// than strictjson.MaxDepth.
type hostileResults struct{}

func (hostileResults) Metadata(context.Context, sdk.MetadataRequest) (sdk.MetadataResponse, error) {
	return sdk.MetadataResponse{Name: "hostile", Tools: []sdk.ToolSpec{spec("twice"), spec("deep")}}, nil
}

func (hostileResults) CallTool(_ context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
	if req.Name == "twice" {
		return sdk.CallToolResponse{Content: json.RawMessage(`{"a": 1, "a": 2}`)}, nil
	}
	return sdk.CallToolResponse{Content: json.RawMessage(strings.Repeat("[", strictjson.MaxDepth+1) + strings.Repeat("]", strictjson.MaxDepth+1))}, nil
}

// A result the thread could not be read back with becomes an error result
// naming the problem, so the thread stays readable from the store (by a
// new process, or once the cache let it go) instead of failing to decode
// on every read.
func TestResultsTheStoreCannotReadAreErrors(t *testing.T) {
	calls := 0
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		calls++
		if calls > 1 {
			return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
		}
		return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "c1", Name: "twice", Arguments: json.RawMessage(`{}`)},
			message.ToolCallBlock{ID: "c2", Name: "deep", Arguments: json.RawMessage(`{}`)}}}}, nil
	})
	store := checkpoint.NewMemory()
	compile := func() *thread.App {
		sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {hostileResults{}}}})
		if err != nil {
			t.Fatal(err)
		}
		app, err := thread.Compile(sg, store)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	if _, err := compile().Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "h"}); err != nil {
		t.Fatal(err)
	}
	res, err := compile().Thread(context.Background(), "h") // a new app: read from the store
	if err != nil {
		t.Fatalf("the thread does not read back from the store: %v", err)
	}
	var results []message.ToolResultBlock
	for _, msg := range res.Messages {
		results = append(results, msg.ToolResults()...)
	}
	if len(results) != 2 {
		t.Fatalf("results %+v, want two", results)
	}
	for i, want := range []string{"duplicate key", "exceeded max depth"} {
		if r := results[i]; !r.IsError || !strings.Contains(string(r.Content), "not valid JSON") || !strings.Contains(string(r.Content), want) {
			t.Errorf("result %d: %+v, want an error result saying %q", i, r, want)
		}
	}
}
