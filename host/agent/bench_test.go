package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

var echo = sdk.MustTools("bench", "1",
	sdk.Tool{
		Spec: sdk.ToolSpec{Name: "echo", Description: "Echo.", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}`)},
		Handler: sdk.HandlerFunc(func(ctx context.Context, req sdk.CallToolRequest) (sdk.CallToolResponse, error) {
			return sdk.CallToolResponse{Content: req.Arguments}, nil
		}),
	})

// BenchmarkToolNodeDispatch is one ToolNode step calling one trivial
// in-process tool: lookup, schema validation, the call and the result
// message.
func BenchmarkToolNodeDispatch(b *testing.B) {
	tn, err := toolnode.New(context.Background(), "tools", echo)
	if err != nil {
		b.Fatal(err)
	}
	state := graph.State{Messages: []message.Message{
		message.Text(message.RoleUser, "go"),
		{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"x":1}`)}}},
	}}
	b.ReportAllocs()
	for b.Loop() {
		u, err := tn.Run(context.Background(), &graph.Input{State: state, Run: &graph.Run{ThreadID: "t", RunID: "r"}, Node: "tools"})
		if err != nil || len(u.Messages) != 1 {
			b.Fatal(err, u)
		}
	}
}

// BenchmarkPauseResume is a full remote-tool round trip in-process: a run
// where the model calls a server tool and a remote tool in one step (pause),
// then the resume with the client's result (completed).
func BenchmarkPauseResume(b *testing.B) {
	b.Run("memory", func(b *testing.B) { benchRoundTrip(b, checkpoint.NewMemory()) })
	b.Run("sqlite", func(b *testing.B) {
		cp, err := checkpoint.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), "state.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer cp.Close()
		benchRoundTrip(b, cp)
	})
}

func benchRoundTrip(b *testing.B, cp checkpoint.Checkpointer) {
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		if req.Messages[len(req.Messages)-1].Role == message.RoleTool {
			return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
		}
		return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "s", Name: "echo", Arguments: json.RawMessage(`{"x":1}`)},
			message.ToolCallBlock{ID: "r", Name: "read_clipboard", Arguments: json.RawMessage(`{}`)},
		}}}, nil
	})
	g, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {echo}}})
	if err != nil {
		b.Fatal(err)
	}
	if err := g.AttachRemoteTools([]graph.RemoteToolConfig{clipboard}); err != nil {
		b.Fatal(err)
	}
	app, err := thread.Compile(g, cp)
	if err != nil {
		b.Fatal(err)
	}
	in := user("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		cfg := thread.RunConfig{ThreadID: "bench-" + strconv.Itoa(i)}
		i++
		res, err := app.Invoke(ctx, in, cfg)
		if err != nil || res.Status != graph.StatusInterrupted {
			b.Fatal(err, res.Status)
		}
		// The host named the call: the client answers by the thread's id.
		res, err = app.Invoke(ctx, results(result(res.RemoteToolCalls[0].ID, `{"text":"hi"}`)), cfg)
		if err != nil || res.Status != graph.StatusCompleted {
			b.Fatal(err, res.Status)
		}
	}
}
