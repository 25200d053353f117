// Command roundtrip measures the remote-tool round trip over HTTP: invoke a
// run in which the model calls a server tool and a remote tool in one step
// (→ interrupted), then resume it with the client's result (→ completed). It
// starts `tenxgraph serve` on the quickstart (scripted model, builtin tools,
// SQLite) in a temporary folder, drives it from this process like a load
// tool, and prints latency percentiles and round trips per second, first
// sequentially, then with many threads in flight.
//
//	go run ./internal/roundtrip -bin "$(go env GOPATH)/bin/tenxgraph"
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	bin := flag.String("bin", "", "the tenxgraph binary (default: build one)")
	seq := flag.Duration("seq", 5*time.Second, "how long to run the sequential measurement")
	dur := flag.Duration("d", 10*time.Second, "how long to run the concurrent measurement")
	conc := flag.Int("c", 100, "threads in flight in the concurrent measurement")
	flag.Parse()
	if err := run(*bin, *seq, *dur, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "roundtrip:", err)
		os.Exit(1)
	}
}

func run(bin string, seq, dur time.Duration, conc int) error {
	dir, err := os.MkdirTemp("", "roundtrip")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if bin == "" {
		bin = filepath.Join(dir, "tenxgraph")
		if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tenxgraph").CombinedOutput(); err != nil {
			return fmt.Errorf("build: %v\n%s", err, out)
		}
	}
	script, err := os.ReadFile("examples/quickstart/script.json")
	if err != nil {
		return fmt.Errorf("run from the repository root: %w", err)
	}
	os.WriteFile(filepath.Join(dir, "script.json"), script, 0o600)
	cfg := `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "builtin_tools": {"enable": ["calculator"]},
	  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
	  "checkpointer": {"type": "sqlite", "path": "state.db"}}`
	os.WriteFile(filepath.Join(dir, "10xgraph.json"), []byte(cfg), 0o600)
	srv := exec.Command(bin, "serve", "--config", filepath.Join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "TENXGRAPH_LOG_LEVEL=error")
	out, _ := srv.StdoutPipe()
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	sc := bufio.NewScanner(out)
	base := ""
	for sc.Scan() {
		if m := regexp.MustCompile(`http://(\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			base = "http://" + m[1]
			break
		}
	}
	if base == "" {
		return fmt.Errorf("the server did not say where it listens")
	}
	go io.Copy(io.Discard, out)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc + 8, MaxConnsPerHost: 0}}
	var next atomic.Int64
	trip := func() (time.Duration, error) {
		id := fmt.Sprintf("rt-%d", next.Add(1))
		start := time.Now()
		var res struct {
			Status          string
			RemoteToolCalls []struct{ ID string } `json:"remote_tool_calls"`
		}
		if err := post(client, base, `{"input": {"messages": [{"role": "user", "content": "what is 2+3*4 and what is on my clipboard?"}]}, "config": {"thread_id": "`+id+`"}}`, &res); err != nil {
			return 0, err
		}
		if res.Status != "interrupted" || len(res.RemoteToolCalls) != 1 {
			return 0, fmt.Errorf("invoke: status %s, %d remote calls", res.Status, len(res.RemoteToolCalls))
		}
		resume := `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "` + res.RemoteToolCalls[0].ID + `", "content": {"text": "hi"}}]}]}, "config": {"thread_id": "` + id + `"}}`
		if err := post(client, base, resume, &res); err != nil {
			return 0, err
		}
		if res.Status != "completed" {
			return 0, fmt.Errorf("resume: status %s", res.Status)
		}
		return time.Since(start), nil
	}
	// Warm up: plugins, connections, SQLite pages.
	for range 200 {
		if _, err := trip(); err != nil {
			return err
		}
	}
	fmt.Println("| load | round trips | round trips/s | p50 ms | p90 ms | p99 ms | max ms |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range []struct {
		n int
		d time.Duration
	}{{1, seq}, {conc, dur}} {
		lat, elapsed, err := load(trip, c.n, c.d)
		if err != nil {
			return err
		}
		slices.Sort(lat)
		pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		fmt.Printf("| %d in flight | %d | %.0f | %.2f | %.2f | %.2f | %.2f |\n", c.n, len(lat),
			float64(len(lat))/elapsed.Seconds(), pct(0.5), pct(0.9), pct(0.99), pct(1))
	}
	return nil
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

func post(c *http.Client, base, body string, v any) error {
	resp, err := c.Post(base+"/v1/graph/invoke", "application/json", bytes.NewBufferString(body))
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
