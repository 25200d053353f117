package anthropic_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// reactApp builds the prebuilt agent on an anthropic model talking to srv,
// with a server tool "add" (counting its runs) and the remote tool
// "read_clipboard".
func reactApp(t *testing.T, srv *anthropictest.Server) (*thread.App, *atomic.Int32) {
	t.Helper()
	m := newModel(t, srv)
	runs := new(atomic.Int32)
	math := sdk.MustTools("math", "1.0.0", sdk.Func("add", addTool.Description, addTool.Parameters,
		func(ctx context.Context, args json.RawMessage) (any, error) {
			runs.Add(1)
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		}))
	g, err := agent.React(ctx, agent.Env{Model: m, SystemPrompt: "You are terse.", Providers: map[string][]sdk.Provider{"tools": {math}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AttachRemoteTools([]graph.RemoteToolConfig{{Node: "tools", Name: clipboardTool.Name, Description: clipboardTool.Description, Parameters: clipboardTool.Parameters}}); err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(g, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	return app, runs
}

// stream runs the graph and returns its result with the text deltas and
// the usage it reported.
func stream(t *testing.T, app *thread.App, input []message.Message, cfg thread.RunConfig) (graph.Result, string, []graph.Usage) {
	t.Helper()
	var text strings.Builder
	var usage []graph.Usage
	var res graph.Result
	for ev, err := range app.Stream(ctx, input, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		switch d := ev.Data.(type) {
		case graph.TextDelta:
			text.WriteString(d.Text)
		case graph.Usage:
			usage = append(usage, d)
		case graph.Result:
			res = d
		}
	}
	return res, text.String(), usage
}

// The prebuilt agent against the wire: the model calls a server tool and a
// remote tool in one streamed turn (input in pieces); the server tool
// runs, the graph pauses for the remote one, the client's result resumes
// it (after an overloaded answer, retried), and the second request carries
// a valid history: the system prompt on top, the assistant turn's
// tool_use blocks with the host's ids, and one user turn holding a
// tool_result per call, in call order, the remote result included.
func TestReactEndToEnd(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.Reply{
			Text:     "Working on it.",
			ToolUses: []anthropictest.ToolUse{anthropictest.Use("toolu_add", "add", `{"a":2,"b":3}`), anthropictest.Use("toolu_clip", "read_clipboard", `{}`)},
			Split:    3,
			Usage:    &anthropictest.Usage{InputTokens: 50, OutputTokens: 20},
		},
		anthropictest.Overloaded(), // the resume's model call is retried once
		anthropictest.Reply{Text: "2+3 is 5 and your clipboard says hi.", Split: 4, Usage: &anthropictest.Usage{InputTokens: 90, OutputTokens: 12}},
	)
	app, runs := reactApp(t, srv)
	cfg := thread.RunConfig{ThreadID: "t1"}

	res, text, usage := stream(t, app, []message.Message{message.Text(message.RoleUser, "add 2 and 3, and read my clipboard")}, cfg)
	if res.Status != graph.StatusInterrupted {
		t.Fatalf("status %q, want interrupted", res.Status)
	}
	asked := res.Messages[1].ToolCalls()
	if len(asked) != 2 || asked[0].ID == "toolu_add" || asked[1].ID == "toolu_clip" {
		t.Fatalf("the thread's calls %+v: want the host's ids", asked)
	}
	addID, clipID := asked[0].ID, asked[1].ID
	if len(res.RemoteToolCalls) != 1 || res.RemoteToolCalls[0].ID != clipID || res.RemoteToolCalls[0].Name != "read_clipboard" {
		t.Fatalf("remote calls %+v", res.RemoteToolCalls)
	}
	if runs.Load() != 1 || text != "Working on it." {
		t.Fatalf("add ran %d times before the pause (want 1); streamed %q", runs.Load(), text)
	}
	if len(usage) != 1 || usage[0].InputTokens != 50 || usage[0].OutputTokens != 20 {
		t.Fatalf("usage events %+v", usage)
	}
	first := srv.Requests()[0]
	if !first.Stream || len(first.Tools) != 2 || first.Tools[0].Name != "add" || first.Tools[1].Name != "read_clipboard" {
		t.Fatalf("first request: stream %v tools %+v", first.Stream, first.Tools)
	}
	if len(first.System) != 1 || first.System[0] != "You are terse." || len(first.Messages) != 1 || first.Messages[0].Role != "user" {
		t.Fatalf("first request system %q messages %+v", first.System, first.Messages)
	}

	// The client answers the remote call.
	resume := []message.Message{{Role: message.RoleTool, Content: []message.Block{
		message.ToolResultBlock{ToolCallID: clipID, Content: json.RawMessage(`{"text":"hi"}`)},
	}}}
	res, text, usage = stream(t, app, resume, cfg)
	if res.Status != graph.StatusCompleted {
		t.Fatalf("status after resume %q", res.Status)
	}
	if got := res.Messages[len(res.Messages)-1].Text(); got != "2+3 is 5 and your clipboard says hi." || text != got {
		t.Fatalf("final answer %q, streamed %q", got, text)
	}
	if runs.Load() != 1 || len(usage) != 1 || usage[0].InputTokens != 90 {
		t.Fatalf("add ran %d times across pause and resume (want 1); usage %+v", runs.Load(), usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one retried)", len(reqs))
	}
	second := reqs[2].Messages
	if len(second) != 3 || second[0].Role != "user" || second[1].Role != "assistant" || second[2].Role != "user" {
		t.Fatalf("second request turns %+v", second)
	}
	a := second[1].Content
	if len(a) != 3 || a[0].Text != "Working on it." || a[1].Type != "tool_use" || a[1].ID != addID || string(a[1].Input) != `{"a":2,"b":3}` ||
		a[2].ID != clipID || a[2].Name != "read_clipboard" {
		t.Fatalf("assistant turn %+v", a)
	}
	r := second[2].Content
	if len(r) != 2 || r[0].ToolUseID != addID || r[0].Content != "5" || r[0].IsError || r[1].ToolUseID != clipID || r[1].Content != `{"text":"hi"}` {
		t.Fatalf("tool results %+v", r)
	}
	// The server checked every request as a strict server would
	// (NewServer fails the test at cleanup otherwise).
}

// A tool that fails reaches the model as an is_error result it can act
// on.
func TestReactToolError(t *testing.T) {
	srv := anthropictest.NewServer(t,
		anthropictest.ToolUses(anthropictest.Use("toolu_1", "add", `{"a": 2}`)),
		anthropictest.Text("I could not add those."),
	)
	app, runs := reactApp(t, srv)
	res, _, _ := stream(t, app, []message.Message{message.Text(message.RoleUser, "add 2")}, thread.RunConfig{ThreadID: "bad-args"})
	if res.Status != graph.StatusCompleted || runs.Load() != 0 {
		t.Fatalf("status %q, add ran %d times (want 0: the arguments miss b)", res.Status, runs.Load())
	}
	r := srv.Requests()[1].Messages[2].Content[0]
	if r.Type != "tool_result" || !r.IsError || !strings.Contains(r.Content, `tool "add"`) {
		t.Fatalf("result %+v: want an error result for the call", r)
	}
	t.Logf("the model sees: %s", r.Content)
}
