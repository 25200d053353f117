package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/tenxgraph/tenxgraph/sdk/proto/toolprovider/v1"
)

// Capabilities a provider can announce in MetadataResponse.Capabilities.
const (
	// CapabilityRunTools: the provider implements RunToolsProvider.
	CapabilityRunTools = "run_tools"
	// CapabilityRemote: the provider's tools run in the client (its
	// CallTool answers Deferred).
	CapabilityRemote = "remote"
	// CapabilityProgress: the plugin serves CallToolStream, which carries
	// ReportProgress to the host. Every plugin built with Serve has it.
	CapabilityProgress = "progress"
	// CapabilityToolsChanged: the provider implements ToolsWatcher; the
	// plugin announces changes on the Watch stream.
	CapabilityToolsChanged = "tools_changed"
	// CapabilityProgressToken: the plugin sends the progress of a CallTool
	// whose request carries a progress_token on the Watch stream, so the
	// host hears every call's progress without a stream per call. Every
	// plugin built with Serve has it.
	CapabilityProgressToken = "progress_token"
)

// Handshake is what host and plugin check before talking. The cookie only
// stops a plugin binary from being run by hand by mistake (it then says
// so); the protocol version is the go-plugin protocol, and the major version
// of toolprovider.v1.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "TENXGRAPH_PLUGIN",
	MagicCookieValue: "tool-provider.v1",
}

// PluginName is the name the provider is dispensed under.
const PluginName = "toolprovider"

// MaxMessageBytes bounds one gRPC message a plugin built with Serve sends
// or receives. gRPC's 4 MiB default cuts off ordinary tool outputs (a file,
// a web page); 256 MiB is Terraform's choice for the same trade-off. A host
// receives less: what a result of the provider's max_result_bytes takes
// (MessageBytes), so what a plugin sends does not become the host's memory.
const MaxMessageBytes = 256 << 20

// MessageBytes bounds the size of a toolprovider.v1 message a plugin sends
// that carries n bytes: a result whose content_json and attachments' data
// are n bytes together (CallTool's answer, or the last event of
// CallToolStream), with at most MaxAttachments attachments whose names are
// within their limits, or a progress report whose message is n bytes (on
// CallToolStream or on the lifeline), with every other field at its
// largest. A host that receives messages of up to this size takes every
// result and report of up to n bytes, and refuses any larger message as it
// arrives (ErrMessageTooLarge), before it is held whole: what one answer
// costs the host is bounded by about n bytes, however much the plugin
// sends. It is the exact size of the largest such message without
// attachments, plus the most framing and names the min(n, MaxAttachments)
// attachments a result of n bytes can carry may add (526 bytes each when n
// is 4 MiB).
func MessageBytes(n int) int {
	n = max(n, 0)
	bytesField := func(num protowire.Number, n int) int { return protowire.SizeTag(num) + protowire.SizeBytes(n) }
	boolField := func(num protowire.Number) int { return protowire.SizeTag(num) + protowire.SizeVarint(1) }
	doubleField := func(num protowire.Number) int { return protowire.SizeTag(num) + protowire.SizeFixed64() }
	// CallTool.Attachment: mime_type = 1, filename = 2, data = 3; its
	// data is at most n bytes, counted once with the content's below.
	attachment := bytesField(1, MaxMimeTypeBytes) + bytesField(2, MaxFilenameBytes) + bytesField(3, n)
	framing := bytesField(4, attachment) - n
	// CallTool.Response: content_json = 1, is_error = 2, deferred = 3,
	// attachments = 4, each with one byte of data at least, spans = 5.
	response := bytesField(1, n) + boolField(2) + boolField(3) + min(n, MaxAttachments)*framing + bytesField(5, MaxSpanBytes)
	// CallTool.Progress: progress = 1, total = 2, message = 3.
	progress := doubleField(1) + doubleField(2) + bytesField(3, n)
	// CallTool.Event: progress = 1 | response = 2.
	event := max(bytesField(1, progress), bytesField(2, response))
	// Watch.Event: tools_changed = 1, progress_token = 2, progress = 3.
	watch := boolField(1) + protowire.SizeTag(2) + protowire.SizeVarint(math.MaxUint64) + bytesField(3, progress)
	return max(response, event, watch)
}

