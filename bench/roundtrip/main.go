// Command roundtrip measures the remote-tool round trip over HTTP: invoke a
// run in which the model calls a server tool and a remote tool in one step
// (→ interrupted), then resume it with the client's result (→ completed). It
// starts `tenxgraph serve` on the quickstart's setup (builtin tools, remote
// tools, SQLite) in a temporary folder and drives it from this process like
// a load tool. It has three modes:
//
//   - load (default): latency percentiles and round trips per second,
//     sequentially, then with -c threads in flight, each round trip on a new
//     thread; with the CPU time the server and its children (the plugins)
//     spent per round trip, and the plugins' part of it, read from /proc;
//   - -turns N: one thread, N round trips on it (asking for only what each
//     run added, config.response "delta", as the clients do); every 100 turns, the p50
//     turn latency, the bytes the server wrote (/proc/PID/io), the
//     database's growth and the server's RSS;
//   - -threads N: N threads of -thread-bytes each written to the store
//     first, then each read once through the server (GET /v1/threads/ID),
//     reporting the server's peak RSS against the cache's budget.
//
// The model is the quickstart's scripted model in the server (-model
// scripted), the OpenAI provider talking to the openaitest command, an
// OpenAI-compatible server in its own process (-model openai), or the
// anthropic provider talking to the anthropictest command, a Messages API
// server (-model anthropic); the model server's connections and CPU are
// reported too.
//
// -idle-poll keeps idle CPUs polling for the run: what is left is the
// processes' own work, without the machine's cost of waking a sleeping CPU
// at each hand-off between them (see bench/wakeup).
//
// -store postgres keeps the threads in the PostgreSQL database whose DSN is
// in the environment variable ROUNDTRIP_POSTGRES_DSN instead of SQLite, and
// -replicas N starts N servers on the one store and sends each request to
// the next server in turn (no stickiness: a resume rarely goes to the
// server that paused the thread), as a load balancer may.
//
//	go run ./bench/roundtrip -bin "$(go env GOPATH)/bin/tenxgraph" -model openai
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"golang.org/x/sync/errgroup"

	"github.com/tenxgraph/tenxgraph/bench/internal/idlepoll"
	"github.com/tenxgraph/tenxgraph/bench/internal/procfs"
	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
)

type options struct {
	bin, model, modelBin, cpuProfile, modelProfile string
	anthropicBin                                   string
	store, durability                              string
	replicas                                       int
	idlePoll                                       bool
	seq, dur                                       time.Duration
	conc, turns, threads                           int
	threadBytes, cacheBytes                        int64
	image                                          int
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "", "the tenxgraph binary (default: build one)")
	flag.StringVar(&o.model, "model", "scripted", `the model: "scripted" (in the server), "openai" (the OpenAI provider and the openaitest command in its own process) or "anthropic" (the anthropic provider and the anthropictest command)`)
	flag.StringVar(&o.modelBin, "openaitest", "", "the openaitest binary for -model openai (default: build one)")
	flag.StringVar(&o.anthropicBin, "anthropictest", "", "the anthropictest binary for -model anthropic (default: build one)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the server (tenxgraph serve --cpuprofile) to this file")
	flag.StringVar(&o.modelProfile, "model-cpuprofile", "", "with -model openai or anthropic, write a CPU profile of the model server (openaitest or anthropictest -cpuprofile) to this file")
	flag.DurationVar(&o.seq, "seq", 5*time.Second, "how long to run the sequential measurement")
	flag.DurationVar(&o.dur, "d", 10*time.Second, "how long to run the concurrent measurement")
	flag.IntVar(&o.conc, "c", 100, "threads in flight in the concurrent measurement")
	flag.IntVar(&o.turns, "turns", 0, "drive one thread this many turns instead (a report every 100 turns)")
	flag.IntVar(&o.threads, "threads", 0, "write this many threads to the store, then read each through the server, and report its memory")
	flag.Int64Var(&o.threadBytes, "thread-bytes", 2<<20, "the size of each thread's messages with -threads")
	flag.Int64Var(&o.cacheBytes, "cache-bytes", 0, "the server's cache.max_bytes (0: its default)")
	flag.StringVar(&o.store, "store", "sqlite", `the checkpointer: "sqlite" (a file in the temporary folder) or "postgres" (the DSN in $ROUNDTRIP_POSTGRES_DSN)`)
	flag.StringVar(&o.durability, "durability", "", `the server's checkpointer.durability: "sync", "async" or "exit" ("": its default)`)
	flag.IntVar(&o.replicas, "replicas", 1, "servers on the one store, taking requests in turn (not with -threads)")
	flag.IntVar(&o.image, "image", 0, "attach to each round trip's user message a PNG of about this many bytes, new content every time (0: text only)")
	flag.BoolVar(&o.idlePoll, "idle-poll", false, "keep idle CPUs polling for the whole run, so that no process waits for its CPU to wake (Linux, root; see bench/wakeup)")
	flag.Parse()
	// The profiles are written by other processes: their paths go to them
	// absolute, whatever folder those run in.
	for _, p := range []*string{&o.cpuProfile, &o.modelProfile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			fmt.Fprintln(os.Stderr, "roundtrip:", err)
			os.Exit(1)
		}
		*p = abs
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(1)
	}
}

