package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
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
		atts []sdk.Attachment
	}{
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "a <b> & c"}}}, `"a <b> & c"`, nil},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: `{"t":1}`}}, StructuredContent: map[string]any{"t": 1}}, `{"t":1}`, nil},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "hi"}}, StructuredContent: map[string]any{"content": "hi"}}, `{"content":"hi"}`, nil},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "other"}}, StructuredContent: map[string]any{"n": 2}},
			`{"content":[{"text":"other","type":"text"}],"structured_content":{"n":2}}`, nil},
		// Media are attachments, in order; text, resource text and links
		// stay the content.
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{
			&mcpsdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"},
			&mcpsdk.AudioContent{Data: []byte("WAV"), MIMEType: "audio/wav"},
			&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "A"}},
			&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "file:///b/report.pdf", MIMEType: "application/pdf", Blob: []byte("%PDF")}},
			&mcpsdk.EmbeddedResource{Resource: &mcpsdk.ResourceContents{URI: "demo://x/y\\z", Blob: []byte{1}}},
			&mcpsdk.ResourceLink{URI: "file:///c", Name: "c", Description: "C"},
		}}, `{"content":[{"mime_type":"text/plain","text":"A","type":"resource","uri":"file:///a"},` +
			`{"description":"C","name":"c","type":"resource_link","uri":"file:///c"}]}`, []sdk.Attachment{
			{MimeType: "image/png", Data: []byte("PNG")}, {MimeType: "audio/wav", Data: []byte("WAV")},
			{MimeType: "application/pdf", Filename: "report.pdf", Data: []byte("%PDF")}, {MimeType: "application/octet-stream", Data: []byte{1}}}},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{
			&mcpsdk.TextContent{Text: "a chart"}, &mcpsdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}}},
			`"a chart"`, []sdk.Attachment{{MimeType: "image/png", Data: []byte("PNG")}}},
		{&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.ImageContent{Data: []byte("PNG"), MIMEType: "image/png"}}},
			`{"content":[]}`, []sdk.Attachment{{MimeType: "image/png", Data: []byte("PNG")}}},
		{&mcpsdk.CallToolResult{}, `{"content":[]}`, nil},
	} {
		got, truncated, err := toolResult(tc.res, Server{Name: "s"})
		if err != nil || truncated || string(got.Content) != tc.want || !reflect.DeepEqual(got.Attachments, tc.atts) {
			t.Errorf("got %s %+v (%v, %v), want %s %+v", got.Content, got.Attachments, truncated, err, tc.want, tc.atts)
		}
	}
}

func TestTruncation(t *testing.T) {
	const limit = 10_000
	// Multi-byte text and characters JSON escapes: the cut stays within
	// the limit and on a rune boundary.
	long := strings.Repeat("é\"\n<", 20_000)
	got, truncated, err := toolResult(&mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: long}}}, Server{Name: "files", MaxOutputBytes: limit})
	if err != nil || !truncated || len(got.Content) > limit+512 || len(got.Content) < limit/2 {
		t.Fatalf("%d bytes, truncated %v, %v", len(got.Content), truncated, err)
	}
	var s string
	if err := json.Unmarshal(got.Content, &s); err != nil || !utf8.ValidString(s) || !strings.Contains(s, `[truncated by tenxgraph: `) || !strings.Contains(s, `max_output_bytes (10000) of MCP server "files"`) {
		t.Fatalf("cut text: %v %.200q", err, s[len(s)-min(len(s), 200):])
	}

	// max_output_bytes cuts the text, not an image (half an image is no
	// image): the image is an attachment, whole; the text before it is
	// kept, and so is every block's type.
	img := make([]byte, 3*limit)
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: "caption"},
		&mcpsdk.ImageContent{Data: img, MIMEType: "image/png"},
		&mcpsdk.TextContent{Text: strings.Repeat("z", 2*limit)},
	}, StructuredContent: map[string]any{"big": strings.Repeat("y", 2*limit), "n": 1}, IsError: true}
	got, truncated, err = toolResult(res, Server{Name: "s", MaxOutputBytes: limit})
	if err != nil || !truncated || len(got.Content) > limit+1024 || !got.IsError {
		t.Fatalf("%d bytes, %v, %v", len(got.Content), truncated, err)
	}
	var w struct {
		Content []map[string]any `json:"content"`
		SC      map[string]any   `json:"structured_content"`
	}
	if err := json.Unmarshal(got.Content, &w); err != nil || len(w.Content) != 2 {
		t.Fatalf("%s: %v", got.Content, err)
	}
	if w.Content[0]["text"] != "caption" || w.Content[1]["type"] != "text" {
		t.Fatalf("blocks %v", w.Content)
	}
	if w.SC["n"] != float64(1) {
		t.Fatalf("structured content %v", w.SC)
	}
	if len(got.Attachments) != 1 || len(got.Attachments[0].Data) != len(img) {
		t.Fatalf("attachments %d", len(got.Attachments))
	}
}

