package sdk

import "context"

// Progress is a running tool's report of how far it got, in units the tool
// chooses: Progress goes up with each report, Total is 0 when unknown.
type Progress struct {
	Progress float64
	Total    float64
	Message  string
}

type progressKey struct{}

// WithProgress returns a context whose tool calls report their progress to
// fn. The host sets it around CallTool when someone listens (a run's event
// stream); a provider reaches fn with ReportProgress, in process or across
// the plugin boundary alike. fn may be called from any goroutine, and not
// after CallTool has returned.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells the caller of a running tool how far it got; ctx is
// the context the tool was called with. It does nothing when nobody listens,
// so a tool may report unconditionally. It may block briefly while the
// report is sent to the host.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	if fn := progressFunc(ctx); fn != nil {
		fn(Progress{Progress: progress, Total: total, Message: message})
	}
}

func progressFunc(ctx context.Context) func(Progress) {
	fn, _ := ctx.Value(progressKey{}).(func(Progress))
	return fn
}

// ToolsWatcher is implemented by providers whose tool list changes while
// they run (the MCP bridge, when a server announces new tools). The host
// reads Metadata again after the channel is closed, and offers the new list
// from the next model step on.
type ToolsWatcher interface {
	// ToolsChanged returns a channel that is closed at the next change of
	// the tool list. Take it before reading Metadata, so that a change
	// between the two is not missed.
	ToolsChanged() <-chan struct{}
}
