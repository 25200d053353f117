package telemetry

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"time"

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

// upload sends the plugins' spans to the collector until Shutdown, as the
// SDK's batch processor sends the host's: gathered for up to the batch
// delay (OTEL_BSP_SCHEDULE_DELAY, 5 s by default) or until a batch's worth
// (OTEL_BSP_MAX_EXPORT_BATCH_SIZE calls' spans, 512 by default), then in
// one request. One request per tool call cost the host more than all its
// other tracing together.
func (t *Traces) upload() {
	defer t.wg.Done()
	delay := time.Duration(envInt("OTEL_BSP_SCHEDULE_DELAY", 5000)) * time.Millisecond
	size := envInt("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
	var pending []*tracepb.ResourceSpans
	send := func() {
		if len(pending) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), uploadTimeout)
		if err := t.client.UploadTraces(ctx, pending); err != nil {
			t.log.Warn("tracing: exporting plugins' spans failed", "error", err)
		}
		cancel()
		pending = nil
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-t.queue:
			if !ok {
				send()
				return
			}
			if len(pending) == 0 {
				timer.Reset(delay)
			}
			pending = append(pending, b.spans...)
			if len(pending) >= size {
				send()
			}
		case <-timer.C:
			send()
		}
	}
}

// envInt reads a positive number from an OTEL_* variable, or gives def
// when it is unset or not one.
func envInt(name string, def int) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n <= 0 {
		return def
	}
	return n
}

func stringKV(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}