// ErrMessageTooLarge: a message from the plugin was larger than the host
// receives (see MessageBytes); it was refused as it arrived. The call
// fails; the plugin and its connection stay up.
var ErrMessageTooLarge = errors.New("message too large")

// HostPlugins are the protocol versions a host can speak, for
// plugin.ClientConfig.VersionedPlugins. The dispensed value implements
// Provider, RunToolsProvider, Shutdowner and ToolsWatcher, plus Watch(ctx)
// for the host's lifeline (which also carries the tool-list changes that
// ToolsWatcher reports).
func HostPlugins() map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{1: {PluginName: &grpcPlugin{}}}
}

// grpcPlugin joins a Provider to go-plugin; impl is set on the plugin side.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl    Provider
	onLost  func()            // called when the host's lifeline breaks
	onStuck func(tool string) // called when a handler ignores cancellation
	log     hclog.Logger      // each call's Logger, when set
	tracing *tracing          // the plugin's spans; one of its own when nil
}

func (g *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	t := g.tracing
	if t == nil {
		t = newTracing()
	}
	pb.RegisterToolProviderServer(s, &grpcServer{p: g.impl, onLost: g.onLost, onStuck: g.onStuck, log: g.log, tracing: t})
	return nil
}

// GRPCClient is called with a context go-plugin cancels when the plugin
// process exits: the client exposes it as Exited, which is how a host learns
// of a crash within milliseconds.
func (g *grpcPlugin) GRPCClient(ctx context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &grpcClient{c: pb.NewToolProviderClient(c), exited: ctx.Done()}, nil
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

// grpcServer serves a Provider over toolprovider.v1.
type grpcServer struct {
	pb.UnimplementedToolProviderServer
	p        Provider
	watchMu  sync.Mutex                                 // serializes sends on watch
	watch    grpc.ServerStreamingServer[pb.Watch_Event] // the host's lifeline, once open
	onLost   func()
	onStuck  func(tool string)
	log      hclog.Logger
	tracing  *tracing
	stopping atomic.Bool
}

func (s *grpcServer) GetMetadata(ctx context.Context, _ *pb.GetMetadata_Request) (*pb.GetMetadata_Response, error) {
	md, err := s.p.Metadata(ctx, MetadataRequest{})
	if err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	}
	caps := append([]string(nil), md.Capabilities...)
	if _, ok := s.p.(RunToolsProvider); ok && !contains(caps, CapabilityRunTools) {
		caps = append(caps, CapabilityRunTools)
	}
	if _, ok := s.p.(ToolsWatcher); ok && !contains(caps, CapabilityToolsChanged) {
		caps = append(caps, CapabilityToolsChanged)
	}
	if !contains(caps, CapabilityProgress) {
		caps = append(caps, CapabilityProgress)
	}
	if !contains(caps, CapabilityProgressToken) {
		caps = append(caps, CapabilityProgressToken)
	}
	out := &pb.GetMetadata_Response{Name: md.Name, Version: md.Version, Capabilities: caps, Tools: make([]*pb.ToolSpec, len(md.Tools)),
		OptionsSchemaJson: md.OptionsSchema}
	for i, t := range md.Tools {
		out.Tools[i] = toPBSpec(t)
	}
	return out, nil
}

func (s *grpcServer) CallTool(ctx context.Context, req *pb.CallTool_Request) (*pb.CallTool_Response, error) {
	return s.callTool(ctx, req)
}

// CallToolStream runs a tool like CallTool, sending what it reports with
// ReportProgress ahead of its result.
func (s *grpcServer) CallToolStream(req *pb.CallTool_Request, stream grpc.ServerStreamingServer[pb.CallTool_Event]) error {
	var mu sync.Mutex
	done := false
	ctx := WithProgress(stream.Context(), func(p Progress) {
		mu.Lock()
		defer mu.Unlock()
		if !done { // a report racing the result is dropped, not sent after it
			_ = stream.Send(&pb.CallTool_Event{Event: &pb.CallTool_Event_Progress{Progress: &pb.CallTool_Progress{
				Progress: p.Progress, Total: p.Total, Message: p.Message}}})
		}
	})
	resp, err := s.callTool(ctx, req)
	mu.Lock()
	done = true
	mu.Unlock()
	if err != nil {
		return err
	}
	return stream.Send(&pb.CallTool_Event{Event: &pb.CallTool_Event_Response{Response: resp}})
}

