package cli_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// Two `serve` replicas on one store, behind no load balancer: the tests
// send each request to the replica they choose, which is what a load
// balancer without stickiness may do.

// postgresDSNEnv names the DSN of a PostgreSQL server the tests may create
// schemas in; scripts/test.sh starts a throwaway server and sets it.
const postgresDSNEnv = "TENXGRAPH_TEST_POSTGRES_DSN"

// replicaLease is the replicas' checkpointer.lease: short, so a dead
// replica's thread is free again within the test, and long enough that a
// run on a loaded machine keeps it with heartbeats.
const replicaLease = 3 * time.Second

// store is one shared store the replicas are configured with.
type store struct {
	name string
	cfg  string   // the "checkpointer" object
	env  []string // what the replicas' environment adds
}

// stores returns SQLite (one file) and, when a server is configured,
// PostgreSQL (a new schema, dropped at the end).
func stores(t *testing.T, dir string) []store {
	lease := fmt.Sprintf(`, "lease": %q`, replicaLease.String())
	out := []store{{name: "sqlite", cfg: `{"type": "sqlite", "path": "state.db"` + lease + `}`}}
	dsn := os.Getenv(postgresDSNEnv)
	if dsn == "" {
		t.Logf("%s is unset: the PostgreSQL half is skipped (scripts/test.sh starts a server and sets it)", postgresDSNEnv)
		return out
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", postgresDSNEnv, err)
	}
	defer conn.Close(ctx)
	schema := "tenxgraph_replicas_" + strings.ToLower(rand.Text())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	return append(out, store{name: "postgres", cfg: `{"type": "postgres", "dsn_env": "TENXGRAPH_REPLICA_DSN"` + lease + `}`,
		env: []string{"TENXGRAPH_REPLICA_DSN=" + dsn + " search_path=" + schema}})
}

// modelLatency is how long the model takes to answer.
const modelLatency = 30 * time.Millisecond

// model is the OpenAI-compatible model server both replicas call. A user
// message gets calls to calculator and read_clipboard (a remote tool, so
// the run pauses); tool results get the final text; a message containing
// "hold" (a user's, or the client's tool result) blocks its first call
// until the test ends, counting it in held.
type model struct {
	*openaitest.Server
	held    atomic.Int64
	release chan struct{}
}

func newModel(t *testing.T) *model {
	m := &model{Server: openaitest.NewServer(t), release: make(chan struct{})}
	t.Cleanup(func() { close(m.release) }) // runs before the server closes
	var calls, holds atomic.Int64
	m.Handle(func(req openaitest.Request) openaitest.Reply {
		last := req.Messages[len(req.Messages)-1]
		if strings.Contains(fmt.Sprint(last.Content), "hold") && holds.Add(1) == 1 {
			m.held.Add(1)
			<-m.release
		}
		if last.Role == "tool" {
			// A hosted model takes its time: long enough that duplicate
			// resumes reach the model before the first one's answer is
			// saved, unless they are refused before it.
			time.Sleep(modelLatency)
			return openaitest.Text("2+3*4 = 14. Your clipboard holds: hi")
		}
		if strings.Contains(fmt.Sprint(last.Content), "hold") {
			return openaitest.Text("not held")
		}
		time.Sleep(modelLatency)
		id := fmt.Sprintf("call_%d_", calls.Add(1))
		return openaitest.Calls(
			openaitest.Call(id+"0", "calculator", `{"expression":"2+3*4"}`),
			openaitest.Call(id+"1", "read_clipboard", `{}`))
	})
	return m
}

// replica is one `tenxgraph serve` process.
type replica struct {
	cmd  *exec.Cmd
	base string
}

