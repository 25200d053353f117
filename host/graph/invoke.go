package graph

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tenxgraph/tenxgraph/host/checkpoint"
	"github.com/tenxgraph/tenxgraph/host/message"
)

// Invoke runs the graph on cfg.ThreadID with input and returns when the run
// completes or pauses. To resume a paused thread, send a tool message with
// answer blocks (tool_result, approval) for the pending interrupts, or set
// RunConfig.Resume.
func (a *App) Invoke(ctx context.Context, input []message.Message, cfg RunConfig) (Result, error) {
	return a.run(ctx, input, cfg, nil)
}

// Stream is Invoke reporting progress. The last event of a run that did not
// fail is EventEnd carrying the Result; a failure is yielded as an error
// instead. Stopping the iteration early cancels the run.
func (a *App) Stream(ctx context.Context, input []message.Message, cfg RunConfig) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := make(chan Event, 64)
		var res Result
		var err error
		go func() {
			defer close(ch)
			res, err = a.run(ctx, input, cfg, func(e Event) {
				select {
				case ch <- e:
				case <-ctx.Done():
				}
			})
		}()
		for e := range ch {
			if !yield(e, nil) {
				cancel()
				for range ch { // let the run finish unwinding
				}
				return
			}
		}
		if err != nil {
			yield(Event{}, err)
			return
		}
		yield(Event{Type: EventEnd, Data: res}, nil)
	}
}

func (a *App) run(ctx context.Context, input []message.Message, cfg RunConfig, emit func(Event)) (res Result, err error) {
	key, err := keyOf("config.thread_id", cfg.Tenant, cfg.ThreadID)
	if err != nil {
		return Result{}, err
	}
	durability := cmp.Or(cfg.Durability, a.durability)
	if err := durability.Check(); err != nil {
		return Result{}, invalid("config.durability: %v", err)
	}
	r := &Run{ThreadID: cfg.ThreadID, Tenant: cfg.Tenant, RunID: a.idGen(), key: key, emit: emit, listening: emit != nil, store: a.cp}
	if obs := a.observer; obs != nil {
		if emit == nil {
			r.emit = obs
		} else {
			r.emit = func(e Event) { obs(e); emit(e) }
		}
	}
	ctx, span := traceRun(ctx, r)
	if span != nil {
		defer func() { endRun(span, r, res, err) }()
	}
	// The claim comes before anything is read or run: a second run of the
	// thread, in this process or another, is refused here, having done
	// nothing. A resume waits for the run in progress instead, as it may
	// be a retry of that run's answers (see take).
	claim := traceClaim(ctx)
	ctx, h, err := a.take(ctx, key, answersOnly(input, cfg))
	endSpan(claim, err)
	if err != nil {
		return Result{}, err
	}
	defer a.release(ctx, h)
	r.incarnation = h.lease.Incarnation

	latest, prev, err := a.load(ctx, key, h)
	if err != nil {
		return Result{}, err
	}
	// The thread is the run's: so is the array its messages are in, with
	// room to grow, when the previous run on the thread handed it over
	// (see appendMessages). The run hands the array it appended to over to
	// the next run when it ends, if it saved all it appended (and after
	// its last write, deferred below).
	r.tail = a.cache.takeTail(key, prev.Messages)
	defer func() { a.cache.giveTail(key, r.tail) }()
	// The input's media are taken in once the thread is the run's: a blob
	// source names a blob the thread holds, which nothing else changes
	// meanwhile. Nothing is stored yet; the first checkpoint carries them.
	if err := checkInput(input); err != nil {
		return Result{}, err
	}
	in := a.newIngester(r)
	if input, err = in.messages(ctx, input, "messages", false); err != nil {
		return Result{}, err
	}
	if cfg.Resume, err = in.resume(ctx, cfg.Resume); err != nil {
		return Result{}, err
	}
	s, err := a.begin(latest, prev, input, cfg)
	if err != nil {
		return Result{}, err
	}
	if s.idle {
		return Result{}, errNothingDue
	}
	if s.resumed {
		linkPause(span, s.pause.Trace)
	}
	r.RemoteTools = s.runTools
	r.prior = len(s.state.Messages)
	for _, name := range a.g.order {
		if c, ok := a.g.nodes[name].(RunChecker); ok {
			if err := c.CheckRun(ctx, r); err != nil {
				return Result{}, err
			}
		}
	}
	w := writer{app: a, run: r, hold: h, lease: h.lease, meta: cfg.Metadata, runTools: s.runTools, pause: s.pause, logged: prev.logged, logBytes: prev.logBytes,
		atExit: durability == DurabilityExit, async: durability == DurabilityAsync}
	if latest != nil {
		w.seq, w.meta = latest.Seq, latest.Metadata
	}
	// Every path that returns after an asynchronous write writes again,
	// which waits for it; this only keeps a write from outliving the run
	// (and its lease, let go by release) on any other.
	defer w.settle() //nolint:errcheck // see above
	r.Emit(Event{Type: EventRunStarted, Data: RunStarted{ThreadID: r.ThreadID, RunID: r.RunID, Resumed: s.resumed}})
	if s.replay {
		res := a.result(r, s.state, StatusCompleted, prev.pause)
		res.RunID = latest.RunID // the run that recorded the outcome
		return res, nil
	}

	state := s.state
	if len(s.appended) > 0 {
		state.Messages = a.appendMessages(r, state.Messages, s.appended)
	}
	// The input is saved with the first super-step's checkpoint (or with
	// the failure's, if that step fails), not on its own: one write fewer
	// per run. A crash before then loses only input the client was never
	// told was accepted, and resending it is safe (answers are
	// idempotent). Input that no step follows is saved now.
	if (len(s.appended) > 0 || s.answered) && (s.stillPaused || len(s.next) == 0 && !s.resume) {
		status := checkpoint.StatusInterrupted
		if !s.stillPaused {
			status = checkpoint.StatusCompleted
		}
		if err := w.put(ctx, state, s.next, status); err != nil {
			return Result{}, err
		}
	}
	if s.stillPaused {
		return a.result(r, state, StatusInterrupted, w.pause), nil
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
		ran, updates, err := a.resumeStep(sctx, r, state, w.pause)
		if err != nil {
			endSpan(sspan, err)
			return Result{}, w.fail(ctx, state, next, err)
		}
		done, res, err := a.finishStep(sctx, r, &w, state, ran, updates, w.pause.Step)
		endSpan(sspan, err)
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
		if r.Step > a.stepLimit {
			err := fmt.Errorf("thread %q: %w: %d super-steps without reaching END; the graph is probably looping (raise the limit if it is not)", r.ThreadID, ErrStepLimit, a.stepLimit)
			return Result{}, w.fail(ctx, state, next, err)
		}
		sctx, sspan := traceStep(ctx, r, next, false)
		updates, err := a.step(sctx, r, state, next, &w)
		if err != nil {
			endSpan(sspan, err)
			return Result{}, w.fail(ctx, state, next, err)
		}
		done, res, err := a.finishStep(sctx, r, &w, state, next, updates, next)
		endSpan(sspan, err)
		if done || err != nil {
			return res.Result, err
		}
		state, next = res.state, res.next
	}
	return a.result(r, state, StatusCompleted, w.pause), nil
}

