// Package telemetry turns on OpenTelemetry tracing when the operator asks
// for it with the standard OTEL_* variables, and carries the spans that
// plugins return with their results to the same collector. Off, it installs
// nothing: every tracer is OpenTelemetry's no-op, and the host's code asks
// Enabled before it adds anything that costs.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Name is the instrumentation scope of the host's own spans, and the
// default service.name (OTEL_SERVICE_NAME replaces it).
const Name = "tenxgraph"

// Tracer is the host's tracer: a no-op until Setup turns tracing on.
func Tracer() trace.Tracer { return otel.Tracer("github.com/tenxgraph/tenxgraph") }

// EndSpan ends a span that may be nil (a step or a write that was not
// traced), recording err as its status.
func EndSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// current is the running Traces, nil while tracing is off.
var current atomic.Pointer[Traces]

// Enabled reports whether Setup turned tracing on in this process. Code
// that would pay for tracing when it is off (a wrapped transport, a stats
// handler, a span's attributes) asks first.
func Enabled() bool { return current.Load() != nil }

// Traces is tracing turned on: the tracer provider the host's spans go
// to, and the OTLP client that also carries the plugins' spans.
type Traces struct {
	provider *sdktrace.TracerProvider
	client   otlptrace.Client
	service  string
	log      hclog.Logger

	// Plugins' spans wait here for the uploader (one at a time, in the
	// background, so a slow collector never slows a tool call); a batch
	// that finds the queue full is dropped and counted.
	queue   chan pluginBatch
	mu      sync.RWMutex // closed and the queue's closing
	closed  bool
	dropped atomic.Int64
	wg      sync.WaitGroup
}

// Setup reads the OTEL_* variables and, when they ask for traces, installs
// a tracer provider exporting over OTLP and the W3C trace-context
// propagator, and returns them (Shutdown flushes them). Tracing is on when
// OTEL_TRACES_EXPORTER is "otlp", or when it is unset and
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set;
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off. The
// protocol is OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL: "http/protobuf" (the default) or "grpc";
// the exporters read the endpoint, headers, timeout and TLS variables
// themselves, the SDK reads OTEL_TRACES_SAMPLER and OTEL_BSP_*, and the
// resource OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. It returns nil
// when tracing is off, and an error naming the variable when one is wrong.
func Setup(ctx context.Context, log hclog.Logger) (*Traces, error) {
	on, err := wanted()
	if err != nil || !on {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	client, err := newClient()
	if err != nil {
		return nil, err
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("tracing: starting the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", Name)),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &Traces{provider: tp, client: client, log: log, queue: make(chan pluginBatch, 256), service: Name}
	for _, kv := range res.Attributes() {
		if kv.Key == "service.name" {
			t.service = kv.Value.AsString()
		}
	}
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: export failed", "error", err) }))
	t.wg.Add(1)
	go t.upload()
	current.Store(t)
	return t, nil
}

// wanted reads whether the OTEL_* variables ask for traces.
func wanted() (bool, error) {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q: this build exports traces over OTLP only: set it to \"otlp\" or \"none\", or unset it", exp)
	}
}

// newClient is the OTLP client of the configured protocol.
func newClient() (otlptrace.Client, error) {
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, name = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch strings.TrimSpace(protocol) {
	case "", "http/protobuf":
		return otlptracehttp.NewClient(), nil
	case "grpc":
		return otlptracegrpc.NewClient(), nil
	default:
		return nil, fmt.Errorf("tracing: %s=%q: want \"http/protobuf\" or \"grpc\"", name, protocol)
	}
}

// Shutdown exports what is left, the plugins' spans first, and stops
// tracing; spans started after it are dropped. ctx bounds the wait.
func (t *Traces) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	current.CompareAndSwap(t, nil)
	t.mu.Lock()
	if !t.closed {
		t.closed = true
		close(t.queue)
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if n := t.dropped.Load(); n > 0 {
		t.log.Warn("tracing: plugins' spans were dropped: the collector did not take them fast enough", "batches", n)
	}
	return t.provider.Shutdown(ctx)
}

// uploadTimeout bounds one upload of a plugin's spans.
const uploadTimeout = 10 * time.Second