// startReplicas writes the config for st and starts n replicas of it.
func startReplicas(t *testing.T, bin, dir string, m *model, st store, auth bool, n int) []*replica {
	t.Helper()
	server := ""
	env := append(os.Environ(), st.env...)
	env = append(env, "TENXGRAPH_LOG_LEVEL=error")
	if auth {
		server = `, "server": {"auth": {"tokens_env": ["TENXGRAPH_TOKEN_ALICE", "TENXGRAPH_TOKEN_BOB"]}}`
		env = append(env, "TENXGRAPH_TOKEN_ALICE=alice-secret", "TENXGRAPH_TOKEN_BOB=bob-secret")
	}
	cfg := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "openai", "model": "test-model", "base_url": "`+m.URL+`"},
  "builtin_tools": {"enable": ["calculator"]},
  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
  "checkpointer": `+st.cfg+server+`}`), 0o600)
	var out []*replica
	for range n {
		cmd := exec.Command(bin, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
		cmd.Env = env
		stdout, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		sc := bufio.NewScanner(stdout)
		re := regexp.MustCompile(`on (http://\S+) `)
		base := ""
		for base == "" && sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				base = m[1]
			}
		}
		if base == "" {
			t.Fatal("serve never said where it listens")
		}
		go io.Copy(io.Discard, stdout)
		out = append(out, &replica{cmd: cmd, base: base})
	}
	return out
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}

// reply is what a request got: the status and the JSON body.
type reply struct {
	code int
	body map[string]any
	raw  string
}

func (r reply) errCode() string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (r reply) status() string { s, _ := r.body["status"].(string); return s }

