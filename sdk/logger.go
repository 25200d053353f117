package sdk

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"
)

type loggerKey struct{}

// Logger returns the logger of the tool call ctx belongs to. In a plugin
// built with Serve it is the plugin's logger, whose lines the host writes
// to its own log under the plugin's name, with the call's tool and call_id:
// a tool needs no logger of its own, and one of its own would be named
// twice in the host's log. Outside a call (or in a provider run in process
// without one) it is hclog.Default().
func Logger(ctx context.Context) hclog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(hclog.Logger); ok {
		return l
	}
	return hclog.Default()
}

// ContextWithLogger returns a context whose Logger is l. Serve sets it for
// every call; a host or test running a provider in process may set it too.
func ContextWithLogger(ctx context.Context, l hclog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}

// recoverTool turns a panic of tool's handler into an error result the
// model reads (the panic's value, which is all it can act on) and logs the
// panic with its stack, which is what its author needs. Deferred by every
// place that calls a handler.
func recoverTool(ctx context.Context, tool string, resp *CallToolResponse, err *error) {
	r := recover()
	if r == nil {
		return
	}
	Logger(ctx).Error("tool panicked", "tool", tool, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	*resp, *err = ErrorResult(fmt.Errorf("tool %q panicked: %v", tool, r)), nil
}
