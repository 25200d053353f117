package pluginhost_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/pluginhost"
	"github.com/tenxgraph/tenxgraph/sdk"
)

var testplugin string // the built test plugin

func TestMain(m *testing.M) {
	if os.Getenv("PLUGINHOST_HOST_CHILD") != "" {
		hostChild()
		return
	}
	dir, err := os.MkdirTemp("", "pluginhost-test")
	if err != nil {
		panic(err)
	}
	testplugin = filepath.Join(dir, "testplugin")
	if out, err := exec.Command("go", "-C", "../../sdk", "build", "-o", testplugin, "./sdktest/testdata/testplugin").CombinedOutput(); err != nil {
		panic(fmt.Sprintf("build test plugin: %v\n%s", err, out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	pluginhost.Cleanup()
	os.Exit(code)
}

// logs collects what the host's logger received.
type logs struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *logs) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func start(t *testing.T, cfg pluginhost.Config) (*pluginhost.Plugin, *logs, string) {
	t.Helper()
	l := &logs{}
	marks := filepath.Join(t.TempDir(), "marks")
	if cfg.Name == "" {
		cfg.Name = "testplugin"
	}
	if cfg.Command == nil {
		cfg.Command = []string{testplugin}
	}
	cfg.Env = map[string]string{"TESTPLUGIN_MARKS": marks}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: l, Level: hclog.Debug})
	p, err := pluginhost.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Shutdown(context.Background()) })
	return p, l, marks
}

func call(ctx context.Context, p sdk.Provider, name, args string) (sdk.CallToolResponse, error) {
	return p.CallTool(ctx, sdk.CallToolRequest{Name: name, Arguments: json.RawMessage(args)})
}

var ctx = context.Background()

// A plugin that prints to stdout before and after Serve still works, and
// what it printed reaches the host's log instead of the void.
func TestStdoutNoiseAndLogs(t *testing.T) {
	p, l, _ := start(t, pluginhost.Config{})
	md, _ := p.Metadata(ctx, sdk.MetadataRequest{})
	if md.Name != "testplugin" || len(md.Tools) != 6 {
		t.Fatalf("metadata %+v", md)
	}
	resp, err := call(ctx, p, "echo", `{"text":"hi"}`)
	if err != nil || !strings.Contains(string(resp.Content), `"text":"hi"`) {
		t.Fatalf("echo: %s %v", resp.Content, err)
	}
	if _, err := call(ctx, p, "noisy", `{}`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, want := range []string{"noise before serve, no newline", "another line before serve", "noise during a call", "stderr noise during a call"} {
		for !strings.Contains(l.String(), want) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(l.String(), want) {
			t.Errorf("host log lacks %q:\n%s", want, l.String())
		}
	}
	if _, err := call(ctx, p, "nosuch", `{}`); !errors.Is(err, sdk.ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	// Large results pass the default 4 MiB gRPC limit.
	resp, err = call(ctx, p, "big", `{"bytes":20000000}`)
	if err != nil || len(resp.Content) != 20000002 {
		t.Fatalf("20 MB result: %d bytes, %v", len(resp.Content), err)
	}
}

func waitMark(t *testing.T, marks, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		data, _ := os.ReadFile(marks)
		if strings.Contains(string(data), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	data, _ := os.ReadFile(marks)
	t.Fatalf("the plugin never marked %q; marks:\n%s", want, data)
}

// SIGKILL mid-call: that call gets an error naming the plugin, the host
// stays up, the plugin restarts and the next call succeeds.
func TestKilledMidCallRestarts(t *testing.T) {
	p, l, marks := start(t, pluginhost.Config{})
	pid := p.PID()
	errc := make(chan error, 1)
	go func() {
		_, err := call(ctx, p, "sleep", `{"ms":30000,"tag":"victim"}`)
		errc <- err
	}()
	waitMark(t, marks, "started victim")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), `plugin "testplugin"`) || !errors.Is(err, sdk.ErrProviderUnavailable) {
			t.Fatalf("the interrupted call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight was never answered")
	}
	resp, err := call(ctx, p, "echo", `{"text":"again"}`)
	if err != nil {
		t.Fatalf("the next call: %v", err)
	}
	var out struct{ PID int }
	json.Unmarshal(resp.Content, &out)
	if out.PID == pid || out.PID == 0 {
		t.Fatalf("answered by pid %d, want a new process (old %d)", out.PID, pid)
	}
	if !strings.Contains(l.String(), "exited unexpectedly") {
		t.Errorf("the crash was not logged:\n%s", l.String())
	}
}

// Fifty calls in flight when the plugin dies: each is answered, none lost.
func TestFiftyInFlightWhenThePluginDies(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{})
	const n = 50
	var wg sync.WaitGroup
	results := make([]error, n)
	answered := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := call(ctx, p, "sleep", fmt.Sprintf(`{"ms":%d,"tag":"c%d"}`, 20000, i))
			results[i] = err
			answered[i] = err != nil || len(resp.Content) > 0
		}()
	}
	for i := range n {
		waitMark(t, marks, fmt.Sprintf("started c%d\n", i))
	}
	syscall.Kill(p.PID(), syscall.SIGKILL)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("calls in flight were lost: not all returned")
	}
	for i, err := range results {
		if !answered[i] || err == nil || !strings.Contains(err.Error(), `plugin "testplugin"`) {
			t.Fatalf("call %d: answered=%v err=%v", i, answered[i], err)
		}
	}
	if _, err := call(ctx, p, "echo", `{}`); err != nil {
		t.Fatalf("after the crash: %v", err)
	}
}

