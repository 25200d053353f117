package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenxgraph/tenxgraph/host/message"
	"github.com/tenxgraph/tenxgraph/host/telemetry"
)

// Run runs the graph once on a thread, from st.Latest, until it completes,
// pauses or fails. A failure is saved too (the thread then holds the state
// before the failing step), so that calling the thread again without input
// retries that step.
func (c *Compiled) Run(ctx context.Context, st *Start) (Result, error) {
	r := &Run{ThreadID: st.ThreadID, Tenant: st.Tenant, RunID: st.RunID, key: st.Key, incarnation: st.Incarnation,
		tail: st.Tail, emit: st.Emit, listening: st.Listening, blobs: st.Blobs}
	defer func() { st.Tail = r.tail }()
	r.traceparent = traceparentOf(ctx)
	if r.traceparent != "" {
		defer traceSteps(ctx, r)
	}
	s, err := c.begin(st)
	if err != nil {
		return Result{}, err
	}
	if s.idle {
		return Result{}, ErrNothingDue
	}
	if s.resumed {
		linkPause(ctx, s.pause.Trace)
	}
	r.configurable = s.configurable
	r.prior = len(s.state.Messages)
	for _, name := range c.g.order {
		if rc, ok := c.g.nodes[name].(RunChecker); ok {
			if err := rc.CheckRun(ctx, r); err != nil {
				return Result{}, err
			}
		}
	}
	w := writer{saver: st.Saver, run: r, configurable: s.configurable, pause: s.pause}
	if r.Emitting() {
		r.Emit(Event{Type: EventRunStarted, Data: RunStarted{ThreadID: r.ThreadID, RunID: r.RunID, Resumed: s.resumed}})
	}
	if s.replay {
		// The run that recorded the outcome answers.
		return resultOf(r.ThreadID, st.Latest.RunID, r.prior, s.state, StatusCompleted, &st.Latest.pause), nil
	}

	state := s.state
	if len(s.appended) > 0 {
		state.Messages = c.appendMessages(r, state.Messages, s.appended)
	}
	// The input is saved with the first super-step's checkpoint (or with
	// the failure's, if that step fails), not on its own: one write fewer
	// per run. A crash before then loses only input the client was never
	// told was accepted, and resending it is safe (answers are
	// idempotent). Input that no step follows is saved now.
	if (len(s.appended) > 0 || s.answered) && (s.stillPaused || len(s.next) == 0 && !s.resume) {
		status := StatusInterrupted
		if !s.stillPaused {
			status = StatusCompleted
		}
		if err := w.put(ctx, state, s.next, status); err != nil {
			return Result{}, err
		}
	}
	if s.stillPaused {
		return resultOf(r.ThreadID, r.RunID, r.prior, state, StatusInterrupted, &w.pause), nil
	}

	next := s.next
	if s.resume {
		// Every interrupt is answered: the nodes that asked run again with
		// their answers, as the rest of their step, and routing starts from
		// that step.
		if err := ctx.Err(); err != nil {
			return Result{}, w.fail(ctx, state, next, fmt.Errorf("thread %q: run cancelled: %w", r.ThreadID, context.Cause(ctx)))
		}
		r.Step++
		sctx, sspan := traceStep(ctx, r, w.pause.Step, true)
		ran, updates, err := c.resumeStep(sctx, r, st.Saver, state, w.pause)
		if err != nil {
			telemetry.EndSpan(sspan, err)
			return Result{}, w.fail(ctx, state, next, err)
		}
		done, res, err := c.finishStep(sctx, r, &w, state, ran, updates, w.pause.Step)
		telemetry.EndSpan(sspan, err)
		if done || err != nil {
			return res.Result, err
		}
		state, next = res.state, res.next
	}
	for len(next) > 0 {
		if err := ctx.Err(); err != nil {
			return Result{}, w.fail(ctx, state, next, fmt.Errorf("thread %q: run cancelled: %w", r.ThreadID, context.Cause(ctx)))
		}
		r.Step++
		if r.Step > c.stepLimit {
			err := fmt.Errorf("thread %q: %w: %d super-steps without reaching END; the graph is probably looping (raise the limit if it is not)", r.ThreadID, ErrStepLimit, c.stepLimit)
			return Result{}, w.fail(ctx, state, next, err)
		}
		sctx, sspan := traceStep(ctx, r, next, false)
		updates, err := c.step(sctx, r, &w, state, next)
		if err != nil {
			telemetry.EndSpan(sspan, err)
			return Result{}, w.fail(ctx, state, next, err)
		}
		done, res, err := c.finishStep(sctx, r, &w, state, next, updates, next)
		telemetry.EndSpan(sspan, err)
		if done || err != nil {
			return res.Result, err
		}
		state, next = res.state, res.next
	}
	return resultOf(r.ThreadID, r.RunID, r.prior, state, StatusCompleted, &w.pause), nil
}

