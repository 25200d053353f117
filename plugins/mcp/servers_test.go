package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// The integration tests run real MCP servers: the pinned npm packages in
// testdata/npm (scripts/test.sh runs `npm ci` there), and a small server
// built with the official Go SDK (internal/testserver) where a tool list
// must change on demand.

// npmDir is where the pinned servers are installed.
func npmDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs("testdata/npm")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// nodeModules skips the test when the npm servers are not installed: they
// are when the tests run through scripts/test.sh.
func nodeModules(t testing.TB) string {
	t.Helper()
	nm := filepath.Join(npmDir(t), "node_modules")
	if _, err := os.Stat(filepath.Join(nm, "@modelcontextprotocol", "server-everything")); err != nil {
		t.Skipf("skipping: the pinned MCP test servers are not installed (run `npm ci` in %s, as scripts/test.sh does)", npmDir(t))
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("skipping: node is not installed")
	}
	return nm
}

// everything is server-everything over stdio.
func everything(t testing.TB, name string) Server {
	nm := nodeModules(t)
	return Server{Name: name, Type: "stdio", Command: "node",
		Args: []string{filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), "stdio"}}
}

// filesystem is server-filesystem over stdio, confined to dir.
func filesystem(t testing.TB, name, dir string) Server {
	nm := nodeModules(t)
	return Server{Name: name, Type: "stdio", Command: "node",
		Args: []string{filepath.Join(nm, "@modelcontextprotocol/server-filesystem/dist/index.js"), dir}}
}

// everythingHTTP starts server-everything with transport ("streamableHttp"
// or "sse") on a free loopback port and returns its base URL.
func everythingHTTP(t testing.TB, transport string) string {
	t.Helper()
	url, _ := everythingOnPort(t, transport, "0")
	return url
}

// everythingOnPort starts server-everything on port ("0": a free one), and
// returns its base URL and a function that kills it.
func everythingOnPort(t testing.TB, transport, port string) (string, func()) {
	t.Helper()
	nm := nodeModules(t)
	cmd := exec.Command("node", "--import", filepath.Join(npmDir(t), "loopback.mjs"),
		filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"), transport)
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(stop)
	bound := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "tenxgraph-test-port="); ok {
				bound <- p
			}
		}
	}()
	select {
	case p := <-bound:
		return "http://127.0.0.1:" + p, stop
	case <-time.After(30 * time.Second):
		t.Fatal("server-everything did not start listening")
	}
	return "", stop
}

var (
	testServerOnce sync.Once
	testServerBin  string
	testServerErr  error
)

// goServer is internal/testserver over stdio, built once per test binary.
func goServer(t testing.TB, name string) Server {
	t.Helper()
	testServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-testserver")
		if err != nil {
			testServerErr = err
			return
		}
		testServerBin = filepath.Join(dir, "testserver")
		out, err := exec.Command("go", "build", "-o", testServerBin, "./internal/testserver").CombinedOutput()
		if err != nil {
			testServerErr = &buildError{err, string(out)}
		}
	})
	if testServerErr != nil {
		t.Fatal(testServerErr)
	}
	return Server{Name: name, Type: "stdio", Command: testServerBin}
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "build internal/testserver: " + e.err.Error() + "\n" + e.out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if testServerBin != "" {
		_ = os.RemoveAll(filepath.Dir(testServerBin))
	}
	os.Exit(code)
}

// logBuffer collects a bridge's logs for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// start makes a bridge and waits for its tools; it is shut down when the
// test ends.
func start(t testing.TB, opts Options) (*Bridge, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	b, err := New(opts, hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := b.Metadata(ctx, sdk.MetadataRequest{}); err != nil {
		t.Fatalf("the bridge did not start: %v\nlogs:\n%s", err, logs)
	}
	return b, logs
}

// names lists a provider's tools.
func names(t testing.TB, p sdk.Provider) []string {
	t.Helper()
	md, err := p.Metadata(context.Background(), sdk.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(md.Tools))
	for i, s := range md.Tools {
		out[i] = s.Name
	}
	return out
}

// call calls a tool with args and fails the test on an error (not on an
// error result).
func callT(t testing.TB, p sdk.Provider, name string, args any) sdk.CallToolResponse {
	t.Helper()
	return callCtx(t, context.Background(), p, name, args)
}

func callCtx(t testing.TB, ctx context.Context, p sdk.Provider, name string, args any) sdk.CallToolResponse {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.CallTool(ctx, sdk.CallToolRequest{Name: name, Arguments: raw})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resp
}

// text is a result that is a JSON string.
func text(t testing.TB, resp sdk.CallToolResponse) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(resp.Content, &s); err != nil {
		t.Fatalf("result %.300s is not a string: %v", resp.Content, err)
	}
	return s
}
