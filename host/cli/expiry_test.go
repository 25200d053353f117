package cli_test

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// expiryTimeout is the remote tool's timeout in these tests.
const expiryTimeout = time.Second

// expiring is one `serve` process of a config whose remote tool expires
// after expiryTimeout.
type expiring struct {
	*replica
	done chan error
}

// startExpiring writes the config for st (once per dir) and starts one
// replica of it.
func startExpiring(t *testing.T, bin, dir string, m *model, st store) *expiring {
	t.Helper()
	cfg := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "openai", "model": "test-model", "base_url": "`+m.URL+`"},
  "builtin_tools": {"enable": ["calculator"]},
  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}, "timeout": "`+expiryTimeout.String()+`"}],
  "checkpointer": `+st.cfg+`}`), 0o600)
	cmd := exec.Command(bin, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	cmd.Env = append(append(os.Environ(), st.env...), "TENXGRAPH_LOG_LEVEL=error")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &expiring{replica: &replica{cmd: cmd}, done: make(chan error, 1)}
	sc := bufio.NewScanner(stdout)
	re := regexp.MustCompile(`on (http://\S+) `)
	for e.base == "" && sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			e.base = m[1]
		}
	}
	if e.base == "" {
		cmd.Process.Kill()
		t.Fatal("serve never said where it listens")
	}
	go func() {
		io.Copy(io.Discard, stdout)
		e.done <- cmd.Wait()
	}()
	t.Cleanup(func() { e.stop(t) })
	return e
}

// stop ends the process with SIGTERM, as an operator's restart does, and
// waits for it; safe to call twice.
func (e *expiring) stop(t *testing.T) {
	if e.done == nil {
		return
	}
	e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(60 * time.Second):
		e.cmd.Process.Kill()
		<-e.done
		t.Errorf("serve did not stop on SIGTERM")
	}
	e.done = nil
}

// pausedUntil starts thread on r and returns its remote call and when it
// expires.
func pausedUntil(t *testing.T, r *replica, thread string) (string, time.Time) {
	t.Helper()
	res := ask(t, r, "", thread, "what is 2+3*4 and what is on my clipboard?")
	calls, _ := res.body["remote_tool_calls"].([]any)
	if res.code != 200 || res.status() != "interrupted" || len(calls) != 1 {
		t.Fatalf("start %s: %d %s", thread, res.code, res.raw)
	}
	c := calls[0].(map[string]any)
	at, err := time.Parse(time.RFC3339Nano, c["expires_at"].(string))
	if err != nil {
		t.Fatalf("expires_at of %v: %v", c, err)
	}
	return c["id"].(string), at
}

// waitExpired polls the thread on r until it completed by itself, and
// checks that the call got the expiry's error result and the model
// answered after it.
func waitExpired(t *testing.T, r *replica, thread, call string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		got := do(t, "GET", r.base+"/v1/threads/"+thread, "", "")
		if got.code == 200 && got.status() == "completed" {
			var th struct {
				Messages []struct {
					Role    string `json:"role"`
					Content []struct {
						Type       string          `json:"type"`
						ToolCallID string          `json:"tool_call_id"`
						Content    json.RawMessage `json:"content"`
						IsError    bool            `json:"is_error"`
					} `json:"content"`
				} `json:"messages"`
			}
			json.Unmarshal([]byte(got.raw), &th)
			found := false
			for _, m := range th.Messages {
				for _, b := range m.Content {
					if b.Type == "tool_result" && b.ToolCallID == call {
						found = b.IsError && strings.Contains(string(b.Content), "the client did not answer within "+expiryTimeout.String())
					}
				}
			}
			if !found || th.Messages[len(th.Messages)-1].Role != "assistant" || !strings.Contains(got.messages(), "Your clipboard holds") {
				t.Fatalf("thread %s completed without the expiry's error result, or without the model's answer after it: %s", thread, got.raw)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %s did not expire: %d %s", thread, got.code, got.raw)
		}
		time.Sleep(50 * time.Millisecond) // polling
	}
}

