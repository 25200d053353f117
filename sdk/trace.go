package sdk

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// MaxSpanBytes bounds the spans a plugin returns with one result (the
// spans field of toolprovider.v1's CallTool.Response): a host receives at
// most this much more than a result of its max_result_bytes, and a plugin
// built with Serve drops its oldest spans of the trace beyond it.
const MaxSpanBytes = 256 << 10

// Traces kept per plugin between calls: spans ended in a trace no call of
// which has answered yet (a handler's own goroutine that outlived its
// call) wait for the trace's next call, up to these bounds; beyond them the
// oldest trace's spans go.
const (
	maxPendingTraces = 256
	maxTraceSpans    = 1024
)

// tracing is a plugin's side of tracing: a tracer provider that records a
// call's spans only when the host sent a sampled W3C traceparent with it,
// and keeps the ended spans, per trace, until a call of that trace answers
// and takes them back to the host (which exports them). The plugin needs no
// network and no configuration; a host that does not trace sends no
// traceparent and the plugin records nothing.
type tracing struct {
	provider *sdktrace.TracerProvider
	tracer   trace.Tracer
	spans    *spanBuffer
}

// propagator reads the W3C traceparent and tracestate the host sends in a
// call's gRPC metadata.
var propagator = propagation.TraceContext{}

func newTracing() *tracing {
	buf := &spanBuffer{traces: map[trace.TraceID]*pendingTrace{}}
	exp := otlptrace.NewUnstarted(buf)
	_ = exp.Start(context.Background()) // the buffer's Start cannot fail
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSyncer(exp),
		// The host names the provider as the spans' service when it
		// exports them; this name is only what the plugin itself says.
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "tenxgraph-plugin"))),
	)
	return &tracing{provider: tp, tracer: tp.Tracer("github.com/tenxgraph/tenxgraph/sdk"), spans: buf}
}

// startCall continues the host's trace, if the call's metadata carries a
// sampled one, with a span for the call; ctx then carries it, so that a
// tool's own spans (trace.SpanFromContext(ctx).TracerProvider(), or the
// global provider in a plugin built with Serve) are its children. The
// returned span is nil when the call is not traced: it then costs nothing.
func (t *tracing) startCall(ctx context.Context, req CallToolRequest) (context.Context, trace.Span) {
	if t == nil {
		return ctx, nil
	}
	// An untraced call (most) looks its one key up; only a traced one
	// pays for the copy of the call's metadata that extracting it takes.
	if len(metadata.ValueFromIncomingContext(ctx, "traceparent")) == 0 {
		return ctx, nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	ctx = propagator.Extract(ctx, metadataCarrier(md))
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, nil
	}
	return t.tracer.Start(ctx, "execute_tool "+req.Name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", req.Name),
			attribute.String("gen_ai.tool.call.id", req.CallID),
		))
}

// endCall ends a traced call's span with its outcome and returns the
// spans of its trace ended so far, encoded for the response.
func (t *tracing) endCall(span trace.Span, resp CallToolResponse, err error) []byte {
	switch {
	case err != nil:
		span.SetAttributes(attribute.String("error.type", "error"))
		span.SetStatus(codes.Error, err.Error())
	case resp.IsError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool answered an error")
	case resp.Deferred:
		span.SetAttributes(attribute.Bool("tenxgraph.tool.deferred", true))
	}
	span.End()
	return t.spans.take(span.SpanContext().TraceID())
}

// metadataCarrier reads gRPC metadata as a propagation.TextMapCarrier.
type metadataCarrier metadata.MD

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// spanBuffer is an otlptrace.Client that keeps what it is sent, per
// trace, instead of sending it anywhere.
type spanBuffer struct {
	mu       sync.Mutex
	resource *tracepb.ResourceSpans // the resource of the plugin's spans (without spans)
	traces   map[trace.TraceID]*pendingTrace
	order    []trace.TraceID // oldest first
}

// pendingTrace is the ended spans of one trace, in the order they ended,
// each with its instrumentation scope.
type pendingTrace struct {
	spans  []*tracepb.Span
	scopes []*commonpb.InstrumentationScope
}

func (b *spanBuffer) Start(context.Context) error { return nil }
func (b *spanBuffer) Stop(context.Context) error  { return nil }

// UploadTraces keeps spans as the exporter ends them.
func (b *spanBuffer) UploadTraces(_ context.Context, rss []*tracepb.ResourceSpans) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, rs := range rss {
		if b.resource == nil {
			b.resource = &tracepb.ResourceSpans{Resource: rs.Resource, SchemaUrl: rs.SchemaUrl}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				id := trace.TraceID(sp.TraceId)
				p := b.traces[id]
				if p == nil {
					if len(b.order) == maxPendingTraces {
						delete(b.traces, b.order[0])
						b.order = b.order[1:]
					}
					p = &pendingTrace{}
					b.traces[id] = p
					b.order = append(b.order, id)
				}
				if len(p.spans) == maxTraceSpans {
					p.spans, p.scopes = p.spans[1:], p.scopes[1:]
				}
				p.spans = append(p.spans, sp)
				p.scopes = append(p.scopes, ss.Scope)
			}
		}
	}
	return nil
}

// take removes the spans of a trace and encodes them as an OTLP
// TracesData of at most MaxSpanBytes, the latest kept when there are more.
func (b *spanBuffer) take(id trace.TraceID) []byte {
	b.mu.Lock()
	p := b.traces[id]
	delete(b.traces, id)
	if i := slices.Index(b.order, id); i >= 0 {
		b.order = slices.Delete(b.order, i, i+1)
	}
	res := b.resource
	b.mu.Unlock()
	if p == nil || res == nil {
		return nil
	}
	rs := &tracepb.ResourceSpans{Resource: res.Resource, SchemaUrl: res.SchemaUrl}
	size := proto.Size(rs) + 16
	byScope := map[*commonpb.InstrumentationScope]*tracepb.ScopeSpans{}
	for i := len(p.spans) - 1; i >= 0; i-- {
		n := proto.Size(p.spans[i]) + 8
		ss := byScope[p.scopes[i]]
		if ss == nil {
			n += proto.Size(p.scopes[i]) + 8
		}
		if size+n > MaxSpanBytes {
			break
		}
		size += n
		if ss == nil {
			ss = &tracepb.ScopeSpans{Scope: p.scopes[i]}
			byScope[p.scopes[i]] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, p.spans[i])
	}
	out, err := proto.Marshal(&tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{rs}})
	if err != nil || len(out) > MaxSpanBytes {
		return nil
	}
	return out
}

// spanSinkKey carries a host's SpanSink in a context.
type spanSinkKey struct{}

// A SpanSink receives, on the host, the spans a plugin returned with a
// call's result: an OTLP TracesData message, at most MaxSpanBytes, from an
// untrusted process. The host checks and exports them (it alone reaches the
// collector).
type SpanSink func(ctx context.Context, traces []byte)

// WithSpanSink returns a context under which a call to a plugin hands the
// spans the plugin returns to sink. Without one they are dropped.
func WithSpanSink(ctx context.Context, sink SpanSink) context.Context {
	return context.WithValue(ctx, spanSinkKey{}, sink)
}

func spanSinkFrom(ctx context.Context) SpanSink {
	s, _ := ctx.Value(spanSinkKey{}).(SpanSink)
	return s
}