// stepped is the state and next nodes after a step that did not pause.
type stepped struct {
	Result
	state State
	next  []string
}

// finishStep applies a step's updates (ran[i] returned updates[i]), routes
// from the nodes of from, saves the checkpoint and, when the step paused,
// returns done with the run's result.
func (a *App) finishStep(ctx context.Context, r *Run, w *writer, state State, ran []string, updates []Update, from []string) (bool, stepped, error) {
	interrupt := false
	var its []Interrupt
	seen := map[string]bool{}
	for i, u := range updates {
		state = a.apply(r, state, u)
		interrupt = interrupt || u.Interrupt || a.interruptAfter[ran[i]]
		for _, it := range u.Interrupts {
			if it.ID == "" || seen[it.ID] {
				err := fmt.Errorf("thread %q: node %q: interrupt id %q is empty or used twice in one step", r.ThreadID, ran[i], it.ID)
				return true, stepped{}, w.fail(ctx, state, nil, err)
			}
			seen[it.ID] = true
			it.Node = ran[i]
			its = append(its, it)
		}
	}
	next, err := a.route(state, from)
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
	status := checkpoint.StatusRunning
	switch {
	case interrupt:
		status = checkpoint.StatusInterrupted
	case len(next) == 0:
		status = checkpoint.StatusCompleted
	}
	// The step finished: it is saved even if the run is being cancelled,
	// so that its work is never done again. With DurabilityExit a step
	// the run goes on from is saved with the run's last checkpoint
	// instead (or its failure's: see fail).
	if status != checkpoint.StatusRunning || !w.atExit {
		if err := w.put(context.WithoutCancel(ctx), state, next, status); err != nil {
			return true, stepped{}, err
		}
	}
	if interrupt {
		res := a.result(r, state, StatusInterrupted, w.pause)
		r.Emit(Event{Type: EventInterrupted, Data: Interrupted{RemoteToolCalls: res.RemoteToolCalls,
			ApprovalRequests: res.ApprovalRequests, Interrupts: res.Interrupts}})
		return true, stepped{Result: res}, nil
	}
	return false, stepped{state: state, next: next}, nil
}

