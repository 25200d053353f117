// Command costly measures requests that are cheap to send and were costly
// to serve, against a real `tenxgraph serve` (the quickstart's scripted
// model, memory store) in a temporary folder:
//
//   - deep: bodies of 20 KB nested 10,001 deep (in a tool result of an
//     invoke, and in an AG-UI run's state): the server's CPU per refused
//     request, from /proc/PID/stat;
//
//   - interference: a client sending one small invoke at a time for -d,
//     alone and then while another sends 21 deep bodies spread over the
//     same time: the small invokes' latency percentiles;
//
//   - readers: a thread of one 4 MiB message, and 200 clients that ask for
//     it and never read: the server's peak RSS over its baseline;
//
//   - trickle: a body sent a byte a second: the status and how long the
//     server took to answer.
//
//     go build -o /tmp/tenxgraph ./cmd/tenxgraph && go run ./bench/costly -bin /tmp/tenxgraph
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tenxgraph/tenxgraph/bench/internal/procfs"
)

func main() {
	bin := flag.String("bin", "", "the tenxgraph binary (default: built from ./cmd/tenxgraph)")
	deepN := flag.Int("deep-n", 200, "deep bodies sent to measure the CPU of one")
	d := flag.Duration("d", 12*time.Second, "how long the interference runs, each half")
	flag.Parse()
	if err := run(*bin, *deepN, *d); err != nil {
		fmt.Fprintln(os.Stderr, "costly:", err)
		os.Exit(1)
	}
}

type server struct {
	cmd  *exec.Cmd
	base string
	addr string
}

func run(bin string, deepN int, d time.Duration) error {
	dir, err := os.MkdirTemp("", "costly")
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
	if err := os.WriteFile(filepath.Join(dir, "script.json"), script, 0o600); err != nil {
		return err
	}
	cfg := `{"agent": "tenxgraph:react", "model": {"provider": "scripted", "script": "script.json"},
	  "builtin_tools": {"enable": ["calculator"]}, "checkpointer": {"type": "memory"},
	  "server": {"max_body_bytes": 8388608}}`
	if err := os.WriteFile(filepath.Join(dir, "10xgraph.json"), []byte(cfg), 0o600); err != nil {
		return err
	}
	for _, step := range []func(s *server) error{
		func(s *server) error { return s.deep(deepN) },
		func(s *server) error { return s.interference(d) },
		(*server).readers,
		(*server).trickle,
	} {
		if err := withServer(bin, dir, step); err != nil {
			return err
		}
	}
	return nil
}

// withServer runs step against a new server, so that no step measures
// what another left in its heap.
func withServer(bin, dir string, step func(*server) error) error {
	s := &server{cmd: exec.Command(bin, "serve", "--config", filepath.Join(dir, "10xgraph.json"), "--addr", "127.0.0.1:0")}
	s.cmd.Env = append(os.Environ(), "TENXGRAPH_LOG_LEVEL=error")
	var err error
	if s.base, err = procfs.StartAndRead(s.cmd, `serving .* on (http://\S+)`); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s.addr = strings.TrimPrefix(s.base, "http://")
	defer func() { _ = s.cmd.Process.Signal(syscall.SIGTERM); _ = s.cmd.Wait() }()
	return step(s)
}

var nested = strings.Repeat("[", 10_001) + strings.Repeat("]", 10_001)

var deepBodies = []struct{ name, path, body string }{
	{"invoke, in a tool result", "/v1/graph/invoke", `{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": "c", "content": ` + nested + `}]}]}, "config": {"thread_id": "deep"}}`},
	{"AG-UI, in state", "/v1/agui", `{"threadId": "deep", "runId": "r", "messages": [], "state": {"s": ` + nested + `}}`},
}

