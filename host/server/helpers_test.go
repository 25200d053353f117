package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/config"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/server"
	"github.com/tenxgraph/tenxgraph/host/service"
)

// TestMain lets this test binary serve the builtin providers, as the
// tenxgraph binary does: the service starts "<this program> plugin NAME".
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "plugin" {
		if err := service.ServePlugin(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// A binary built with -race sleeps a second when it exits; the plugin
	// processes this binary serves need not, or every test that stops a
	// service waits for it.
	if !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	os.Exit(m.Run())
}

// waitLimit bounds every wait in these tests. It is generous: nothing here
// depends on how fast the machine is, only on things happening at all.
const waitLimit = 60 * time.Second

// The quickstart's question that makes a server tool call (calculator) and a
// remote tool call (read_clipboard) in one step.
const mixedQuestion = "what is 2+3*4 and what is on my clipboard?"

// testRules are put before the quickstart's rules. Their keywords appear in
// no quickstart example, so the quickstart's own rules still answer those.
var testRules = []map[string]any{
	// A server tool that is as slow as the test wants (http_fetch of a
	// local server the test holds open), to make two runs overlap.
	{"match": `(?i)zzfetch (\S+)`, "tool_calls": []any{map[string]any{"name": "http_fetch", "arguments": map[string]any{"url": "$1"}}}},
	// Two remote calls in one step.
	{"match": `(?i)zztwo`, "tool_calls": []any{
		map[string]any{"name": "read_clipboard", "arguments": map[string]any{}},
		map[string]any{"name": "get_selection", "arguments": map[string]any{}},
	}},
	// A slow server tool and a remote tool in one step.
	{"match": `(?i)zzslowmix (\S+)`, "tool_calls": []any{
		map[string]any{"name": "http_fetch", "arguments": map[string]any{"url": "$1"}},
		map[string]any{"name": "read_clipboard", "arguments": map[string]any{}},
	}},
	// A tool only an AG-UI client (or a per-run tool) provides.
	{"match": `(?i)zzconfetti`, "tool_calls": []any{map[string]any{"name": "show_confetti", "arguments": map[string]any{"amount": "lots"}}}},
}

// setup adjusts the quickstart config a test server runs.
type setup struct {
	// server is the config's "server" section (nil: none).
	server map[string]any
	// memory uses the memory checkpointer instead of SQLite.
	memory bool
	// postgres uses a PostgreSQL checkpointer (a new schema of the server
	// TENXGRAPH_TEST_POSTGRES_DSN names; the test skips without one).
	postgres bool
	// fetchHost enables http_fetch for this allow_hosts entry, such as
	// "127.0.0.1/32:8080" for a test server on loopback.
	fetchHost string
	// dir reuses a folder (and so its SQLite file) from an earlier start.
	dir string
	// store replaces the configured checkpointer.
	store checkpoint.Checkpointer
	// tune adjusts the server before it serves (its timeouts, say).
	tune func(*server.Server)
	// approve is builtin_tools' require_approval (nil: none).
	approve []any
	// cache is the config's "cache" section (nil: none).
	cache map[string]any
	// remoteTimeout is remote_tool_defaults.timeout ("": none).
	remoteTimeout string
	// toolTimeouts are remote_tools[].timeout by tool name.
	toolTimeouts map[string]string
	// durability is checkpointer.durability ("": none).
	durability string
	// media is the config's "media" block (nil: none).
	media map[string]any
}

// env is a live server on a loopback port and the service behind it.
type env struct {
	t     *testing.T
	svc   *service.Service
	srv   *server.Server
	url   string
	dir   string
	token string // sent as a bearer token when set
	// tenants maps each token the server accepts to its tenant (the name
	// of the variable holding it); none without auth.
	tenants map[string]string
	client  *http.Client
	done    chan error
}

// start writes the quickstart config (with the test's changes) and its
// script to a temp folder, starts the service and serves it.
func start(t *testing.T, s setup) *env {
	t.Helper()
	dir := s.dir
	if dir == "" {
		dir = t.TempDir()
	}
	var cfg map[string]any
	readJSON(t, filepath.Join("..", "..", "examples", "quickstart", "10xgraph.json"), &cfg)
	var script map[string]any
	readJSON(t, filepath.Join("..", "..", "examples", "quickstart", "script.json"), &script)
	rules := script["rules"].([]any)
	var all []any
	for _, r := range testRules {
		all = append(all, r)
	}
	script["rules"] = append(all, rules...)
	writeJSON(t, filepath.Join(dir, "script.json"), script)

	switch {
	case s.memory:
		cfg["checkpointer"] = map[string]any{"type": "memory"}
	case s.postgres:
		t.Setenv("TG_TEST_SERVER_DSN", postgresDSN(t))
		cfg["checkpointer"] = map[string]any{"type": "postgres", "dsn_env": "TG_TEST_SERVER_DSN"}
	default:
		cfg["checkpointer"] = map[string]any{"type": "sqlite", "path": filepath.Join(dir, "state.db")}
	}
	if s.durability != "" {
		cfg["checkpointer"].(map[string]any)["durability"] = s.durability
	}
	if s.server != nil {
		cfg["server"] = s.server
	} else {
		delete(cfg, "server")
	}
	if s.fetchHost != "" {
		bt := cfg["builtin_tools"].(map[string]any)
		bt["enable"] = append(bt["enable"].([]any), "http_fetch")
		bt["http_fetch"] = map[string]any{"allow_hosts": []any{s.fetchHost}}
	}
	if s.approve != nil {
		cfg["builtin_tools"].(map[string]any)["require_approval"] = s.approve
	}
	if s.cache != nil {
		cfg["cache"] = s.cache
	}
	if s.media != nil {
		cfg["media"] = s.media
	}
	if s.remoteTimeout != "" {
		cfg["remote_tool_defaults"] = map[string]any{"timeout": s.remoteTimeout}
	}
	for _, rt := range cfg["remote_tools"].([]any) {
		if d, ok := s.toolTimeouts[rt.(map[string]any)["name"].(string)]; ok {
			rt.(map[string]any)["timeout"] = d
		}
	}
	writeJSON(t, filepath.Join(dir, "10xgraph.json"), cfg)

	c, err := config.Load(filepath.Join(dir, "10xgraph.json"))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx := context.Background()
	svc, err := service.New(ctx, c, service.Options{Logger: hclog.NewNullLogger(), Store: s.store})
	if err != nil {
		t.Fatalf("service: %v", err)
	}
	srv, err := server.New(svc, server.Options{Logger: hclog.NewNullLogger()})
	if err != nil {
		_ = svc.Shutdown(ctx)
		t.Fatalf("server: %v", err)
	}
	if s.tune != nil {
		s.tune(srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = svc.Shutdown(ctx)
		t.Fatal(err)
	}
	e := &env{t: t, svc: svc, srv: srv, url: "http://" + ln.Addr().String(), dir: dir,
		client: &http.Client{Timeout: waitLimit}, done: make(chan error, 1)}
	go func() { e.done <- srv.Serve(ln) }()
	t.Cleanup(e.stop)
	return e
}

// stop shuts the server down, then the service; safe to call twice.
func (e *env) stop() {
	if e.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		e.t.Errorf("server shutdown: %v", err)
	}
	if err := <-e.done; err != nil {
		e.t.Errorf("serve: %v", err)
	}
	if err := e.svc.Shutdown(ctx); err != nil {
		e.t.Errorf("service shutdown: %v", err)
	}
	e.srv = nil
	e.client.CloseIdleConnections()
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// resp is an HTTP answer, read in full.
type resp struct {
	status int
	header http.Header
	body   []byte
}

// opt changes a request.
type opt func(*http.Request)

func withToken(tok string) opt {
	return func(r *http.Request) {
		if tok == "" {
			r.Header.Del("Authorization")
		} else {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
}

func withHeader(k, v string) opt { return func(r *http.Request) { r.Header.Set(k, v) } }

// do sends a request. body is sent as is when it is a string or []byte,
// and as JSON otherwise (nil: no body).
func (e *env) do(method, path string, body any, opts ...opt) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for _, o := range opts {
		o(req)
	}
	res, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: data}
}

// runBody is a run request: text becomes a user message.
func runBody(thread, text string) map[string]any {
	return map[string]any{
		"input":  map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
		"config": map[string]any{"thread_id": thread},
	}
}

// imageBody is a run request whose user message is text and media blocks.
func imageBody(thread, text string, media ...map[string]any) map[string]any {
	content := []any{map[string]any{"type": "text", "text": text}}
	for _, m := range media {
		content = append(content, m)
	}
	return map[string]any{
		"input":  map[string]any{"messages": []any{map[string]any{"role": "user", "content": content}}},
		"config": map[string]any{"thread_id": thread},
	}
}

// testPNG is a w x h PNG of noise (which does not compress: its size is
// about 4 w h bytes).
func testPNG(w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	rng := rand.New(rand.NewPCG(uint64(w), uint64(h)))
	for i := range img.Pix {
		img.Pix[i] = byte(rng.Uint32())
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// pngData is an image block of data.
func pngData(data []byte) map[string]any {
	return map[string]any{"type": "image", "mime_type": "image/png", "data": base64.StdEncoding.EncodeToString(data)}
}

// blobRef is the reference of data.
func blobRef(data []byte) string { return checkpoint.BlobRef(data) }

// resumeBody answers calls: id → result content.
func resumeBody(thread string, results ...any) map[string]any {
	var blocks []any
	for i := 0; i < len(results); i += 2 {
		blocks = append(blocks, map[string]any{"type": "tool_result", "tool_call_id": results[i], "content": results[i+1]})
	}
	return map[string]any{
		"input":  map[string]any{"messages": []any{map[string]any{"role": "tool", "content": blocks}}},
		"config": map[string]any{"thread_id": thread},
	}
}

// run is a decoded invoke response (or end event, or thread).
type run struct {
	ThreadID        string                        `json:"thread_id"`
	RunID           string                        `json:"run_id"`
	Status          string                        `json:"status"`
	Messages        []message.Message             `json:"messages"`
	RemoteToolCalls []message.RemoteToolCallBlock `json:"remote_tool_calls"`
}

func (e *env) invoke(body any, opts ...opt) run {
	e.t.Helper()
	r := e.do("POST", "/v1/graph/invoke", body, opts...)
	if r.status != http.StatusOK {
		e.t.Fatalf("invoke: %d %s", r.status, r.body)
	}
	return decodeRun(e.t, r.body)
}

func decodeRun(t *testing.T, data []byte) run {
	t.Helper()
	var out run
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return out
}

func (e *env) thread(id string, opts ...opt) run {
	e.t.Helper()
	r := e.do("GET", "/v1/threads/"+id, nil, opts...)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET thread %s: %d %s", id, r.status, r.body)
	}
	return decodeRun(e.t, r.body)
}

// paused starts a thread on the mixed question and returns the pending call.
func (e *env) paused(thread string, opts ...opt) string {
	e.t.Helper()
	r := e.invoke(runBody(thread, mixedQuestion), opts...)
	if r.Status != "interrupted" || len(r.RemoteToolCalls) != 1 || r.RemoteToolCalls[0].Name != "read_clipboard" {
		e.t.Fatalf("the mixed question did not pause on read_clipboard: %+v", r)
	}
	return r.RemoteToolCalls[0].ID
}

// errorOf checks an error answer: its status, that it is JSON, its code,
// and that the message contains each of want. It returns the body.
func errorOf(t *testing.T, r resp, status int, code string, want ...string) server.ErrorBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, r.body)
	}
	var b server.ErrorBody
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("error body %s: %v", r.body, err)
	}
	if b.Error.Code != code {
		t.Fatalf("code %q, want %q: %s", b.Error.Code, code, r.body)
	}
	if b.Error.Message == "" {
		t.Fatalf("empty message: %s", r.body)
	}
	for _, w := range want {
		if !strings.Contains(b.Error.Message, w) {
			t.Fatalf("message %q does not contain %q", b.Error.Message, w)
		}
	}
	return b
}

