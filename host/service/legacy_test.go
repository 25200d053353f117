package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/service"
	"github.com/tenxgraph/tenxgraph/host/thread"
)

// A thread paused by the release before interrupts were saved with the
// checkpoint (testdata/legacy_paused.json, written by that release's serve
// on the quickstart) keeps its pending call after an upgrade, and resumes
// to the answer it would have given.
func TestLegacyPausedThreadResumes(t *testing.T) {
	raw, err := os.ReadFile("testdata/legacy_paused.json")
	if err != nil {
		t.Fatal(err)
	}
	var fix struct {
		Status string          `json:"status"`
		Next   []string        `json:"next"`
		RunID  string          `json:"run_id"`
		Step   int             `json:"step"`
		State  json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(raw, &fix); err != nil {
		t.Fatal(err)
	}
	cfg := quickstartConfig(t)
	store := checkpoint.NewMemory()
	ctx := context.Background()
	if err := store.Put(ctx, checkpoint.Checkpoint{ThreadID: "legacy", Seq: 1, RunID: fix.RunID, Step: fix.Step,
		Status: checkpoint.Status(fix.Status), Next: fix.Next, State: fix.State, Metadata: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	s, err := service.New(ctx, cfg, service.Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)

	th, err := s.App.Thread(ctx, "legacy")
	if err != nil {
		t.Fatal(err)
	}
	if th.Status != graph.StatusInterrupted || len(th.RemoteToolCalls) != 1 || th.RemoteToolCalls[0].ID != "call_2_1" {
		t.Fatalf("the legacy thread reads %s with pending %+v, want interrupted with call_2_1", th.Status, th.RemoteToolCalls)
	}
	answer := message.Message{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{
		ToolCallID: "call_2_1", Content: json.RawMessage(`{"text": "from before the upgrade"}`)}}}
	res, err := s.App.Invoke(ctx, []message.Message{answer}, thread.RunConfig{ThreadID: "legacy"})
	if err != nil {
		t.Fatal(err)
	}
	last := res.Messages[len(res.Messages)-1]
	if res.Status != graph.StatusCompleted || !strings.Contains(last.Text(), "2+3*4 = 14. Your clipboard holds: from before the upgrade") {
		t.Fatalf("resumed: %s, %q", res.Status, last.Text())
	}
	// The calculator, answered before the pause, did not run again.
	results := 0
	for _, m := range res.Messages {
		for _, r := range m.ToolResults() {
			if r.ToolCallID == "call_2_0" {
				results++
			}
		}
	}
	if results != 1 {
		t.Fatalf("calculator results in the thread: %d, want 1", results)
	}
}

// quickstartConfig is the quickstart's config, from a copy in a folder of
// the test's.
func quickstartConfig(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"10xgraph.json", "script.json"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "quickstart", f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), data, 0o600)
	}
	cfg, err := config.Load(filepath.Join(dir, "10xgraph.json"))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A client resending the result of an earlier pause's call (its response
// was lost) while the thread waits on a later pause gets it accepted and
// ignored, as docs/remote-tools.md promises; a different result for that
// call is a conflict. Neither changes the thread.
func TestResendingAnEarlierPausesResult(t *testing.T) {
	cfg := quickstartConfig(t)
	ctx := context.Background()
	s, err := service.New(ctx, cfg, service.Options{Store: checkpoint.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(ctx)
	ask := func(text string) graph.Result {
		t.Helper()
		res, err := s.App.Invoke(ctx, []message.Message{message.Text(message.RoleUser, text)}, thread.RunConfig{ThreadID: "r"})
		if err != nil || res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 1 {
			t.Fatalf("%q: %v %+v", text, err, res.RemoteToolCalls)
		}
		return res
	}
	result := func(id, text string) []message.Message {
		return []message.Message{{Role: message.RoleTool, Content: []message.Block{message.ToolResultBlock{
			ToolCallID: id, Content: json.RawMessage(`{"text": "` + text + `"}`)}}}}
	}
	first := ask("what is on my clipboard?").RemoteToolCalls[0].ID
	if res, err := s.App.Invoke(ctx, result(first, "one"), thread.RunConfig{ThreadID: "r"}); err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("first answer: %v %s", err, res.Status)
	}
	mid := ask("what is on my clipboard now?").RemoteToolCalls[0].ID
	if res, err := s.App.Invoke(ctx, result(mid, "mid"), thread.RunConfig{ThreadID: "r"}); err != nil || res.Status != graph.StatusCompleted {
		t.Fatalf("second answer: %v %s", err, res.Status)
	}
	second := ask("and what is on my clipboard at last?").RemoteToolCalls[0].ID
	before, _ := s.App.Thread(ctx, "r")

	res, err := s.App.Invoke(ctx, result(first, "one"), thread.RunConfig{ThreadID: "r"})
	if err != nil || res.Status != graph.StatusInterrupted || len(res.RemoteToolCalls) != 1 || res.RemoteToolCalls[0].ID != second {
		t.Fatalf("resending the earlier result: %v, %s %+v", err, res.Status, res.RemoteToolCalls)
	}
	_, err = s.App.Invoke(ctx, result(first, "two"), thread.RunConfig{ThreadID: "r"})
	if !errors.Is(err, graph.ErrResultConflict) {
		t.Fatalf("a different result for the earlier call: %v, want ErrResultConflict", err)
	}
	after, _ := s.App.Thread(ctx, "r")
	if len(after.Messages) != len(before.Messages) {
		t.Fatalf("the thread changed: %d messages, was %d", len(after.Messages), len(before.Messages))
	}
}
