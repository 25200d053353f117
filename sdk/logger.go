package sdk

import (
	"context"

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