// stepped is the state and next nodes after a step that did not pause.
type stepped struct {
	Result
	state State
	next  []string
}

// resumeStep runs each node that raised the answered interrupts again, with
// its answers, and returns the nodes and their updates in graph order.
func (c *Compiled) resumeStep(ctx context.Context, r *Run, sv Saver, state State, p pause) ([]string, []Update, error) {
	byNode := map[string][]Interrupt{}
	for _, it := range p.Interrupts {
		byNode[it.Node] = append(byNode[it.Node], it)
	}
	var ran []string
	for _, name := range c.g.order {
		if len(byNode[name]) > 0 {
			ran = append(ran, name)
		}
	}
	for name := range byNode {
		if c.g.nodes[name] == nil {
			return nil, nil, fmt.Errorf("thread %q: interrupt of node %q, which the graph no longer has", r.ThreadID, name)
		}
	}
	updates := make([]Update, len(ran))
	errs := runAll(ran, func(i int) error {
		its := byNode[ran[i]]
		answers := make(map[string]Answer, len(its))
		for _, it := range its {
			answers[it.ID] = p.Answers[it.ID]
		}
		var err error
		updates[i], err = c.runNode(ctx, r, sv, &Input{State: state, Run: r, Node: ran[i], Resume: answers, Interrupts: its})
		return err
	})
	return ran, updates, errors.Join(errs...)
}

// step runs the active nodes of one super-step, concurrently when there
// are several, and returns their updates in the order of next. A node whose
// update the failed try of this step kept (pending writes) does not run
// again. When a node fails, the updates of those that finished are kept in
// w, for the failure's checkpoint.
func (c *Compiled) step(ctx context.Context, r *Run, w *writer, state State, next []string) ([]Update, error) {
	updates := make([]Update, len(next))
	kept, sv := w.pause.Writes, w.saver
	errs := runAll(next, func(i int) error {
		if wu, ok := kept[next[i]]; ok {
			updates[i] = Update(wu)
			return nil
		}
		var err error
		updates[i], err = c.runNode(ctx, r, sv, &Input{State: state, Run: r, Node: next[i]})
		return err
	})
	if err := errors.Join(errs...); err != nil {
		writes := map[string]wireUpdate{}
		for i, e := range errs {
			if e == nil {
				writes[next[i]] = wireUpdate(updates[i])
			}
		}
		if len(writes) == 0 {
			writes = nil
		}
		w.pause.Writes = writes
		return nil, err
	}
	return updates, nil
}

// runAll calls f for each of nodes, concurrently when there are several,
// and returns each call's error.
func runAll(nodes []string, f func(i int) error) []error {
	errs := make([]error, len(nodes))
	if len(nodes) == 1 {
		errs[0] = f(0)
		return errs
	}
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errs
}

// runNode runs one node and has sv admit its update.
func (c *Compiled) runNode(ctx context.Context, r *Run, sv Saver, in *Input) (Update, error) {
	if r.Emitting() {
		r.Emit(Event{Type: EventNodeStarted, Data: NodeEvent{Node: in.Node, Step: r.Step}})
	}
	nctx, span := traceNode(ctx, r, in.Node)
	u, err := c.g.nodes[in.Node].Run(nctx, in)
	telemetry.EndSpan(span, err)
	if err == nil {
		u, err = sv.Admit(ctx, in.Node, u)
	}
	if err != nil {
		return Update{}, fmt.Errorf("node %q: %w", in.Node, err)
	}
	if r.Emitting() {
		r.Emit(Event{Type: EventNodeFinished, Data: NodeEvent{Node: in.Node, Step: r.Step}})
	}
	return u, nil
}

