package thread_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// Two tenants' threads of one id are two threads, on one app and across
// two apps sharing the store (two replicas): neither sees, changes,
// deletes or holds up the other's, and each answers for the other's
// exactly as for an unknown thread.
func TestTenantsHaveThreadsOfTheirOwn(t *testing.T) {
	store := checkpoint.NewMemory()
	build := func() *thread.App {
		app, err := thread.Compile(graph.New().AddNode("n", graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, in.Run.Tenant+" heard "+in.State.Messages[len(in.State.Messages)-1].Text())}}, nil
		})).AddEdge(graph.START, "n").AddEdge("n", graph.END), store)

		if err != nil {
			t.Fatal(err)
		}
		return app
	}
	one, two := build(), build()
	alice := thread.RunConfig{ThreadID: "x", Tenant: "ALICE", Metadata: map[string]string{"k": "alice's"}}
	bob := thread.RunConfig{ThreadID: "x", Tenant: "BOB"}

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
	for _, app := range []*thread.App{one, two} {
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
	if md, err := one.ThreadMetadata(ctx, "ALICE", "x"); err != nil || md["k"] != "alice's" {
		t.Fatalf("alice's metadata: %v, %v", md, err)
	}
	if md, err := one.ThreadMetadata(ctx, "BOB", "x"); err != nil || md != nil {
		t.Fatalf("bob's metadata: %v, %v; want none", md, err)
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
	one, _ := thread.Compile(g, store)
	two, _ := thread.Compile(g, store)
	done := make(chan error, 1)
	go func() {
		_, err := one.Invoke(ctx, user("slow"), thread.RunConfig{ThreadID: "x", Tenant: "ALICE"})
		done <- err
	}()
	<-entered
	for _, app := range []*thread.App{one, two} {
		if _, err := app.Invoke(ctx, user("hi"), thread.RunConfig{ThreadID: "x", Tenant: "ALICE"}); !errors.Is(err, graph.ErrThreadBusy) {
			t.Fatalf("alice's second run while her first holds the thread: %v, want ErrThreadBusy", err)
		}
		if _, err := app.Invoke(ctx, user("hi"), thread.RunConfig{ThreadID: "x", Tenant: "BOB"}); err != nil {
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

// caller is a node that calls a tool with the id "call_1_0", as the
// scripted model and many servers do on every turn, and asker the node
// that then waits for the call's result (what a ToolNode does for a remote
// tool), in a graph of the two.
func callerAndAsker(t *testing.T, store checkpoint.Checkpointer) *thread.App {
	caller := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		if last := in.State.Messages[len(in.State.Messages)-1]; last.Role == message.RoleTool {
			return graph.Update{Messages: []message.Message{message.Text(message.RoleAssistant, "got "+string(last.ToolResults()[0].Content))}}, nil
		}
		return graph.Update{Messages: []message.Message{{Role: message.RoleAssistant, Content: []message.Block{
			message.ToolCallBlock{ID: "call_1_0", Name: "read", Arguments: json.RawMessage(`{}`)}}}}}, nil
	})
	asker := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		calls := in.State.Messages[len(in.State.Messages)-1].ToolCalls()
		if in.Resume == nil {
			var its []graph.Interrupt
			for _, c := range calls {
				its = append(its, graph.Interrupt{ID: c.ID, Value: json.RawMessage(`1`)})
			}
			return graph.Update{Interrupts: its}, nil
		}
		var out []message.Block
		for _, c := range calls {
			out = append(out, message.ToolResultBlock{ToolCallID: c.ID, Content: in.Resume[c.ID].Value})
		}
		return graph.Update{Messages: []message.Message{{Role: message.RoleTool, Content: out}}}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("caller", caller).AddNode("asker", asker).
		AddEdge(graph.START, "caller").
		AddConditionalEdges("caller", func(s graph.State) []string {
			if len(s.Messages[len(s.Messages)-1].ToolCalls()) > 0 {
				return []string{"asker"}
			}
			return []string{graph.END}
		}, "asker", graph.END).
		AddEdge("asker", "caller"),
		store)

	if err != nil {
		t.Fatal(err)
	}
	return app
}

func answer(id, v string) []message.Message {
	return []message.Message{{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: id, Content: json.RawMessage(v)}}}}
}

