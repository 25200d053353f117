package openai_test

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
	"github.com/tenxgraph/tenxgraph/host/model/openai"
	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// reactApp builds the prebuilt agent on an openai model talking to srv,
// with a server tool "add" (counting its runs) and the remote tool
// "read_clipboard".
func reactApp(t *testing.T, srv *openaitest.Server) (*thread.App, *atomic.Int32) {
	t.Helper()
	m, err := openai.New(openai.Config{Model: "test-model", BaseURL: srv.URL, MaxRetries: 2})
	if err != nil {
		t.Fatal(err)
	}
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
// remote tool in one streamed step (ids late, calls packed, arguments in
// pieces); the server tool runs, the graph pauses for the remote one, the
// client's result resumes it, and the second request carries a valid
// history: one tool message per call, in call order, the remote result
// included.
func TestReactEndToEnd(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Reply{
			Text:      "Working on it.",
			ToolCalls: []openaitest.ToolCall{openaitest.Call("call_add", "add", `{"a":2,"b":3}`), openaitest.Call("call_clip", "read_clipboard", `{}`)},
			Split:     3, Packed: true, LateIDs: true,
			Usage: &openaitest.Usage{PromptTokens: 50, CompletionTokens: 20},
		},
		openaitest.RateLimited("0"), // the resume's model call is retried once
		openaitest.Reply{Text: "2+3 is 5 and your clipboard says hi.", Split: 4, Usage: &openaitest.Usage{PromptTokens: 90, CompletionTokens: 12}},
	)
	app, runs := reactApp(t, srv)
	cfg := thread.RunConfig{ThreadID: "t1"}

	res, text, usage := stream(t, app, []message.Message{message.Text(message.RoleUser, "add 2 and 3, and read my clipboard")}, cfg)
	if res.Status != graph.StatusInterrupted {
		t.Fatalf("status %q, want interrupted", res.Status)
	}
	// The host names the calls (ids unique to the thread's life), and the
	// provider gets its own names from then on, on both sides.
	asked := res.Messages[1].ToolCalls()
	if len(asked) != 2 || asked[0].ID == "call_add" || asked[1].ID == "call_clip" || len(asked[0].ID) > 40 {
		t.Fatalf("the thread's calls %+v: want the host's ids, of at most 40 characters", asked)
	}
	addID, clipID := asked[0].ID, asked[1].ID
	if len(res.RemoteToolCalls) != 1 || res.RemoteToolCalls[0].ID != clipID || res.RemoteToolCalls[0].Name != "read_clipboard" {
		t.Fatalf("remote calls %+v", res.RemoteToolCalls)
	}
	if runs.Load() != 1 {
		t.Fatalf("add ran %d times before the pause, want 1", runs.Load())
	}
	if text != "Working on it." {
		t.Fatalf("streamed text %q", text)
	}
	if len(usage) != 1 || usage[0].InputTokens != 50 || usage[0].OutputTokens != 20 {
		t.Fatalf("usage events %+v", usage)
	}
	first := srv.Requests()[0]
	if !first.Stream || len(first.Tools) != 2 || first.Tools[0].Name != "add" || first.Tools[1].Name != "read_clipboard" {
		t.Fatalf("first request: stream %v tools %+v", first.Stream, first.Tools)
	}
	if len(first.Messages) != 2 || first.Messages[0].Role != "system" || first.Messages[0].Content != "You are terse." || first.Messages[1].Role != "user" {
		t.Fatalf("first request messages %+v", first.Messages)
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
	if runs.Load() != 1 {
		t.Fatalf("add ran %d times across pause and resume, want exactly 1", runs.Load())
	}
	if len(usage) != 1 || usage[0].InputTokens != 90 {
		t.Fatalf("usage events %+v", usage)
	}

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 (one retried)", len(reqs))
	}
	second := reqs[2].Messages
	want := []openaitest.Message{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "add 2 and 3, and read my clipboard"},
		{Role: "assistant", Content: "Working on it.", ToolCalls: []openaitest.ToolCall{
			{ID: addID, Name: "add", Arguments: `{"a":2,"b":3}`},
			{ID: clipID, Name: "read_clipboard", Arguments: `{}`},
		}},
		{Role: "tool", ToolCallID: addID, Content: "5"},
		{Role: "tool", ToolCallID: clipID, Content: `{"text":"hi"}`},
	}
	if len(second) != len(want) {
		t.Fatalf("second request has %d messages, want %d: %+v", len(second), len(want), second)
	}
	for i := range want {
		g, w := second[i], want[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID || len(g.ToolCalls) != len(w.ToolCalls) {
			t.Fatalf("second request messages[%d] = %+v, want %+v", i, g, w)
		}
		for j := range w.ToolCalls {
			if g.ToolCalls[j] != w.ToolCalls[j] {
				t.Fatalf("messages[%d].tool_calls[%d] = %+v, want %+v", i, j, g.ToolCalls[j], w.ToolCalls[j])
			}
		}
	}
	// The server checked every request's history as a strict server would
	// (NewServer fails the test at cleanup otherwise).
}

// Arguments that are not JSON do not fail the run: the thread is saved,
// the ToolNode answers the call with an error result, and the model sees
// it next to its own broken arguments and can try again.
func TestReactInvalidArguments(t *testing.T) {
	srv := openaitest.NewServer(t,
		openaitest.Calls(openaitest.Call("call_1", "add", `{"a": 2, "b": `)),
		openaitest.Calls(openaitest.Call("call_2", "add", `{"a": 2, "b": 3}`)),
		openaitest.Text("5"),
	)
	app, runs := reactApp(t, srv)
	res, _, _ := stream(t, app, []message.Message{message.Text(message.RoleUser, "add 2 and 3")}, thread.RunConfig{ThreadID: "bad-args"})
	if res.Status != graph.StatusCompleted || res.Messages[len(res.Messages)-1].Text() != "5" {
		t.Fatalf("status %q, last %+v", res.Status, res.Messages[len(res.Messages)-1])
	}
	if runs.Load() != 1 {
		t.Fatalf("add ran %d times, want once (only with the valid arguments)", runs.Load())
	}
	second := srv.Requests()[1].Messages
	// system, user, assistant(call_1), tool(call_1)
	if len(second) != 4 || second[2].ToolCalls[0].Arguments != `{"_invalid_arguments":"{\"a\": 2, \"b\": "}` {
		t.Fatalf("second request %+v", second)
	}
	result := second[3]
	if result.ToolCallID != second[2].ToolCalls[0].ID || !strings.HasPrefix(result.Content, "Error: ") || !strings.Contains(result.Content, `tool "add"`) {
		t.Fatalf("tool message %+v: want an error result for the broken call", result)
	}
	t.Logf("the model sees: %s", result.Content)
	// The thread reads back from the checkpoint.
	if _, err := app.Thread(ctx, "bad-args"); err != nil {
		t.Fatal(err)
	}
}
