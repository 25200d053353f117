package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenxgraph/tenxgraph/host/model/anthropic/anthropictest"
)

// anthropicModel is a Messages API server that answers a user turn with
// calls to calculator and read_clipboard, and tool results with the final
// text.
func anthropicModel(t *testing.T) *anthropictest.Server {
	srv := anthropictest.NewServer(t)
	var calls atomic.Int64
	srv.Handle(func(req anthropictest.Request) anthropictest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if last.Content[0].Type == "tool_result" {
			return anthropictest.Reply{Text: "2+3*4 = 14. Your clipboard holds: " + last.Content[1].Content, Split: 5}
		}
		id := fmt.Sprintf("toolu_%d_", calls.Add(1))
		return anthropictest.Reply{Text: "Let me look.", ToolUses: []anthropictest.ToolUse{
			anthropictest.Use(id+"0", "calculator", `{"expression":"2+3*4"}`),
			anthropictest.Use(id+"1", "read_clipboard", `{}`)}, Split: 4}
	})
	return srv
}

func anthropicConfig(t *testing.T, dir, base, extra string) string {
	cfg := filepath.Join(dir, "10xgraph.json")
	if err := os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "anthropic", "model": "claude-test", "base_url": "`+base+`", "system_prompt": "Be terse."`+extra+`},
  "builtin_tools": {"enable": ["calculator"]},
  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
  "checkpointer": {"type": "sqlite", "path": "state.db"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The real binary with the anthropic provider against a Messages API
// server: validate accepts the model block and refuses a bad one with
// paths; serve pauses a run on the remote tool and completes it with the
// client's result; run answers the remote tool at the prompt.
func TestAnthropicProviderEndToEnd(t *testing.T) {
	bin, _ := built(t)
	srv := anthropicModel(t)
	dir := t.TempDir()
	cfg := anthropicConfig(t, dir, srv.URL, `, "max_tokens": 2048`)

	out, err := exec.Command(bin, "validate", "--config", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	bad := anthropicConfig(t, t.TempDir(), srv.URL+"/v1", `, "max_tokens": 0, "api_key_env": "sk-ant-123"`)
	out, err = exec.Command(bin, "validate", "--config", bad).CombinedOutput()
	if err == nil {
		t.Fatalf("validate accepted a bad anthropic block:\n%s", out)
	}
	for _, want := range []string{"model.base_url", "without /v1", "model.max_tokens", "model.api_key_env"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("validate's errors miss %q:\n%s", want, out)
		}
	}

	_, base := serving(t, bin, "--config", cfg)
	res := do(t, "POST", base+"/v1/graph/invoke", "", `{"input": {"messages": [{"role": "user", "content": "what is 2+3*4 and what is on my clipboard?"}]}, "config": {"thread_id": "a1"}}`)
	if res.code != 200 || res.status() != "interrupted" || len(res.pending()) != 1 {
		t.Fatalf("invoke: %d %s", res.code, res.raw)
	}
	res = do(t, "POST", base+"/v1/graph/invoke", "", `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "`+res.pending()[0]+`", "content": {"text": "hi"}}]}]}, "config": {"thread_id": "a1"}}`)
	if res.code != 200 || res.status() != "completed" || !strings.Contains(res.raw, `2+3*4 = 14. Your clipboard holds: {\"text\":\"hi\"}`) {
		t.Fatalf("resume: %d %s", res.code, res.raw)
	}
	reqs := srv.Requests()
	second := reqs[len(reqs)-1]
	if second.MaxTokens != 2048 || len(second.System) != 1 || second.System[0] != "Be terse." || len(second.Messages) != 3 {
		t.Fatalf("the resumed call: max_tokens %d, system %q, %d turns", second.MaxTokens, second.System, len(second.Messages))
	}
	if r := second.Messages[2].Content; len(r) != 2 || !strings.Contains(r[0].Content, `"result":14`) || r[1].Content != `{"text":"hi"}` {
		t.Fatalf("tool results %+v", r)
	}

	cmd := exec.Command(bin, "run", "--config", cfg, "--thread", "r1", "what is 2+3*4 and what is on my clipboard?")
	cmd.Stdin = strings.NewReader("{\"text\":\"from the prompt\"}\n")
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, want := range []string{"Let me look.", "running calculator", "read_clipboard", `2+3*4 = 14. Your clipboard holds: {"text":"from the prompt"}`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("run's output misses %q:\n%s", want, out)
		}
	}
}
