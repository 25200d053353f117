// Package python_test tests the Python plugin of this folder: through the
// SDK's test kit, and through `tenxgraph serve` as a user runs it.
package python_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

// python is Debian's interpreter, whose python3-grpcio and python3-protobuf
// the plugin uses; the test skips, saying why, when they are not there.
func python(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import grpc, google.protobuf").CombinedOutput(); err != nil {
		t.Skipf("the Python plugin needs %s with Debian's python3-grpcio and python3-protobuf (scripts/test.sh installs them: apt-get install python3-grpcio python3-protobuf): %v %s", py, err, out)
	}
	return py
}

func script(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("plugin.py")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// The plugin speaks toolprovider.v1: metadata, a call with its progress on
// CallToolStream, and the schema the host checks arguments against.
func TestPythonPluginWithTheTestKit(t *testing.T) {
	p := sdktest.Start(t, python(t), script(t))
	md, err := p.Metadata(t.Context(), sdk.MetadataRequest{})
	if err != nil || md.Name != "wordcount" || len(md.Tools) != 2 || md.Tools[0].Name != "word_count" || md.Tools[1].Name != "swatch" {
		t.Fatalf("metadata %+v, %v", md, err)
	}
	var mu sync.Mutex
	var progress []sdk.Progress
	ctx := sdk.WithProgress(t.Context(), func(pr sdk.Progress) {
		mu.Lock()
		progress = append(progress, pr)
		mu.Unlock()
	})
	got := sdktest.Decode[struct{ Words int }](t, sdktest.CallContext(ctx, t, p, "word_count", map[string]string{"text": "one two\nthree"}))
	if got.Words != 3 {
		t.Errorf("words = %d, want 3", got.Words)
	}
	mu.Lock()
	if len(progress) != 2 || progress[1].Progress != 2 || progress[1].Total != 2 {
		t.Errorf("progress %+v, want a report per line", progress)
	}
	mu.Unlock()
	if msg := sdktest.ErrorText(t, sdktest.Call(t, p, "word_count", map[string]any{"txt": "x"})); !strings.Contains(msg, "text") {
		t.Errorf("arguments without text: %q", msg)
	}
}

// The swatch tool returns its image as an attachment: a PNG of the
// colour asked for, beside a JSON content that describes it.
func TestPythonPluginReturnsAnImage(t *testing.T) {
	p := sdktest.Start(t, python(t), script(t))
	resp := sdktest.Call(t, p, "swatch", map[string]string{"color": "#ff8000"})
	if got := sdktest.Decode[map[string]any](t, resp); got["color"] != "#ff8000" || got["width"] != 16.0 {
		t.Errorf("content %s", resp.Content)
	}
	if len(resp.Attachments) != 1 || resp.Attachments[0].MimeType != "image/png" || resp.Attachments[0].Filename != "swatch.png" {
		t.Fatalf("attachments %+v", resp.Attachments)
	}
	img, err := png.Decode(bytes.NewReader(resp.Attachments[0].Data))
	if err != nil {
		t.Fatalf("the attachment is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 16 || b.Dy() != 16 {
		t.Errorf("a %v image, want 16x16", b)
	}
	if r, g, b, _ := img.At(3, 5).RGBA(); r>>8 != 0xff || g>>8 != 0x80 || b>>8 != 0 {
		t.Errorf("colour %x %x %x, want ff 80 00", r>>8, g>>8, b>>8)
	}
	if msg := sdktest.ErrorText(t, sdktest.Call(t, p, "swatch", map[string]string{"color": "orange"})); !strings.Contains(msg, "color") {
		t.Errorf("a colour that is not #rrggbb: %q", msg)
	}
}

// The plugin declares an options schema: the options it is started with
// reach its tools.
func TestPythonPluginOptions(t *testing.T) {
	p := sdktest.StartConfigured(t, map[string]int{"swatch_size": 8}, python(t), script(t))
	resp := sdktest.Call(t, p, "swatch", map[string]string{"color": "#000000"})
	if len(resp.Attachments) != 1 {
		t.Fatalf("attachments %+v", resp.Attachments)
	}
	img, err := png.Decode(bytes.NewReader(resp.Attachments[0].Data))
	if err != nil || img.Bounds().Dx() != 8 {
		t.Fatalf("swatch_size 8 gave %v, %v", img.Bounds(), err)
	}
}

// `tenxgraph validate` checks the options against the schema the Python
// plugin declares, each mistake at its path, and passes good ones.
func TestValidateChecksThePythonPluginsOptions(t *testing.T) {
	py, plugin := python(t), script(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "tenxgraph")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/tenxgraph").CombinedOutput(); err != nil {
		t.Fatalf("build tenxgraph: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [{"match": "(?s).*", "text": "hi"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	validate := func(options map[string]any) (string, error) {
		cfg, _ := json.Marshal(map[string]any{
			"agent":        "tenxgraph:react",
			"model":        map[string]any{"provider": "scripted", "script": "script.json"},
			"checkpointer": map[string]any{"type": "memory"},
			"plugins":      []any{map[string]any{"name": "wordcount", "command": []string{py, plugin}, "options": options}},
		})
		if err := os.WriteFile(filepath.Join(dir, "10xgraph.json"), cfg, 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "validate", "--config", filepath.Join(dir, "10xgraph.json")).CombinedOutput()
		return string(out), err
	}
	out, err := validate(map[string]any{"swatch_size": 0, "swatch_sise": 8})
	if err == nil {
		t.Fatalf("validate passed bad options:\n%s", out)
	}
	for _, want := range []string{
		"plugins[0].options.swatch_size: must be >= 1 but found 0",
		`plugins[0].options.swatch_sise: unknown key: did you mean "swatch_size"? (allowed: swatch_size)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate's output lacks %q:\n%s", want, out)
		}
	}
	if out, err := validate(map[string]any{"swatch_size": 32}); err != nil {
		t.Errorf("validate refused good options: %v\n%s", err, out)
	}
}

// A user's path: the plugin listed in 10xgraph.json, `tenxgraph serve`, and
// a run whose model calls the tool.
func TestPythonPluginThroughServe(t *testing.T) {
	py, plugin := python(t), script(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "tenxgraph")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/tenxgraph").CombinedOutput(); err != nil {
		t.Fatalf("build tenxgraph: %v\n%s", err, out)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("script.json", `{"rules": [{"match": "count", "tool_calls": [{"name": "word_count", "arguments": {"text": "the quick brown fox"}}],
	  "then": "{{field 0 \"words\"}} words"},
	  {"match": "show", "tool_calls": [{"name": "swatch", "arguments": {"color": "#336699"}}], "then": "here it is"}]}`)
	cfg, _ := json.Marshal(map[string]any{
		"agent":        "tenxgraph:react",
		"model":        map[string]any{"provider": "scripted", "script": "script.json"},
		"checkpointer": map[string]any{"type": "memory"},
		"plugins":      []any{map[string]any{"name": "wordcount", "command": []string{py, plugin}}},
	})
	write("10xgraph.json", string(cfg))

	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--config", filepath.Join(dir, "10xgraph.json"))
	cmd.Env = append(os.Environ(), "TENXGRAPH_LOG_LEVEL=info")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := ""
	sc := bufio.NewScanner(out)
	re := regexp.MustCompile(`on (http://\S+) `)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
			go io.Copy(io.Discard, out) //nolint:errcheck
			break
		}
	}
	if base == "" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("serve never said where it listens:\n%s", stderr.String())
	}
	results := invoke(t, base, "py", "count the words")
	if len(results) != 1 || string(results[0].Content) != `{"words":4}` || results[0].IsError {
		t.Fatalf("tool results %+v; want one {\"words\":4}\nserve's log:\n%s", results, stderr.String())
	}
	// The plugin's log line is filed at its level, with its fields, under
	// the plugin's name (serve logs at info here: a line the host could
	// not read would be filed raw at debug, and not shown).
	logged := regexp.MustCompile(`\[INFO\]\s+tenxgraph\.wordcount[.\w]*: counted: .*words=4`)
	for deadline := time.Now().Add(10 * time.Second); !logged.MatchString(stderr.String()); {
		if time.Now().After(deadline) {
			t.Fatalf("no info line \"counted\" in serve's log:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The swatch's image reaches the thread as the result's attachment:
	// an image block, its bytes as data or, once stored, a blob
	// reference.
	results = invoke(t, base, "py-swatch", "show me a colour")
	if len(results) != 1 || results[0].IsError || len(results[0].Attachments) != 1 {
		t.Fatalf("tool results %+v; want one with an attachment\nserve's log:\n%s", results, stderr.String())
	}
	a := results[0].Attachments[0]
	if a.Type != "image" || a.MimeType != "image/png" || a.Filename != "swatch.png" || (a.Data == nil && a.Blob == "") {
		t.Fatalf("attachment %+v", a)
	}
	if a.Data != nil {
		if _, err := png.Decode(bytes.NewReader(a.Data)); err != nil {
			t.Fatalf("the attachment's data is not a PNG: %v", err)
		}
	}
}

// lockedBuffer is a buffer a process writes to while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type toolResult struct {
	Type        string
	Content     json.RawMessage
	IsError     bool `json:"is_error"`
	Attachments []struct {
		Type     string
		MimeType string `json:"mime_type"`
		Filename string
		Data     []byte // base64 in JSON
		Blob     string
	}
}

// invoke runs one turn on a thread and returns its tool results, failing
// unless the run completed.
func invoke(t *testing.T, base, thread, text string) []toolResult {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"input": map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
		"config": map[string]any{"thread_id": thread}})
	resp, err := http.Post(base+"/v1/graph/invoke", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var res struct {
		Status   string
		Messages []struct{ Content []toolResult }
	}
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil || resp.StatusCode != http.StatusOK || res.Status != "completed" {
		t.Fatalf("%q: status %d %q, %v", text, resp.StatusCode, res.Status, err)
	}
	var results []toolResult
	for _, m := range res.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				results = append(results, b)
			}
		}
	}
	return results
}