// state is everything observable about a thread: what GET answers and
// every checkpoint the store holds.
func (e *env) state(id string, opts ...opt) string {
	e.t.Helper()
	r := e.do("GET", "/v1/threads/"+id, nil, opts...)
	if raw, err := url.PathUnescape(id); err == nil {
		id = raw // id is as the path has it
	}
	hist, err := e.svc.App.History(context.Background(), e.tenantOf(opts...), id, 0)
	if err != nil {
		e.t.Fatalf("history of %s: %v", id, err)
	}
	raw, err := json.Marshal(hist)
	if err != nil {
		e.t.Fatal(err)
	}
	return fmt.Sprintf("GET %d %s\nhistory (%d) %s", r.status, r.body, len(hist), raw)
}

// tenantOf is the tenant a request with opts acts as: that of the token
// it carries.
func (e *env) tenantOf(opts ...opt) string {
	req, err := http.NewRequest("GET", e.url, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	for _, o := range opts {
		o(req)
	}
	return e.tenants[strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")]
}

// sseEvent is one server-sent event.
type sseEvent struct {
	id, event, data string
}

// readSSE parses a text/event-stream body: fields per line, events ended
// by a blank line, several data lines joined with "\n".
func readSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if cur.event != "" || data != nil {
				cur.data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue // a comment
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			cur.event = value
		case "data":
			data = append(data, value)
		case "id":
			cur.id = value
		default:
			t.Fatalf("unknown SSE field %q in line %q", field, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur.event != "" || data != nil {
		t.Fatalf("the stream ends inside an event (no blank line after it): %q", body)
	}
	return out
}

// names lists the events' names.
func names(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.event
	}
	return out
}

// stream posts to /v1/graph/stream and parses the answer, which must be an
// event stream.
func (e *env) stream(body any, opts ...opt) []sseEvent {
	e.t.Helper()
	r := e.do("POST", "/v1/graph/stream", body, opts...)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("stream: %d %s: %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	return readSSE(e.t, r.body)
}

// metrics reads /metrics as series → value.
func (e *env) metrics() map[string]float64 {
	e.t.Helper()
	r := e.do("GET", "/metrics", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("metrics: %d %s", r.status, r.body)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(r.body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			e.t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// delta is how much each named series moved between two readings.
func delta(before, after map[string]float64, series ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range series {
		out[s] = after[s] - before[s]
	}
	return out
}

// toolResults counts the results the thread holds per call id.
func toolResults(msgs []message.Message) map[string]int {
	out := map[string]int{}
	for _, m := range msgs {
		for _, r := range m.ToolResults() {
			out[r.ToolCallID]++
		}
	}
	return out
}

// uniqueIDs fails when two messages of a thread share an id.
func uniqueIDs(t *testing.T, msgs []message.Message) {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range msgs {
		if m.ID == "" || seen[m.ID] {
			t.Fatalf("message id %q is empty or repeated in %v", m.ID, ids(msgs))
		}
		seen[m.ID] = true
	}
}

func ids(msgs []message.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// jsonObject decodes data as a JSON object.
func jsonObject(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return m
}

func sortedKeys(m map[string]any) []string {
	return slices.Sorted(maps.Keys(m))
}

// jsonStrict decodes data into v, refusing unknown keys.
func jsonStrict(data string, v any) error {
	dec := json.NewDecoder(strings.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}
