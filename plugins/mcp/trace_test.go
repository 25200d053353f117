package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// A traced call carries its trace context to the MCP server in the
// request's params._meta (traceparent, where MCP 2026-07-28 reserves it),
// beside the progress token; an untraced call carries none.
func TestTraceContextReachesTheServer(t *testing.T) {
	srv := goServer(t, "go")
	srv.Args = []string{"-meta"}
	b, _ := start(t, Options{Servers: []Server{srv}})

	meta := func(ctx context.Context) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(text(t, callCtx(t, ctx, b, "meta", map[string]any{}))), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	traced := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	m := meta(traced)
	if tp, _ := m["traceparent"].(string); !strings.HasPrefix(tp, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || !strings.HasSuffix(tp, "-01") {
		t.Errorf("_meta %v: want the call's traceparent", m)
	}
	if m["progressToken"] == nil {
		t.Errorf("_meta %v: the progress token went missing", m)
	}
	if m := meta(context.Background()); m["traceparent"] != nil {
		t.Errorf("an untraced call sent _meta %v", m)
	}
}
