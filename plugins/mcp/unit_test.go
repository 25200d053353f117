package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// The grammar itself is internal/expand's, tested there; this is how a
// server entry uses it.
func TestExpanded(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "DIR": "/srv/data"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	s, ps := Server{Name: "x", Command: "${BIN:-node}", Args: []string{"${DIR}/files", "$${DIR}", "--token=${TOKEN}", "${X:-${TOKEN}}"},
		Env:     map[string]string{"A": "${NOPE}", "T": "${TOKEN}", "L": "$${TOKEN}"},
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}}.Expanded(lookup)
	if s.Command != "node" || s.Args[0] != "/srv/data/files" || s.Args[1] != "${DIR}" || s.Env["T"] != "s3cret" || s.Env["L"] != "${TOKEN}" || s.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("expanded %+v", s)
	}
	// A credential on the command line is refused, nested or not, and
	// never reaches the server's arguments.
	want := []string{"args[2]", "args[3]", "env.A"}
	var got []string
	for _, p := range ps {
		got = append(got, p.Path)
		if strings.Contains(p.Message, "s3cret") {
			t.Errorf("%s: the problem holds the value of TOKEN: %s", p.Path, p.Message)
		}
	}
	if !slices.Equal(got, want) || !strings.Contains(ps[0].Message, "would put TOKEN on the command line") || !strings.Contains(ps[2].Message, "NOPE") {
		t.Errorf("problems %+v, want them at %v", ps, want)
	}
	if slices.ContainsFunc(s.Args, func(a string) bool { return strings.Contains(a, "s3cret") }) {
		t.Errorf("a refused argument was expanded: %q", s.Args)
	}
	if vars := (Server{Args: []string{"${A:-${B}}", "$${C}"}, Env: map[string]string{"K": "${D:+${E}}"}}).Vars(); !slices.Equal(vars, []string{"A", "B", "D", "E"}) {
		t.Errorf("Vars = %v", vars)
	}
}

func TestAssignNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	refs := []toolRef{
		{"a", "echo"}, {"b", "echo"}, // a collision between servers
		{"a", "read_file"},       // taken by another provider
		{"a", "unique"},          // kept
		{"b", "dotted.name/v2"},  // sanitized
		{"a", long}, {"b", long}, // prefixed and too long
		{"c", "x.y"}, {"c", "x_y"}, // one server, alike once sanitized
		{"a", "b__echo"}, // its own name is another's prefixed name
	}
	names, cs := assignNames(refs, map[string]bool{"read_file": true})
	want := []string{"a__echo", "b__echo", "a__read_file", "unique", "dotted_name_v2"}
	for i, w := range want {
		if names[i] != w {
			t.Errorf("%v -> %q, want %q", refs[i], names[i], w)
		}
	}
	seen := map[string]bool{"read_file": true}
	for i, n := range names {
		if !sdk.ToolNamePattern.MatchString(n) {
			t.Errorf("%v -> %q breaks the name rule", refs[i], n)
		}
		if seen[n] {
			t.Errorf("%v -> %q is not unique", refs[i], n)
		}
		seen[n] = true
	}
	if !strings.HasPrefix(names[5], "a__very_long") || len(names[5]) != 64 || names[5] == names[6] {
		t.Errorf("long names %q, %q", names[5], names[6])
	}
	again, _ := assignNames(refs, map[string]bool{"read_file": true})
	if strings.Join(again, ",") != strings.Join(names, ",") {
		t.Error("names are not stable")
	}
	var reported []string
	for _, c := range cs {
		reported = append(reported, c.name)
	}
	if got := strings.Join(reported, ","); got != "b__echo,echo,read_file,"+sanitize(long)+",x_y" && !strings.Contains(got, "echo,read_file") {
		t.Errorf("collisions reported: %s", got)
	}
}

func TestResultShapes(t *testing.T) {
	for _, tc := range []struct {
		res  *mcpsdk.CallToolResult
		want string
	}{
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "a <b> & c"}}}, `"a <b> & c"`},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: `{"t":1}`}}, StructuredContent: map[string]any{"t": 1}}, `{"t":1}`},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "hi"}}, StructuredContent: map[string]any{"content": "hi"}}, `{"content":"hi"}`},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "other"}}, StructuredContent: map[string]any{"n": 2}},
			`{"content":[{"text":"other","type":"text"}],"structured_content":{"n":2}}`},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{
			&mcpsdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"},
			&mcpsdk.AudioContent{Data: []byte("WAV"), MIMEType: "audio/wav"},
			&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "A"}},
			&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///b", Blob: []byte{1}}},
			&mcpsdk.ResourceLink{URI: "file:///c", Name: "c", Description: "C"},
		}}, `{"content":[{"data":"UE5H","mime_type":"image/png","type":"image"},{"data":"V0FW","mime_type":"audio/wav","type":"audio"},` +
			`{"mime_type":"text/plain","text":"A","type":"resource","uri":"file:///a"},{"blob":"AQ==","type":"resource","uri":"file:///b"},` +
			`{"description":"C","name":"c","type":"resource_link","uri":"file:///c"}]}`},
		{&mcpsdk.CallToolResult{}, `{"content":[]}`},
	} {
		got, truncated, err := resultJSON(tc.res, 1<<20, "s")
		if err != nil || truncated || string(got) != tc.want {
			t.Errorf("got %s (%v, %v), want %s", got, truncated, err, tc.want)
		}
	}
}

