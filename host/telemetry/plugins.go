package telemetry

import (
	"bytes"
	"context"

	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// pluginBatch is the spans one plugin call returned, checked and named.
type pluginBatch struct {
	spans []*tracepb.ResourceSpans
}

// PluginSpans is the sdk.SpanSink for the calls of the provider named
// provider: the spans a plugin returns with a result are exported with the
// host's own, as the service "<service.name>/<provider>". They come from a
// process the host does not trust, so only spans of the call's own trace
// are kept (a plugin cannot write into another trace), and the resource
// they claim is replaced by the provider's name as the host knows it. It
// drops everything while tracing is off.
func PluginSpans(provider string) sdk.SpanSink {
	return func(ctx context.Context, data []byte) {
		if t := current.Load(); t != nil {
			t.accept(ctx, provider, data)
		}
	}
}

func (t *Traces) accept(ctx context.Context, provider string, data []byte) {
	want := trace.SpanContextFromContext(ctx).TraceID()
	if !want.IsValid() {
		return
	}
	var td tracepb.TracesData
	if err := proto.Unmarshal(data, &td); err != nil {
		t.log.Debug("tracing: a plugin returned spans that are not OTLP: dropped", "provider", provider, "error", err)
		return
	}
	out := &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
		stringKV("service.name", t.service+"/"+provider),
		stringKV("tenxgraph.provider", provider),
	}}}
	foreign := 0
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.GetScopeSpans() {
			kept := &tracepb.ScopeSpans{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl}
			for _, sp := range ss.Spans {
				if bytes.Equal(sp.GetTraceId(), want[:]) {
					kept.Spans = append(kept.Spans, sp)
				} else {
					foreign++
				}
			}
			if len(kept.Spans) > 0 {
				out.ScopeSpans = append(out.ScopeSpans, kept)
			}
		}
	}
	if foreign > 0 {
		t.log.Debug("tracing: a plugin returned spans of another trace: dropped", "provider", provider, "spans", foreign)
	}
	if len(out.ScopeSpans) == 0 {
		return
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.closed {
		return
	}
	select {
	case t.queue <- pluginBatch{spans: []*tracepb.ResourceSpans{out}}:
	default:
		t.dropped.Add(1)
	}
}

// upload sends the plugins' spans to the collector, one batch at a time,
// until Shutdown.
func (t *Traces) upload() {
	defer t.wg.Done()
	for b := range t.queue {
		ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
		if err := t.client.UploadTraces(ctx, b.spans); err != nil {
			t.log.Warn("tracing: exporting a plugin's spans failed", "error", err)
		}
		cancel()
	}
}

func stringKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}