// bench is the server under test and what talks to it.
type bench struct {
	dir      string
	srv      *exec.Cmd
	base     string
	client   *http.Client
	model    *exec.Cmd // the openaitest or anthropictest process, or nil
	modelURL string
	next     atomic.Int64
	prefix   string // of thread ids, new for every run (a database may outlive it)

	store      string      // -store
	others     []*exec.Cmd // -replicas beyond the first
	otherBases []string
	turn       atomic.Int64 // picks the server of the next request

	delta bool // ask for config.response "delta", as the clients do

	// image is -image's PNG, whose content each round trip makes new
	// (imageOf); nil for text only.
	image []byte
}

func run(o options) error {
	if o.idlePoll {
		release, err := idlepoll.Hold()
		if err != nil {
			return err
		}
		defer release()
	}
	dir, err := os.MkdirTemp("", "roundtrip")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if o.bin == "" {
		o.bin = filepath.Join(dir, "tenxgraph")
		if err := build(o.bin, "./cmd/tenxgraph"); err != nil {
			return err
		}
	}
	b := &bench{dir: dir, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.conc + 8}}}
	defer b.stop()
	if o.image > 0 {
		b.image = noisePNG(o.image)
	}
	modelCfg := `{"provider": "scripted", "script": "script.json"}`
	switch o.model {
	case "scripted":
		script, err := os.ReadFile("examples/quickstart/script.json")
		if err != nil {
			return fmt.Errorf("run from the repository root: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, "script.json"), script, 0o600); err != nil {
			return err
		}
	case "openai", "anthropic":
		name := o.model + "test"
		if o.model == "anthropic" {
			o.modelBin = o.anthropicBin
		}
		if o.modelBin == "" {
			o.modelBin = filepath.Join(dir, name)
			if err := build(o.modelBin, "./host/model/"+o.model+"/"+name+"/cmd/"+name); err != nil {
				return err
			}
		}
		margs := []string{"-addr", "127.0.0.1:0"}
		if o.modelProfile != "" {
			margs = append(margs, "-cpuprofile", o.modelProfile)
		}
		b.model = exec.Command(o.modelBin, margs...)
		if b.modelURL, err = procfs.StartAndRead(b.model, `listening on (http://\S+)`); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		modelCfg = `{"provider": "` + o.model + `", "model": "test-model", "base_url": "` + b.modelURL + `"}`
	default:
		return fmt.Errorf("-model %q: want scripted, openai or anthropic", o.model)
	}
	durability := ""
	if o.durability != "" {
		durability = fmt.Sprintf(`, "durability": %q`, o.durability)
	}
	store := `{"type": "sqlite", "path": "state.db"` + durability + `}`
	switch {
	case o.store == "postgres":
		store = `{"type": "postgres", "dsn_env": "ROUNDTRIP_POSTGRES_DSN"` + durability + `}`
	case o.store != "sqlite":
		return fmt.Errorf("-store %q: want sqlite or postgres", o.store)
	}
	if o.replicas < 1 || o.replicas > 1 && o.threads > 0 {
		return fmt.Errorf("-replicas %d: want 1, or more without -threads", o.replicas)
	}
	b.prefix = fmt.Sprintf("rt-%d-", time.Now().UnixNano())
	b.store = o.store
	cache := ""
	if o.cacheBytes > 0 {
		cache = fmt.Sprintf(`, "cache": {"max_bytes": %d}`, o.cacheBytes)
	}
	cfg := `{"agent": "tenxgraph:react", "model": ` + modelCfg + `,
	  "builtin_tools": {"enable": ["calculator"]},
	  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
	  "checkpointer": ` + store + cache + `}`
	if err := os.WriteFile(filepath.Join(dir, "10xgraph.json"), []byte(cfg), 0o600); err != nil {
		return err
	}
	if o.threads > 0 {
		if err := writeThreads(filepath.Join(dir, "state.db"), o.threads, o.threadBytes); err != nil {
			return err
		}
	}
	args := []string{"serve", "--config", filepath.Join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0"}
	if o.cpuProfile != "" {
		args = append(args, "--cpuprofile", o.cpuProfile)
	}
	b.srv = exec.Command(o.bin, args...)
	b.srv.Env = append(os.Environ(), "TENXGRAPH_LOG_LEVEL=error")
	if b.base, err = procfs.StartAndRead(b.srv, `serving .* on (http://\S+)`); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	for range o.replicas - 1 {
		other := exec.Command(o.bin, args...)
		other.Env = b.srv.Env
		b.others = append(b.others, other)
		base, err := procfs.StartAndRead(other, `serving .* on (http://\S+)`)
		if err != nil {
			return fmt.Errorf("serve (replica %d): %w", len(b.others)+1, err)
		}
		b.otherBases = append(b.otherBases, base)
	}
	switch {
	case o.threads > 0:
		return b.readThreads(o)
	case o.turns > 0:
		return b.manyTurns(o.turns)
	default:
		return b.load(o)
	}
}

func build(out, pkg string) error {
	if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

func (b *bench) stop() {
	for _, c := range append([]*exec.Cmd{b.srv, b.model}, b.others...) {
		if c != nil && c.Process != nil {
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
		}
	}
}

// trip is one round trip on thread: invoke → interrupted, resume →
// completed.
func (b *bench) trip(thread string) (time.Duration, error) {
	start := time.Now()
	config := `"thread_id": "` + thread + `"`
	if b.delta {
		config += `, "response": "delta"`
	}
	var res struct {
		Status          string
		RemoteToolCalls []struct{ ID string } `json:"remote_tool_calls"`
	}
	content := `"what is 2+3*4 and what is on my clipboard?"`
	if b.image != nil {
		content = `[{"type": "text", "text": "what is 2+3*4 and what is on my clipboard?"}, {"type": "image", "mime_type": "image/png", "data": "` +
			base64.StdEncoding.EncodeToString(imageOf(b.image, thread)) + `"}]`
	}
	if err := b.post(`{"input": {"messages": [{"role": "user", "content": `+content+`}]}, "config": {`+config+`}}`, &res); err != nil {
		return 0, err
	}
	if res.Status != "interrupted" || len(res.RemoteToolCalls) != 1 {
		return 0, fmt.Errorf("invoke: status %s, %d remote calls", res.Status, len(res.RemoteToolCalls))
	}
	resume := `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "` + res.RemoteToolCalls[0].ID + `", "content": {"text": "hi"}}]}]}, "config": {` + config + `}}`
	if err := b.post(resume, &res); err != nil {
		return 0, err
	}
	if res.Status != "completed" {
		return 0, fmt.Errorf("resume: status %s", res.Status)
	}
	return time.Since(start), nil
}

func (b *bench) newTrip() (time.Duration, error) {
	return b.trip(fmt.Sprintf("%s%d", b.prefix, b.next.Add(1)))
}

func (b *bench) load(o options) error {
	// Warm up: plugins, connections, SQLite pages.
	for range 200 {
		if _, err := b.newTrip(); err != nil {
			return err
		}
	}
	fmt.Println("| load | round trips | round trips/s | p50 ms | p90 ms | p99 ms | max ms | server CPU µs/round trip | of which plugins | model CPU µs/round trip | model connections opened |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		n int
		d time.Duration
	}{{1, o.seq}, {o.conc, o.dur}} {
		if c.d <= 0 {
			continue // -seq 0 or -d 0 skips that measurement
		}
		cpu0, model0, conns0, err := b.counters()
		if err != nil {
			return err
		}
		own0, err := b.serverCPU()
		if err != nil {
			return err
		}
		lat, elapsed, err := load(b.newTrip, c.n, c.d)
		if err != nil {
			return err
		}
		own1, err := b.serverCPU()
		if err != nil {
			return err
		}
		cpu1, model1, conns1, err := b.counters()
		if err != nil {
			return err
		}
		slices.Sort(lat)
		pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		n := float64(len(lat))
		modelCPU, conns := "—", "—"
		if b.model != nil {
			modelCPU = fmt.Sprintf("%.0f", float64(model1-model0)/n)
			conns = fmt.Sprintf("%d (%d model calls)", conns1.connections-conns0.connections, conns1.requests-conns0.requests)
		}
		fmt.Printf("| %d in flight | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f | %s | %s |\n", c.n, len(lat),
			n/elapsed.Seconds(), pct(0.5), pct(0.9), pct(0.99), pct(1), float64(cpu1-cpu0)/n, float64(cpu1-cpu0-(own1-own0))/n, modelCPU, conns)
	}
	return nil
}

type modelStats struct {
	requests, connections int
	problems              []string
}

// counters reads the CPU time of the server and its descendants and of the
// model server (µs), and the model server's counts.
func (b *bench) counters() (server, model int64, stats modelStats, err error) {
	if server, err = procfs.TreeCPU(b.srv.Process.Pid); err != nil {
		return
	}
	for _, o := range b.others {
		var cpu int64
		if cpu, err = procfs.TreeCPU(o.Process.Pid); err != nil {
			return
		}
		server += cpu
	}
	if b.model == nil {
		return
	}
	if model, err = procfs.TreeCPU(b.model.Process.Pid); err != nil {
		return
	}
	resp, err := http.Get(strings.TrimSuffix(b.modelURL, "/v1") + "/stats")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	var s struct {
		Requests, Connections int
		Problems              []string
	}
	if err = json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return
	}
	if len(s.Problems) > 0 {
		err = fmt.Errorf("the model server saw bad requests: %v", s.Problems)
	}
	return server, model, modelStats{s.Requests, s.Connections, s.Problems}, err
}

// manyTurns drives one thread n turns and reports every 100: what the
// servers wrote, their CPU and their RSS, summed over the replicas.
func (b *bench) manyTurns(n int) error {
	const every = 100
	thread := b.prefix + "long" // a shared Postgres database may hold earlier runs' threads
	b.delta = true
	dbSize := b.storeSize
	fmt.Println("| turns | p50 ms (last 100) | written per turn KB (/proc io) | database growth per turn KB | database MB | server RSS MiB | server CPU ms per turn |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var lat []time.Duration
	wrote0, err := b.sumServers(procfs.WriteBytes)
	if err != nil {
		return err
	}
	size0, cpu0 := dbSize(), int64(0)
	if cpu0, err = b.sumServers(procfs.TreeCPU); err != nil {
		return err
	}
	for turn := 1; turn <= n; turn++ {
		l, err := b.trip(thread)
		if err != nil {
			return fmt.Errorf("turn %d: %w", turn, err)
		}
		lat = append(lat, l)
		if turn%every != 0 && turn != n {
			continue
		}
		wrote, err := b.sumServers(procfs.WriteBytes)
		if err != nil {
			return err
		}
		cpu, err := b.sumServers(procfs.TreeCPU)
		if err != nil {
			return err
		}
		rss, _ := b.sumServers(func(pid int) (int64, error) { return procfs.Status(pid, "VmRSS") })
		size := dbSize()
		k := float64(len(lat))
		slices.Sort(lat)
		fmt.Printf("| %d | %.2f | %.1f | %.1f | %.1f | %.1f | %.2f |\n", turn, float64(lat[len(lat)/2].Microseconds())/1000,
			float64(wrote-wrote0)/k/1e3, float64(size-size0)/k/1e3, float64(size)/1e6, float64(rss)/1024, float64(cpu-cpu0)/k/1e3)
		lat, wrote0, size0, cpu0 = lat[:0], wrote, size, cpu
	}
	resp, err := b.client.Get(b.base + "/v1/threads/" + thread)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	running := dbSize()
	// Afterwards: the servers stopped, so SQLite's WAL is checkpointed into
	// the file and removed.
	for _, srv := range append([]*exec.Cmd{b.srv}, b.others...) {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}
	after := dbSize()
	fmt.Printf("\nthe thread's JSON (GET /v1/threads/%s): %.2f MB; the store %.1f MB while serving (%.1f×), %.1f MB once the server stopped (%.1f×)\n",
		thread, float64(len(body))/1e6, float64(running)/1e6, float64(running)/float64(len(body)), float64(after)/1e6, float64(after)/float64(len(body)))
	return nil
}

// writeThreads fills the store at path with n completed threads of about
// size bytes each (8 messages), before the server opens it.
func writeThreads(path string, n int, size int64) error {
	ctx := context.Background()
	store, err := checkpoint.OpenSQLite(ctx, path)
	if err != nil {
		return err
	}
	defer store.Close()
	const per = 8
	text := strings.Repeat("x", int(size/per))
	msgs := make([]message.Message, per)
	for i := range msgs {
		role := message.RoleUser
		if i%2 == 1 {
			role = message.RoleAssistant
		}
		msgs[i] = message.Text(role, text)
		msgs[i].ID = fmt.Sprint("m", i)
	}
	// As the server writes them: the messages in the thread's log.
	entries := make([][]byte, len(msgs))
	size = 0
	for i, m := range msgs {
		var err error
		if entries[i], err = json.Marshal(m); err != nil {
			return err
		}
		size += int64(len(entries[i]))
	}
	start := time.Now()
	err = forEach(n, 4, func(i int) error {
		return store.Put(ctx, checkpoint.Checkpoint{ThreadID: fmt.Sprint("big-", i), Seq: 1, RunID: "r", Status: checkpoint.StatusCompleted, State: []byte("{}"), Append: entries})
	})
	if err != nil {
		return err
	}
	fmt.Printf("wrote %d threads of %d bytes in %s\n", n, size, time.Since(start).Round(time.Second))
	return nil
}

// readThreads reads every thread writeThreads wrote through the server, 8
// at a time, and reports the server's memory.
func (b *bench) readThreads(o options) error {
	pid := b.srv.Process.Pid
	rss0, _ := procfs.Status(pid, "VmRSS")
	start := time.Now()
	err := forEach(o.threads, 8, func(i int) error {
		resp, err := b.client.Get(fmt.Sprint(b.base, "/v1/threads/big-", i))
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && (resp.StatusCode != http.StatusOK || n < o.threadBytes) {
			err = fmt.Errorf("GET big-%d: HTTP %d, %d bytes", i, resp.StatusCode, n)
		}
		return err
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	hwm, _ := procfs.Status(pid, "VmHWM")
	rss, _ := procfs.Status(pid, "VmRSS")
	m, err := b.metrics()
	if err != nil {
		return err
	}
	budget := o.cacheBytes
	if budget == 0 {
		budget = 256 << 20
	}
	fmt.Printf("read %d threads of %d bytes in %s\n", o.threads, o.threadBytes, elapsed.Round(time.Second))
	fmt.Println("| cache budget MiB | RSS before MiB | peak RSS (VmHWM) MiB | RSS after MiB | peak over budget MiB | cache MiB | cached threads | evictions |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	fmt.Printf("| %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |\n", budget>>20, float64(rss0)/1024, float64(hwm)/1024, float64(rss)/1024,
		float64(hwm)/1024-float64(budget>>20), m["tenxgraph_thread_cache_bytes"]/(1<<20), m["tenxgraph_thread_cache_threads"], m["tenxgraph_thread_cache_evictions_total"])
	return nil
}

func (b *bench) metrics() (map[string]float64, error) {
	resp, err := b.client.Get(b.base + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			out[line[:i]], _ = strconv.ParseFloat(line[i+1:], 64)
		}
	}
	return out, sc.Err()
}

// load runs trip from n workers for d and returns each round trip's latency.
func load(trip func() (time.Duration, error), n int, d time.Duration) ([]time.Duration, time.Duration, error) {
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	stop := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for time.Now().Before(stop) {
				l, err := trip()
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, l)
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, time.Since(start), firstErr
}

func (b *bench) post(body string, v any) error {
	base := b.base
	if n := int64(len(b.otherBases)); n > 0 {
		if k := b.turn.Add(1) % (n + 1); k > 0 {
			base = b.otherBases[k-1]
		}
	}
	resp, err := b.client.Post(base+"/v1/graph/invoke", "application/json", bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, v)
}

// sumServers adds up f over the server processes (the first and the
// -replicas beyond it).
func (b *bench) sumServers(f func(pid int) (int64, error)) (int64, error) {
	var total int64
	for _, srv := range append([]*exec.Cmd{b.srv}, b.others...) {
		n, err := f(srv.Process.Pid)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// serverCPU is the CPU time, in µs, of the server processes alone (without
// their plugins).
func (b *bench) serverCPU() (int64, error) {
	total, err := procfs.CPU(b.srv.Process.Pid)
	for _, o := range b.others {
		cpu, e := procfs.CPU(o.Process.Pid)
		total += cpu
		err = cmp.Or(err, e)
	}
	return total, err
}

// dbSize is the size of the SQLite database with its WAL.
// storeSize is the store's size on disk: the SQLite file and its WAL, or
// the tenxgraph tables of the Postgres database with their indexes and
// TOAST.
func (b *bench) storeSize() int64 {
	if b.store != "postgres" {
		return dbSize(filepath.Join(b.dir, "state.db"))
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("ROUNDTRIP_POSTGRES_DSN"))
	if err != nil {
		return -1
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c
		WHERE c.relname LIKE 'tenxgraph\_%' AND c.relkind = 'r' AND pg_table_is_visible(c.oid)`).Scan(&n); err != nil {
		return -1
	}
	return n
}

func dbSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// forEach calls f(1..n), width calls at a time, and returns the first
// error.
func forEach(n, width int, f func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(width)
	for i := 1; i <= n; i++ {
		g.Go(func() error { return f(i) })
	}
	return g.Wait()
}

// noisePNG is an RGB PNG of about n bytes of random pixels, which do not
// compress: what a photo or a screenshot costs to store and send.
func noisePNG(n int) []byte {
	side := max(int(math.Sqrt(float64(n)/3)), 1)
	img := image.NewRGBA(image.Rect(0, 0, side, side))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		if i%4 == 3 {
			img.Pix[i] = 255
		} else {
			img.Pix[i] = byte(rng.Uint32())
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// imageOf is base with a tEXt chunk naming thread after its header: the
// same picture, new bytes (a new blob) for every thread and turn.
func imageOf(base []byte, thread string) []byte {
	const head = 8 + 25 // the signature and the IHDR chunk
	text := "Comment\x00" + thread + " " + strconv.FormatInt(time.Now().UnixNano(), 10)
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(text)))
	chunk = append(chunk, "tEXt"+text...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := make([]byte, 0, len(base)+len(chunk))
	return append(append(append(out, base[:head]...), chunk...), base[head:]...)
}
