package mcp

import (
	"context"
	"errors"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// traceCall starts the client span of a tools/call when the call is traced
// (the host sent a sampled trace; see sdk.Serve), as OpenTelemetry's MCP
// conventions name it: "tools/call TOOL", with the method, the tool and
// the server's transport. Its context goes to the server in the request's
// params._meta (traceparent, tracestate), where MCP 2026-07-28 reserves
// them. The span is nil when the call is not traced.
func (s *server) traceCall(ctx context.Context, tool *mcpsdk.Tool) (context.Context, trace.Span) {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, nil
	}
	transport := "pipe"
	if s.cfg.Type != "stdio" {
		transport = "tcp"
	}
	return otel.Tracer("github.com/tenxgraph/tenxgraph/plugins/mcp").Start(ctx, "tools/call "+tool.Name,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("mcp.method.name", "tools/call"),
			attribute.String("gen_ai.tool.name", tool.Name),
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("network.transport", transport),
			attribute.String("tenxgraph.mcp.server", s.cfg.Name),
		))
}

// endCallSpan records a call's outcome: error.type "tool_error" when the
// tool answered isError, the failure otherwise.
func endCallSpan(span trace.Span, res *mcpsdk.CallToolResult, err error) {
	var f *failure
	switch {
	case errors.As(err, &f):
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, f.Error())
	case err != nil:
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
	case res != nil && res.IsError:
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool answered isError")
	}
	span.End()
}

// metaCarrier writes a trace context into a request's params._meta.
type metaCarrier mcpsdk.Meta

func (c metaCarrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
