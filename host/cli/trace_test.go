package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenxgraph/tenxgraph/host/model/openai/openaitest"
)

// jaeger starts the Jaeger all-in-one whose binary TENXGRAPH_TEST_JAEGER
// names (scripts/test.sh builds it from tools/jaeger), receiving OTLP over
// HTTP and keeping traces in memory, on free ports; it returns the OTLP
// endpoint and the query API's base URL.
func jaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	bin := os.Getenv("TENXGRAPH_TEST_JAEGER")
	if bin == "" {
		t.Skip("skipping: TENXGRAPH_TEST_JAEGER does not name a Jaeger binary (scripts/test.sh builds one from tools/jaeger)")
	}
	port := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	otlpAddr, queryAddr, grpcAddr := port(), port(), port()
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	os.WriteFile(cfg, []byte(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces: {receivers: [otlp], processors: [batch], exporters: [jaeger_storage_exporter]}
  telemetry:
    metrics: {level: none}
    logs: {level: warn}
extensions:
  jaeger_query:
    storage: {traces: mem}
    http: {endpoint: "`+queryAddr+`"}
    grpc: {endpoint: "`+grpcAddr+`"}
  jaeger_storage:
    backends:
      mem: {memory: {max_traces: 1000}}
receivers:
  otlp:
    protocols:
      http: {endpoint: "`+otlpAddr+`"}
processors:
  batch: {timeout: 100ms}
exporters:
  jaeger_storage_exporter: {trace_storage: mem}
`), 0o600)
	cmd := exec.Command(bin, "--config", cfg)
	// Jaeger traces itself to localhost:4317 unless told not to.
	cmd.Env = append(os.Environ(), "OTEL_SDK_DISABLED=true", "OTEL_TRACES_EXPORTER=none")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("Jaeger's output:\n%s", logs.String())
		}
	})
	query = "http://" + queryAddr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(query + "/api/services")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger did not answer on %s within 30s: %v", query, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return "http://" + otlpAddr, query
}

// jaegerSpan is a span as Jaeger's query API returns it.
type jaegerSpan struct {
	SpanID     string `json:"spanID"`
	Operation  string `json:"operationName"`
	ProcessID  string `json:"processID"`
	References []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	Tags []struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	} `json:"tags"`
}

func (s jaegerSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// A remote-tool round trip sent with one traceparent, on `tenxgraph serve`
// with only OTEL_EXPORTER_OTLP_ENDPOINT set, is one trace in a real
// Jaeger: both HTTP requests under the client's span, the model's calls,
// each tool call with the span the provider's own process made (the
// builtin plugin's calculator, the remote bridge), the MCP bridge's
// tools/call span, and a third-party plugin's spans, its author's own
// included, though its sandbox has no network, and its start, which the
// call waited for; every span the host exports from a plugin names that
// plugin's service.
func TestOneTraceAcrossProcesses(t *testing.T) {
	otlp, query := jaeger(t)
	nm, err := filepath.Abs("../../plugins/mcp/testdata/npm/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(nm, "@modelcontextprotocol", "server-everything")); err != nil {
		t.Skipf("skipping: the pinned MCP test servers are not installed (run `npm ci` in %s, as scripts/test.sh does)", filepath.Dir(nm))
	}
	bin, _ := built(t)
	dir := t.TempDir()
	plugin := filepath.Join(dir, "tracedplugin")
	if out, err := exec.Command("go", "build", "-o", plugin, "./testdata/tracedplugin").CombinedOutput(); err != nil {
		t.Fatalf("build the traced plugin: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "script.json"), []byte(`{"rules": [
  {"match": "trace", "tool_calls": [
    {"name": "calculator", "arguments": {"expression": "2+3"}},
    {"name": "lookup", "arguments": {"key": "abc"}},
    {"name": "echo", "arguments": {"message": "hi"}},
    {"name": "read_clipboard", "arguments": {}}],
   "then": "done: {{result 0}}"}
]}`), 0o600)
	cfg := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "scripted", "script": "script.json"},
  "builtin_tools": {"node": "tools", "enable": ["calculator"]},
  "plugins": [{"name": "traced", "command": [`+quote(plugin)+`], "network": "none", "start": "lazy"}],
  "mcp_servers": {"everything": {"command": "node", "args": [`+quote(filepath.Join(nm, "@modelcontextprotocol/server-everything/dist/index.js"))+`, "stdio"], "allow_tools": ["echo"]}},
  "remote_tools": [{"name": "read_clipboard", "description": "Read the clipboard.", "parameters": {"type": "object", "properties": {}}}],
  "checkpointer": {"type": "memory"}}`), 0o600)

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	cmd, base := serving(t, bin, "--config", cfg)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceparent := "00-" + traceID + "-00f067aa0ba902b7-01"
	post := func(body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/graph/invoke", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("traceparent", traceparent)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, out)
		}
		return out
	}
	res := post(`{"input": {"messages": [{"role": "user", "content": "trace this"}]}, "config": {"thread_id": "t1"}}`)
	calls, _ := res["remote_tool_calls"].([]any)
	if res["status"] != "interrupted" || len(calls) != 1 {
		t.Fatalf("want a pause for read_clipboard, got %v", res)
	}
	id := calls[0].(map[string]any)["id"].(string)
	res = post(`{"input": {"messages": [{"role": "tool", "content": [{"type": "tool_result", "tool_call_id": ` + quote(id) + `, "content": {"text": "hi"}}]}]}, "config": {"thread_id": "t1"}}`)
	if res["status"] != "completed" {
		t.Fatalf("the resume: %v", res)
	}
	// Spans leave on the exporter's schedule; SIGTERM flushes the rest.
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()

	type want struct{ service, operation string }
	wanted := []want{
		{"tenxgraph", "POST /v1/graph/invoke"},
		{"tenxgraph", "chat"},
		{"tenxgraph", "execute_tool calculator"},
		{"tenxgraph/builtin", "execute_tool calculator"},
		{"tenxgraph/remote", "execute_tool read_clipboard"},
		{"tenxgraph/traced", "execute_tool lookup"},
		{"tenxgraph/traced", "tracedplugin.lookup"},
		{"tenxgraph", "start plugin traced"}, // lazy: the call waited for its start
		{"tenxgraph/mcp", "tools/call echo"},
	}
	var spans []jaegerSpan
	var services map[string]string
	deadline := time.Now().Add(20 * time.Second)
	for {
		spans, services = fetchTrace(t, query, traceID)
		var missing []want
		for _, w := range wanted {
			if !slices.ContainsFunc(spans, func(s jaegerSpan) bool { return services[s.ProcessID] == w.service && s.Operation == w.operation }) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var got []string
			for _, s := range spans {
				got = append(got, services[s.ProcessID]+": "+s.Operation)
			}
			t.Fatalf("trace %s lacks %v; it has:\n%s", traceID, missing, strings.Join(got, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}

	byID := map[string]jaegerSpan{}
	requests := 0
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	parent := func(s jaegerSpan) (jaegerSpan, bool) {
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				p, ok := byID[r.SpanID]
				return p, ok
			}
		}
		return jaegerSpan{}, false
	}
	for _, s := range spans {
		svc := services[s.ProcessID]
		switch {
		case s.Operation == "POST /v1/graph/invoke":
			requests++
			if _, ok := parent(s); ok || len(s.References) == 0 || s.References[0].SpanID != "00f067aa0ba902b7" {
				t.Errorf("request span %s: want the client's span 00f067aa0ba902b7 as its parent, got %+v", s.SpanID, s.References)
			}
		case strings.HasPrefix(svc, "tenxgraph/") && s.Operation == "execute_tool lookup":
			// The plugin's span for the call is a child of the host's
			// RPC span, itself under the host's span for the tool call.
			p, ok := parent(s)
			if !ok || services[p.ProcessID] != "tenxgraph" {
				t.Errorf("the plugin's span %q: its parent is not a span of the host", s.Operation)
				continue
			}
			if gp, ok := parent(p); !ok || gp.Operation != "execute_tool lookup" || gp.tag("tenxgraph.provider") != "traced" {
				t.Errorf("the plugin's span's parent %q is not under the host's execute_tool lookup (provider traced)", p.Operation)
			}
		case s.Operation == "tracedplugin.lookup":
			if p, ok := parent(s); !ok || p.Operation != "execute_tool lookup" || services[p.ProcessID] != "tenxgraph/traced" {
				t.Errorf("the author's span is not a child of the plugin's span for the call")
			}
			if s.tag("tracedplugin.key") != "abc" {
				t.Errorf("the author's span lost its attribute: %+v", s.Tags)
			}
		case s.Operation == "start plugin traced":
			if p, ok := parent(s); !ok || p.Operation != "execute_tool lookup" || s.tag("tenxgraph.sandbox") == "" {
				t.Errorf("the plugin's start: parent ok %v, sandbox %q", ok, s.tag("tenxgraph.sandbox"))
			}
		case s.Operation == "chat":
			if s.tag("gen_ai.operation.name") != "chat" || s.tag("gen_ai.provider.name") != "scripted" {
				t.Errorf("model span tags %+v", s.Tags)
			}
		case svc == "tenxgraph" && s.Operation == "execute_tool read_clipboard":
			if s.tag("tenxgraph.tool.outcome") != "deferred" || s.tag("gen_ai.tool.call.id") != id {
				t.Errorf("the remote tool's span: outcome %q, call id %q; want deferred, %s", s.tag("tenxgraph.tool.outcome"), s.tag("gen_ai.tool.call.id"), id)
			}
		}
	}
	if requests != 2 {
		t.Errorf("%d request spans, want the invoke and the resume", requests)
	}
}

