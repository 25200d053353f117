package sdk

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"
)

type loggerKey struct{}

// callLogger is a call's logger before it is made: the plugin's logger
// with the call's tool, call_id and trace (when traced) is made the first
// time the tool asks for it. Most calls never log, and making it with
// every call (hclog copies the logger and sorts its fields) was work
// each of a plugin's calls paid for nothing.
type callLogger struct {
	once         sync.Once
	base         hclog.Logger
	tool, callID string
	span         trace.SpanContext
	l            hclog.Logger
}

func (c *callLogger) get() hclog.Logger {
	c.once.Do(func() {
		c.l = c.base.With("tool", c.tool, "call_id", c.callID)
		if c.span.IsValid() {
			c.l = c.l.With("trace_id", c.span.TraceID().String(), "span_id", c.span.SpanID().String())
		}
	})
	return c.l
}

// Logger returns the logger of the tool call ctx belongs to. In a plugin
// built with Serve it is the plugin's logger, whose lines the host writes
// to its own log under the plugin's name, with the call's tool and call_id:
// a tool needs no logger of its own, and one of its own would be named
// twice in the host's log. Outside a call (or in a provider run in process
// without one) it is hclog.Default().
func Logger(ctx context.Context) hclog.Logger {
	switch l := ctx.Value(loggerKey{}).(type) {
	case hclog.Logger:
		return l
	case *callLogger:
		return l.get()
	}
	return hclog.Default()
}

// ContextWithLogger returns a context whose Logger is l. Serve sets it for
// every call; a host or test running a provider in process may set it too.
func ContextWithLogger(ctx context.Context, l hclog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