// The caller's cancellation and deadline reach the plugin's handler.
func TestCancelAndDeadlineReachThePlugin(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{})
	cctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := call(cctx, p, "sleep", `{"ms":30000,"tag":"cancel-me"}`)
		errc <- err
	}()
	waitMark(t, marks, "started cancel-me")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
	waitMark(t, marks, "cancelled cancel-me: context canceled")

	dctx, cancel2 := context.WithTimeout(ctx, 5*time.Second)
	defer cancel2()
	resp, err := call(dctx, p, "deadline", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	left, _ := strconv.Atoi(string(resp.Content))
	if left <= 3000 || left > 5000 {
		t.Fatalf("the plugin saw %d ms left, want close to 5000", left)
	}
	tctx, cancel3 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel3()
	if _, err := call(tctx, p, "sleep", `{"ms":30000,"tag":"timeout"}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("deadline: %v", err)
	}
	// The plugin's handler stops too (whether its own copy of the deadline
	// or the host's cancel arrives first is a race, and either is right).
	waitMark(t, marks, "cancelled timeout: context")
}

func TestSHA256Pin(t *testing.T) {
	data, err := os.ReadFile(testplugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	good := hex.EncodeToString(sum[:])
	_, err = pluginhost.Start(ctx, pluginhost.Config{Name: "pinned", Command: []string{testplugin}, SHA256: strings.Repeat("0", 64)})
	if err == nil || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), good) || !strings.Contains(err.Error(), `plugin "pinned"`) {
		t.Fatalf("wrong pin: %v", err)
	}
	p, _, _ := start(t, pluginhost.Config{Name: "pinned", SHA256: strings.ToUpper(good)})
	if _, err := call(ctx, p, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
}

// Shutdown lets calls in flight finish, then stops the process; later calls
// are refused.
func TestShutdownDrains(t *testing.T) {
	p, _, marks := start(t, pluginhost.Config{})
	pid := p.PID()
	type res struct {
		resp sdk.CallToolResponse
		err  error
	}
	rc := make(chan res, 1)
	go func() {
		r, err := call(ctx, p, "sleep", `{"ms":500,"tag":"drain"}`)
		rc <- res{r, err}
	}()
	waitMark(t, marks, "started drain")
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-rc
	if r.err != nil || string(r.resp.Content) != `"slept drain"` {
		t.Fatalf("the call in flight was cut off: %s %v", r.resp.Content, r.err)
	}
	if !gone(pid, 5*time.Second) {
		t.Fatalf("plugin %d still running after Shutdown", pid)
	}
	if _, err := call(ctx, p, "echo", `{}`); !errors.Is(err, pluginhost.ErrClosed) {
		t.Fatalf("call after shutdown: %v", err)
	}
}

func TestLazyStart(t *testing.T) {
	p, _, _ := start(t, pluginhost.Config{Lazy: true})
	if pid := p.PID(); pid != 0 {
		t.Fatalf("a lazy plugin is running (pid %d) before its first call", pid)
	}
	md, _ := p.Metadata(ctx, sdk.MetadataRequest{})
	if len(md.Tools) == 0 {
		t.Fatal("a lazy plugin has no tool list")
	}
	if _, err := call(ctx, p, "echo", `{}`); err != nil {
		t.Fatal(err)
	}
	if p.PID() == 0 {
		t.Fatal("not running after a call")
	}
}

func TestStartErrors(t *testing.T) {
	_, err := pluginhost.Start(ctx, pluginhost.Config{Name: "nope", Command: []string{filepath.Join(t.TempDir(), "missing")}})
	if err == nil || !strings.Contains(err.Error(), `plugin "nope"`) {
		t.Fatalf("missing binary: %v", err)
	}
	// A program that is not a plugin fails the handshake with a clear error.
	_, err = pluginhost.Start(ctx, pluginhost.Config{Name: "sh", Command: []string{"sh", "-c", "echo hello; sleep 10"}, StartTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), `plugin "sh"`) {
		t.Fatalf("not a plugin: %v", err)
	}
}

// gone waits until pid no longer runs (a zombie counts as gone: it runs
// nothing and holds nothing but its entry).
func gone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !running(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// hostChild is a host process for TestHostKilledLeavesNothing: it starts the
// plugin, has it start a child, reports the pids and waits to be killed.
func hostChild() {
	p, err := pluginhost.Start(ctx, pluginhost.Config{Name: "testplugin", Command: []string{os.Getenv("PLUGINHOST_PLUGIN")}})
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	resp, err := call(ctx, p, "spawn_child", `{}`)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(1)
	}
	fmt.Printf("PIDS %d %s\n", p.PID(), resp.Content)
	select {}
}

// A host killed with SIGKILL leaves no plugin process, no process the plugin
// started, and no socket behind.
func TestHostKilledLeavesNothing(t *testing.T) {
	host := exec.Command(os.Args[0])
	host.Env = append(os.Environ(), "PLUGINHOST_HOST_CHILD=1", "PLUGINHOST_PLUGIN="+testplugin)
	out, _ := host.StdoutPipe()
	host.Stderr = os.Stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	var pluginPID, childPID int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "PIDS %d %d", &pluginPID, &childPID); err == nil {
			break
		}
		t.Log(sc.Text())
	}
	if pluginPID == 0 || childPID == 0 {
		host.Process.Kill()
		t.Fatal("the host child did not report its plugin")
	}
	socketDir := filepath.Join(os.TempDir(), "tenxgraph-"+strconv.Itoa(os.Getuid()), "host-"+strconv.Itoa(host.Process.Pid))
	if _, err := os.Stat(socketDir); err != nil {
		t.Fatalf("no socket folder at %s: %v", socketDir, err)
	}
	host.Process.Signal(syscall.SIGKILL)
	host.Wait()
	if !gone(pluginPID, 10*time.Second) {
		syscall.Kill(pluginPID, syscall.SIGKILL)
		t.Fatalf("plugin %d survived its host", pluginPID)
	}
	if !gone(childPID, 10*time.Second) {
		syscall.Kill(childPID, syscall.SIGKILL)
		t.Fatalf("the plugin's child %d survived the host", childPID)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(socketDir); os.IsNotExist(err) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	entries, _ := os.ReadDir(socketDir)
	t.Fatalf("socket folder %s left behind: %v", socketDir, entries)
}