// fetchTrace reads a trace from Jaeger's query API: its spans, and each
// process's service name.
func fetchTrace(t *testing.T, query, traceID string) ([]jaegerSpan, map[string]string) {
	t.Helper()
	resp, err := http.Get(query + "/api/traces/" + traceID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == 404 {
		return nil, nil
	}
	var out struct {
		Data []struct {
			Spans     []jaegerSpan `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Data) == 0 {
		return nil, nil
	}
	services := map[string]string{}
	for id, p := range out.Data[0].Processes {
		services[id] = p.ServiceName
	}
	return out.Data[0].Spans, services
}

// The model's calls are GenAI spans of the run's trace, and each HTTP
// request to the model's server carries the trace on: the fake OpenAI
// server sees a traceparent of the client's trace id, and the span records
// the model, the server, the tokens and the finish reason.
func TestModelCallsCarryTheTrace(t *testing.T) {
	otlp, query := jaeger(t)
	bin, _ := built(t)
	srv := openaitest.NewServer(t,
		openaitest.Reply{ToolCalls: []openaitest.ToolCall{openaitest.Call("call_1", "calculator", `{"expression": "6*7"}`)}, Usage: &openaitest.Usage{PromptTokens: 11, CompletionTokens: 5}},
		openaitest.Reply{Text: "42", Usage: &openaitest.Usage{PromptTokens: 23, CompletionTokens: 2}},
		openaitest.Reply{Text: "hello from AG-UI", Usage: &openaitest.Usage{PromptTokens: 31, CompletionTokens: 4}})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "10xgraph.json")
	os.WriteFile(cfg, []byte(`{"agent": "tenxgraph:react",
  "model": {"provider": "openai", "model": "test-model", "base_url": `+quote(srv.URL)+`},
  "builtin_tools": {"node": "tools", "enable": ["calculator"]},
  "checkpointer": {"type": "memory"}}`), 0o600)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
	cmd, base := serving(t, bin, "--config", cfg)

	const traceID = "0af7651916cd43dd8448eb211c80319c"
	req, _ := http.NewRequest("POST", base+"/v1/graph/invoke", strings.NewReader(`{"input": {"messages": [{"role": "user", "content": "6*7?"}]}, "config": {"thread_id": "m1"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("invoke: %d", resp.StatusCode)
	}
	// An AG-UI client's run joins the caller's trace the same way.
	req, _ = http.NewRequest("POST", base+"/v1/agui", strings.NewReader(`{"threadId": "ag1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}], "tools": [], "context": [], "state": null, "forwardedProps": {}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("traceparent", "00-"+traceID+"-b7ad6b7169203331-01")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("AG-UI run: %d", resp.StatusCode)
	}
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()

	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	for i, r := range reqs {
		if tp := r.Header.Get("traceparent"); !strings.HasPrefix(tp, "00-"+traceID+"-") {
			t.Errorf("model call %d: traceparent %q, want the client's trace %s", i, tp, traceID)
		}
	}
	var chats []jaegerSpan
	agui := false
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		spans, _ := fetchTrace(t, query, traceID)
		chats, agui = chats[:0], false
		for _, s := range spans {
			switch s.Operation {
			case "chat test-model":
				chats = append(chats, s)
			case "POST /v1/agui":
				agui = true
			}
		}
		if len(chats) == 3 && agui || time.Now().After(deadline) {
			break
		}
	}
	if len(chats) != 3 || !agui {
		t.Fatalf("%d chat spans in the trace, want 3; the AG-UI request's span: %v", len(chats), agui)
	}
	slices.SortFunc(chats, func(a, b jaegerSpan) int {
		return strings.Compare(a.tag("gen_ai.usage.input_tokens"), b.tag("gen_ai.usage.input_tokens"))
	})
	for i, want := range []struct{ in, out, finish string }{{"11", "5", "tool_calls"}, {"23", "2", "stop"}, {"31", "4", "stop"}} {
		s := chats[i]
		if s.tag("gen_ai.provider.name") != "openai" || s.tag("gen_ai.request.model") != "test-model" || s.tag("server.address") != "127.0.0.1" ||
			s.tag("gen_ai.usage.input_tokens") != want.in || s.tag("gen_ai.usage.output_tokens") != want.out || !strings.Contains(s.tag("gen_ai.response.finish_reasons"), want.finish) {
			t.Errorf("chat span %d: %+v; want openai, test-model, 127.0.0.1, %s in, %s out, finish %s", i, s.Tags, want.in, want.out, want.finish)
		}
	}
}
