// Command tracedplugin is a third-party plugin as an author writes one,
// for the trace tests: its tool does some work in a span of its own, made
// through the call's context, and nothing else about tracing.
package main

import (
	"context"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/sdk"
)

type lookupArgs struct {
	Key string `json:"key" jsonschema:"what to look up"`
}

func main() {
	sdk.Serve(sdk.MustTools("traced", "0.1.0",
		sdk.MustTool("lookup", "Look a key up.", func(ctx context.Context, in lookupArgs) (map[string]any, error) {
			_, span := trace.SpanFromContext(ctx).TracerProvider().Tracer("tracedplugin").Start(ctx, "tracedplugin.lookup")
			span.SetAttributes(attribute.String("tracedplugin.key", in.Key), attribute.Int("tracedplugin.pid", os.Getpid()))
			span.End()
			return map[string]any{"key": in.Key, "value": len(in.Key)}, nil
		})))
}