// pending returns the ids of the remote calls a paused thread waits for.
func (r reply) pending() []string {
	var ids []string
	calls, _ := r.body["remote_tool_calls"].([]any)
	for _, c := range calls {
		if m, ok := c.(map[string]any); ok {
			id, _ := m["id"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}

func (r reply) messages() string {
	b, _ := json.Marshal(r.body["messages"])
	return string(b)
}

func do(t *testing.T, method, url, token, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{raw: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode, raw: string(b)}
	json.Unmarshal(b, &r.body)
	return r
}

func ask(t *testing.T, r *replica, token, thread, text string) reply {
	return do(t, "POST", r.base+"/v1/graph/invoke", token,
		`{"input": {"messages": [{"role": "user", "content": `+quote(text)+`}]}, "config": {"thread_id": `+quote(thread)+`}}`)
}

func answer(t *testing.T, r *replica, token, thread, callID string) reply {
	return answerText(t, r, token, thread, callID, "hi")
}

// answerText answers the call with {"text": text}.
func answerText(t *testing.T, r *replica, token, thread, callID, text string) reply {
	return do(t, "POST", r.base+"/v1/graph/invoke", token,
		`{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": `+quote(callID)+`, "content": {"text": `+quote(text)+`}}]}]}, "config": {"thread_id": `+quote(thread)+`}}`)
}

// paused starts thread on r with text and returns the remote call it
// waits for.
func paused(t *testing.T, r *replica, token, thread, text string) string {
	t.Helper()
	res := ask(t, r, token, thread, text)
	if res.code != 200 || res.status() != "interrupted" || len(res.pending()) != 1 {
		t.Fatalf("start %s: %d %s", thread, res.code, res.raw)
	}
	return res.pending()[0]
}

// A pauses T; B deletes T and starts a new conversation on T, which pauses
// at the same seq; A resumes T with the old call id. The new conversation
// must stay intact and the stale resume be refused: the old call is not
// pending (409 unknown_call) in the thread created again, whose call has
// another id although the model gave it the same. With auth, the new
// conversation is another token's, so to the old one T is a thread it no
// longer has (409 not_paused, as for any thread it does not have).
func TestReplicasDeleteAndRecreate(t *testing.T) {
	bin, _ := built(t)
	for _, st := range stores(t, "") {
		t.Run(st.name, func(t *testing.T) {
			for _, auth := range []bool{false, true} {
				t.Run(fmt.Sprintf("auth=%v", auth), func(t *testing.T) {
					dir := t.TempDir()
					m := newModel(t)
					rs := startReplicas(t, bin, dir, m, st, auth, 2)
					a, b := rs[0], rs[1]
					alice, bob := "", ""
					if auth {
						alice, bob = "alice-secret", "bob-secret"
					}
					thread := "T-" + rand.Text()
					oldCall := paused(t, a, alice, thread, "the old conversation")
					// A reads the thread, as a client polling it would, so
					// its copy is as fresh as it can be.
					if got := do(t, "GET", a.base+"/v1/threads/"+thread, alice, ""); got.code != 200 {
						t.Fatalf("GET on A: %d %s", got.code, got.raw)
					}
					if got := do(t, "DELETE", b.base+"/v1/threads/"+thread, alice, ""); got.code != 204 && got.code != 200 {
						t.Fatalf("DELETE on B: %d %s", got.code, got.raw)
					}
					newCall := paused(t, b, bob, thread, "the new conversation")
					if newCall == oldCall {
						t.Fatalf("the model gave both conversations call id %s", oldCall)
					}

					stale := answer(t, a, alice, thread, oldCall)
					want := `"code":"unknown_call"`
					if auth {
						want = `"code":"not_paused"` // alice must not even see bob's thread
					}
					if stale.code != 409 || !strings.Contains(stale.raw, want) || !strings.Contains(stale.raw, oldCall) {
						t.Fatalf("stale resume on A: %d %s; want 409 with %s naming %s", stale.code, stale.raw, want, oldCall)
					}
					for _, r := range rs {
						got := do(t, "GET", r.base+"/v1/threads/"+thread, bob, "")
						if got.code != 200 || got.status() != "interrupted" || !strings.Contains(got.messages(), "the new conversation") ||
							strings.Contains(got.messages(), "the old conversation") || len(got.pending()) != 1 || got.pending()[0] != newCall {
							t.Fatalf("the new conversation on %s after the stale resume: %d %s", r.base, got.code, got.raw)
						}
					}
					// The new owner's conversation goes on.
					done := answer(t, a, bob, thread, newCall)
					if done.code != 200 || done.status() != "completed" || strings.Contains(done.messages(), "the old conversation") {
						t.Fatalf("resuming the new conversation on A: %d %s", done.code, done.raw)
					}
				})
			}
		})
	}
}

// 200 new threads, each sent 4 concurrent identical first messages, 2 to
// each replica; then each of the 200 paused threads sent 4 concurrent
// identical resumes alike. Each time the model runs exactly once per
// thread, and every other reply is the recorded outcome (200) or 409.
func TestReplicasConcurrentResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 800 requests per store")
	}
	bin, _ := built(t)
	const threads = 200
	for _, st := range stores(t, "") {
		t.Run(st.name, func(t *testing.T) {
			m := newModel(t)
			rs := startReplicas(t, bin, t.TempDir(), m, st, false, 2)
			prefix := rand.Text()
			calls := make([]string, threads)
			var mu sync.Mutex
			var problems []string
			parallel(threads*4, 64, func(j int) {
				i := j / 4
				res := ask(t, rs[j%2], "", fmt.Sprintf("%s-%d", prefix, i), "what is 2+3*4 and what is on my clipboard?")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.code == 200 && res.status() == "interrupted" && len(res.pending()) == 1:
					if calls[i] != "" {
						problems = append(problems, fmt.Sprintf("thread %d paused twice, for %s and %s", i, calls[i], res.pending()[0]))
					}
					calls[i] = res.pending()[0]
				case res.code == 409:
				default:
					problems = append(problems, fmt.Sprintf("thread %d: %d %s", i, res.code, res.raw))
				}
			})
			if started := m.Served(); started != threads || len(problems) > 0 {
				t.Fatalf("%d model calls for %d threads' first messages, want one per thread; problems: %s", started, threads, strings.Join(problems, "\n"))
			}
			for i, c := range calls {
				if c == "" {
					t.Fatalf("thread %d: no request was answered with its pause", i)
				}
			}
			before := m.Served()

			type outcome struct{ ok, busy, other int }
			outcomes := make([]outcome, threads)
			recorded := make([]string, threads) // the messages of a 200 reply
			parallel(threads*4, 64, func(j int) {
				i := j / 4
				res := answer(t, rs[j%2], "", fmt.Sprintf("%s-%d", prefix, i), calls[i])
				mu.Lock()
				defer mu.Unlock()
				switch {
				case res.code == 200 && res.status() == "completed" && strings.Count(res.messages(), "Your clipboard holds: hi") == 1:
					outcomes[i].ok++
					if recorded[i] != "" && recorded[i] != res.messages() {
						outcomes[i].other++
						problems = append(problems, fmt.Sprintf("thread %d: two 200 replies differ:\n%s\n%s", i, recorded[i], res.messages()))
					}
					recorded[i] = res.messages()
				case res.code == 409:
					outcomes[i].busy++
				default:
					outcomes[i].other++
					if len(problems) < 5 {
						problems = append(problems, fmt.Sprintf("thread %d: %d %s", i, res.code, res.raw))
					}
				}
			})
			ran := m.Served() - before
			okTotal, busyTotal := 0, 0
			for i, o := range outcomes {
				okTotal += o.ok
				busyTotal += o.busy
				if o.ok == 0 || o.other > 0 {
					t.Errorf("thread %d: %d completed, %d busy, %d other replies; want at least one completed and no other", i, o.ok, o.busy, o.other)
				}
			}
			t.Logf("%s: %d model calls after the pause; replies: %d completed, %d conflict", st.name, ran, okTotal, busyTotal)
			if len(problems) > 0 {
				t.Errorf("unexpected replies: %s", strings.Join(problems, "\n"))
			}
			if ran != threads {
				t.Errorf("%d model calls after the pause, want exactly %d (one per thread)", ran, threads)
			}
			for i := range threads {
				got := do(t, "GET", rs[i%2].base+"/v1/threads/"+fmt.Sprintf("%s-%d", prefix, i), "", "")
				if got.code != 200 || got.status() != "completed" || strings.Count(got.messages(), "Your clipboard holds: hi") != 1 ||
					strings.Count(got.messages(), `"tool_call_id":"`+calls[i]+`"`) != 1 {
					t.Fatalf("thread %d after the resumes: %d %s", i, got.code, got.raw)
				}
				if recorded[i] != "" && recorded[i] != got.messages() {
					t.Fatalf("thread %d: a 200 reply differs from the thread:\n%s\n%s", i, recorded[i], got.messages())
				}
			}

			// Later, the same result again gets the recorded outcome on
			// either replica, without new work; a different one is 409.
			before = m.Served()
			for i := range 10 {
				thread := fmt.Sprintf("%s-%d", prefix, i)
				for _, r := range rs {
					again := answer(t, r, "", thread, calls[i])
					if again.code != 200 || again.status() != "completed" || again.messages() != recorded[i] {
						t.Fatalf("thread %d: the same result again: %d %s", i, again.code, again.raw)
					}
					other := do(t, "POST", r.base+"/v1/graph/invoke", "",
						`{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": `+quote(calls[i])+`, "content": {"text": "not hi"}}]}]}, "config": {"thread_id": `+quote(thread)+`}}`)
					if other.code != 409 {
						t.Fatalf("thread %d: a different result: %d %s, want 409", i, other.code, other.raw)
					}
				}
			}
			if n := m.Served() - before; n != 0 {
				t.Fatalf("replayed results called the model %d times", n)
			}
		})
	}
}

