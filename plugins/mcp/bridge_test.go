package mcp

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/internal/proctest"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// Every content type server-everything returns, over stdio, mapped to the
// tool result JSON.
func TestStdioListAndCall(t *testing.T) {
	b, _ := start(t, Options{Servers: []Server{everything(t, "everything")}})
	got := names(t, b)
	for _, want := range []string{"echo", "get-sum", "get-tiny-image", "get-structured-content", "get-resource-reference", "get-resource-links", "trigger-long-running-operation"} {
		if !slices.Contains(got, want) {
			t.Fatalf("tools %v lack %s", got, want)
		}
	}
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "hello"})); s != "Echo: hello" {
		t.Fatalf("echo: %q", s)
	}
	if s := text(t, callT(t, b, "get-sum", map[string]any{"a": 2, "b": 40})); !strings.Contains(s, "42") {
		t.Fatalf("get-sum: %q", s)
	}

	type block struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MIMEType string `json:"mime_type"`
		URI      string `json:"uri"`
		Name     string `json:"name"`
	}
	var wrapped struct {
		Content    []block `json:"content"`
		Structured any     `json:"structured_content"`
	}
	decode := func(resp sdk.CallToolResponse) {
		t.Helper()
		wrapped.Content, wrapped.Structured = nil, nil
		if err := json.Unmarshal(resp.Content, &wrapped); err != nil {
			t.Fatalf("%.300s: %v", resp.Content, err)
		}
	}
	// The image is an attachment: the PNG's own bytes, not base64 in the
	// content, which keeps the text around it.
	resp := callT(t, b, "get-tiny-image", map[string]any{})
	decode(resp)
	if len(wrapped.Content) != 2 || wrapped.Content[0].Text != "Here's the image you requested:" || wrapped.Content[1].Text != "The image above is the MCP logo." {
		t.Fatalf("get-tiny-image's content: %s", resp.Content)
	}
	if len(resp.Attachments) != 1 || resp.Attachments[0].MimeType != "image/png" || !bytes.Equal(resp.Attachments[0].Data, tinyImage(t)) {
		t.Fatalf("get-tiny-image's attachments: %+v", resp.Attachments)
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(resp.Attachments[0].Data)); err != nil || cfg.Width != 20 || cfg.Height != 20 {
		t.Fatalf("the attachment is not the 20×20 PNG: %+v, %v", cfg, err)
	}

	// An embedded resource's text stays in the content; its blob is an
	// attachment, named after its URI.
	resp = callT(t, b, "get-resource-reference", map[string]any{})
	decode(resp)
	if !slices.ContainsFunc(wrapped.Content, func(bl block) bool { return bl.Type == "resource" && bl.URI != "" && bl.Text != "" }) || resp.Attachments != nil {
		t.Fatalf("no embedded text resource in %+v, or attachments %+v", wrapped.Content, resp.Attachments)
	}
	resp = callT(t, b, "get-resource-reference", map[string]any{"resourceType": "Blob", "resourceId": 3})
	if len(resp.Attachments) != 1 || resp.Attachments[0].MimeType != "text/plain" || resp.Attachments[0].Filename != "3" ||
		!strings.HasPrefix(string(resp.Attachments[0].Data), "Resource 3: This is a base64 blob") {
		t.Fatalf("a blob resource's attachments: %+v", resp.Attachments)
	}
	// A gzip file as an embedded resource arrives as its bytes.
	const readme = "# hello\n"
	resp = callT(t, b, "gzip-file-as-resource", map[string]any{"name": "hello.md.gz", "outputType": "resource",
		"data": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte(readme))})
	if len(resp.Attachments) != 1 || resp.Attachments[0].MimeType != "application/gzip" || resp.Attachments[0].Filename != "hello.md.gz" {
		t.Fatalf("gzip-file-as-resource: %s, attachments %+v", resp.Content, resp.Attachments)
	}
	if zr, err := gzip.NewReader(bytes.NewReader(resp.Attachments[0].Data)); err != nil {
		t.Fatal(err)
	} else if got, err := io.ReadAll(zr); err != nil || string(got) != readme {
		t.Fatalf("the gzip attachment holds %q, %v", got, err)
	}

	// Resource links stay mentions: never fetched.
	resp = callT(t, b, "get-resource-links", map[string]any{"count": 2})
	decode(resp)
	links := 0
	for _, bl := range wrapped.Content {
		if bl.Type == "resource_link" && bl.URI != "" && bl.Name != "" {
			links++
		}
	}
	if links != 2 || resp.Attachments != nil {
		t.Fatalf("%d resource links in %+v, attachments %+v", links, wrapped.Content, resp.Attachments)
	}

	// Structured content, its text copy left out.
	resp = callT(t, b, "get-structured-content", map[string]any{"location": "Chicago"})
	var weather map[string]any
	if err := json.Unmarshal(resp.Content, &weather); err != nil || weather["temperature"] == nil {
		t.Fatalf("structured content: %s (%v)", resp.Content, err)
	}

	// A tool error is an error result, not a failed call.
	resp = callT(t, b, "get-sum", map[string]any{"a": "two"})
	if !resp.IsError {
		t.Fatalf("invalid arguments gave %s without is_error", resp.Content)
	}
	if _, err := b.CallTool(context.Background(), sdk.CallToolRequest{Name: "no-such-tool"}); err == nil {
		t.Fatal("an unknown tool did not fail")
	}
}

