package pluginhost

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// Settings are a provider entry's call limits as 10xgraph.json writes them
// (timeout, tool_timeouts, max_argument_bytes, max_result_bytes): the same
// keys, with the same meaning, on every provider kind and in
// provider_defaults. The config reads them into this type; Limits turns
// them into what the host enforces. A zero field means its default.
type Settings struct {
	// Timeout bounds a call for as long as the tool neither answers nor
	// reports progress (0: DefaultTimeout). Past it the call is cancelled
	// and the model reads an error naming the limit.
	Timeout time.Duration `json:"timeout"`
	// ToolTimeouts override Timeout for the tools they name (an MCP
	// server's tools by their names on the server, as allow_tools). Only an
	// entry sets them: tool names belong to one provider.
	ToolTimeouts map[string]time.Duration `json:"tool_timeouts"`
	// MaxArgumentBytes bounds a call's arguments (0:
	// DefaultMaxArgumentBytes); a larger call never reaches the provider.
	MaxArgumentBytes int64 `json:"max_argument_bytes"`
	// MaxResultBytes bounds a result (0: DefaultMaxResultBytes); a larger
	// one becomes an error result naming the limit.
	MaxResultBytes int64 `json:"max_result_bytes"`
}

// The defaults of Settings, and the bound of its byte limits.
const (
	// DefaultTimeout bounds a tool call that neither answers nor reports
	// progress, for every provider: the MCP bridge's long-standing default.
	DefaultTimeout = 60 * time.Second
	// DefaultMaxArgumentBytes bounds a call's arguments (1 MiB): far above
	// what a model writes for a tool, far below what would hurt the host.
	DefaultMaxArgumentBytes = 1 << 20
	// DefaultMaxResultBytes bounds a tool's result (4 MiB), the request
	// body limit: a result is read into the conversation and sent to the
	// model.
	DefaultMaxResultBytes = 4 << 20
	// MaxCallBytes is the largest max_argument_bytes and max_result_bytes:
	// a call's arguments and its result each cross between host and plugin
	// as one gRPC message.
	MaxCallBytes = 192 << 20
)

// Limits are the settings with their defaults filled in, as the host
// enforces them on the entry at key (its config path, which the errors a
// limit causes name).
func (s Settings) Limits(key string) Limits {
	return Limits{
		Timeout:          cmp.Or(s.Timeout, DefaultTimeout),
		ToolTimeouts:     s.ToolTimeouts,
		MaxArgumentBytes: cmp.Or(s.MaxArgumentBytes, DefaultMaxArgumentBytes),
		MaxResultBytes:   cmp.Or(s.MaxResultBytes, DefaultMaxResultBytes),
		Key:              key,
	}
}

// Limits bound every call to a plugin. The host enforces them itself: a
// plugin is untrusted, and a limit it could ignore would be no limit. A
// zero field sets no limit.
type Limits struct {
	// Timeout bounds a call for as long as the tool neither answers nor
	// reports progress, like the MCP bridge's timeout. When it runs out the
	// call is cancelled (the handler's context ends) and the caller gets an
	// error naming the limit at once. A plugin built with sdk.Serve whose
	// handler ignores the cancellation ends itself after sdk.CancelGrace,
	// and the host starts a fresh process.
	Timeout time.Duration
	// ToolTimeouts override Timeout for the tools they name.
	ToolTimeouts map[string]time.Duration
	// MaxArgumentBytes bounds a call's arguments; a larger call never
	// reaches the plugin.
	MaxArgumentBytes int64
	// MaxResultBytes bounds a result, its content and its attachments'
	// bytes together (sdk.CallToolResponse.Size); a larger one is dropped
	// and the call fails. The host refuses any message of the plugin's
	// larger than a result of this size as it arrives (see
	// sdk.MessageBytes), so a plugin cannot make the host hold more, and
	// the text of one call's progress reports together is bounded by it
	// too.
	MaxResultBytes int64
	// Key is the config path of the provider's entry ("plugins[0]"): an
	// error caused by a limit names the key that sets it, so the reader
	// knows what to change.
	Key string
}

// ErrLimit is wrapped by every error a limit causes.
var ErrLimit = errors.New("limit exceeded")

// errTimeout is the cause of a call cancelled by its timeout.
var errTimeout = errors.New("timeout")

// errProgress is the cause of a call cancelled for the size of its
// progress reports.
var errProgress = errors.New("progress over the limit")

