package toolnode_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/remotetool"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// A remote call carries its deadline (its tool's timeout, or the node's
// default for a per-run tool); expired, it becomes an error result saying
// the client did not answer within the timeout, and the run goes on to the
// model with a valid history. Only the expired call gets it, and its late
// result is refused.
func TestRemoteCallExpires(t *testing.T) {
	var mu sync.Mutex
	var seen [][]message.ToolResultBlock // the results the model saw, per call
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		var results []message.ToolResultBlock
		for _, msg := range req.Messages {
			results = append(results, msg.ToolResults()...)
		}
		seen = append(seen, results)
		if len(seen) == 1 {
			return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
				message.ToolCallBlock{ID: "c-fast", Name: "fast", Arguments: json.RawMessage(`{}`)},
				message.ToolCallBlock{ID: "c-slow", Name: "slow", Arguments: json.RawMessage(`{}`)},
				message.ToolCallBlock{ID: "c-run", Name: "mine", Arguments: json.RawMessage(`{}`)},
			}}}, nil
		}
		return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
	})
	sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {echo}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := sg.AttachRemoteTools([]graph.RemoteToolConfig{
		{Node: "tools", Name: "fast", Timeout: 1500 * time.Millisecond},
		{Node: "tools", Name: "slow", Timeout: time.Hour},
	}); err != nil {
		t.Fatal(err)
	}
	sg.Node("tools").(*toolnode.Node).SetRemoteTimeout(2 * time.Minute)
	cp := checkpoint.NewMemory()
	app, err := thread.Compile(sg, cp)
	if err != nil {
		t.Fatal(err)
	}
	var expired []toolnode.RemoteCallExpired
	app.Observe(func(ev graph.Event) {
		if d, ok := ev.Data.(toolnode.RemoteCallExpired); ok && ev.Type == toolnode.EventRemoteCallExpired {
			mu.Lock()
			expired = append(expired, d)
			mu.Unlock()
		}
	})
	start := time.Now()
	cfg := thread.RunConfig{ThreadID: "e", Configurable: remotetool.Configurable([]json.RawMessage{json.RawMessage(`{"name":"mine"}`)})}
	res, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, cfg)
	if err != nil || res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 3 {
		t.Fatalf("first run: %v %s %+v", err, res.Status, res.RemoteToolCalls)
	}
	// The calls by tool: the engine named them (see graph.Update).
	id := map[string]string{}
	want := map[string]time.Duration{"fast": 1500 * time.Millisecond, "slow": time.Hour, "mine": 2 * time.Minute}
	for i, c := range res.RemoteToolCalls {
		id[c.Name] = c.ID
		d := c.ExpiresAt.Sub(start)
		if d < want[c.Name]-time.Millisecond || d > want[c.Name]+5*time.Second {
			t.Errorf("%s expires %v after the call, want %v", c.Name, d, want[c.Name])
		}
		if !res.Interrupts[i].Deadline.Equal(c.ExpiresAt) {
			t.Errorf("%s: interrupt deadline %v, block %v", c.ID, res.Interrupts[i].Deadline, c.ExpiresAt)
		}
	}
	fast := res.RemoteToolCalls[0].ExpiresAt
	if latest, _ := cp.Latest(context.Background(), "e"); !latest.WakeAt.Equal(fast) {
		t.Fatalf("WakeAt %v, want the fast call's deadline %v", latest.WakeAt, fast)
	}
	// The thread's history shows the deadline too.
	if pending := message.Pending(res.Messages); len(pending) != 3 || !pending[0].ExpiresAt.Equal(fast) {
		t.Fatalf("pending in the history: %+v", pending)
	}
	res, ok, err := app.Expire(context.Background(), "", "e", fast)
	if err != nil || !ok || res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 2 {
		t.Fatalf("expire: %v %v %s %+v", ok, err, res.Status, res.RemoteToolCalls)
	}
	answer := func(id, content string) (graph.Result, error) {
		return app.Invoke(context.Background(), []message.Message{{Role: message.RoleTool, Content: []message.Block{
			message.ToolResultBlock{ToolCallID: id, Content: json.RawMessage(content)}}}}, thread.RunConfig{ThreadID: "e"})
	}
	if _, err := answer(id["fast"], `"late"`); !errors.Is(err, graph.ErrExpired) {
		t.Fatalf("late result: %v", err)
	}
	if _, err := answer(id["slow"], `"slow done"`); err != nil {
		t.Fatal(err)
	}
	res, err = answer(id["mine"], `"mine done"`)
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("last result: %v %s", err, res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(expired) != 1 || expired[0] != (toolnode.RemoteCallExpired{Node: "tools", ID: id["fast"], Name: "fast", Timeout: 1500 * time.Millisecond}) {
		t.Fatalf("expired events %+v", expired)
	}
	if len(seen) != 2 || len(seen[1]) != 3 {
		t.Fatalf("model calls %d; results seen %+v", len(seen), seen)
	}
	byID := map[string]message.ToolResultBlock{}
	for _, r := range seen[1] {
		byID[r.ToolCallID] = r
	}
	var text string
	_ = json.Unmarshal(byID[id["fast"]].Content, &text)
	if !byID[id["fast"]].IsError || !strings.Contains(text, "the client did not answer within 1.5s") {
		t.Fatalf("expired call's result: %+v", byID[id["fast"]])
	}
	if byID[id["slow"]].IsError || string(byID[id["slow"]].Content) != `"slow done"` || string(byID[id["mine"]].Content) != `"mine done"` {
		t.Fatalf("answered calls' results: %+v", seen[1])
	}
}

// A code-first remote tool with a negative timeout is refused with its path.
func TestNegativeRemoteTimeout(t *testing.T) {
	sg, err := agent.React(context.Background(), agent.Env{Model: model.Func(nil), Providers: map[string][]sdk.Provider{"tools": {echo}}})
	if err != nil {
		t.Fatal(err)
	}
	err = sg.AttachRemoteTools([]graph.RemoteToolConfig{{Node: "tools", Name: "ok"}, {Node: "tools", Name: "bad", Timeout: -time.Second}})
	if err == nil || !strings.Contains(err.Error(), "[1].timeout: must be longer than zero") {
		t.Fatalf("err %v", err)
	}
}