// tinyImage is the PNG server-everything's get-tiny-image returns, read
// from the package's source.
func tinyImage(t *testing.T) []byte {
	t.Helper()
	js, err := os.ReadFile(filepath.Join(npmDir(t), "node_modules/@modelcontextprotocol/server-everything/dist/tools/get-tiny-image.js"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`MCP_TINY_IMAGE = "([A-Za-z0-9+/=]+)"`).FindSubmatch(js)
	if m == nil {
		t.Fatal("no MCP_TINY_IMAGE in get-tiny-image.js")
	}
	img, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Streamable HTTP and legacy SSE, both served by server-everything.
func TestHTTPAndSSE(t *testing.T) {
	base := everythingHTTP(t, "streamableHttp")
	b, _ := start(t, Options{Servers: []Server{{Name: "remote", Type: "http", URL: base + "/mcp", Timeout: sdk.Duration(20 * time.Second)}}})
	if !slices.Contains(names(t, b), "get-sum") {
		t.Fatalf("tools %v", names(t, b))
	}
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "over http"})); s != "Echo: over http" {
		t.Fatalf("echo: %q", s)
	}

	sse := everythingHTTP(t, "sse")
	b2, _ := start(t, Options{Servers: []Server{{Name: "legacy", Type: "sse", URL: sse + "/sse"}}})
	if s := text(t, callT(t, b2, "echo", map[string]any{"message": "over sse"})); s != "Echo: over sse" {
		t.Fatalf("echo: %q", s)
	}
}

// A Streamable HTTP server that restarts forgets its sessions: the bridge
// opens a new one, and the read-only call that found the old one gone is
// retried on it.
func TestHTTPServerRestarted(t *testing.T) {
	base, stop := everythingOnPort(t, "streamableHttp", "0")
	b, logs := start(t, Options{Servers: []Server{{Name: "remote", Type: "http", URL: base + "/mcp"}}})
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "one"})); s != "Echo: one" {
		t.Fatalf("echo: %q", s)
	}
	stop()
	port := base[strings.LastIndexByte(base, ':')+1:]
	everythingOnPort(t, "streamableHttp", port)
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "two"})); s != "Echo: two" {
		t.Fatalf("echo after the restart: %q\nlogs:\n%s", s, logs)
	}
}

