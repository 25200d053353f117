package graph_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// Two tenants' threads of one id are two threads, on one app and across
// two apps sharing the store (two replicas): neither sees, changes,
// deletes or holds up the other's, and each answers for the other's
// exactly as for an unknown thread.
func TestTenantsHaveThreadsOfTheirOwn(t *testing.T) {
	store := checkpoint.NewMemory()
	build := func() *graph.App {
		app, err := graph.New().AddNode("n", graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, in.Run.Tenant+" heard "+in.State.Messages[len(in.State.Messages)-1].Text())}}, nil
		})).AddEdge(graph.START, "n").AddEdge("n", graph.END).Compile(store)
		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	one, two := build(), build()
	alice := graph.RunConfig{ThreadID: "x", Tenant: "ALICE"}
	bob := graph.RunConfig{ThreadID: "x", Tenant: "BOB"}

	// Bob takes the id first; alice's thread of that id is hers alone.
	if _, err := one.Invoke(ctx, user("b1"), bob); err != nil {
		t.Fatal(err)
	}
	res, err := two.Invoke(ctx, user("a1"), alice)
	if err != nil {
		t.Fatal(err)
	}
	if got := texts(res.Messages); !slices.Equal(got, []string{"a1", "ALICE heard a1"}) {
		t.Fatalf("alice's thread after bob took the id: %q", got)
	}
	if _, err := one.Invoke(ctx, user("b2"), bob); err != nil {
		t.Fatal(err)
	}
	for _, app := range []*graph.App{one, two} {
		a, err := app.ThreadFor(ctx, "ALICE", "x")
		if err != nil || !slices.Equal(texts(a.Messages), []string{"a1", "ALICE heard a1"}) {
			t.Fatalf("alice reads %q, %v", texts(a.Messages), err)
		}
		b, err := app.ThreadFor(ctx, "BOB", "x")
		if err != nil || !slices.Equal(texts(b.Messages), []string{"b1", "BOB heard b1", "b2", "BOB heard b2"}) {
			t.Fatalf("bob reads %q, %v", texts(b.Messages), err)
		}
		if a.ThreadID != "x" || b.ThreadID != "x" {
			t.Fatalf("thread ids %q and %q, want the tenants' own", a.ThreadID, b.ThreadID)
		}
	}
	// To a third tenant, and to code without one, the id is unknown: the
	// same error as an id nobody used, but for the id.
	for _, tenant := range []string{"CAROL", ""} {
		_, foreign := one.ThreadFor(ctx, tenant, "x")
		_, unknown := one.ThreadFor(ctx, tenant, "never-used")
		if !errors.Is(foreign, graph.ErrThreadNotFound) || strings.ReplaceAll(unknown.Error(), "never-used", "x") != foreign.Error() {
			t.Fatalf("tenant %q: another's thread answers %v, an unknown one %v", tenant, foreign, unknown)
		}
		if err := two.DeleteThread(ctx, tenant, "x"); !errors.Is(err, graph.ErrThreadNotFound) {
			t.Fatalf("tenant %q deleting another's thread: %v", tenant, err)
		}
		if hist, err := one.History(ctx, tenant, "x", 0); err != nil || len(hist) != 0 {
			t.Fatalf("tenant %q: history of another's thread: %d snapshots, %v", tenant, len(hist), err)
		}
	}
	// Deleting bob's thread leaves alice's.
	if err := two.DeleteThread(ctx, "BOB", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := one.ThreadFor(ctx, "BOB", "x"); !errors.Is(err, graph.ErrThreadNotFound) {
		t.Fatalf("bob's deleted thread: %v", err)
	}
	if a, err := one.ThreadFor(ctx, "ALICE", "x"); err != nil || len(a.Messages) != 2 {
		t.Fatalf("alice's thread after bob deleted his: %v", err)
	}
}

// A run of one tenant's thread does not make another tenant's thread of
// the same id busy, in its process or another: "busy" would tell that the
// id is in use.
func TestAnotherTenantsRunIsNotBusy(t *testing.T) {
	store := checkpoint.NewMemory()
	entered, release := make(chan struct{}), make(chan struct{})
	block := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if in.Run.Tenant == "ALICE" {
			close(entered)
			<-release
		}
		return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "done")}}, nil
	})
	g := graph.New().AddNode("n", block).AddEdge(graph.START, "n").AddEdge("n", graph.END)
	one, _ := g.Compile(store)
	two, _ := g.Compile(store)
	done := make(chan error, 1)
	go func() {
		_, err := one.Invoke(ctx, user("slow"), graph.RunConfig{ThreadID: "x", Tenant: "ALICE"})
		done <- err
	}()
	<-entered
	for _, app := range []*graph.App{one, two} {
		if _, err := app.Invoke(ctx, user("hi"), graph.RunConfig{ThreadID: "x", Tenant: "ALICE"}); !errors.Is(err, graph.ErrThreadBusy) {
			t.Fatalf("alice's second run while her first holds the thread: %v, want ErrThreadBusy", err)
		}
		if _, err := app.Invoke(ctx, user("hi"), graph.RunConfig{ThreadID: "x", Tenant: "BOB"}); err != nil {
			t.Fatalf("bob's run while alice's holds her thread of that id: %v", err)
		}
		if err := app.DeleteThread(ctx, "BOB", "x"); err != nil {
			t.Fatalf("bob deleting his thread while alice's holds hers: %v", err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
