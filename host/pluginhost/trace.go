package pluginhost

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/tenxgraph/tenxgraph/host/telemetry"
	"github.com/tenxgraph/tenxgraph/sdk"
)

// dialOptions are the gRPC options of the connection to a plugin process:
// message sizes bound by the provider's limits, and, while tracing is on,
// OpenTelemetry's client handler, which sends each call's trace context to
// the plugin (the SDK continues the trace there) and records the RPC.
func (p *Plugin) dialOptions() []grpc.DialOption {
	opts := []grpc.DialOption{grpc.WithDefaultCallOptions(
		grpc.MaxCallRecvMsgSize(p.cfg.Limits.receiveBytes()), grpc.MaxCallSendMsgSize(sdk.MaxMessageBytes))}
	if telemetry.Enabled() {
		opts = append(opts, grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithFilter(tracedRPC))))
	}
	return opts
}

// tracedRPC keeps the calls a run makes (a tool call, a run's client
// tools) and leaves out the long-lived streams (the lifeline, go-plugin's
// stdio and broker) and the health checks, which would be spans without
// end or without a run.
func tracedRPC(info *stats.RPCTagInfo) bool {
	m, ok := strings.CutPrefix(info.FullMethodName, "/toolprovider.v1.ToolProvider/")
	return ok && (m == "CallTool" || m == "CallToolStream" || m == "PrepareRun")
}

// traceCall starts the span of a tool call, when the run is traced:
// "execute_tool NAME" with the GenAI conventions' attributes and the
// provider; the spans the plugin returns with the result are exported
// beside it (telemetry.PluginSpans). span is nil when the run is not
// traced.
func (p *Plugin) traceCall(ctx context.Context, req sdk.CallToolRequest) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	ctx, span := telemetry.Tracer().Start(ctx, "execute_tool "+p.cfg.Prefix+req.Name,
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", p.cfg.Prefix+req.Name),
			attribute.String("gen_ai.tool.call.id", req.CallID),
			attribute.String("gen_ai.tool.type", "function"),
			attribute.String("tenxgraph.provider", p.cfg.Name),
		))
	return sdk.WithSpanSink(ctx, telemetry.PluginSpans(p.cfg.Name)), span
}

// endCall records a tool call's outcome on its span: "ok", "deferred" (a
// remote tool: the run pauses for the client), "tool_error" (an error
// result the model reads), "limit" (a limit of the provider's refused
// it) or "error".
func endCall(span trace.Span, resp sdk.CallToolResponse, err error) {
	outcome := "ok"
	switch {
	case errors.Is(err, ErrLimit):
		outcome = "limit"
		span.SetAttributes(attribute.String("error.type", "limit"))
		span.SetStatus(codes.Error, err.Error())
	case err != nil:
		outcome = "error"
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
	case resp.Deferred:
		outcome = "deferred"
	case resp.IsError:
		outcome = "tool_error"
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool answered an error")
	}
	span.SetAttributes(attribute.String("tenxgraph.tool.outcome", outcome))
	span.End()
}

// traceStart records, in a traced call that waited for it, the start of
// the plugin's process: "start plugin NAME", from the launch through the
// sandbox to the tool list read, with the isolation it got and which of
// the plugin's starts it was (a lazy plugin's first call is its second:
// the first read its tools; later ones are restarts).
func (p *Plugin) traceStart(ctx context.Context, inst *instance) {
	p.mu.Lock()
	iso := p.iso
	p.mu.Unlock()
	_, span := telemetry.Tracer().Start(ctx, "start plugin "+p.cfg.Name, trace.WithTimestamp(inst.began),
		trace.WithAttributes(
			attribute.String("tenxgraph.provider", p.cfg.Name),
			attribute.String("tenxgraph.sandbox", iso.String()),
			attribute.Int64("tenxgraph.plugin.start", inst.start),
		))
	span.End(trace.WithTimestamp(inst.ready))
}