// Progress notifications reach the host through the plugin boundary, and
// the server's timeout is reset by each of them.
func TestProgress(t *testing.T) {
	srv := everything(t, "everything")
	srv.Timeout = sdk.Duration(1200 * time.Millisecond) // less than the call, more than a step
	b, _ := start(t, Options{Servers: []Server{srv}})
	p := sdktest.Serve(t, b)
	var mu sync.Mutex
	var got []sdk.Progress
	ctx := sdk.WithProgress(context.Background(), func(pr sdk.Progress) {
		mu.Lock()
		got = append(got, pr)
		mu.Unlock()
	})
	started := time.Now()
	resp := callCtx(t, ctx, p, "trigger-long-running-operation", map[string]any{"duration": 2, "steps": 4})
	if resp.IsError || !strings.Contains(text(t, resp), "completed") {
		t.Fatalf("result %s", resp.Content)
	}
	if d := time.Since(started); d < 2*time.Second {
		t.Fatalf("took %s", d)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last report may arrive just after the result, and is then dropped.
	if len(got) < 3 || got[0].Progress != 1 || got[0].Total != 4 {
		t.Fatalf("progress %+v", got)
	}
}

// A call whose context ends sends notifications/cancelled, returns at once
// and leaves the session usable; a server silent past its timeout gets the
// call cancelled too, with an error result saying why.
func TestCancelAndTimeout(t *testing.T) {
	wire := filepath.Join(t.TempDir(), "wire.log")
	t.Setenv(EnvWireLog, wire)
	srv := everything(t, "everything")
	srv.Timeout = sdk.Duration(1500 * time.Millisecond)
	b, _ := start(t, Options{Servers: []Server{srv}})

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := b.CallTool(ctx, sdk.CallToolRequest{Name: "trigger-long-running-operation", Arguments: json.RawMessage(`{"duration": 10, "steps": 5}`)})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("a cancelled call gave %v", err)
	}
	if d := time.Since(started); d > 2*time.Second {
		t.Fatalf("the cancelled call returned after %s", d)
	}
	waitFor(t, func() bool {
		data, _ := os.ReadFile(wire)
		return strings.Contains(string(data), `"method":"notifications/cancelled"`)
	}, "notifications/cancelled on the wire")
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "still here"})); s != "Echo: still here" {
		t.Fatalf("after cancel: %q", s)
	}

	// Steps of 2s: no progress within the 1.5s timeout.
	started = time.Now()
	resp := callT(t, b, "trigger-long-running-operation", map[string]any{"duration": 4, "steps": 2})
	if !resp.IsError || !strings.Contains(text(t, resp), "within 1.5s") {
		t.Fatalf("a silent server gave %s", resp.Content)
	}
	if d := time.Since(started); d > 3*time.Second {
		t.Fatalf("the timeout fired after %s", d)
	}
	if s := text(t, callT(t, b, "echo", map[string]any{"message": "again"})); s != "Echo: again" {
		t.Fatalf("after the timeout: %q", s)
	}
}

// A 20 MB file read through server-filesystem: its JSON-RPC frame (the
// text, and a copy in structured content) is over 40 MB, past the SDK's
// 16 MiB stdio limit. Under the default max_output_bytes the result is cut
// with a marker; with a higher limit it arrives whole.
func TestLargeResult(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("0123456789abcdef", 20<<20/16)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := start(t, Options{Servers: []Server{filesystem(t, "files", dir)}})
	p := sdktest.Serve(t, b) // through gRPC, as the host gets it
	resp := callT(t, p, "read_text_file", map[string]any{"path": filepath.Join(dir, "big.txt")})
	if resp.IsError || len(resp.Content) > DefaultMaxOutputBytes+1024 || len(resp.Content) < DefaultMaxOutputBytes-4096 {
		t.Fatalf("truncated result: %d bytes, is_error %v", len(resp.Content), resp.IsError)
	}
	if !strings.Contains(string(resp.Content), "[truncated by tenxgraph: ") || !strings.Contains(string(resp.Content), `max_output_bytes (1048576) of MCP server \"files\"`) {
		t.Fatalf("no marker in the truncated result's end: %s", resp.Content[len(resp.Content)-400:])
	}

	whole := filesystem(t, "files", dir)
	whole.MaxOutputBytes = 64 << 20
	b2, _ := start(t, Options{Servers: []Server{whole}})
	resp, err := b2.CallTool(context.Background(), sdk.CallToolRequest{Name: "read_text_file", Arguments: json.RawMessage(`{"path": "` + filepath.Join(dir, "big.txt") + `"}`)})
	if err != nil || resp.IsError {
		t.Fatal(err, resp.IsError)
	}
	var got map[string]string
	if err := json.Unmarshal(resp.Content, &got); err != nil || got["content"] != big {
		t.Fatalf("the whole result (%d bytes) did not arrive whole: %v", len(resp.Content), err)
	}
	// The session survived the large frames.
	if r := callT(t, b2, "list_allowed_directories", map[string]any{}); r.IsError {
		t.Fatalf("after the large result: %s", r.Content)
	}
}

