package toolnode

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"strings"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/graph"
	"github.com/tenxgraph/tenxgraph/host/memo"
	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/plugins/remote"
	"github.com/tenxgraph/tenxgraph/sdk"
	"github.com/tenxgraph/tenxgraph/sdk/strictjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// EventApprovalRequested is the event a ToolNode emits for each call that
// waits for a person's approval; its data is the message.ApprovalRequestBlock.
const EventApprovalRequested = "approval_requested"

// Run implements graph.Node. It answers every unanswered call of the last
// assistant message, in call order: server tools run and remote calls go to
// the bridge, all concurrently (the in-process bridge's calls, which never
// block, one after the other); a deferred call becomes a
// RemoteToolCallBlock and an interrupt, and a call to a tool that needs
// approval becomes an approval request (an interrupt) without running. A
// call that cannot be made (unknown tool, arguments that fail the schema)
// gets an error result the model can read, so a model mistake never pauses
// the graph for the client. Resumed with the answers, the node turns remote
// results into the thread's tool messages and runs the approved calls.
func (n *Node) Run(ctx context.Context, in *graph.Input) (graph.Update, error) {
	if in.Resume != nil {
		return n.resume(ctx, in)
	}
	calls := lastCalls(in.State.Messages)
	if len(calls) == 0 {
		return graph.Update{}, nil
	}
	ts, err := n.ToolSet(ctx, in.Run)
	if err != nil {
		return graph.Update{}, err
	}
	ids := make([]string, len(calls))
	for i, c := range calls {
		ids[i] = c.ID
	}
	answered := n.answeredAmong(in, ids)
	blocks := make([]message.Block, len(calls))
	var jobs []job
	for i, c := range calls {
		if _, done := answered[c.ID]; done {
			continue // answered in an earlier step: never run twice
		}
		t, ok := ts.lookup(c.Name)
		bad, invalidJSON := message.InvalidArguments(c.Arguments)
		switch {
		case invalidJSON:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("tool %q: the arguments are not a JSON object: %q. Call the tool again with a JSON object that matches its schema.", c.Name, bad))
		case !ok:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("unknown tool %q; available tools: %s", c.Name, ts.names()))
		case t.schema != nil && t.schema.Validate(c.Arguments) != nil:
			blocks[i] = errorResult(c.ID, fmt.Sprintf("tool %q: %v. Fix the arguments and call it again.", c.Name, t.schema.Validate(c.Arguments)))
		case t.NeedsApproval:
			req := message.ApprovalRequestBlock{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Node: n.name}
			blocks[i] = req
			in.Run.Emit(graph.Event{Type: EventApprovalRequested, Data: req})
			traceApproval(ctx, "approval requested", c.ID, c.Name, nil, "")
		default:
			jobs = append(jobs, job{i, t})
		}
	}
	if err := n.runJobs(ctx, in.Run, calls, jobs, blocks); err != nil {
		return graph.Update{}, err
	}
	var content []message.Block
	var its []graph.Interrupt
	for _, b := range blocks {
		switch b := b.(type) {
		case nil:
			continue
		case message.ApprovalRequestBlock:
			// Not in the thread: the request is the interrupt itself, and
			// the call's result comes once it is answered.
			raw, _ := message.MarshalBlock(b)
			its = append(its, graph.Interrupt{ID: b.ID, Value: raw})
			continue
		case message.RemoteToolCallBlock:
			raw, _ := message.MarshalBlock(b)
			its = append(its, graph.Interrupt{ID: b.ID, Value: raw, Deadline: b.ExpiresAt})
		}
		content = append(content, b)
	}
	var u graph.Update
	if len(content) > 0 {
		u.Messages = []message.Message{{Role: message.RoleTool, Content: content}}
	}
	u.Interrupts = its
	return u, nil
}

type job struct {
	i    int
	tool *Tool
}

