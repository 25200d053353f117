package graph

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

// A run's spans, while tracing is on (telemetry.Enabled): the run
// ("invoke_agent", GenAI's span for an agent's invocation), each
// super-step, each node, the claim of the thread and each checkpoint
// write. A run that resumes a pause links to the run that paused, whose
// trace context the pause keeps. Off, none of this is started, and a run
// costs what it did.

// traceRun starts the run's span; nil when tracing is off.
func traceRun(ctx context.Context, r *Run) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	ctx, span := telemetry.Tracer().Start(ctx, "invoke_agent", trace.WithAttributes(
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.conversation.id", r.ThreadID),
		attribute.String("tenxgraph.run.id", r.RunID),
	))
	if span.IsRecording() {
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		r.traceparent = carrier["traceparent"]
	}
	return ctx, span
}

// linkPause links a resuming run's span to the run that paused.
func linkPause(span trace.Span, traceparent string) {
	if span == nil || traceparent == "" {
		return
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("tenxgraph.link", "paused_run")}})
		span.SetAttributes(attribute.Bool("tenxgraph.run.resumed", true))
	}
}

// endRun records a run's outcome.
func endRun(span trace.Span, r *Run, res Result, err error) {
	span.SetAttributes(attribute.Int("tenxgraph.run.steps", r.Step))
	if err != nil {
		span.SetAttributes(attribute.String("error.type", "_OTHER"))
		span.SetStatus(codes.Error, err.Error())
	} else {
		span.SetAttributes(attribute.String("tenxgraph.run.status", string(res.Status)))
	}
	span.End()
}

// traceStep starts a super-step's span, named for what it is (its number
// and nodes are attributes, not names: a trace backend groups spans by
// name).
func traceStep(ctx context.Context, r *Run, nodes []string, resumed bool) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	return telemetry.Tracer().Start(ctx, "superstep", trace.WithAttributes(
		attribute.Int("tenxgraph.step", r.Step),
		attribute.StringSlice("tenxgraph.step.nodes", nodes),
		attribute.Bool("tenxgraph.step.resumed", resumed),
	))
}

// traceNode starts a node's span.
func traceNode(ctx context.Context, r *Run, node string) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	return telemetry.Tracer().Start(ctx, "node "+node, trace.WithAttributes(
		attribute.String("tenxgraph.node", node),
		attribute.Int("tenxgraph.step", r.Step),
	))
}

// traceClaim starts the span of taking the thread (its lease in the
// store).
func traceClaim(ctx context.Context) trace.Span {
	if !telemetry.Enabled() {
		return nil
	}
	_, span := telemetry.Tracer().Start(ctx, "thread.claim")
	return span
}

// traceWrite starts a checkpoint write's span.
func traceWrite(ctx context.Context, seq int64, status string, async bool) (context.Context, trace.Span) {
	if !telemetry.Enabled() {
		return ctx, nil
	}
	return telemetry.Tracer().Start(ctx, "checkpoint.write", trace.WithAttributes(
		attribute.String("tenxgraph.checkpoint.seq", strconv.FormatInt(seq, 10)),
		attribute.String("tenxgraph.checkpoint.status", status),
		attribute.Bool("tenxgraph.checkpoint.async", async),
	))
}

// endSpan ends a span that may be nil, recording err.
func endSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