// A server killed with SIGKILL is started again: a read-only call made
// after the crash, and one in flight during it, both succeed; a call of a
// tool that is not idempotent in flight during the crash is not retried
// and says so.
func TestServerKilledAndRecovered(t *testing.T) {
	b, logs := start(t, Options{Servers: []Server{everything(t, "everything"), goServer(t, "go")}})
	ev, gs := b.servers[0], b.servers[1]
	pid := func(s *server) int {
		c, live := s.sup.Current()
		if !live {
			return 0
		}
		return c.proc.cmd.Process.Pid
	}
	first := pid(ev)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The kill takes the server's whole group, but not at once: on a busy
	// machine the server could still answer a call made right away. The
	// call below is made once nothing of it runs, before the bridge has
	// necessarily noticed.
	for deadline := time.Now().Add(10 * time.Second); len(proctest.Group(first)) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed server's processes %v still run after 10s", proctest.Group(first))
		}
	}
	if s := text(t, callT(t, b, "everything__echo", map[string]any{"message": "after"})); s != "Echo: after" {
		t.Fatalf("after the crash: %q", s)
	}
	second := pid(ev)
	if second == 0 || second == first {
		t.Fatalf("pid %d after the crash of %d", second, first)
	}
	if !strings.Contains(logs.String(), "is gone; connecting again") {
		t.Fatalf("the crash was not logged:\n%s", logs)
	}

	// In flight: a read-only, idempotent long-running operation.
	go func() {
		time.Sleep(700 * time.Millisecond)
		_ = syscall.Kill(second, syscall.SIGKILL)
	}()
	resp := callT(t, b, "trigger-long-running-operation", map[string]any{"duration": 1.5, "steps": 3})
	if resp.IsError || !strings.Contains(text(t, resp), "completed") {
		t.Fatalf("the in-flight read-only call: %s", resp.Content)
	}
	if pid(ev) == second {
		t.Fatal("the server was not restarted")
	}

	// In flight: a tool without annotations.
	goPid := pid(gs)
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = syscall.Kill(goPid, syscall.SIGKILL)
	}()
	resp = callT(t, b, "sleep", map[string]any{"ms": 3000})
	if !resp.IsError || !strings.Contains(text(t, resp), "not retried") {
		t.Fatalf("the in-flight call of a non-idempotent tool: %s", resp.Content)
	}
	if s := text(t, callT(t, b, "go__echo", map[string]any{"text": "back"})); s != "back" {
		t.Fatalf("the Go server after its crash: %q", s)
	}
}

