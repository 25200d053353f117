package toolnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/agent"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/model"
	"github.com/tenxgraph/tenxgraph/host/thread"
	"github.com/tenxgraph/tenxgraph/host/toolnode"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// A run whose events nobody reads does not hold up another run's tools:
// the run that re-reads a changed tool list reports what it left out
// after the node's lock is let go. Here the reader that never reads is an
// observer that blocks on the first tool_ignored event, as a full stream
// of a slow client blocks its run.
func TestSlowEventReaderDoesNotStallOtherRuns(t *testing.T) {
	g := newGrowing()
	m := model.Func(func(ctx context.Context, req model.Request) (model.Response, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == message.RoleTool {
			return model.Response{Message: message.Text(message.RoleAssistant, "done")}, nil
		}
		name := "clash"
		if last.Text() == "grow" {
			name = "grow"
		}
		return model.Response{Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: name, Name: name, Arguments: json.RawMessage(`{}`)}}}}, nil
	})
	sg, err := agent.React(context.Background(), agent.Env{Model: m, Providers: map[string][]sdk.Provider{"tools": {echo, g}}})
	if err != nil {
		t.Fatal(err)
	}
	app, err := thread.Compile(sg, checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	inEmit, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	app.Observe(func(e graph.Event) {
		if _, ok := e.Data.(toolnode.ToolIgnored); ok {
			once.Do(func() {
				close(inEmit)
				<-release
			})
		}
	})
	slow := make(chan error, 1)
	go func() {
		_, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "grow")}, thread.RunConfig{ThreadID: "slow"})
		slow <- err
	}()
	<-inEmit // the slow run is reporting the tools it left out, and blocked there

	other := make(chan error, 1)
	go func() {
		res, err := app.Invoke(context.Background(), []message.Message{message.Text(message.RoleUser, "go")}, thread.RunConfig{ThreadID: "other"})
		if err == nil && res.Status != graph.StatusCompleted {
			err = fmt.Errorf("status %s, want completed", res.Status)
		}
		other <- err
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatalf("other run: %v", err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a run blocked on its events held up another run of the node for 10s")
	}
	close(release)
	if err := <-slow; err != nil {
		t.Fatalf("slow run: %v", err)
	}
}