// A remote call no client answers expires end to end with real `serve`
// processes on one store: with two replicas polling, the thread completes
// by itself with the error result and the model runs once for it; a late
// result gets 409 expired on either replica; and a thread paused before a
// restart, whose deadline passes while no process runs, expires once a
// process is back.
func TestReplicasExpiry(t *testing.T) {
	bin, _ := built(t)
	for _, st := range stores(t, "") {
		t.Run(st.name, func(t *testing.T) {
			dir := t.TempDir()
			m := newModel(t)
			a := startExpiring(t, bin, dir, m, st)
			b := startExpiring(t, bin, dir, m, st)

			// Threads paused together on both replicas come due together:
			// both replicas' wake-ups find them, and the claim lets one
			// expire each.
			const n = 20
			prefix := "E-" + rand.Text()
			calls := make([]string, n)
			var last time.Time
			// Counted before the pauses, each of which calls the model once:
			// on a slow machine the first threads expire while the last
			// are still pausing.
			before := m.Served() + n
			for i := range n {
				calls[i], last = pausedUntil(t, []*expiring{a, b}[i%2].replica, fmt.Sprintf("%s-%d", prefix, i))
			}
			for i := range n {
				waitExpired(t, []*expiring{a, b}[(i+1)%2].replica, fmt.Sprintf("%s-%d", prefix, i), calls[i])
			}
			t.Logf("%s: %d threads expired, the last %v after the last deadline (polled every 50ms)", st.name, n, time.Since(last).Round(time.Millisecond))
			for _, r := range []*expiring{a, b} {
				late := answer(t, r.replica, "", prefix+"-0", calls[0])
				if late.code != 409 || late.errCode() != "expired" || !strings.Contains(late.raw, calls[0]) {
					t.Fatalf("late result on %s: %d %s", r.base, late.code, late.raw)
				}
			}
			if ran := m.Served() - before; ran != n {
				t.Fatalf("%d model calls after %d threads paused, want %d: one per expiry, on one replica", ran, n, n)
			}
			// Across a restart: both stop while the call is pending, the
			// deadline passes with no process running, one comes back.
			restarted := "R-" + rand.Text()
			rcall, expires := pausedUntil(t, b.replica, restarted)
			a.stop(t)
			b.stop(t)
			if got := do(t, "GET", a.base+"/v1/threads/"+restarted, "", ""); got.code != 0 {
				t.Fatalf("a stopped replica answered: %d", got.code)
			}
			for time.Now().Before(expires.Add(100 * time.Millisecond)) {
				time.Sleep(50 * time.Millisecond) // polling the clock past the deadline
			}
			before = m.Served()
			c := startExpiring(t, bin, dir, m, st)
			waitExpired(t, c.replica, restarted, rcall)
			if ran := m.Served() - before; ran != 1 {
				t.Fatalf("%d model calls after the restart, want 1: the expiry's", ran)
			}
		})
	}
}

// At the prompt of `tenxgraph run`, the person is the client: an answer
// given after the call expired is refused, and the run goes on with the
// expiry's error result instead of leaving the thread paused.
func TestRunAnswerAfterTheCallExpired(t *testing.T) {
	cfg := quickstart(t)
	data, _ := os.ReadFile(cfg)
	var c map[string]any
	json.Unmarshal(data, &c)
	for _, rt := range c["remote_tools"].([]any) {
		if rt.(map[string]any)["name"] == "read_clipboard" {
			rt.(map[string]any)["timeout"] = "1s"
		}
	}
	data, _ = json.Marshal(c)
	os.WriteFile(cfg, data, 0o600)

	code, out, errs := run(t, "", "run", "--config", cfg, "--thread", "x", "what is on my clipboard?")
	if code != 1 || !strings.Contains(errs, "stays paused") || !strings.Contains(out, "Answer by ") {
		t.Fatalf("no answer: exit %d\n%s%s", code, out, errs)
	}
	// The call was made before run returned: a second later it expired.
	for past := time.Now().Add(expiryTimeout + 50*time.Millisecond); time.Now().Before(past); {
		time.Sleep(20 * time.Millisecond) // polling the clock past the deadline
	}
	code, out, errs = run(t, "\"too late\"\n", "run", "--config", cfg, "--thread", "x", "hello")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"Too late: ", "expired", "I could not read your clipboard: the client did not answer within 1s", "Hello! I am tenxgraph's scripted demo model"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