// Two servers serving the same tool names, and a name another provider
// of the node has: every claimant is prefixed with its server's key, the
// calls reach the right server, and the collisions are logged.
func TestCollidingNames(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("from a"), 0o600); err != nil {
		t.Fatal(err)
	}
	second := everything(t, "ev2")
	second.AllowTools = []string{"echo", "get-sum"}
	fs := filesystem(t, "fs", dir)
	fs.DenyTools = []string{"write_file", "edit_file"}
	b, logs := start(t, Options{Servers: []Server{everything(t, "ev"), second, fs}, Taken: []string{"read_text_file"}})
	got := names(t, b)
	for _, want := range []string{"ev__echo", "ev2__echo", "ev__get-sum", "ev2__get-sum", "get-tiny-image", "fs__read_text_file", "list_allowed_directories"} {
		if !slices.Contains(got, want) {
			t.Errorf("tools %v lack %s", got, want)
		}
	}
	for _, unwanted := range []string{"echo", "read_text_file", "write_file", "edit_file", "ev2__get-tiny-image"} {
		if slices.Contains(got, unwanted) {
			t.Errorf("tools %v have %s", got, unwanted)
		}
	}
	if s := text(t, callT(t, b, "ev2__echo", map[string]any{"message": "x"})); s != "Echo: x" {
		t.Fatalf("ev2__echo: %q", s)
	}
	// server-filesystem's structured content is {"content": text}; the
	// text block repeating it is left out.
	if r := callT(t, b, "fs__read_text_file", map[string]any{"path": filepath.Join(dir, "a.txt")}); string(r.Content) != `{"content":"from a"}` {
		t.Fatalf("fs__read_text_file: %s", r.Content)
	}
	for _, want := range []string{`tool name "echo" is claimed by several MCP server tools; offering ev's "echo" as ev__echo, ev2's "echo" as ev2__echo`,
		`tool name "read_text_file" is already taken on the node by another provider's tool; offering server fs's "read_text_file" as fs__read_text_file`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

// A server's tools/list_changed notification updates the bridge's tools
// and is announced to the host.
func TestListChanged(t *testing.T) {
	b, _ := start(t, Options{Servers: []Server{goServer(t, "go")}})
	changed := b.ToolsChanged()
	if s := text(t, callT(t, b, "add_tool", map[string]any{"name": "late.tool"})); s != "added late.tool" {
		t.Fatalf("add_tool: %q", s)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no change announced")
	}
	if !slices.Contains(names(t, b), "late_tool") {
		t.Fatalf("tools %v lack late_tool (late.tool sanitized)", names(t, b))
	}
	if s := text(t, callT(t, b, "late_tool", map[string]any{"text": "new"})); s != "new" {
		t.Fatalf("late_tool: %q", s)
	}
}

// Startup errors name the entry: a command that does not exist, a server
// that exits, an unset variable.
func TestStartErrors(t *testing.T) {
	b, err := New(Options{Servers: []Server{{Name: "ghost", Type: "stdio", Command: "/nonexistent/mcp-server"},
		{Name: "off", Type: "stdio", Command: "/nonexistent", Disabled: true}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(context.Background())
	_, err = b.Metadata(context.Background(), sdk.MetadataRequest{})
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.ghost: ") || !strings.Contains(err.Error(), "/nonexistent/mcp-server") || strings.Contains(err.Error(), "off") {
		t.Fatalf("error %v", err)
	}

	b, err = New(Options{Servers: []Server{{Name: "dies", Type: "stdio", Command: "sh", Args: []string{"-c", "echo broken config >&2; exit 3"}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(context.Background())
	_, err = b.Metadata(context.Background(), sdk.MetadataRequest{})
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "broken config") {
		t.Fatalf("error %v", err)
	}

	os.Unsetenv("TENXGRAPH_TEST_UNSET")
	_, err = New(Options{Servers: []Server{{Name: "s", Type: "http", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${TENXGRAPH_TEST_UNSET}"}}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.s.headers.Authorization: environment variable TENXGRAPH_TEST_UNSET is not set") {
		t.Fatalf("error %v", err)
	}
}

// Start errors and logs quote a server's settings as written: the values
// of its ${VAR}s (a token in a URL's query, an argument) never show, nor a
// credential passed on its command line, which is refused.
func TestStartErrorsHoldNoValues(t *testing.T) {
	const value = "v4lue-7c1e-never-printed"
	vars := map[string]string{"KEY": value, "LEVEL": value, "GITHUB_TOKEN": value}
	logs := &logBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace})
	b, err := New(Options{Vars: vars, Servers: []Server{
		{Name: "web", Type: "http", URL: "http://127.0.0.1:1/mcp?key=${KEY}", Timeout: sdk.Duration(2 * time.Second)},
		{Name: "cli", Type: "stdio", Command: "sh", Args: []string{"-c", "exit 3", "sh", "--level=${LEVEL}"}, Timeout: sdk.Duration(2 * time.Second)},
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(context.Background())
	_, err = b.Metadata(context.Background(), sdk.MetadataRequest{})
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.web: ") || !strings.Contains(err.Error(), "mcp_servers.cli: ") {
		t.Fatalf("want both servers unavailable, got %v", err)
	}
	for _, want := range []string{"?key=${KEY}", "--level=${LEVEL}"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not quote %q as written: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), value) || strings.Contains(logs.String(), value) {
		t.Errorf("a value of a variable was printed:\nerror: %v\nlogs: %s", err, logs)
	}

	_, err = New(Options{Vars: vars, Servers: []Server{{Name: "gh", Type: "stdio", Command: "srv", Args: []string{"--token", "${X:-${GITHUB_TOKEN}}"}}}}, nil)
	if err == nil || !strings.Contains(err.Error(), "mcp_servers.gh.args[1]: ${X:-${GITHUB_TOKEN}} would put GITHUB_TOKEN on the command line") || strings.Contains(err.Error(), value) {
		t.Fatalf("a credential in args: %v", err)
	}
}

func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
