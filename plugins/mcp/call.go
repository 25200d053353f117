package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/sdk"
)

// call runs one tool. The server's timeout bounds the call for as long as
// the server neither answers nor reports progress; when it runs out, or ctx
// ends, the SDK sends notifications/cancelled. A connection lost during the
// call is made again, and the call retried once if the tool says it is
// read-only or idempotent (a second run changes nothing).
func (s *server) call(ctx context.Context, tool *mcpsdk.Tool, args json.RawMessage) (res *mcpsdk.CallToolResult, err error) {
	ctx, span := s.traceCall(ctx, tool)
	if span != nil {
		defer func() { endCallSpan(span, res, err) }()
	}
	timeout, key := s.cfg.toolTimeout(tool.Name)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &call{ctx: ctx, timeout: timeout, budget: s.cfg.MaxResultBytes, stop: cancel}
	c.idle = time.AfterFunc(timeout, func() { cancel(errIdle) })
	defer c.finish()
	token := fmt.Sprintf("tenxgraph-%d", s.seq.Add(1))
	s.calls.Store(token, c)
	defer s.calls.Delete(token)
	retried := false
	for {
		conn, err := s.session(cctx)
		if err != nil {
			if cctx.Err() != nil {
				return nil, s.stopped(ctx, cctx, tool, timeout, key)
			}
			return nil, err
		}
		p := &mcpsdk.CallToolParams{Name: tool.Name, Arguments: args}
		p.SetProgressToken(token)
		if span != nil {
			propagation.TraceContext{}.Inject(ctx, metaCarrier(p.Meta))
		}
		res, err := conn.cs.CallTool(cctx, p)
		if err == nil {
			return res, nil
		}
		err = s.redact(err)
		if cctx.Err() != nil {
			return nil, s.stopped(ctx, cctx, tool, timeout, key)
		}
		if conn.over.Load() {
			// Never retried: the server would send it again.
			s.drop(conn)
			return nil, &failure{s.tooLarge()}
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) || !s.lost(conn, err) {
			// The server answered with an error (an unknown tool, invalid
			// arguments): the tool failed, the model reads why.
			return nil, &failure{fmt.Sprintf("%s failed to run tool %q: %v", s.describe(), tool.Name, err)}
		}
		if retried || !retryable(tool) {
			why := "it is not marked read-only or idempotent, so it may or may not have taken effect"
			if retried {
				why = "it was already retried once"
			}
			return nil, &failure{fmt.Sprintf("%s lost its connection during the call of %q (%v); it is being connected again, and the call was not retried: %s", s.describe(), tool.Name, err, why)}
		}
		retried = true
		traceLog(ctx, s.log).Warn("the connection broke during a call; retrying it once, as the tool is read-only or idempotent", "tool", tool.Name, "error", err)
	}
}

// stopped explains a call that ended before its result: the host gave up
// (its context's error is returned as is), or the server stayed silent
// past its timeout.
func (s *server) stopped(ctx, cctx context.Context, tool *mcpsdk.Tool, timeout time.Duration, key string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch cause := context.Cause(cctx); {
	case errors.Is(cause, errIdle):
		return &failure{fmt.Sprintf("%s sent neither a result nor progress for %q within %s (%s); the call was cancelled", s.describe(), tool.Name, timeout, key)}
	case errors.Is(cause, errProgress):
		return &failure{fmt.Sprintf("%s sent more than %d bytes of progress messages for %q (%s); the call was cancelled", s.describe(), s.cfg.MaxResultBytes, tool.Name, s.cfg.key("max_result_bytes"))}
	}
	return context.Cause(cctx)
}

// tooLarge explains a call whose connection ended because the server sent
// a message past frameBytes.
func (s *server) tooLarge() string {
	why := ""
	if s.cfg.MaxResultBytes > 0 {
		why = fmt.Sprintf(": twice %s (%d), and %d bytes for the envelope", s.cfg.key("max_result_bytes"), s.cfg.MaxResultBytes, frameEnvelope)
	}
	return fmt.Sprintf("%s sent a message of more than %d bytes, the most the bridge reads of one%s; the result was dropped, and the server is connected again for the next call",
		s.describe(), s.frame, why)
}

// lost says whether err means the connection is gone (the process exited,
// the HTTP session ended) rather than the call failing.
func (s *server) lost(c *conn, err error) bool {
	if errors.Is(err, mcpsdk.ErrConnectionClosed) || errors.Is(err, mcpsdk.ErrSessionMissing) {
		s.drop(c)
		return true
	}
	select {
	case <-c.dead: // a restarted HTTP server answers an unknown session with 400, and the SDK closes it
		s.drop(c)
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// drop stops using a connection that failed a call; its end counts as a
// failure, and the server is connected again.
func (s *server) drop(c *conn) {
	s.sup.Drop(c)
	go func() { _ = c.cs.Close() }()
}

func retryable(t *mcpsdk.Tool) bool {
	return t.Annotations != nil && (t.Annotations.ReadOnlyHint || t.Annotations.IdempotentHint)
}

// failure is a tool call that went wrong in a way the model should read
// about (a timeout, a server that answered with an error, a lost
// connection), as opposed to a call that could not be made.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

var (
	errIdle     = errors.New("idle timeout")
	errProgress = errors.New("progress over the limit")
)

// call is one tool call in flight, for its progress notifications.
type call struct {
	ctx     context.Context // the host's call, which progress is reported on
	timeout time.Duration
	idle    *time.Timer
	budget  int64                   // bytes of progress text the call may report (0: no bound)
	stop    context.CancelCauseFunc // cancels the call
	mu      sync.Mutex
	done    bool
	sent    int64 // bytes of progress text so far
}

func (c *call) progress(p *mcpsdk.ProgressNotificationParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return // the result is out: a late report has no one to go to
	}
	if c.sent += int64(len(p.Message)); c.budget > 0 && c.sent > c.budget {
		c.stop(errProgress)
		return
	}
	c.idle.Reset(c.timeout)
	sdk.ReportProgress(c.ctx, p.Progress, p.Total, p.Message)
}

func (c *call) finish() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
	c.idle.Stop()
}

// progressed hands a progress notification to the call in flight that
// its token names.
func (s *server) progressed(_ context.Context, req *mcpsdk.ProgressNotificationClientRequest) {
	if c, ok := s.calls.Load(fmt.Sprint(req.Params.ProgressToken)); ok {
		c.(*call).progress(req.Params)
	}
}

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

// traceLog is l with the call's trace_id and span_id, when it is traced,
// so that a line logged during a call is found from its trace.
func traceLog(ctx context.Context, l hclog.Logger) hclog.Logger {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	}
	return l
}