func (s *grpcServer) callTool(ctx context.Context, req *pb.CallTool_Request) (*pb.CallTool_Response, error) {
	in := CallToolRequest{Name: req.Name, Arguments: req.ArgumentsJson, CallID: req.CallId, ThreadID: req.ThreadId}
	if req.RunTool != nil {
		spec := fromPBSpec(req.RunTool)
		in.RunTool = &spec
	}
	if tok := req.ProgressToken; tok != 0 && progressFunc(ctx) == nil {
		ctx = WithProgress(ctx, func(p Progress) {
			s.sendWatch(&pb.Watch_Event{ProgressToken: tok, Progress: &pb.CallTool_Progress{
				Progress: p.Progress, Total: p.Total, Message: p.Message}})
		})
	}
	ctx, span := s.tracing.startCall(ctx, in)
	if s.log != nil {
		cl := &callLogger{base: s.log, tool: in.Name, callID: in.CallID}
		if span != nil {
			cl.span = span.SpanContext()
		}
		ctx = context.WithValue(ctx, loggerKey{}, cl)
	}
	resp, err := s.run(ctx, in)
	var spans []byte
	if span != nil {
		spans = s.tracing.endCall(span, resp, err)
	}
	switch {
	case errors.Is(err, ErrUnknownTool):
		return nil, status.Error(codes.NotFound, err.Error())
	case err != nil && ctx.Err() != nil:
		return nil, status.FromContextError(ctx.Err()).Err()
	case err != nil:
		return nil, status.Error(codes.Unknown, err.Error())
	}
	out := toPBResponse(resp)
	out.Spans = spans
	return out, nil
}

// run calls the provider's tool and watches it: a handler that has not
// returned CancelGrace after ctx ended ignores cancellation, and the plugin
// is ended (onStuck) rather than left holding what the handler holds. The
// host cannot see this itself: its end of the call is gone once cancelled.
// The tool runs on the call's own goroutine (on a new one, its stack was
// grown, which is copied, on every call); the watch costs nothing until ctx
// ends.
func (s *grpcServer) run(ctx context.Context, in CallToolRequest) (CallToolResponse, error) {
	if s.onStuck == nil {
		return s.call(ctx, in)
	}
	returned := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(CancelGrace)
		defer t.Stop()
		select {
		case <-returned:
		case <-t.C:
			if !s.stopping.Load() {
				s.onStuck(in.Name)
			}
		}
	})
	defer func() {
		close(returned)
		stop()
	}()
	return s.call(ctx, in)
}

// call calls the provider's tool; a panic, which would end the plugin and
// every call in it, is the call's error result (see recoverTool).
func (s *grpcServer) call(ctx context.Context, in CallToolRequest) (resp CallToolResponse, err error) {
	defer recoverTool(ctx, in.Name, &resp, &err)
	return s.p.CallTool(ctx, in)
}

func (s *grpcServer) PrepareRun(ctx context.Context, req *pb.PrepareRun_Request) (*pb.PrepareRun_Response, error) {
	rp, ok := s.p.(RunToolsProvider)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this provider does not take client tools")
	}
	in := PrepareRunRequest{Taken: req.Taken, RunTools: make([]json.RawMessage, len(req.RunToolsJson))}
	for i, raw := range req.RunToolsJson {
		in.RunTools[i] = raw
	}
	resp, err := rp.PrepareRun(ctx, in)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	out := &pb.PrepareRun_Response{}
	for _, t := range resp.Tools {
		out.Tools = append(out.Tools, toPBSpec(t))
	}
	for _, ig := range resp.Ignored {
		out.Ignored = append(out.Ignored, &pb.PrepareRun_Ignored{Name: ig.Name, Reason: ig.Reason})
	}
	for _, p := range resp.Problems {
		out.Problems = append(out.Problems, &pb.PrepareRun_Problem{Path: p.Path, Message: p.Message})
	}
	return out, nil
}