// minReceiveBytes is the least the host receives in one message from a
// plugin, whatever its MaxResultBytes: gRPC's own default. Every message
// crosses whole, a tool list too, which a small max_result_bytes must not
// refuse.
const minReceiveBytes = 4 << 20

// receiveBytes is the largest message the host takes from the plugin: one
// carrying a result of MaxResultBytes. A larger one is refused as it
// arrives (gRPC reads its length first), never held whole.
func (l Limits) receiveBytes() int {
	if l.MaxResultBytes <= 0 {
		return sdk.MaxMessageBytes
	}
	return max(sdk.MessageBytes(int(min(l.MaxResultBytes, sdk.MaxMessageBytes))), minReceiveBytes)
}

func (l Limits) key(name string) string {
	if l.Key == "" {
		return name
	}
	return l.Key + "." + name
}

// timeout is the limit of one tool's calls and the key that sets it.
func (l Limits) timeout(tool string) (time.Duration, string) {
	if d, ok := l.ToolTimeouts[tool]; ok {
		return d, l.key("tool_timeouts." + tool)
	}
	return l.Timeout, l.key("timeout")
}

// checkArguments refuses a call whose arguments are over the limit.
func (l Limits) checkArguments(req sdk.CallToolRequest) error {
	if n := int64(len(req.Arguments)); l.MaxArgumentBytes > 0 && n > l.MaxArgumentBytes {
		return fmt.Errorf("the arguments of tool %q are %d bytes, over the limit of %d (%s); the tool was not called: %w",
			req.Name, n, l.MaxArgumentBytes, l.key("max_argument_bytes"), ErrLimit)
	}
	return nil
}

// checkResult refuses a result over the limit: its content and its
// attachments together.
func (l Limits) checkResult(tool string, resp sdk.CallToolResponse) error {
	if n := resp.Size(); l.MaxResultBytes > 0 && n > l.MaxResultBytes {
		what := ""
		if k := len(resp.Attachments); k > 0 {
			what = fmt.Sprintf(" (its content and %d attachments)", k)
		}
		return fmt.Errorf("tool %q returned %d bytes%s, over the limit of %d (%s); the result was dropped: %w",
			tool, n, what, l.MaxResultBytes, l.key("max_result_bytes"), ErrLimit)
	}
	return nil
}

// tooLarge is the error of a call whose answer the host refused as it
// arrived (sdk.ErrMessageTooLarge): the same as checkResult's, without the
// size, which the host did not read.
func (l Limits) tooLarge(tool string) error {
	return fmt.Errorf("tool %q returned more than the limit of %d bytes (%s); the result was dropped: %w",
		tool, l.MaxResultBytes, l.key("max_result_bytes"), ErrLimit)
}

// bound runs call under the tool's timeout. The timer restarts whenever the
// tool reports progress, which is passed on to the caller's listener, if
// any, while the text of the call's reports together stays within
// MaxResultBytes. A call cut off by the timeout or for its reports gives an
// error naming the limit; the caller's own cancellation is returned as it
// is.
func (l Limits) bound(ctx context.Context, tool string, call func(context.Context) error) error {
	d, key := l.timeout(tool)
	if d <= 0 && l.MaxResultBytes <= 0 {
		return call(ctx)
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var idle *time.Timer
	if d > 0 {
		idle = time.AfterFunc(d, func() { cancel(errTimeout) })
		defer idle.Stop()
	}
	var reported atomic.Int64 // bytes of progress text so far
	cctx = sdk.WithProgress(cctx, func(p sdk.Progress) {
		if l.MaxResultBytes > 0 && reported.Add(int64(len(p.Message))) > l.MaxResultBytes {
			cancel(errProgress)
			return
		}
		if idle != nil {
			idle.Reset(d)
		}
		sdk.ReportProgress(ctx, p.Progress, p.Total, p.Message)
	})
	err := call(cctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	switch cause := context.Cause(cctx); {
	case errors.Is(cause, errTimeout):
		return fmt.Errorf("tool %q sent neither a result nor progress within %s (%s); the call was cancelled: %w", tool, d, key, ErrLimit)
	case errors.Is(cause, errProgress):
		return fmt.Errorf("tool %q sent more than %d bytes of progress messages (%s); the call was cancelled: %w",
			tool, l.MaxResultBytes, l.key("max_result_bytes"), ErrLimit)
	}
	return err
}
