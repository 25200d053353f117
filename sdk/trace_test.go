package sdk_test

import (
	"context"
	"encoding/json"
	"testing"

	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/sdktest"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// tracedTools has a tool that makes a span of its own through its context.
func tracedTools(t testing.TB) sdk.Provider {
	type args struct{}
	return sdktest.Serve(t, sdk.MustTools("traced", "0.1.0",
		sdk.MustTool("work", "Work in a span.", func(ctx context.Context, _ args) (string, error) {
			_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("t").Start(ctx, "inner")
			span.End()
			return "done", nil
		})))
}

// spansOf calls work with the metadata md and returns the spans the
// plugin sent back with the result.
func spansOf(t testing.TB, p sdk.Provider, md ...string) []*tracepb.Span {
	var got []byte
	ctx := sdk.WithSpanSink(context.Background(), func(_ context.Context, b []byte) { got = b })
	if len(md) > 0 {
		ctx = metadata.AppendToOutgoingContext(ctx, md...)
	}
	resp, err := p.CallTool(ctx, sdk.CallToolRequest{Name: "work", Arguments: json.RawMessage(`{}`), CallID: "c1"})
	if err != nil || resp.IsError {
		t.Fatalf("call: %v %s", err, resp.Content)
	}
	if got == nil {
		return nil
	}
	var td tracepb.TracesData
	if err := proto.Unmarshal(got, &td); err != nil {
		t.Fatalf("the spans are not OTLP TracesData: %v", err)
	}
	var out []*tracepb.Span
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}

// A call carrying a sampled traceparent comes back with the plugin's span
// for it, a child of the caller's span, and the tool's own span under
// that, all in the caller's trace; a call without one, or with an
// unsampled one, comes back with none.
func TestCallSpansGoBackWithTheResult(t *testing.T) {
	p := tracedTools(t)
	spans := spansOf(t, p, "traceparent", traceparent)
	if len(spans) != 2 {
		t.Fatalf("%d spans, want the call's and the tool's", len(spans))
	}
	byName := map[string]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		if trace.TraceID(s.TraceId).String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Errorf("span %q in trace %x", s.Name, s.TraceId)
		}
	}
	call, inner := byName["execute_tool work"], byName["inner"]
	if call == nil || inner == nil {
		t.Fatalf("spans %v", byName)
	}
	if trace.SpanID(call.ParentSpanId).String() != "00f067aa0ba902b7" || string(inner.ParentSpanId) != string(call.SpanId) {
		t.Errorf("parents: the call's %x, the tool's %x (the call is %x)", call.ParentSpanId, inner.ParentSpanId, call.SpanId)
	}
	if s := spansOf(t, p); s != nil {
		t.Errorf("an untraced call brought %d spans", len(s))
	}
	if s := spansOf(t, p, "traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"); s != nil {
		t.Errorf("an unsampled call brought %d spans", len(s))
	}
}

// What a traced call costs the plugin and the SDK's host side, against an
// untraced one (in process: the gRPC hop without a process boundary).
func BenchmarkTracedCall(b *testing.B) {
	p := tracedTools(b)
	b.Run("untraced", func(b *testing.B) {
		for b.Loop() {
			spansOf(b, p)
		}
	})
	b.Run("traced", func(b *testing.B) {
		for b.Loop() {
			spansOf(b, p, "traceparent", traceparent)
		}
	})
}