// resumeStep runs each node that raised the answered interrupts again, with
// its answers, and returns the nodes and their updates in graph order.
func (a *App) resumeStep(ctx context.Context, r *Run, state State, p pause) ([]string, []Update, error) {
	byNode := map[string][]Interrupt{}
	for _, it := range p.Interrupts {
		byNode[it.Node] = append(byNode[it.Node], it)
	}
	var ran []string
	for _, name := range a.g.order {
		if len(byNode[name]) > 0 {
			ran = append(ran, name)
		}
	}
	for name := range byNode {
		if a.g.nodes[name] == nil {
			return nil, nil, fmt.Errorf("thread %q: interrupt of node %q, which the graph no longer has", r.ThreadID, name)
		}
	}
	updates := make([]Update, len(ran))
	errs := a.runAll(ran, func(i int) error {
		its := byNode[ran[i]]
		answers := make(map[string]Answer, len(its))
		for _, it := range its {
			answers[it.ID] = p.Answers[it.ID]
		}
		u, err := a.runNode(ctx, r, &Input{State: state, Run: r, Node: ran[i], Resume: answers, Interrupts: its})
		if err == nil {
			u, err = a.ingestUpdate(ctx, r, ran[i], u)
		}
		updates[i] = u
		return err
	})
	return ran, updates, errors.Join(errs...)
}