// Media beside the content stay within max_result_bytes: those that fit
// are kept whole, in order; one that does not, one past the most a result
// carries, and one the host would refuse, are each left out with a marker
// in its place saying why.
func TestMediaWithinTheResultLimit(t *testing.T) {
	const limit = 10_000
	s := Server{Name: "pics", MaxOutputBytes: 2000, MaxResultBytes: limit}
	image := func(n int, mimeType string) mcpsdk.Content {
		return &mcpsdk.ImageContent{Data: bytes.Repeat([]byte{'i'}, n), MIMEType: mimeType}
	}
	res := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
		&mcpsdk.TextContent{Text: "three images"},
		image(4000, "image/png"),
		image(7000, "image/png"), // 4000 + 7000 > 10000
		image(10, "png"),
		image(3000, "image/jpeg"),
		&mcpsdk.AudioContent{MIMEType: "audio/wav"},
	}}
	got, truncated, err := toolResult(res, s)
	if err != nil || !truncated {
		t.Fatalf("%v, truncated %v", err, truncated)
	}
	if n := got.Size(); n > limit {
		t.Errorf("the result is %d bytes, over max_result_bytes %d", n, limit)
	}
	if len(got.Attachments) != 2 || got.Attachments[0].MimeType != "image/png" || len(got.Attachments[0].Data) != 4000 ||
		got.Attachments[1].MimeType != "image/jpeg" || len(got.Attachments[1].Data) != 3000 {
		t.Fatalf("attachments %+v", got.Attachments)
	}
	var w struct{ Content []struct{ Text string } }
	if err := json.Unmarshal(got.Content, &w); err != nil {
		t.Fatal(err)
	}
	want := []string{"three images",
		`[left out by tenxgraph: an image of 7000 bytes (image/png); with the rest of the result it passes max_result_bytes (10000) of MCP server "pics"]`,
		`[left out by tenxgraph: an image from MCP server "pics" that the host refuses: mime_type: "png" is not a media type such as image/png]`,
		`[left out by tenxgraph: a sound from MCP server "pics" that the host refuses: data: empty]`}
	if len(w.Content) != len(want) {
		t.Fatalf("content %s", got.Content)
	}
	for i := range want {
		if w.Content[i].Text != want[i] {
			t.Errorf("block %d: %q, want %q", i, w.Content[i].Text, want[i])
		}
	}

	many := &mcpsdk.CallToolResult{}
	for range sdk.MaxAttachments + 1 {
		many.Content = append(many.Content, image(1, "image/gif"))
	}
	got, _, err = toolResult(many, Server{Name: "pics"})
	if err != nil || len(got.Attachments) != sdk.MaxAttachments ||
		string(got.Content) != `"[left out by tenxgraph: an image of 1 bytes (image/gif); a result carries at most 100 attachments]"` {
		t.Fatalf("%d attachments, content %s, %v", len(got.Attachments), got.Content, err)
	}
}

func TestOptionsRoundTrip(t *testing.T) {
	o := Options{Servers: []Server{{Name: "a", Type: "stdio", Command: "x", Timeout: sdk.Duration(1500 * time.Millisecond),
		ToolTimeouts: map[string]sdk.Duration{"slow": sdk.Duration(time.Hour)}, MaxOutputBytes: 42}}, Taken: []string{"t"}}
	raw, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(`"timeout":"1.5s","tool_timeouts":{"slow":"1h0m0s"}`)) {
		t.Errorf("the timeouts are not spelt as in the config: %s", raw)
	}
	back, err := ParseOptions(raw)
	if err != nil || back.Servers[0].timeout() != 1500*time.Millisecond || back.Servers[0].maxOutput() != 42 || back.Taken[0] != "t" {
		t.Fatalf("%+v, %v", back, err)
	}
	if d, key := back.Servers[0].toolTimeout("slow"); d != time.Hour || key != "mcp_servers.a.tool_timeouts.slow" {
		t.Fatalf("tool timeout %v from %s", d, key)
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