// Watch holds the host's lifeline open, and sends an event on it whenever a
// ToolsWatcher's tool list changes. When it breaks while the plugin is not
// shutting down, the host is gone and the plugin must not linger.
func (s *grpcServer) Watch(_ *pb.Watch_Request, stream grpc.ServerStreamingServer[pb.Watch_Event]) error {
	s.watchMu.Lock()
	s.watch = stream
	s.watchMu.Unlock()
	defer func() {
		s.watchMu.Lock()
		if s.watch == stream {
			s.watch = nil
		}
		s.watchMu.Unlock()
	}()
	if w, ok := s.p.(ToolsWatcher); ok {
		// The first event covers a change made before this stream began,
		// which no channel taken here would show: the host reads the list
		// once more. It also tells the host the lifeline is open, so that
		// progress on it reaches it.
		next := w.ToolsChanged()
		err := s.sendWatch(&pb.Watch_Event{ToolsChanged: true})
	watch:
		for err == nil {
			select {
			case <-next:
				next = w.ToolsChanged()
				err = s.sendWatch(&pb.Watch_Event{ToolsChanged: true})
			case <-stream.Context().Done():
				break watch
			}
		}
	} else {
		// An empty first event tells the host the lifeline is open, so
		// that progress on it reaches it.
		_ = s.sendWatch(&pb.Watch_Event{})
	}
	<-stream.Context().Done()
	if !s.stopping.Load() && s.onLost != nil {
		s.onLost()
	}
	return nil
}

// sendWatch sends an event on the host's lifeline, if it is open; sends
// from tools' progress and from tool-list changes take turns.
func (s *grpcServer) sendWatch(ev *pb.Watch_Event) error {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch == nil {
		return nil
	}
	return s.watch.Send(ev)
}

func (s *grpcServer) Configure(ctx context.Context, req *pb.Configure_Request) (*pb.Configure_Response, error) {
	c, ok := s.p.(Configurer)
	if !ok {
		return nil, status.Error(codes.Unimplemented, "this provider takes no options")
	}
	if err := c.Configure(ctx, ConfigureRequest{Options: req.OptionsJson}); err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &pb.Configure_Response{}, nil
}

func (s *grpcServer) Shutdown(ctx context.Context, _ *pb.Shutdown_Request) (*pb.Shutdown_Response, error) {
	s.stopping.Store(true)
	if sd, ok := s.p.(Shutdowner); ok {
		if err := sd.Shutdown(ctx); err != nil {
			return nil, status.Error(codes.Unknown, err.Error())
		}
	}
	return &pb.Shutdown_Response{}, nil
}

// grpcClient is a Provider whose implementation is in a plugin process.
type grpcClient struct {
	c      pb.ToolProviderClient
	exited <-chan struct{}
	// progress says whether the plugin serves CallToolStream: 0 not known
	// yet (try it), 1 yes, -1 no.
	progress atomic.Int32

	// tokens says the plugin sends progress on the lifeline (capability
	// progress_token), learnt from its metadata; listeners are the calls
	// waiting for it, by token.
	tokens    atomic.Bool
	watching  atomic.Bool // the lifeline is open: its first event came
	nextToken atomic.Uint64
	listeners sync.Map // uint64 -> *listener

	mu      sync.Mutex
	changed chan struct{} // closed at the next tools_changed event; nil until asked for
}

// ToolsChanged implements ToolsWatcher. Changes arrive on the lifeline, so
// they are seen while Watch runs (the host runs it for the plugin's life).
func (c *grpcClient) ToolsChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

func (c *grpcClient) toolsChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed != nil {
		close(c.changed)
		c.changed = nil
	}
}

// Exited is closed when the plugin process has exited.
func (c *grpcClient) Exited() <-chan struct{} { return c.exited }

func (c *grpcClient) Metadata(ctx context.Context, _ MetadataRequest) (MetadataResponse, error) {
	resp, err := c.c.GetMetadata(ctx, &pb.GetMetadata_Request{})
	if err != nil {
		return MetadataResponse{}, fromStatus(err)
	}
	if contains(resp.Capabilities, CapabilityProgress) {
		c.progress.Store(1)
	} else {
		c.progress.Store(-1)
	}
	c.tokens.Store(contains(resp.Capabilities, CapabilityProgressToken))
	md := MetadataResponse{Name: resp.Name, Version: resp.Version, Capabilities: resp.Capabilities, Tools: make([]ToolSpec, len(resp.Tools)),
		OptionsSchema: resp.OptionsSchemaJson}
	for i, t := range resp.Tools {
		md.Tools[i] = fromPBSpec(t)
	}
	return md, nil
}