// finishStep applies a step's updates (ran[i] returned updates[i]), routes
// from the nodes of from, saves the checkpoint and, when the step paused,
// returns done with the run's result.
func (c *Compiled) finishStep(ctx context.Context, r *Run, w *writer, state State, ran []string, updates []Update, from []string) (bool, stepped, error) {
	interrupt := false
	var its []Interrupt
	seen := map[string]bool{}
	for i, u := range updates {
		state = c.apply(r, state, u)
		interrupt = interrupt || u.Interrupt || c.interruptAfter[ran[i]]
		for _, it := range u.Interrupts {
			if it.ID == "" || seen[it.ID] {
				err := fmt.Errorf("thread %q: node %q: interrupt id %q is empty or used twice in one step", r.ThreadID, ran[i], it.ID)
				return true, stepped{}, w.fail(ctx, state, nil, err)
			}
			seen[it.ID] = true
			it.Node = ran[i]
			if it.memo == nil {
				it.memo = new(blockMemo) // read by the result, then by the answers' checks
			}
			its = append(its, it)
		}
	}
	next, err := c.route(state, from)
	if err != nil {
		return true, stepped{}, w.fail(ctx, state, nil, err)
	}
	if len(its) > 0 {
		interrupt = true
	}
	if w.pause.Interrupts != nil || w.pause.Answers != nil {
		// The answered pause is over; its answers stay known for a retry.
		w.pause.Resolved = w.pause.Answers
	}
	w.pause.Interrupts, w.pause.Answers, w.pause.Writes, w.pause.Step = its, nil, nil, nil
	if interrupt {
		w.pause.Step = from
	}
	status := StatusRunning
	switch {
	case interrupt:
		status = StatusInterrupted
	case len(next) == 0:
		status = StatusCompleted
	}
	// The step finished: it is saved even if the run is being cancelled,
	// so that its work is never done again.
	if err := w.put(context.WithoutCancel(ctx), state, next, status); err != nil {
		return true, stepped{}, err
	}
	if interrupt {
		res := resultOf(r.ThreadID, r.RunID, r.prior, state, StatusInterrupted, &w.pause)
		r.Emit(Event{Type: EventInterrupted, Data: Interrupted{RemoteToolCalls: res.RemoteToolCalls,
			ApprovalRequests: res.ApprovalRequests, Interrupts: res.Interrupts}})
		return true, stepped{Result: res}, nil
	}
	return false, stepped{state: state, next: next}, nil
}

// apply adds an update to the state without touching the previous state's
// backing arrays, which nodes of the step may still hold.
func (c *Compiled) apply(r *Run, s State, u Update) State {
	if len(u.Messages) > 0 {
		s.Messages = c.appendMessages(r, s.Messages, u.Messages)
	}
	if len(u.Values) > 0 {
		out := make(map[string]json.RawMessage, len(s.Values)+len(u.Values))
		for k, v := range s.Values {
			out[k] = v
		}
		for k, v := range u.Values {
			out[k] = v
		}
		s.Values = out
	}
	return s
}

// appendMessages returns msgs with add appended, in place when msgs is
// what the run's last append returned, or the thread as the run took it
// over with the array it is in (Run.tail): the run then writes past all
// it has handed out, in an array only it writes. Otherwise it copies msgs
// once, with room to grow. The result's capacity is its length, so a node
// or anyone else appending to a state copies it, and no state handed out
// ever changes. A run's appends thus cost what they add, not the thread's
// length, and a thread's messages stay in one array from run to run, which
// the memos over them recognise at once (message.SamePrefix).
//
// The room is a few messages (growRoom), enough for a turn's: the array
// outlives the run in the runtime's thread cache, room and all, for every
// thread it keeps, and appending past it grows the array as append does,
// in proportion to the thread.
func (c *Compiled) appendMessages(r *Run, msgs, add []message.Message) []message.Message {
	out := r.tail
	if !SameArray(out, msgs) {
		out = make([]message.Message, len(msgs), len(msgs)+len(add)+growRoom)
		copy(out, msgs)
	}
	var named map[string]string // the calls of add by the ids they came with
	for _, m := range add {
		if m.ID == "" {
			m.ID = r.RunID[:12] + "-" + strconv.Itoa(len(out))
		}
		m, named = r.nameCalls(m, len(out), named)
		out = append(out, m)
		if r.Emitting() {
			r.Emit(Event{Type: EventMessage, Data: m})
		}
	}
	r.tail = out
	return out[:len(out):len(out)]
}

// growRoom is the room for messages appendMessages leaves past those it
// copies.
const growRoom = 4

// SameArray reports whether a and b are the same messages, in one place of
// one array: what a run's tail is checked against (Start.Tail).
func SameArray(a, b []message.Message) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// nameCalls gives each tool call of m, the message at index at of the
// thread, the id callID makes, whatever id it came with: models reuse ids
// ("call_0", "call_1_0") on every turn and in every thread, and a thread
// deleted and created again starts its turns again, so ids a model gives
// are not unique, and a result sent for an old call would answer a new one.
// A block of the same update that names a call by the id it came with (a
// node that returns a call with its result) is renamed with it; named
// maps those ids, and is returned grown. The content is copied, never
// changed in place.
func (r *Run) nameCalls(m message.Message, at int, named map[string]string) (message.Message, map[string]string) {
	copied := false
	set := func(i int, b message.Block) {
		if !copied {
			m.Content = append([]message.Block(nil), m.Content...)
			copied = true
		}
		m.Content[i] = b
	}
	for i, b := range m.Content {
		switch b := b.(type) {
		case message.ToolCallBlock:
			id := r.callID(at, i)
			if named == nil {
				named = map[string]string{}
			}
			named[b.ID] = id
			b.ID = id
			set(i, b)
		case message.ToolResultBlock:
			if id, ok := named[b.ToolCallID]; ok {
				b.ToolCallID = id
				set(i, b)
			}
		case message.RemoteToolCallBlock:
			if id, ok := named[b.ID]; ok {
				b.ID = id
				set(i, b)
			}
		case message.ApprovalRequestBlock:
			if id, ok := named[b.ID]; ok {
				b.ID = id
				set(i, b)
			}
		}
	}
	return m, named
}