// kill -9 of a replica in the middle of a run: the thread stays busy while
// the dead replica's lease lasts, then runs on the other replica, once.
func TestReplicasKilledMidRun(t *testing.T) {
	bin, _ := built(t)
	for _, st := range stores(t, "") {
		t.Run(st.name, func(t *testing.T) {
			m := newModel(t)
			rs := startReplicas(t, bin, t.TempDir(), m, st, false, 2)
			a, b := rs[0], rs[1]
			thread := "K-" + rand.Text()
			go ask(t, a, "", thread, "hold this")
			killed := killWhenHeld(t, m, a)

			// Within the lease the thread is busy on B, and nothing runs.
			served := m.Served()
			if got := ask(t, b, "", thread, "hold this"); got.code != 409 || got.errCode() != "thread_busy" {
				t.Fatalf("right after the kill, on B: %d %s; want 409 thread_busy (the dead replica's lease holds)", got.code, got.raw)
			}
			if m.Served() != served {
				t.Fatal("a refused request called the model")
			}
			// Once the lease expires, B runs it.
			got := untilNotBusy(t, killed, func() reply { return ask(t, b, "", thread, "hold this") })
			if got.code != 200 || got.status() != "completed" {
				t.Fatalf("on B after the lease expired: %d %s", got.code, got.raw)
			}
			if n := strings.Count(got.messages(), `"hold this"`); n != 1 {
				t.Fatalf("the thread holds the user message %d times, want once: %s", n, got.messages())
			}
			if n := strings.Count(got.messages(), "not held"); n != 1 {
				t.Fatalf("the thread holds the answer %d times, want once: %s", n, got.messages())
			}
		})
	}
}