func (c *grpcClient) CallTool(ctx context.Context, req CallToolRequest) (CallToolResponse, error) {
	in := &pb.CallTool_Request{Name: req.Name, ArgumentsJson: req.Arguments, CallId: req.CallID, ThreadId: req.ThreadID}
	if req.RunTool != nil {
		in.RunTool = toPBSpec(*req.RunTool)
	}
	if fn := progressFunc(ctx); fn != nil && c.tokens.Load() && c.watching.Load() {
		// Progress comes on the lifeline, tagged with this call's token.
		tok := c.nextToken.Add(1)
		l := &listener{fn: fn}
		c.listeners.Store(tok, l)
		defer func() {
			c.listeners.Delete(tok)
			l.close() // no report reaches fn once the call has returned
		}()
		in.ProgressToken = tok
	} else if fn != nil && c.progress.Load() >= 0 {
		resp, err := c.callStream(ctx, in, fn)
		if status.Code(err) != codes.Unimplemented {
			if err != nil {
				return CallToolResponse{}, fromStatus(err)
			}
			sinkSpans(ctx, resp)
			return fromPBResponse(resp), nil
		}
		c.progress.Store(-1) // refused before the tool ran: call it the plain way
	}
	resp, err := c.c.CallTool(ctx, in)
	if err != nil {
		return CallToolResponse{}, fromStatus(err)
	}
	sinkSpans(ctx, resp)
	return fromPBResponse(resp), nil
}

// sinkSpans hands the spans a plugin returned with a result to the
// context's SpanSink, if any.
func sinkSpans(ctx context.Context, resp *pb.CallTool_Response) {
	if len(resp.Spans) > 0 {
		if sink := spanSinkFrom(ctx); sink != nil {
			sink(ctx, resp.Spans)
		}
	}
}

// callStream runs a tool with CallToolStream, handing its progress to fn.
func (c *grpcClient) callStream(ctx context.Context, in *pb.CallTool_Request, fn func(Progress)) (*pb.CallTool_Response, error) {
	stream, err := c.c.CallToolStream(ctx, in)
	if err != nil {
		return nil, err
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, status.Error(codes.Internal, "the plugin ended the call without a result")
		}
		if err != nil {
			return nil, err
		}
		if p := ev.GetProgress(); p != nil {
			fn(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
		} else if r := ev.GetResponse(); r != nil {
			return r, nil
		}
	}
}

func (c *grpcClient) PrepareRun(ctx context.Context, req PrepareRunRequest) (PrepareRunResponse, error) {
	in := &pb.PrepareRun_Request{Taken: req.Taken, RunToolsJson: make([][]byte, len(req.RunTools))}
	for i, raw := range req.RunTools {
		in.RunToolsJson[i] = raw
	}
	resp, err := c.c.PrepareRun(ctx, in)
	if err != nil {
		return PrepareRunResponse{}, fromStatus(err)
	}
	var out PrepareRunResponse
	for _, t := range resp.Tools {
		out.Tools = append(out.Tools, fromPBSpec(t))
	}
	for _, ig := range resp.Ignored {
		out.Ignored = append(out.Ignored, IgnoredTool{Name: ig.Name, Reason: ig.Reason})
	}
	for _, p := range resp.Problems {
		out.Problems = append(out.Problems, Problem{Path: p.Path, Message: p.Message})
	}
	return out, nil
}

// Configure implements Configurer: it sends the provider its options.
func (c *grpcClient) Configure(ctx context.Context, req ConfigureRequest) error {
	_, err := c.c.Configure(ctx, &pb.Configure_Request{OptionsJson: req.Options})
	if status.Code(err) == codes.InvalidArgument {
		return errors.New(status.Convert(err).Message())
	}
	return fromStatus(err)
}