func TestTruncation(t *testing.T) {
	const limit = 10_000
	// Multi-byte text and characters JSON escapes: the cut stays within
	// the limit and on a rune boundary.
	long := strings.Repeat("é\"\n<", 20_000)
	got, truncated, err := resultJSON(&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: long}}}, limit, "files")
	if err != nil || !truncated || len(got) > limit+512 || len(got) < limit/2 {
		t.Fatalf("%d bytes, truncated %v, %v", len(got), truncated, err)
	}
	var s string
	if err := json.Unmarshal(got, &s); err != nil || !utf8.ValidString(s) || !strings.Contains(s, `[truncated by tenxgraph: `) || !strings.Contains(s, `max_output_bytes (10000) of MCP server "files"`) {
		t.Fatalf("cut text: %v %.200q", err, s[len(s)-min(len(s), 200):])
	}

	// An image that does not fit is left out whole; the text before it is
	// kept, and so is every block's type.
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: "caption"},
		&mcpsdk.ImageContent{Data: make([]byte, 3*limit), MIMEType: "image/png"},
		&mcpsdk.TextContent{Text: strings.Repeat("z", 2*limit)},
	}, StructuredContent: map[string]any{"big": strings.Repeat("y", 2*limit), "n": 1}, IsError: true}
	got, truncated, err = resultJSON(res, limit, "s")
	if err != nil || !truncated || len(got) > limit+1024 {
		t.Fatalf("%d bytes, %v, %v", len(got), truncated, err)
	}
	var w struct {
		Content []map[string]any `json:"content"`
		SC      map[string]any   `json:"structured_content"`
	}
	if err := json.Unmarshal(got, &w); err != nil || len(w.Content) != 3 {
		t.Fatalf("%s: %v", got, err)
	}
	if w.Content[0]["text"] != "caption" || w.Content[1]["type"] != "image" || !strings.HasPrefix(w.Content[1]["data"].(string), "[left out by tenxgraph: 40000 bytes of base64 data") {
		t.Fatalf("blocks %v", w.Content[:2])
	}
	if w.SC["n"] != float64(1) {
		t.Fatalf("structured content %v", w.SC)
	}
}

func TestOptionsRoundTrip(t *testing.T) {
	o := Options{Servers: []Server{{Name: "a", Type: "stdio", Command: "x", Timeout: 1500 * time.Millisecond, MaxOutputBytes: 42}}, Taken: []string{"t"}}
	raw, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseOptions(raw)
	if err != nil || back.Servers[0].timeout() != 1500*time.Millisecond || back.Servers[0].maxOutput() != 42 || back.Taken[0] != "t" {
		t.Fatalf("%+v, %v", back, err)
	}
	if _, err := ParseOptions([]byte(`{"servers": [], "bogus": 1}`)); err == nil {
		t.Fatal("an unknown key was accepted")
	}
	if s := (Server{}); s.timeout() != DefaultTimeout || s.maxOutput() != DefaultMaxOutputBytes || s.connectTimeout() != DefaultTimeout {
		t.Fatal("defaults")
	}
}

// Headers reach the server on every request, with ${VAR} expanded from the
// environment. The server is the Go SDK's own Streamable HTTP server, in
// this process.
func TestHeaders(t *testing.T) {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "s", Version: "1"}, nil)
	mcpsdk.AddTool(srv, &mcpsdk.Tool{Name: "ping", Description: "Pong."}, func(context.Context, *mcpsdk.CallToolRequest, struct{}) (*mcpsdk.CallToolResult, any, error) {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "pong"}}}, nil, nil
	})
	var mu sync.Mutex
	var seen []string
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the bridge's shutdown, which ends its event stream
	t.Setenv("TENXGRAPH_TEST_TOKEN", "s3cret")
	b, _ := start(t, Options{Servers: []Server{{Name: "h", Type: "http", URL: ts.URL, Headers: map[string]string{"Authorization": "Bearer ${TENXGRAPH_TEST_TOKEN}"}}}})
	if s := text(t, callT(t, b, "ping", map[string]any{})); s != "pong" {
		t.Fatalf("ping: %q", s)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("requests %v", seen)
	}
	for _, s := range seen {
		if !strings.HasSuffix(s, " Bearer s3cret") {
			t.Fatalf("requests %v: one lacks the header", seen)
		}
	}
}