// callID is the id of the tool call at block b of the message at index m
// of the thread: "call_", up to 8 characters of the thread's incarnation
// and 8 of the run's id, then m and b. The incarnation's part differs from
// every earlier life of the thread (one deleted and created again under
// its id), so a result sent for a call of an old life answers no call of
// the new one and is refused; the run's part makes it differ from every
// other run's (a thread written before leases, without an incarnation,
// relies on it alone); the position, from every other call of the run.
// It is short and of letters, digits and underscores, as every model
// provider accepts (OpenAI allows 40 characters; Anthropic, only those).
func (r *Run) callID(m, b int) string {
	inc := r.incarnation[:min(8, len(r.incarnation))]
	return "call_" + inc + r.RunID[:8] + "_" + strconv.Itoa(m) + "_" + strconv.Itoa(b)
}

// route picks the next nodes from the edges of the nodes that just ran,
// keeping first-seen order and dropping END.
func (c *Compiled) route(state State, ran []string) ([]string, error) {
	var next []string
	seen := map[string]bool{}
	add := func(from string, tos []string) error {
		for _, to := range tos {
			if to == END || seen[to] {
				continue
			}
			if c.g.nodes[to] == nil {
				return fmt.Errorf("router of node %q returned unknown node %q", from, to)
			}
			seen[to] = true
			next = append(next, to)
		}
		return nil
	}
	for _, n := range ran {
		if rs, ok := c.g.routers[n]; ok {
			if err := add(n, rs.route(state)); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(n, c.g.edges[n]); err != nil {
			return nil, err
		}
	}
	return next, nil
}

// writer hands a run's checkpoints to its Saver.
type writer struct {
	saver        Saver
	run          *Run
	configurable map[string]json.RawMessage
	// pause is the interrupt bookkeeping saved with every checkpoint.
	pause pause
}

// put saves the run's next checkpoint: the state, the nodes to run next
// and the status.
func (w *writer) put(ctx context.Context, s State, next []string, status Status) error {
	if status == StatusInterrupted {
		w.pause.Trace = w.run.traceparent // the run resuming this pause links to this one
	}
	return w.saver.Save(ctx, Saved{State: s, Status: status, Next: next, Step: w.run.Step, RunID: w.run.RunID,
		Configurable: w.configurable, pause: w.pause})
}

// fail records that the run stopped on err with the state before the failing
// step, so that calling the thread again without input retries that step. A
// run whose context was cancelled, whatever the cause, is recorded as
// cancelled rather than failed: the thread never stays "running" without a
// run. The record is saved even though ctx is done, with a bound of its
// own.
func (w *writer) fail(ctx context.Context, s State, next []string, err error) error {
	status := StatusFailed
	if ctx.Err() != nil {
		status = StatusCancelled
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	if perr := w.put(wctx, s, next, status); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

// RecordTimeout bounds saving what records how a run ended when the run's
// own context is already done.
const RecordTimeout = 10 * time.Second

// A run's spans, while tracing is on (telemetry.Enabled), below the run's
// own (the runtime's, in ctx): each super-step and each node. A run that
// resumes a pause links to the run that paused, whose trace context the
// pause keeps. Off, none of this is started, and a run costs what it did.

// traceparentOf is the W3C trace context of the run's span in ctx, "" when
// it is not traced.
func traceparentOf(ctx context.Context) string {
	if !telemetry.Enabled() || !trace.SpanFromContext(ctx).IsRecording() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// traceSteps records on the run's span how many super-steps it ran.
func traceSteps(ctx context.Context, r *Run) {
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("tenxgraph.run.steps", r.Step))
}

// linkPause links a resuming run's span to the run that paused.
func linkPause(ctx context.Context, traceparent string) {
	span := trace.SpanFromContext(ctx)
	if traceparent == "" || !span.IsRecording() {
		return
	}
	pctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
		span.AddLink(trace.Link{SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("tenxgraph.link", "paused_run")}})
		span.SetAttributes(attribute.Bool("tenxgraph.run.resumed", true))
	}
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