func (c *grpcClient) Shutdown(ctx context.Context) error {
	_, err := c.c.Shutdown(ctx, &pb.Shutdown_Request{})
	return fromStatus(err)
}

// Watch opens the host's lifeline and returns when it breaks (ctx done, or
// the plugin gone). Hosts run it in a goroutine for the plugin's life.
func (c *grpcClient) Watch(ctx context.Context) error {
	stream, err := c.c.Watch(ctx, &pb.Watch_Request{})
	if err != nil {
		return fromStatus(err)
	}
	defer c.watching.Store(false)
	for {
		ev, err := stream.Recv()
		if err != nil {
			return fromStatus(err)
		}
		c.watching.Store(true)
		if ev.ToolsChanged {
			c.toolsChanged()
		}
		if p := ev.GetProgress(); p != nil && ev.ProgressToken != 0 {
			if l, ok := c.listeners.Load(ev.ProgressToken); ok {
				l.(*listener).report(Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
	}
}

// ErrUnsupported: the plugin does not implement an optional call.
var ErrUnsupported = errors.New("not supported by this provider")

// fromStatus turns gRPC statuses back into the errors callers test for.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.NotFound:
		return fmt.Errorf("%w: %s", ErrUnknownTool, st.Message())
	case codes.Unimplemented:
		return fmt.Errorf("%w: %s", ErrUnsupported, st.Message())
	case codes.Canceled:
		return fmt.Errorf("%w: %s", context.Canceled, st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("%w: %s", context.DeadlineExceeded, st.Message())
	case codes.Unavailable:
		return fmt.Errorf("%w: %s", ErrProviderUnavailable, st.Message())
	case codes.ResourceExhausted:
		return fmt.Errorf("%w: %s", ErrMessageTooLarge, st.Message())
	}
	return errors.New(st.Message())
}

// ErrProviderUnavailable: the provider's process is gone or unreachable (it
// crashed, or is restarting).
var ErrProviderUnavailable = errors.New("provider unavailable")

func toPBSpec(t ToolSpec) *pb.ToolSpec {
	return &pb.ToolSpec{Name: t.Name, Description: t.Description, ParametersJson: t.Parameters, RequiresApproval: t.RequiresApproval}
}

func fromPBSpec(t *pb.ToolSpec) ToolSpec {
	return ToolSpec{Name: t.Name, Description: t.Description, Parameters: t.ParametersJson, RequiresApproval: t.RequiresApproval}
}

// toPBResponse and fromPBResponse carry a result across; attachments'
// bytes are not copied.
func toPBResponse(r CallToolResponse) *pb.CallTool_Response {
	out := &pb.CallTool_Response{ContentJson: r.Content, IsError: r.IsError, Deferred: r.Deferred}
	if len(r.Attachments) > 0 {
		out.Attachments = make([]*pb.CallTool_Attachment, len(r.Attachments))
		for i, a := range r.Attachments {
			out.Attachments[i] = &pb.CallTool_Attachment{MimeType: a.MimeType, Filename: a.Filename, Data: a.Data}
		}
	}
	return out
}

func fromPBResponse(r *pb.CallTool_Response) CallToolResponse {
	out := CallToolResponse{Content: r.ContentJson, IsError: r.IsError, Deferred: r.Deferred}
	if len(r.Attachments) > 0 {
		out.Attachments = make([]Attachment, len(r.Attachments))
		for i, a := range r.Attachments {
			out.Attachments[i] = Attachment{MimeType: a.MimeType, Filename: a.Filename, Data: a.Data}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// listener is one call's progress listener, fed from the lifeline: a
// report racing the call's return is dropped, never delivered after it.
type listener struct {
	mu   sync.Mutex
	fn   func(Progress)
	done bool
}

func (l *listener) report(p Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.fn(p)
	}
}

func (l *listener) close() {
	l.mu.Lock()
	l.done = true
	l.mu.Unlock()
}

// CancelGrace is how long a tool's handler may run on after its call was
// cancelled (the host's timeout ran out, the run was cancelled, the host
// stopped the plugin). A handler still running then ignores its context: it
// holds what it holds for no one, and the next one may do the same, so Serve
// ends the plugin and the host starts a fresh process for the next call.
const CancelGrace = 2 * time.Second