// runJobs makes the calls of jobs, concurrently when there are several,
// and puts each result at its index in blocks.
//
// A call to the in-process bridge only judges the arguments and answers at
// once, so it runs on this goroutine, ahead of the one other call made
// here (the rest get goroutines of their own, started first): a goroutine
// of its own would cost more than the call (starting one wakes another
// thread, which was about a fifth of an embedded pause's CPU), and a step
// with one server call and remote calls then starts none.
func (n *Node) runJobs(ctx context.Context, r *graph.Run, calls []message.ToolCallBlock, jobs []job, blocks []message.Block) error {
	switch len(jobs) {
	case 0:
		return nil
	case 1:
		b, err := n.call(ctx, r, jobs[0].tool, calls[jobs[0].i])
		blocks[jobs[0].i] = b
		return err
	}
	errs := make([]error, len(jobs))
	call := func(k int) {
		j := jobs[k]
		blocks[j.i], errs[k] = n.call(ctx, r, j.tool, calls[j.i])
	}
	var wg sync.WaitGroup
	here := -1 // the one call that blocks and runs on this goroutine
	for k, j := range jobs {
		if _, inline := j.tool.provider.(*remote.Bridge); inline {
			continue
		}
		// The first such call runs on this goroutine, whose stack has
		// grown already: a new goroutine's grows (is copied) on the way
		// down to the plugin.
		if here < 0 {
			here = k
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			call(k)
		}()
	}
	for k, j := range jobs {
		if _, inline := j.tool.provider.(*remote.Bridge); inline {
			call(k)
		}
	}
	if here >= 0 {
		call(here)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// resume turns the answers to the node's interrupts into the thread's tool
// messages, one per answer, in call order: a remote result as the client
// sent it; an approved call's result, the call made now with the arguments
// the model gave; a denied call's error result carrying the reason.
func (n *Node) resume(ctx context.Context, in *graph.Input) (graph.Update, error) {
	calls := lastCalls(in.State.Messages)
	byID := make(map[string]int, len(calls))
	for i, c := range calls {
		byID[c.ID] = i
	}
	ids := make([]string, len(in.Interrupts))
	for k, it := range in.Interrupts {
		ids[k] = it.ID
	}
	answered := n.answeredAmong(in, ids)
	blocks := make([]message.Block, len(in.Interrupts))
	var approved []message.ToolCallBlock
	var approvedAt []int
	for k, it := range in.Interrupts {
		a := in.Resume[it.ID]
		if a.Expired {
			if _, done := answered[it.ID]; !done {
				blocks[k] = n.expiredResult(ctx, in, it, calls, byID)
			}
			continue
		}
		b, err := a.Block()
		if err != nil {
			return graph.Update{}, fmt.Errorf("tool node %q: answer to %q: %w", n.name, it.ID, err)
		}
		if _, done := answered[it.ID]; done {
			continue // already in the thread: never twice
		}
		switch b := b.(type) {
		case message.ToolResultBlock:
			blocks[k] = b
		case message.ApprovalBlock:
			i, ok := byID[it.ID]
			switch {
			case !ok:
				blocks[k] = errorResult(it.ID, "the call to approve is no longer in the thread")
			case !b.Approved:
				traceApproval(ctx, "approval denied", it.ID, calls[i].Name, &b.Approved, b.Reason)
				msg := fmt.Sprintf("the call to tool %q was denied by the person asked to approve it; it did not run", calls[i].Name)
				if b.Reason != "" {
					msg += ". Reason: " + b.Reason
				}
				blocks[k] = errorResult(it.ID, msg)
			default:
				traceApproval(ctx, "approval granted", it.ID, calls[i].Name, &b.Approved, b.Reason)
				approved = append(approved, calls[i])
				approvedAt = append(approvedAt, k)
			}
		default:
			return graph.Update{}, fmt.Errorf("tool node %q: answer to %q is a %s block", n.name, it.ID, b.BlockType())
		}
	}
	if len(approved) > 0 {
		ts, err := n.ToolSet(ctx, in.Run)
		if err != nil {
			return graph.Update{}, err
		}
		var jobs []job
		for j, c := range approved {
			t, ok := ts.lookup(c.Name)
			if !ok {
				blocks[approvedAt[j]] = errorResult(c.ID, fmt.Sprintf("tool %q was approved but the node no longer has it; available tools: %s", c.Name, ts.names()))
				continue
			}
			jobs = append(jobs, job{j, t})
		}
		results := make([]message.Block, len(approved))
		if err := n.runJobs(ctx, in.Run, approved, jobs, results); err != nil {
			return graph.Update{}, err
		}
		for j, b := range results {
			if b != nil {
				blocks[approvedAt[j]] = b
			}
		}
	}
	var u graph.Update
	for k, b := range blocks {
		if b == nil {
			continue
		}
		u.Messages = append(u.Messages, message.Message{ID: in.Resume[in.Interrupts[k].ID].MessageID, Role: message.RoleTool, Content: []message.Block{b}})
	}
	return u, nil
}

// expiredResult is the error result of a remote call the client did not
// answer in time (graph.Answer.Expired), naming the timeout of its tool.
func (n *Node) expiredResult(ctx context.Context, in *graph.Input, it graph.Interrupt, calls []message.ToolCallBlock, byID map[string]int) message.ToolResultBlock {
	within, ev := "the time allowed", RemoteCallExpired{Node: n.name, ID: it.ID}
	if i, ok := byID[it.ID]; ok {
		var t *Tool
		if ts, err := n.ToolSet(ctx, in.Run); err == nil {
			t, _ = ts.lookup(calls[i].Name)
		}
		ev.Name, ev.Timeout = calls[i].Name, n.timeout(t)
		within = ev.Timeout.String()
	}
	in.Run.Emit(graph.Event{Type: EventRemoteCallExpired, Data: ev})
	return errorResult(it.ID, fmt.Sprintf("the client did not answer within %s, so the call expired; its result is unknown (it may or may not have run). Carry on without it, or call the tool again if it is still needed.", within))
}

// CheckAnswer implements graph.AnswerChecker: a remote call is answered by
// a tool_result, an approval request by an approval.
func (n *Node) CheckAnswer(threadID string, it graph.Interrupt, a graph.Answer) error {
	asked, err := it.Block()
	if err != nil {
		return nil // not the node's kind of interrupt: nothing to judge
	}
	got, err := a.Block()
	if err != nil {
		return fmt.Errorf("%w: answer to %q: %v", graph.ErrInvalidInput, it.ID, err)
	}
	want := ""
	switch asked.(type) {
	case message.RemoteToolCallBlock:
		want = message.TypeToolResult
	case message.ApprovalRequestBlock:
		want = message.TypeApproval
	}
	if want != "" && got.BlockType() != want {
		return fmt.Errorf("%w: call %q waits for a %s block, not %s", graph.ErrInvalidInput, it.ID, want, got.BlockType())
	}
	return nil
}

// call runs one tool through its provider: a server tool runs; a remote
// tool goes to the bridge, which checks the arguments and defers the call to
// the client. A provider failing (as opposed to the tool reporting an error)
// still gives the model an error result naming the provider; only the run
// being cancelled fails the step, so that a cancelled run saves nothing
// half-done.
func (n *Node) call(ctx context.Context, r *graph.Run, t *Tool, c message.ToolCallBlock) (message.Block, error) {
	req := sdk.CallToolRequest{Name: c.Name, Arguments: c.Arguments, CallID: c.ID, ThreadID: r.ProviderThreadID()}
	if t.Kind != KindServer {
		req.RunTool = &t.Spec
	}
	ev := ToolEvent{Node: n.name, ID: c.ID, Name: c.Name, Provider: t.Provider}
	if t.Kind == KindServer {
		if r.Emitting() {
			r.Emit(graph.Event{Type: EventToolStarted, Data: ev})
		}
		if r.Listening() {
			ctx = sdk.WithProgress(ctx, func(p sdk.Progress) {
				r.Emit(graph.Event{Type: EventToolProgress, Data: ToolProgress{Node: n.name, ID: c.ID, Name: c.Name,
					Provider: t.Provider, Progress: p.Progress, Total: p.Total, Message: p.Message}})
			})
		}
	}
	start := time.Now()
	resp, err := t.provider.CallTool(ctx, req)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("tool %q: %w", c.Name, context.Cause(ctx))
	}
	var b message.Block
	switch content := resp.Content; {
	case err != nil:
		b = errorResult(c.ID, fmt.Sprintf("provider %q could not run tool %q: %v", t.Provider, c.Name, err))
	case resp.Deferred:
		// The deadline is whole milliseconds, as the store keeps WakeAt.
		expires := time.Now().Add(n.timeout(t)).UTC().Round(time.Millisecond)
		return message.RemoteToolCallBlock{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Node: n.name, ExpiresAt: expires}, nil
	case sdk.CheckAttachments(resp.Attachments) != nil:
		b = errorResult(c.ID, fmt.Sprintf("provider %q returned a result for tool %q with attachments the host refuses: %v", t.Provider, c.Name, sdk.CheckAttachments(resp.Attachments)))
	case len(content) == 0:
		b = message.ToolResultBlock{ToolCallID: c.ID, Content: json.RawMessage("null"), IsError: resp.IsError, Attachments: media(resp.Attachments)}
	case strictjson.Check(content) != nil:
		// The thread must read back from the store, whose messages are
		// read strictly (no key twice, at most strictjson.MaxDepth deep).
		b = errorResult(c.ID, fmt.Sprintf("provider %q returned a result for tool %q that is not valid JSON: %v", t.Provider, c.Name, strictjson.Check(content)))
	default:
		b = message.ToolResultBlock{ToolCallID: c.ID, Content: content, IsError: resp.IsError, Attachments: media(resp.Attachments)}
	}
	if t.Kind == KindServer && r.Emitting() {
		ev.IsError, ev.Duration = b.(message.ToolResultBlock).IsError, time.Since(start)
		r.Emit(graph.Event{Type: EventToolFinished, Data: ev})
	}
	return b, nil
}

// newAnswered keeps, per thread, the ids of the calls a tool_result
// answers, so that a step reads only the messages added since the last.
func newAnswered() *memo.Fold[map[string]bool] {
	return &memo.Fold[map[string]bool]{
		New: func() map[string]bool { return map[string]bool{} },
		Add: func(answered map[string]bool, m message.Message) {
			for _, b := range m.Content {
				if r, ok := b.(message.ToolResultBlock); ok {
					answered[r.ToolCallID] = true
				}
			}
		},
	}
}

// answeredAmong returns which of the calls ids a result in the thread
// answers.
func (n *Node) answeredAmong(in *graph.Input, ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	n.answered.With(in.Run.Key(), in.State.Messages, func(answered map[string]bool) {
		for _, id := range ids {
			if answered[id] {
				out[id] = true
			}
		}
	})
	return out
}

// media turns a provider's attachments, checked with sdk.CheckAttachments,
// into the result's media blocks, their bytes as Data: the host stores
// them when the run saves, and the thread keeps references. The kind
// follows the media type: image/* an image, audio/* a sound, anything
// else a file. The type is written as mime.FormatMediaType writes it
// (lower case), so the kind and the stored type agree.
func media(atts []sdk.Attachment) []message.MediaBlock {
	if len(atts) == 0 {
		return nil
	}
	out := make([]message.MediaBlock, len(atts))
	for i, a := range atts {
		mt, params, _ := mime.ParseMediaType(a.MimeType) // checked: it parses
		kind := message.TypeFile
		switch {
		case strings.HasPrefix(mt, "image/"):
			kind = message.TypeImage
		case strings.HasPrefix(mt, "audio/"):
			kind = message.TypeAudio
		}
		out[i] = message.MediaBlock{Kind: kind, MimeType: cmp.Or(mime.FormatMediaType(mt, params), a.MimeType), Filename: a.Filename, Data: a.Data}
	}
	return out
}

func errorResult(id, msg string) message.ToolResultBlock {
	raw, _ := json.Marshal(msg) // strings always encode
	return message.ToolResultBlock{ToolCallID: id, Content: raw, IsError: true}
}

// traceApproval records an approval's request or decision as an event of
// the node's span, when the run is traced.
func traceApproval(ctx context.Context, what, callID, tool string, approved *bool, reason string) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.tool.call.id", callID), attribute.String("gen_ai.tool.name", tool)}
	if approved != nil {
		attrs = append(attrs, attribute.Bool("tenxgraph.approval.approved", *approved))
	}
	if reason != "" {
		attrs = append(attrs, attribute.String("tenxgraph.approval.reason", reason))
	}
	span.AddEvent(what, trace.WithAttributes(attrs...))
}
