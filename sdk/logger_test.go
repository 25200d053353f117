package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/metadata"
)

// lockedBuffer is a log's output, written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served serves p as Serve does, with its logger writing JSON to the
// returned buffer, over a real gRPC connection; onStuck set means the
// handler runs on a goroutine of its own, as in Serve.
func served(t *testing.T, p Provider) (Provider, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: logs, JSONFormat: true, Level: hclog.Debug})
	client, server := plugin.TestPluginGRPCConn(t, false, plugin.PluginSet{PluginName: &grpcPlugin{impl: p, log: log, onStuck: func(string) {}}})
	t.Cleanup(func() {
		server.Stop()
		_ = client.Close()
	})
	raw, err := client.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return raw.(Provider), logs
}

// logLines decodes JSON log lines.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestLoggerIsThePluginsLogger(t *testing.T) {
	tools := MustTools("weather", "1.0.0", Func("forecast", "Forecast.", nil, func(ctx context.Context, _ json.RawMessage) (any, error) {
		Logger(ctx).Info("fetching the forecast", "city", "Paris")
		return "sunny", nil
	}))
	p, logs := served(t, tools)
	resp, err := p.CallTool(t.Context(), CallToolRequest{Name: "forecast", Arguments: json.RawMessage(`{}`), CallID: "call_7"})
	if err != nil || resp.IsError {
		t.Fatalf("call: %+v, %v", resp, err)
	}
	var found map[string]any
	for _, m := range logLines(t, logs.String()) {
		if m["@message"] == "fetching the forecast" {
			found = m
		}
	}
	if found == nil {
		t.Fatalf("the tool's line is not in the plugin's log:\n%s", logs)
	}
	for k, want := range map[string]string{"tool": "forecast", "call_id": "call_7", "city": "Paris", "@level": "info"} {
		if found[k] != want {
			t.Errorf("%s = %v, want %q (line %v)", k, found[k], want, found)
		}
	}
	// The host files a plugin's lines under the plugin's name: a name
	// here would be the second one ("tenxgraph.weather.weather").
	if mod, ok := found["@module"]; ok {
		t.Errorf("the line carries a logger name of its own, %v, which the host would add to the plugin's", mod)
	}
}

// A traced call's logger, made only when the tool asks for it, carries
// the call's trace: its lines join the call's span in a trace viewer. An
// untraced call's carries none.
func TestLoggerCarriesTheCallsTrace(t *testing.T) {
	tools := MustTools("weather", "1.0.0", Func("forecast", "Forecast.", nil, func(ctx context.Context, args json.RawMessage) (any, error) {
		Logger(ctx).Info("fetching the forecast", "args", string(args))
		return "sunny", nil
	}))
	p, logs := served(t, tools)
	for _, call := range []struct{ args, traceparent string }{
		{`{"n":1}`, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{`{"n":2}`, ""},
	} {
		ctx := t.Context()
		if call.traceparent != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", call.traceparent)
		}
		resp, err := p.CallTool(ctx, CallToolRequest{Name: "forecast", Arguments: json.RawMessage(call.args), CallID: "call_7"})
		if err != nil || resp.IsError {
			t.Fatalf("call: %+v, %v", resp, err)
		}
	}
	found := map[string]map[string]any{}
	for _, m := range logLines(t, logs.String()) {
		if m["@message"] == "fetching the forecast" {
			found[m["args"].(string)] = m
		}
	}
	traced, untraced := found[`{"n":1}`], found[`{"n":2}`]
	if traced == nil || untraced == nil {
		t.Fatalf("the tool's lines are not both in the plugin's log:\n%s", logs)
	}
	if traced["trace_id"] != "4bf92f3577b34da6a3ce929d0e0e4736" || traced["span_id"] == nil || traced["span_id"] == "00f067aa0ba902b7" {
		t.Errorf("the traced call's line has trace_id %v and span_id %v, want the caller's trace and the call's own span", traced["trace_id"], traced["span_id"])
	}
	if traced["tool"] != "forecast" || traced["call_id"] != "call_7" {
		t.Errorf("the traced call's line has tool %v and call_id %v", traced["tool"], traced["call_id"])
	}
	if _, ok := untraced["trace_id"]; ok {
		t.Errorf("the untraced call's line has a trace_id: %v", untraced)
	}
}

func TestLoggerOutsideACall(t *testing.T) {
	if Logger(context.Background()) != hclog.Default() {
		t.Error("Logger outside a call is not hclog.Default()")
	}
	l := hclog.NewNullLogger()
	if Logger(ContextWithLogger(context.Background(), l)) != l {
		t.Error("Logger does not return the context's logger")
	}
}

// explode panics in a named function, so its stack can be recognised.
func explode() { panic("the gauge is out of range") }

// bare is a Provider that is not Tools: Serve itself must recover its
// panics, or the plugin dies with every call in it.
type bare struct{}

func (bare) Metadata(context.Context, MetadataRequest) (MetadataResponse, error) {
	return MetadataResponse{Name: "bare", Tools: []ToolSpec{{Name: "gauge", Parameters: EmptyObjectSchema}}}, nil
}

func (bare) CallTool(context.Context, CallToolRequest) (CallToolResponse, error) {
	explode()
	return CallToolResponse{}, nil
}

func TestPanicIsLoggedWithItsStack(t *testing.T) {
	tools := MustTools("meter", "1.0.0", Func("gauge", "Read the gauge.", nil, func(context.Context, json.RawMessage) (any, error) {
		explode()
		return nil, nil
	}))
	for name, prov := range map[string]Provider{"Tools": tools, "a bare Provider": bare{}} {
		t.Run(name, func(t *testing.T) {
			p, logs := served(t, prov)
			resp, err := p.CallTool(t.Context(), CallToolRequest{Name: "gauge", Arguments: json.RawMessage(`{}`), CallID: "c1"})
			if err != nil {
				t.Fatalf("the call failed instead of giving an error result: %v", err)
			}
			var text string
			_ = json.Unmarshal(resp.Content, &text)
			if !resp.IsError || text != `tool "gauge" panicked: the gauge is out of range` {
				t.Errorf("the model reads %s (is_error %v), want the panic's summary", resp.Content, resp.IsError)
			}
			if strings.Contains(text, "goroutine") || strings.Contains(text, ".go:") {
				t.Errorf("the model reads the stack: %s", text)
			}
			var found map[string]any
			for _, m := range logLines(t, logs.String()) {
				if m["@message"] == "tool panicked" {
					if found != nil {
						t.Errorf("the panic is logged twice")
					}
					found = m
				}
			}
			if found == nil {
				t.Fatalf("the panic is not logged:\n%s", logs)
			}
			stack, _ := found["stack"].(string)
			if found["tool"] != "gauge" || found["panic"] != "the gauge is out of range" || !strings.Contains(stack, "sdk.explode") || !strings.Contains(stack, "logger_test.go") {
				t.Errorf("the panic's line lacks the tool, the value or the stack: %v", found)
			}
		})
	}
}