// The engine names tool calls, whatever ids the model gives: unique in a
// thread's life (the same model id on two turns is two ids) and across its
// lives, so a result a stale client sends for a call of a deleted thread
// is refused by the thread created again under its id, and changes
// nothing.
func TestCallIDsAreTheThreadLifes(t *testing.T) {
	store := checkpoint.NewMemory()
	a, b := callerAndAsker(t, store), callerAndAsker(t, store) // two replicas
	cfg := thread.RunConfig{ThreadID: "t", Tenant: "ALICE"}

	first, err := a.Invoke(ctx, user("one"), cfg)
	if err != nil || first.Status != graph.StatusInterrupted || len(first.Interrupts) != 1 {
		t.Fatalf("first turn: %v %s %+v", err, first.Status, first.Interrupts)
	}
	old := first.Interrupts[0].ID
	if old == "call_1_0" {
		t.Fatalf("the call kept the model's id %q", old)
	}
	if calls := first.Messages[1].ToolCalls(); len(calls) != 1 || calls[0].ID != old {
		t.Fatalf("the thread's call %+v, the pending one %q: want one id for both", calls, old)
	}
	res, err := a.Invoke(ctx, answer(old, `"r1"`), cfg)
	if err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("answer: %v %s", err, res.Status)
	}
	// A second turn: the model's id again, the thread's id another.
	second, err := a.Invoke(ctx, user("two"), cfg)
	if err != nil || second.Status != graph.StatusInterrupted {
		t.Fatalf("second turn: %v %s", err, second.Status)
	}
	if again := second.Interrupts[0].ID; again == old {
		t.Fatalf("two calls of one thread share the id %q", again)
	}

	// Deleted on one replica and created again on the other.
	if err := b.DeleteThread(ctx, "ALICE", "t"); err != nil {
		t.Fatal(err)
	}
	fresh, err := b.Invoke(ctx, user("one"), cfg)
	if err != nil || fresh.Status != graph.StatusInterrupted {
		t.Fatalf("the new thread: %v %s", err, fresh.Status)
	}
	pending := fresh.Interrupts[0].ID
	if pending == old || pending == second.Interrupts[0].ID {
		t.Fatalf("the new thread's call has the old thread's id %q", pending)
	}
	before, err := a.ThreadFor(ctx, "ALICE", "t")
	if err != nil {
		t.Fatal(err)
	}
	for _, app := range []*thread.App{a, b} {
		_, err := app.Invoke(ctx, answer(old, `"stale"`), cfg)
		var se *graph.StateError
		if !errors.Is(err, graph.ErrUnknownCall) || !errors.As(err, &se) || !slices.Equal(se.CallIDs, []string{old}) ||
			!strings.Contains(err.Error(), pending) {
			t.Fatalf("the stale result: %v, want ErrUnknownCall naming %q and the pending %q", err, old, pending)
		}
	}
	after, err := b.ThreadFor(ctx, "ALICE", "t")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(texts(after.Messages), texts(before.Messages)) || after.Status != graph.StatusInterrupted ||
		len(after.Interrupts) != 1 || after.Interrupts[0].ID != pending {
		t.Fatalf("the stale result changed the thread: %q %s %+v", texts(after.Messages), after.Status, after.Interrupts)
	}
	if res, err := b.Invoke(ctx, answer(pending, `"r2"`), cfg); err != nil || res.Status != graph.StatusCompleted ||
		!strings.Contains(texts(res.Messages)[len(res.Messages)-1], "r2") {
		t.Fatalf("the new thread's own result: %v %s", err, res.Status)
	}
}

// A node's call is renamed with the blocks of its update that name it, so
// a node that returns a call and its result at once keeps them paired.
func TestCallRenamedWithItsResult(t *testing.T) {
	both := graph.NodeFunc(func(ctx context.Context, in *graph.Input) (graph.Update, error) {
		return graph.Update{Messages: []message.Message{
			{Role: message.RoleAssistant, Content: []message.Block{message.ToolCallBlock{ID: "c", Name: "t", Arguments: json.RawMessage(`{}`)}}},
			{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{ToolCallID: "c", Content: json.RawMessage(`1`)}}},
		}}, nil
	})
	app, err := thread.Compile(graph.New().AddNode("n", both).AddEdge(graph.START, "n").AddEdge("n", graph.END), checkpoint.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	res, err := app.Invoke(ctx, user("go"), thread.RunConfig{ThreadID: "p"})
	if err != nil {
		t.Fatal(err)
	}
	call, result := res.Messages[1].ToolCalls()[0], res.Messages[2].ToolResults()[0]
	if call.ID == "c" || result.ToolCallID != call.ID {
		t.Fatalf("call %q, result for %q: want a new id, the same for both", call.ID, result.ToolCallID)
	}
}

// A provider tells two tenants' threads of one id apart, and learns
// neither tenant's name from it.
func TestProviderThreadID(t *testing.T) {
	plain := &graph.Run{ThreadID: "t1"}
	alice := &graph.Run{ThreadID: "t1", Tenant: "TOKEN_ALICE"}
	bob := &graph.Run{ThreadID: "t1", Tenant: "TOKEN_BOB"}
	if got := plain.ProviderThreadID(); got != "t1" {
		t.Errorf("without a tenant: %q, want the client's id", got)
	}
	a, b := alice.ProviderThreadID(), bob.ProviderThreadID()
	if a == b || a == "t1" || b == "t1" {
		t.Errorf("two tenants' threads of one id: %q and %q", a, b)
	}
	for _, id := range []string{a, b} {
		if strings.Contains(id, "ALICE") || strings.Contains(id, "BOB") || strings.Contains(id, "TOKEN") {
			t.Errorf("%q names its tenant", id)
		}
		if strings.ContainsFunc(id, unicode.IsControl) || !strings.HasSuffix(id, "/t1") {
			t.Errorf("%q: want a printable tag, then /t1", id)
		}
	}
	if again := (&graph.Run{ThreadID: "t1", Tenant: "TOKEN_ALICE"}).ProviderThreadID(); again != a {
		t.Errorf("not stable: %q, then %q", a, again)
	}
}
