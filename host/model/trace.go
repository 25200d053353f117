package model

import (
	"context"
	"net"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

// Traced returns m with a span for each call while the run is traced, as
// OpenTelemetry's GenAI conventions describe an inference: "chat MODEL",
// with the provider ("openai", "anthropic", or the name of another), the
// model, the server's address when baseURL names one, the tokens used and
// the finish reason; an error is recorded on it. Off (no span in the
// call's context is recording), a call costs what it did. The prompt and
// the answer are not recorded.
func Traced(m ChatModel, provider, modelName, baseURL string) ChatModel {
	t := &traced{next: m, attrs: []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
	}, name: "chat"}
	if modelName != "" {
		t.attrs = append(t.attrs, attribute.String("gen_ai.request.model", modelName))
		t.name += " " + modelName
	}
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			host = u.Hostname()
		}
		t.attrs = append(t.attrs, attribute.String("server.address", host))
		if n, err := strconv.Atoi(port); err == nil {
			t.attrs = append(t.attrs, attribute.Int("server.port", n))
		}
	}
	return t
}

type traced struct {
	next  ChatModel
	name  string
	attrs []attribute.KeyValue
}

// Generate implements ChatModel.
func (t *traced) Generate(ctx context.Context, req Request) (Response, error) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return t.next.Generate(ctx, req)
	}
	ctx, span := telemetry.Tracer().Start(ctx, t.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(t.attrs...))
	defer span.End()
	if req.ThreadID != "" {
		span.SetAttributes(attribute.String("gen_ai.conversation.id", req.ThreadID))
	}
	resp, err := t.next.Generate(ctx, req)
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
		return resp, err
	}
	finish := "stop"
	for _, b := range resp.Message.Content {
		if _, ok := b.(message.ToolCallBlock); ok {
			finish = "tool_calls"
			break
		}
	}
	span.SetAttributes(
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{finish}),
		attribute.Int("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
		attribute.Int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
	)
	if n := resp.Usage.CacheReadInputTokens; n > 0 {
		span.SetAttributes(attribute.Int("gen_ai.usage.cache_read.input_tokens", n))
	}
	if n := resp.Usage.CacheCreationInputTokens; n > 0 {
		span.SetAttributes(attribute.Int("gen_ai.usage.cache_creation.input_tokens", n))
	}
	return resp, nil
}