// deep reports the server's CPU per refused deep body.
func (s *server) deep(n int) error {
	fmt.Printf("## deep bodies (%d each)\n\n| body | bytes | status | server CPU per request |\n|---|---|---|---|\n", n)
	for _, b := range deepBodies {
		before, err := procfs.CPU(s.cmd.Process.Pid)
		if err != nil {
			return err
		}
		status := 0
		for range n {
			if status, err = s.post(b.path, b.body); err != nil {
				return err
			}
		}
		after, err := procfs.CPU(s.cmd.Process.Pid)
		if err != nil {
			return err
		}
		fmt.Printf("| %s | %d | %d | %.2f ms |\n", b.name, len(b.body), status, float64(after-before)/float64(n)/1000)
	}
	fmt.Println()
	return nil
}

func (s *server) post(path, body string) (int, error) {
	res, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

// interference reports small invokes' latency alone, then with 21 deep
// bodies sent over the same time.
func (s *server) interference(d time.Duration) error {
	fmt.Printf("## small invokes, one at a time for %v\n\n| while | invokes | p50 ms | p90 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n", d)
	for _, attack := range []bool{false, true} {
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		if attack {
			wg.Add(1)
			go func() {
				defer wg.Done()
				every := d / 21
				for i := range 21 {
					time.Sleep(time.Until(stop.Add(-d + time.Duration(i)*every)))
					_, _ = s.post(deepBodies[i%2].path, deepBodies[i%2].body)
				}
			}()
		}
		var lat []time.Duration
		for i := 0; time.Now().Before(stop); i++ {
			t0 := time.Now()
			status, err := s.post("/v1/graph/invoke", fmt.Sprintf(`{"input": {"messages": [{"role": "user", "content": "hello"}]}, "config": {"thread_id": "small-%v-%d"}}`, attack, i))
			if err != nil {
				return err
			}
			if status != http.StatusOK {
				return fmt.Errorf("a small invoke: HTTP %d", status)
			}
			lat = append(lat, time.Since(t0))
		}
		wg.Wait()
		slices.Sort(lat)
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		what := "nothing else"
		if attack {
			what = "21 deep bodies"
		}
		fmt.Printf("| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", what, len(lat), q(0.5), q(0.9), q(0.99), q(1))
	}
	fmt.Println()
	return nil
}

// readers reports the server's RSS while 200 clients do not read a thread
// of one 4 MiB message.
func (s *server) readers() error {
	const clients = 200
	body := `{"input": {"messages": [{"role": "user", "content": "` + strings.Repeat("x", 4<<20) + `"}]}, "config": {"thread_id": "big"}}`
	if status, err := s.post("/v1/graph/invoke", body); err != nil || status != http.StatusOK {
		return fmt.Errorf("storing the thread: %d %v", status, err)
	}
	time.Sleep(2 * time.Second) // let the server's heap settle: a baseline, not synchronisation
	base, err := procfs.Status(s.cmd.Process.Pid, "VmRSS")
	if err != nil {
		return err
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 8<<10) })
	}}
	for range clients {
		c, err := d.Dial("tcp", s.addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, "GET /v1/threads/big HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr); err != nil {
			return err
		}
	}
	peak := base
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		r, err := procfs.Status(s.cmd.Process.Pid, "VmRSS")
		if err != nil {
			return err
		}
		peak = max(peak, r)
	}
	fmt.Printf("## %d clients not reading a thread of one 4 MiB message\n\nserver RSS %.1f MiB before, peak %.1f MiB within 10 s: %.1f MiB more\n\n",
		clients, float64(base)/1024, float64(peak)/1024, float64(peak-base)/1024)
	return nil
}

// trickle reports how the server answers a body sent a byte a second.
func (s *server) trickle() error {
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		return err
	}
	defer c.Close()
	body := `{"input": {"messages": [{"role": "user", "content": "hello"}]}, "config": {"thread_id": "slow"}}`
	t0 := time.Now()
	fmt.Fprintf(c, "POST /v1/graph/invoke HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", s.addr, len(body)+1000)
	go func() {
		for i := range body {
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Minute))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("trickle: %w", err)
	}
	raw, _ := io.ReadAll(res.Body)
	fmt.Printf("## a body sent a byte a second\n\nanswered %d after %v: %s\n", res.StatusCode, time.Since(t0).Round(10*time.Millisecond), bytes.TrimSpace(raw))
	return nil
}