// step runs the active nodes of one super-step, concurrently when there
// are several, and returns their updates in the order of next. A node whose
// update the failed try of this step kept (pending writes) does not run
// again. When a node fails, the updates of those that finished are kept in
// w, for the failure's checkpoint.
func (a *App) step(ctx context.Context, r *Run, state State, next []string, w *writer) ([]Update, error) {
	updates := make([]Update, len(next))
	kept := w.pause.Writes
	errs := a.runAll(next, func(i int) error {
		if wu, ok := kept[next[i]]; ok {
			updates[i] = wu.update()
			return nil
		}
		u, err := a.runNode(ctx, r, &Input{State: state, Run: r, Node: next[i]})
		if err == nil {
			u, err = a.ingestUpdate(ctx, r, next[i], u)
		}
		updates[i] = u
		return err
	})
	if err := errors.Join(errs...); err != nil {
		writes := map[string]wireUpdate{}
		for i, e := range errs {
			if e == nil {
				writes[next[i]] = toWire(updates[i])
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

func (a *App) runNode(ctx context.Context, r *Run, in *Input) (Update, error) {
	r.Emit(Event{Type: EventNodeStarted, Data: NodeEvent{Node: in.Node, Step: r.Step}})
	ctx, span := traceNode(ctx, r, in.Node)
	u, err := a.g.nodes[in.Node].Run(ctx, in)
	endSpan(span, err)
	if err != nil {
		return Update{}, fmt.Errorf("node %q: %w", in.Node, err)
	}
	r.Emit(Event{Type: EventNodeFinished, Data: NodeEvent{Node: in.Node, Step: r.Step}})
	return u, nil
}

// runAll calls f for each of nodes, concurrently when there are several,
// and returns each call's error.
func (a *App) runAll(nodes []string, f func(i int) error) []error {
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

// apply adds an update to the state without touching the previous state's
// backing arrays, which nodes of the step may still hold.
func (a *App) apply(r *Run, s State, u Update) State {
	if len(u.Messages) > 0 {
		s.Messages = a.appendMessages(r, s.Messages, u.Messages)
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
func (a *App) appendMessages(r *Run, msgs, add []message.Message) []message.Message {
	out := r.tail
	if !sameArray(out, msgs) {
		out = make([]message.Message, len(msgs), len(msgs)+len(add)+16)
		copy(out, msgs)
	}
	var named map[string]string // the calls of add by the ids they came with
	for _, m := range add {
		if m.ID == "" {
			m.ID = r.RunID[:12] + "-" + strconv.Itoa(len(out))
		}
		m, named = r.nameCalls(m, len(out), named)
		out = append(out, m)
		r.Emit(Event{Type: EventMessage, Data: m})
	}
	r.tail = out
	return out[:len(out):len(out)]
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
			m.Content = slices.Clone(m.Content)
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
func (a *App) route(state State, ran []string) ([]string, error) {
	var next []string
	seen := map[string]bool{}
	add := func(from string, tos []string) error {
		for _, to := range tos {
			if to == END || seen[to] {
				continue
			}
			if a.g.nodes[to] == nil {
				return fmt.Errorf("router of node %q returned unknown node %q", from, to)
			}
			seen[to] = true
			next = append(next, to)
		}
		return nil
	}
	for _, n := range ran {
		if rs, ok := a.g.routers[n]; ok {
			if err := add(n, rs.route(state)); err != nil {
				return nil, err
			}
			continue
		}
		if err := add(n, a.g.edges[n]); err != nil {
			return nil, err
		}
	}
	return next, nil
}

func (a *App) result(r *Run, s State, status Status, p pause) Result {
	res := Result{ThreadID: r.ThreadID, RunID: r.RunID, Status: status, Messages: s.Messages,
		RemoteToolCalls: []message.RemoteToolCallBlock{}, Values: s.Values, Prior: min(r.prior, len(s.Messages))}
	if status == StatusInterrupted {
		res.Interrupts = p.unanswered()
		res.RemoteToolCalls, res.ApprovalRequests = blocksOf(res.Interrupts)
		if len(res.ApprovalRequests) == 0 {
			res.ApprovalRequests = nil
		}
	}
	return res
}

// writer appends a run's checkpoints.
type writer struct {
	app      *App
	run      *Run
	hold     *hold
	lease    checkpoint.Lease
	seq      int64
	meta     map[string]string
	runTools []json.RawMessage
	// pause is the interrupt bookkeeping saved with every checkpoint.
	pause pause
	// logged and logBytes: the thread's log as of the latest checkpoint
	// (wireState's).
	logged   int
	logBytes int64
	// atExit: the run's durability is DurabilityExit, so only the
	// checkpoint where it stops is written.
	atExit bool
	// async: the run's durability is DurabilityAsync, so a step's
	// checkpoint the run goes on from is written while the next step
	// runs; pending has its outcome meanwhile.
	async   bool
	pending chan error
}

// put writes the run's next checkpoint: at once, or, for a step the run
// goes on from under DurabilityAsync, in the background. Either way it
// first waits for the write in flight, since a thread's checkpoints are
// written in order, and returns that write's error if it failed.
func (w *writer) put(ctx context.Context, s State, next []string, status checkpoint.Status) error {
	if err := w.settle(); err != nil {
		return err
	}
	if status == checkpoint.StatusInterrupted {
		w.pause.Trace = w.run.traceparent // the run resuming this pause links to this one
	}
	ws := wireState{State: s, RunTools: w.runTools, pause: w.pause, logged: w.logged, logBytes: w.logBytes}
	raw, add, err := encodeState(ws)
	if err != nil {
		return fmt.Errorf("thread %q: encode state: %w", w.run.ThreadID, err)
	}
	cp := checkpoint.Checkpoint{ThreadID: w.run.key, Seq: w.seq + 1, RunID: w.run.RunID, Step: w.run.Step,
		Status: status, Next: next, State: raw, Append: add, Metadata: w.meta, Incarnation: w.lease.Incarnation, Token: w.lease.Token,
		// A run ends with the checkpoint of any status but running (it
		// paused, completed, failed or was cancelled): that write also
		// releases its lease, one write fewer per run.
		Release: w.lease.Token != 0 && status != checkpoint.StatusRunning}
	if status == checkpoint.StatusInterrupted {
		cp.WakeAt = w.pause.wakeAt()
	}
	// The media this checkpoint's messages (or its pending writes) are the
	// first to refer to go with it.
	cp.Blobs = w.run.blobs.take()
	for _, e := range add {
		ws.logBytes += int64(len(e))
	}
	ws.logged = len(s.Messages)
	size := int64(len(raw)) + ws.logBytes
	async := w.async && status == checkpoint.StatusRunning
	wctx, span := traceWrite(ctx, cp.Seq, string(status), async)
	if async {
		// The state written is never changed (see appendMessages), so the
		// next step may run on it meanwhile.
		done := make(chan error, 1)
		go func() {
			err := w.save(wctx, cp, ws, size)
			endSpan(span, err)
			done <- err
		}()
		w.pending = done
	} else {
		err := w.save(wctx, cp, ws, size)
		endSpan(span, err)
		if err != nil {
			return err
		}
	}
	w.seq++
	w.logged, w.logBytes = ws.logged, ws.logBytes
	return nil
}

// settle waits for the write in flight, if any, and returns its error.
func (w *writer) settle() error {
	if w.pending == nil {
		return nil
	}
	err := <-w.pending
	w.pending = nil
	return err
}

// save writes cp and keeps it, as ws, in the thread cache. It reads only
// what never changes during a run, so a background write can use it.
func (w *writer) save(ctx context.Context, cp checkpoint.Checkpoint, ws wireState, size int64) error {
	err := w.app.cp.Put(ctx, cp)
	w.run.blobs.done(cp.Blobs, err == nil)
	if err != nil {
		w.app.cache.drop(w.run.key)
		if errors.Is(err, checkpoint.ErrLeaseLost) {
			return &StateError{Kind: ErrThreadBusy, ThreadID: w.run.ThreadID, Detail: "the run lost its claim on the thread (its lease expired and another run took it, or the thread was deleted); reload it and retry"}
		}
		if errors.Is(err, checkpoint.ErrConflict) {
			return &StateError{Kind: ErrThreadBusy, ThreadID: w.run.ThreadID, Detail: "another process changed the thread during this run; reload it and retry"}
		}
		return fmt.Errorf("thread %q: save checkpoint: %w", w.run.ThreadID, err)
	}
	if cp.Release {
		w.hold.released.Store(true)
	}
	cp.Token, cp.Append, cp.Release, cp.Blobs = 0, nil, false, nil // as the store returns it
	w.app.cache.store(w.run.key, cp, ws, size)
	return nil
}

// fail records that the run stopped on err with the state before the failing
// step, so that calling the thread again without input retries that step. A
// run whose context was cancelled, whatever the cause, is recorded as
// cancelled rather than failed: the thread never stays "running" without a
// run. The record is written even though ctx is done, with a bound of its
// own.
func (w *writer) fail(ctx context.Context, s State, next []string, err error) error {
	status := checkpoint.StatusFailed
	if ctx.Err() != nil {
		status = checkpoint.StatusCancelled
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if perr := w.put(wctx, s, next, status); perr != nil {
		return errors.Join(err, perr)
	}
	return err
}

// recordTimeout bounds saving the checkpoint that records how a run ended
// when the run's own context is already done.
const recordTimeout = 10 * time.Second

// Thread returns the thread's current state as a Result (RunID is the run
// that last wrote it), or an error wrapping ErrThreadNotFound: ThreadFor of
// the tenant "".
func (a *App) Thread(ctx context.Context, threadID string) (Result, error) {
	return a.ThreadFor(ctx, "", threadID)
}

// Snapshot is one checkpoint of a thread's history.
type Snapshot struct {
	Result
	Seq  int64             `json:"seq"`
	Step int               `json:"step"`
	Next []string          `json:"next"`
	Raw  checkpoint.Status `json:"checkpoint_status"`
}

// History returns up to limit snapshots of tenant's thread threadID,
// newest first (none for a thread tenant does not have).
func (a *App) History(ctx context.Context, tenant, threadID string, limit int) ([]Snapshot, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return nil, err
	}
	cps, err := a.cp.History(ctx, key, limit)
	if err != nil {
		return nil, fmt.Errorf("thread %q: history: %w", threadID, err)
	}
	out := make([]Snapshot, 0, len(cps))
	// The checkpoints' logs are prefixes of the newest one's: decode it
	// once.
	var msgs []message.Message
	var logBytes int64
	if len(cps) > 0 {
		if msgs, logBytes, err = decodeLog(cps[0].Log); err != nil {
			return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", threadID, cps[0].Seq, err)
		}
	}
	for _, cp := range cps {
		w, err := decodeRest(cp, msgs, len(cp.Log), logBytes)
		if err != nil {
			return nil, fmt.Errorf("thread %q: read checkpoint %d: %w", threadID, cp.Seq, err)
		}
		res := a.result(&Run{ThreadID: threadID, Tenant: tenant, RunID: cp.RunID, key: key}, w.State, Status(cp.Status), w.pause)
		out = append(out, Snapshot{Result: res, Seq: cp.Seq, Step: cp.Step, Next: cp.Next, Raw: cp.Status})
	}
	return out, nil
}

// ThreadMetadata returns the metadata stored with tenant's thread
// threadID (RunConfig.Metadata).
func (a *App) ThreadMetadata(ctx context.Context, tenant, threadID string) (map[string]string, error) {
	key, err := keyOf("thread_id", tenant, threadID)
	if err != nil {
		return nil, err
	}
	cp, err := a.cp.Latest(ctx, key)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, notFound(threadID)
	}
	return cp.Metadata, err
}