// kill -9 of a replica while a resume's model call runs, under each
// durability: under "async" the checkpoint of the step before it (the
// client's result) may have been in flight. The client's resume, sent again
// to the other replica once the dead one's lease has expired, completes the
// run once: the client's result, the calculator's and the answer each
// appear once.
func TestReplicasKilledMidResume(t *testing.T) {
	bin, _ := built(t)
	for _, st := range stores(t, "") {
		for _, durability := range []string{"sync", "async"} {
			t.Run(st.name+"/"+durability, func(t *testing.T) {
				m := newModel(t)
				st := st
				st.cfg = strings.TrimSuffix(st.cfg, "}") + `, "durability": ` + quote(durability) + `}`
				rs := startReplicas(t, bin, t.TempDir(), m, st, false, 2)
				a, b := rs[0], rs[1]
				thread := "M-" + rand.Text()
				call := paused(t, a, "", thread, "what is 2+3*4 and what is on my clipboard?")
				go answerText(t, a, "", thread, call, "hold on")
				killed := killWhenHeld(t, m, a)
				got := untilNotBusy(t, killed, func() reply { return answerText(t, b, "", thread, call, "hold on") })
				if got.code != 200 || got.status() != "completed" {
					t.Fatalf("the resume again on B: %d %s", got.code, got.raw)
				}
				msgs := got.messages()
				for _, want := range []string{`"hold on"`, `"result":14`, "Your clipboard holds"} {
					if n := strings.Count(msgs, want); n != 1 {
						t.Fatalf("the thread holds %s %d times, want once: %s", want, n, msgs)
					}
				}
			})
		}
	}
}

// killWhenHeld kills r with SIGKILL once the model holds a call (r's run
// is then in the middle of a step), and returns when it was killed.
func killWhenHeld(t *testing.T, m *model, r *replica) time.Time {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for m.held.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never reached the model")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
	return time.Now()
}

// untilNotBusy sends a request until it is not refused with 409, which it
// may be while the lease of a replica killed at killed lasts (and no
// longer), and returns the answer.
func untilNotBusy(t *testing.T, killed time.Time, send func() reply) reply {
	t.Helper()
	for {
		got := send()
		if got.code != 409 {
			return got
		}
		if time.Since(killed) > replicaLease+10*time.Second {
			t.Fatalf("the thread was still busy %s after the kill, with a lease of %s: %s", time.Since(killed), replicaLease, got.raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// parallel calls f(0..n-1) with at most width calls at once.
func parallel(n, width int, f func(i int)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(i)
		}()
	}
	wg.Wait()
}
